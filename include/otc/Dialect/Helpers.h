// Shape arithmetic and small builders shared by the op families' shape,
// verification and gradient logic.
#ifndef OTC_DIALECT_HELPERS_H
#define OTC_DIALECT_HELPERS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include <optional>

namespace otc {

/// The numpy broadcast of two shapes, or nothing when they do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Whether `from` broadcasts to exactly `to`.
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// A rank-0 constant of `elementType` holding `value`.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type elementType, double value);

/// Sums `grad` over the dimensions along which `target` was broadcast, so the
/// gradient of a broadcast operand gets the operand's own shape.
mlir::Value sumToShape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                       mlir::RankedTensorType target);

/// The type of `v`, which every otc operand has: a static ranked tensor.
inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

} // namespace otc

#endif // OTC_DIALECT_HELPERS_H
