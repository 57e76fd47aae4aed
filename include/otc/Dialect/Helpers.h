// Shape arithmetic and small builders shared by the op families' shape,
// verification and gradient logic.
#ifndef OTC_DIALECT_HELPERS_H
#define OTC_DIALECT_HELPERS_H

#include "otc/Dialect/OtcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include <optional>
#include <string>

namespace otc {

/// The numpy broadcast of two shapes, or nothing when they do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Whether `from` broadcasts to exactly `to`.
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// A rank-0 constant of `elementType` (float or integer) holding `value`.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type elementType, double value);

/// otc.dropout of `x` with probability `ratio`, its stream named by `key`
/// (FNV-1a, so a graph edit elsewhere does not move its draws): the
/// importer keys ONNX Dropout by its output, otc-insert-lora by the weight.
DropoutOp createDropout(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, double ratio,
                        llvm::StringRef key);

/// `v` with elements of `elementType`: itself, or an otc.cast.
mlir::Value castElements(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                         mlir::Type elementType);

/// The type otc.lstm and otc.gru keep cell states and gates in: float32
/// for 16-bit inputs, else the input's own (RecurrentOps.cpp).
mlir::Type recurrentStateType(mlir::Type elem);

/// An attention tensor's [B, H, n, w] shape from its stored one (dims 1
/// and 2 swapped under AttentionLayout::Bthd), and back.
llvm::SmallVector<int64_t> attentionRows(llvm::ArrayRef<int64_t> shape, AttentionLayout layout);

/// Sums `grad` over the dimensions along which `target` was broadcast, so the
/// gradient of a broadcast operand gets the operand's own shape.
mlir::Value sumToShape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                       mlir::RankedTensorType target);

/// Short builders for gradient rules, so that a rule is one line:
///   return o.grad(grads, o.div(dy[0], o.add(o.mul(x, x), o.scalar(x, 1))));
struct RuleBuilder {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Value add(mlir::Value x, mlir::Value y) { return AddOp::create(b, loc, x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return MulOp::create(b, loc, x, y); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return DivOp::create(b, loc, x, y); }
  mlir::Value neg(mlir::Value x) { return NegOp::create(b, loc, x); }
  /// A scalar constant of `like`'s element type.
  mlir::Value scalar(mlir::Value like, double v) {
    return scalarConstant(b, loc, mlir::cast<mlir::RankedTensorType>(like.getType()).getElementType(), v);
  }
  /// Appends the operand's gradient `g`: the rule's result.
  llvm::LogicalResult grad(llvm::SmallVectorImpl<mlir::Value> &grads, mlir::Value g) {
    grads.push_back(g);
    return mlir::success();
  }
};

/// Whether `a p b` holds: the host folds' and the interpreter's comparison.
inline bool holds(ComparePredicate p, double a, double b) {
  switch (p) {
  case ComparePredicate::eq: return a == b;
  case ComparePredicate::ne: return a != b;
  case ComparePredicate::lt: return a < b;
  case ComparePredicate::le: return a <= b;
  case ComparePredicate::gt: return a > b;
  case ComparePredicate::ge: return a >= b;
  }
  return false;
}

/// The type of `v`, which every otc operand has: a static ranked tensor.
inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// The geometry of a window op on an N x C x H x W input: the kernel, its
/// strides, pads (top, left, bottom, right) and dilations, and the output's
/// spatial size.
struct WindowGeometry {
  int64_t n, c, h, w, kh, kw, oh, ow, sh, sw, pt, pl, pb, pr, dh, dw;
  /// In the order of the kernel library's OTC_WINDOW parameters.
  llvm::SmallVector<int64_t> constants() const {
    return {n, c, h, w, kh, kw, oh, ow, sh, sw, pt, pl, pb, pr, dh, dw};
  }
};

/// The output size along one dim, as PyTorch computes it; with `ceil`, the
/// last window must still start inside the input or its leading pad.
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin,
                         int64_t padEnd, int64_t dilation, bool ceil);

/// Fills `g` from an N x C x H x W input, the attributes and the output's
/// spatial size; returns what is wrong, or an empty string.
std::string windowGeometry(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> kernel,
                           llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                           llvm::ArrayRef<int64_t> dilations, int64_t oh, int64_t ow,
                           WindowGeometry &g);

} // namespace otc

#endif // OTC_DIALECT_HELPERS_H
