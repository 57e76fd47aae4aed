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
LogicalResult LayerNormOp::verify() {
  if (!(getEpsilon().convertToDouble() >= 0))
    return emitOpError("epsilon must not be negative");
  if (failed(verifyAxis(*this)))
    return failure();
  RankedTensorType x = tensorType(getInput());
  ArrayRef<int64_t> normalized = x.getShape().drop_front(getAxis());
  for (Value v : {getScale(), getBias()}) {
    if (!v)
      continue;
    RankedTensorType t = tensorType(v);
    if (t.getShape() != normalized || t.getElementType() != x.getElementType())
      return emitOpError("scale and bias must be ")
             << RankedTensorType::get(normalized, x.getElementType())
             << ", the input's dims from axis " << getAxis() << " on, not " << t;
  }
  return success();
}

// dx = normalize_grad(g * scale, x); the affine's gradients are column sums
// over the rows (the dims before `axis`) of g * normalize(x) and of g. The
// normalized value is recomputed rather than kept.
LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ValueRange dy,
                                          SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value g = dy[0];
  grads.push_back(NormalizeGradOp::create(b, loc, MulOp::create(b, loc, g, getScale()),
                                          getInput(), getAxisAttr(), getEpsilonAttr(),
                                          getCenterAttr()));
  Value y = NormalizeOp::create(b, loc, getInput(), getAxisAttr(), getEpsilonAttr(),
                                getCenterAttr());
  grads.push_back(sumToShape(b, loc, MulOp::create(b, loc, g, y), tensorType(getScale())));
  if (getBias())
    grads.push_back(sumToShape(b, loc, g, tensorType(getBias())));
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
