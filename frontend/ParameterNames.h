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

} // namespace otc

#endif
