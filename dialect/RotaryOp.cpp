// otc.rotary: verification and gradient rule.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using namespace otc;

LogicalResult RotaryOp::verify() {
  RankedTensorType x = tensorType(getInput());
  if (x.getRank() < 1 || x.getShape().back() % 2 != 0 || x.getShape().back() == 0)
    return emitOpError("the last dim of ") << x << " must be even and positive";
  for (Value v : {getCos(), getSin()}) {
    RankedTensorType t = tensorType(v);
    if (t.getElementType() != x.getElementType() || !broadcastsTo(t.getShape(), x.getShape()))
      return emitOpError("cos and sin must broadcast to ") << x << ", not " << t;
  }
  if (getResult().getType() != x)
    return emitOpError("the result must have the input's type ") << x;
  return success();
}

// x's gradient is the transpose; cos's dy x; sin's dy rotate_half(x), or
// x rotate_half(dy) when transposed (rotate_half is rotary by cos 0, sin 1).
LogicalResult RotaryOp::buildGradients(OpBuilder &b, ValueRange dy,
                                       SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value x = getInput(), g = dy[0];
  RuleBuilder o{b, loc};
  auto rotateHalf = [&](Value v) {
    return RotaryOp::create(b, loc, v.getType(), v, o.scalar(v, 0), o.scalar(v, 1), false);
  };
  grads.push_back(RotaryOp::create(b, loc, x.getType(), g, getCos(), getSin(), !getTransposed()));
  grads.push_back(sumToShape(b, loc, o.mul(g, x), tensorType(getCos())));
  Value dsin = getTransposed() ? o.mul(x, rotateHalf(g)) : o.mul(g, rotateHalf(x));
  grads.push_back(sumToShape(b, loc, dsin, tensorType(getSin())));
  return success();
}
