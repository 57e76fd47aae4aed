// Comparisons, logic, where and cast: shapes, verification, gradients.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using namespace otc;

/// The broadcast shape of `values`, with `elem` as the element type.
static LogicalResult inferBroadcastOf(std::optional<Location> loc, ValueRange values, Type elem,
                                      SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> shape;
  for (Value v : values) {
    auto next = broadcastShapes(shape, tensorType(v).getShape());
    if (!next)
      return emitOptionalError(loc, "operand of shape ", v.getType(),
                               " does not broadcast with the others");
    shape = *next;
  }
  types.push_back(RankedTensorType::get(shape, elem));
  return success();
}

static Type boolType(MLIRContext *ctx) { return IntegerType::get(ctx, 1); }

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                          Adaptor a, SmallVectorImpl<Type> &types) {
  return inferBroadcastOf(loc, {a.getLhs(), a.getRhs()}, boolType(ctx), types);
}

#define OTC_LOGIC_INFER(Op)                                                      \
  LogicalResult Op::inferReturnTypes(MLIRContext *ctx, std::optional<Location> l, \
                                     Op::Adaptor a, SmallVectorImpl<Type> &types) { \
    return inferBroadcastOf(l, {a.getLhs(), a.getRhs()}, boolType(ctx), types);  \
  }
OTC_LOGIC_INFER(AndOp)
OTC_LOGIC_INFER(OrOp)
#undef OTC_LOGIC_INFER

#define OTC_BITWISE_INFER(Op)                                                    \
  LogicalResult Op::inferReturnTypes(MLIRContext *ctx, std::optional<Location> l, \
                                     Op::Adaptor a, SmallVectorImpl<Type> &types) { \
    return inferBroadcastOf(l, {a.getLhs(), a.getRhs()}, IntegerType::get(ctx, 64), types); \
  }
OTC_BITWISE_INFER(BitwiseAndOp)
OTC_BITWISE_INFER(BitwiseOrOp)
OTC_BITWISE_INFER(BitwiseXorOp)
#undef OTC_BITWISE_INFER

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor a, SmallVectorImpl<Type> &types) {
  return inferBroadcastOf(loc, {a.getCondition(), a.getLhs(), a.getRhs()},
                          tensorType(a.getLhs()).getElementType(), types);
}

// The gradient goes to the side the condition chose, summed back to each
// operand's shape; the condition has none.
LogicalResult WhereOp::buildGradients(OpBuilder &b, ValueRange dy,
                                      SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value zero = scalarConstant(b, loc, tensorType(getResult()).getElementType(), 0.0);
  Value dl = WhereOp::create(b, loc, getCondition(), dy[0], zero);
  Value dr = WhereOp::create(b, loc, getCondition(), zero, dy[0]);
  grads.push_back(nullptr);
  grads.push_back(sumToShape(b, loc, dl, tensorType(getLhs())));
  grads.push_back(sumToShape(b, loc, dr, tensorType(getRhs())));
  return success();
}

LogicalResult CastOp::verify() {
  if (tensorType(getInput()).getShape() != tensorType(getResult()).getShape())
    return emitOpError("cast changes the shape from ") << getInput().getType() << " to "
                                                     << getResult().getType();
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &b, ValueRange dy,
                                     SmallVectorImpl<Value> &grads) {
  bool floats = isa<FloatType>(tensorType(getInput()).getElementType()) &&
                isa<FloatType>(tensorType(getResult()).getElementType());
  grads.push_back(floats ? CastOp::create(b, getLoc(), getInput().getType(), dy[0]).getResult()
                         : Value());
  return success();
}

LogicalResult DropoutOp::verify() {
  double r = getRatio().convertToDouble();
  if (!(r >= 0 && r < 1))
    return emitOpError("ratio ") << r << " is outside [0, 1)";
  if (tensorType(getInput()).getShape() != tensorType(getMask()).getShape() ||
      getInput().getType() != getOutput().getType())
    return emitOpError("the output and the mask must have the input's shape");
  return success();
}

// dx = dy * (mask ? 1/(1 - ratio) : 0).
LogicalResult DropoutOp::buildGradients(OpBuilder &b, ValueRange dy,
                                        SmallVectorImpl<Value> &grads) {
  if (!dy[0]) {
    grads.push_back(nullptr);
    return success();
  }
  Location loc = getLoc();
  Type elem = tensorType(getInput()).getElementType();
  Value scale = scalarConstant(b, loc, elem, 1.0 / (1.0 - getRatio().convertToDouble()));
  Value zero = scalarConstant(b, loc, elem, 0.0);
  Value factor = WhereOp::create(b, loc, getMask(), scale, zero);
  grads.push_back(MulOp::create(b, loc, dy[0], factor));
  return success();
}
