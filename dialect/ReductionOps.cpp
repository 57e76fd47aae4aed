// Sum, mean and max reductions: shapes and gradient rules.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using namespace otc;

static LogicalResult inferReduce(std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &types) {
  auto t = tensorType(input);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= t.getRank() || (i && axes[i] <= axes[i - 1]))
      return emitOptionalError(loc, "reduction axes must be sorted, unique and "
                                    "within the rank ", t.getRank());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(t.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor a, SmallVectorImpl<Type> &types) {
  return inferReduce(loc, a.getInput(), a.getAxes(), a.getKeepdims(), types);
}

LogicalResult ReduceMaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor a, SmallVectorImpl<Type> &types) {
  return inferReduce(loc, a.getInput(), a.getAxes(), a.getKeepdims(), types);
}

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor a, SmallVectorImpl<Type> &types) {
  return inferReduce(loc, a.getInput(), a.getAxes(), a.getKeepdims(), types);
}

// The gradient of a reduction broadcasts the result gradient back over the
// reduced axes, after restoring them as size-1 dimensions.
static Value expandBack(OpBuilder &b, Location loc, Value grad, Value input,
                        ArrayRef<int64_t> axes) {
  auto in = tensorType(input);
  SmallVector<int64_t> kept(in.getShape());
  for (int64_t a : axes)
    kept[a] = 1;
  auto keptType = RankedTensorType::get(kept, in.getElementType());
  Value g = grad;
  if (g.getType() != keptType)
    g = ReshapeOp::create(b, loc, keptType, g);
  return BroadcastToOp::create(b, loc, in, g);
}

LogicalResult ReduceSumOp::buildGradients(OpBuilder &b, ValueRange dy,
                                          SmallVectorImpl<Value> &grads) {
  grads.push_back(expandBack(b, getLoc(), dy[0], getInput(), getAxes()));
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &b, ValueRange dy,
                                           SmallVectorImpl<Value> &grads) {
  auto in = tensorType(getInput());
  int64_t count = 1;
  for (int64_t a : getAxes())
    count *= in.getDimSize(a);
  Location loc = getLoc();
  Value scale = scalarConstant(b, loc, in.getElementType(), 1.0 / count);
  Value g = MulOp::create(b, loc, dy[0], scale);
  grads.push_back(expandBack(b, loc, g, getInput(), getAxes()));
  return success();
}

LogicalResult ReduceMaxOp::buildGradients(OpBuilder &b, ValueRange dy,
                                          SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value x = getInput();
  Value hit = CastOp::create(b, loc, x.getType(),
                             CompareOp::create(b, loc, x, expandBack(b, loc, getResult(), x, getAxes()),
                                               ComparePredicate::eq));
  Value ties = ReduceSumOp::create(b, loc, hit, getAxesAttr(), getKeepdimsAttr());
  Value g = expandBack(b, loc, DivOp::create(b, loc, dy[0], ties), x, getAxes());
  grads.push_back(MulOp::create(b, loc, g, hit));
  return success();
}
