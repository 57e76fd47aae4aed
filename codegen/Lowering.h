#ifndef OTC_CODEGEN_LOWERING_H
#define OTC_CODEGEN_LOWERING_H

#include "Program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace otc {

/// Ops computed per element with no reduction: candidates for inlining.
bool isElementwise(mlir::Operation *op);

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// A C float literal for `v`.
std::string floatLiteral(double v);
/// A C literal of type long long for `v`.
std::string intLiteral(int64_t v);
/// A C string literal holding the bytes of `s`: everything but letters,
/// digits and `_.-/:` is an octal escape, so no name can end the literal.
std::string cString(const std::string &s);

/// The index into an operand of shape `from`, broadcast numpy-style to shape
/// `to`, at linear index `idx` of the result.
std::string broadcastIndex(const std::string &idx, llvm::ArrayRef<int64_t> to,
                           llvm::ArrayRef<int64_t> from);

/// A buffer's size and live range, in op positions, both ends inclusive.
struct Interval {
  int64_t bytes, begin, end;
  int64_t offset = 0;
};

/// Gives each interval an arena offset so that buffers live at the same time
/// never overlap. Returns the arena size.
int64_t placeBuffers(std::vector<Interval> &intervals);

class Lowering {
public:
  Lowering(mlir::func::FuncOp func, std::string &error);
  bool run(Program &program);

private:
  bool fail(mlir::Operation *op, const std::string &message);
  bool classify();
  bool bindArguments(Program &program);
  bool placeArena(Program &program);
  bool lowerOp(mlir::Operation *op, Program &program);
  int64_t usePosition(mlir::Operation *op);

  bool isInlined(mlir::Value v) const;
  std::string pointer(mlir::Value v);
  std::string load(mlir::Value v, const std::string &idx);
  std::string expression(mlir::Operation *op, const std::string &idx);

  mlir::func::FuncOp func;
  std::string &error;
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  llvm::DenseSet<mlir::Value> inlined;
  llvm::DenseSet<mlir::Operation *> gemmsIntoAccumulator;
  llvm::DenseMap<mlir::Value, std::string> pointers;
  mlir::Value loss;
};

} // namespace otc

#endif
