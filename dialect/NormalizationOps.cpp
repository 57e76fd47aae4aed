// Softmax and log-softmax: verification and gradient rules.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using namespace otc;

template <typename Op>
static LogicalResult verifyAxis(Op op) {
  int64_t rank = tensorType(op.getInput()).getRank();
  if (op.getAxis() < 0 || op.getAxis() >= rank)
    return op.emitOpError("axis ") << op.getAxis() << " is outside [0, " << rank << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() { return verifyAxis(*this); }
LogicalResult NormalizeOp::verify() {
  if (!(getEpsilon().convertToDouble() >= 0))
    return emitOpError("epsilon must not be negative");
  return verifyAxis(*this);
}

LogicalResult NormalizeOp::buildGradients(OpBuilder &b, ValueRange dy,
                                          SmallVectorImpl<Value> &grads) {
  grads.push_back(NormalizeGradOp::create(b, getLoc(), dy[0], getInput(), getAxisAttr(),
                                          getEpsilonAttr(), getCenterAttr()));
  return success();
}
LogicalResult LogSoftmaxOp::verify() { return verifyAxis(*this); }

/// sum(v) over `axis`, keeping the dim so that it broadcasts back.
static Value rowSum(OpBuilder &b, Location loc, Value v, int64_t axis) {
  return ReduceSumOp::create(b, loc, v, b.getDenseI64ArrayAttr({axis}), b.getBoolAttr(true));
}

// dx = y * (dy - sum(dy * y)), y being the softmax output.
LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ValueRange dy,
                                        SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dyy = MulOp::create(b, loc, dy[0], getResult());
  Value centred = SubOp::create(b, loc, dy[0], rowSum(b, loc, dyy, getAxis()));
  grads.push_back(MulOp::create(b, loc, getResult(), centred));
  return success();
}

// dx = dy - exp(y) * sum(dy), y being the log-softmax output.
LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &b, ValueRange dy,
                                           SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value total = rowSum(b, loc, dy[0], getAxis());
  Value p = ExpOp::create(b, loc, getResult());
  grads.push_back(SubOp::create(b, loc, dy[0], MulOp::create(b, loc, p, total)));
  return success();
}
