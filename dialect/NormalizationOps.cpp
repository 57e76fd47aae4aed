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
/// The row statistics' type: x's with the normalized dims 1.
static RankedTensorType statsType(RankedTensorType x, int64_t axis) {
  SmallVector<int64_t> rows(x.getShape());
  std::fill(rows.begin() + std::clamp<int64_t>(axis, 0, x.getRank()), rows.end(), 1);
  return RankedTensorType::get(rows, x.getElementType());
}

void LayerNormOp::build(OpBuilder &b, OperationState &state, Value input, Value scale, Value bias,
                        IntegerAttr axis, FloatAttr epsilon, BoolAttr center) {
  RankedTensorType x = tensorType(input), stats = statsType(x, axis.getInt());
  build(b, state, TypeRange{x, stats, stats}, input, scale, bias, axis, epsilon, center);
}

LogicalResult LayerNormOp::verify() {
  if (!(getEpsilon().convertToDouble() >= 0))
    return emitOpError("epsilon must not be negative");
  if (failed(verifyAxis(*this)))
    return failure();
  RankedTensorType x = tensorType(getInput());
  if (RankedTensorType want = statsType(x, getAxis()); tensorType(getMean()) != want)
    return emitOpError("the row statistics must be ") << want << ", not " << getMean().getType();
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
// over the rows (the dims before `axis`) of g * x̂ and of g, x̂ rebuilt
// elementwise from the kept row statistics.
LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ValueRange dy,
                                          SmallVectorImpl<Value> &grads) {
  if (dy[1] || dy[2])
    return emitOpError("its row statistics are for its own gradient; nothing may differentiate them");
  Location loc = getLoc();
  Value g = dy[0];
  grads.push_back(NormalizeGradOp::create(b, loc, MulOp::create(b, loc, g, getScale()),
                                          getInput(), getAxisAttr(), getEpsilonAttr(),
                                          getCenterAttr()));
  Value centred = getCenter() ? Value(SubOp::create(b, loc, getInput(), getMean())) : getInput();
  Value xhat = MulOp::create(b, loc, centred, getRstd());
  grads.push_back(sumToShape(b, loc, MulOp::create(b, loc, g, xhat), tensorType(getScale())));
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

/// [1, C, 1, ...]: a per-channel statistic of x, float32 for 16-bit x
/// (as autocast's batch norm keeps it), else of x's type.
static RankedTensorType channelType(RankedTensorType x) {
  SmallVector<int64_t> shape(x.getRank(), 1);
  shape[1] = x.getDimSize(1);
  Type e = x.getElementType();
  return RankedTensorType::get(shape, e.isF16() || e.isBF16() ? Float32Type::get(e.getContext()) : e);
}

/// Checks batch normalization's x (with a channel dim), its statistics
/// (`stats`, [1, C, 1, ...]) and epsilon.
template <class OpTy>
static LogicalResult verifyBatchNorm(OpTy op, RankedTensorType x, Value stats) {
  if (x.getRank() < 2)
    return op.emitOpError("needs a channel dim (dim 1)");
  if (!(op.getEpsilon().convertToDouble() >= 0))
    return op.emitOpError("epsilon must not be negative");
  if (RankedTensorType want = channelType(x); tensorType(stats) != want)
    return op.emitOpError("the channel statistics must be ") << want << ", not "
                                                            << stats.getType();
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor a, SmallVectorImpl<Type> &types) {
  auto x = dyn_cast<RankedTensorType>(a.getInput().getType());
  if (!x || x.getRank() < 2)
    return emitOptionalError(loc, "otc.batch_norm needs a ranked input with a channel dim");
  types.append({x, channelType(x), channelType(x)});
  return success();
}

LogicalResult BatchNormOp::verify() {
  RankedTensorType x = tensorType(getInput());
  if (failed(verifyBatchNorm(*this, x, getMean())))
    return failure();
  // Of x's type, or float32 beside 16-bit x (mixed precision's master
  // weights).
  auto c = RankedTensorType::get({x.getDimSize(1)}, x.getElementType());
  auto wide = RankedTensorType::get({x.getDimSize(1)}, channelType(x).getElementType());
  for (Value v : {getScale(), getBias()})
    if (tensorType(v) != c && tensorType(v) != wide)
      return emitOpError("scale and bias must be ") << c << ", one per channel";
  return success();
}

LogicalResult BatchNormGradOp::verify() {
  RankedTensorType x = tensorType(getInput());
  if (failed(verifyBatchNorm(*this, x, getMean())))
    return failure();
  if (tensorType(getGrad()).getShape() != x.getShape())
    return emitOpError("the gradient must have the input's shape ") << x;
  return success();
}

// x's gradient is batch_norm_grad of g * scale; the scale's and the bias's
// are channel sums of g * x̂ and of g, x̂ = (x - mean) rstd rebuilt
// elementwise inside the sum from x and the statistics.
LogicalResult BatchNormOp::buildGradients(OpBuilder &b, ValueRange dy,
                                          SmallVectorImpl<Value> &grads) {
  if (dy[1] || dy[2])
    return emitOpError("its batch statistics feed only the running ones; nothing may "
                       "differentiate them");
  RuleBuilder o{b, getLoc()};
  RankedTensorType stats = tensorType(getMean());
  // In the statistics' type (float32 for 16-bit x): the casts fuse into
  // the kernels that read them.
  Type wide = stats.getElementType();
  Value g = castElements(b, o.loc, dy[0], wide), x = castElements(b, o.loc, getInput(), wide);
  Value scale = ReshapeOp::create(b, o.loc, stats, castElements(b, o.loc, getScale(), wide));
  Value rstd = o.div(o.scalar(g, 1), SqrtOp::create(b, o.loc, o.add(getVar(),
                                                                 o.scalar(g, getEpsilon().convertToDouble()))));
  Value xhat = o.mul(SubOp::create(b, o.loc, x, getMean()), rstd);
  SmallVector<int64_t> axes = {0};
  for (int64_t d = 2; d < stats.getRank(); ++d)
    axes.push_back(d);
  auto channelSum = [&](Value v) -> Value {
    Value sum = ReduceSumOp::create(b, o.loc, v, b.getDenseI64ArrayAttr(axes),
                                    b.getBoolAttr(true));
    auto type = tensorType(getScale());
    return castElements(b, o.loc, ReshapeOp::create(b, o.loc, type.clone(wide), sum),
                        type.getElementType());
  };
  // The channel sums come first: their Reduce step then meets the
  // gradient's own sums over the same [N, C, H W] space, and the two become
  // one step that reads g and x once (rewriteReduces).
  Value dscale = channelSum(o.mul(g, xhat)), dbias = channelSum(g);
  grads.push_back(BatchNormGradOp::create(b, o.loc, getInput().getType(), o.mul(g, scale),
                                          getInput(), getMean(), getVar(), getEpsilonAttr()));
  grads.append({dscale, dbias});
  return success();
}
