// What a user calls a parameter. torch.onnx.export names most initializers
// after their PyTorch parameter, but constant folding stores a Linear's
// weight transposed under an anonymous name (onnx::MatMul_665). Its one
// consumer still carries the module path (/model/layers.0/mlp/up_proj/
// MatMul), from which the parameter's PyTorch name follows, so --freeze
// can select it as the user knows it.
#ifndef OTC_FRONTEND_PARAMETERNAMES_H
#define OTC_FRONTEND_PARAMETERNAMES_H

#include "onnx/onnx_pb.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace otc {

/// Shell-style match where only '*' is special (any run of characters, '.'
/// and '/' included): `*mlp*`, `encoder.*`, or an exact name.
bool globMatch(llvm::StringRef pattern, llvm::StringRef name);

/// For each anonymous initializer ("onnx::..."), the PyTorch name its uses
/// imply: "<module path>.weight" when every use is the weight operand of
/// one module's MatMul or Gemm, "<module path>" when one module is its
/// only reader otherwise. Initializers whose readers span modules or carry
/// no path get none.
llvm::StringMap<std::string> exportedNames(const onnx::GraphProto &g);

/// For each value the graph reads, the module path that every reader other
/// than Identity nodes lies in ("model.layers.0.mlp.up_proj"), or "" when
/// they disagree or carry none. One pass over the graph.
llvm::StringMap<std::string> readerModules(const onnx::GraphProto &g);

/// readerModules(g) of one value ("" when nothing reads it).
std::string readerModule(const onnx::GraphProto &g, llvm::StringRef name);

/// Whether module paths `a` and `b` name one module called more than once:
/// torch.onnx.export numbers a module's later calls by suffixing its scope
/// ("attention.dense" and "attention.dense_1"), so they are equal but for
/// such suffixes where one side has none.
bool sameModuleCalledAgain(llvm::StringRef a, llvm::StringRef b);

} // namespace otc

#endif
