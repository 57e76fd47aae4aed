// Transpose, reshape and broadcast: shapes, verification, folds, gradients.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using namespace otc;

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor a, SmallVectorImpl<Type> &types) {
  auto t = tensorType(a.getInput());
  ArrayRef<int64_t> perm = a.getPerm();
  SmallVector<bool> seen(t.getRank(), false);
  if ((int64_t)perm.size() != t.getRank())
    return emitOptionalError(loc, "transpose perm has ", perm.size(),
                             " entries for rank ", t.getRank());
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= t.getRank() || seen[p])
      return emitOptionalError(loc, "transpose perm is not a permutation");
    seen[p] = true;
    shape.push_back(t.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if ((int64_t)i != p)
      return {};
  return getInput();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ValueRange dy,
                                          SmallVectorImpl<Value> &grads) {
  SmallVector<int64_t> inverse(getPerm().size());
  for (auto [i, p] : llvm::enumerate(getPerm()))
    inverse[p] = i;
  grads.push_back(
      TransposeOp::create(b, getLoc(), dy[0], b.getDenseI64ArrayAttr(inverse)));
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto in = tensorType(getInput()), out = tensorType(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << in << " (" << in.getNumElements() << " elements) to " << out;
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) is one reshape of x.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ValueRange dy,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(ReshapeOp::create(b, getLoc(), getInput().getType(), dy[0]));
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto in = tensorType(getInput()), out = tensorType(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type");
  if (!broadcastsTo(in.getShape(), out.getShape()))
    return emitOpError("cannot broadcast ") << in << " to " << out;
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult BroadcastToOp::buildGradients(OpBuilder &b, ValueRange dy,
                                            SmallVectorImpl<Value> &grads) {
  grads.push_back(sumToShape(b, getLoc(), dy[0], tensorType(getInput())));
  return success();
}

/// The shape gather gives `data` (of rank r) and `indices` along `axis`.
static SmallVector<int64_t> gatheredShape(ArrayRef<int64_t> data, ArrayRef<int64_t> indices,
                                          int64_t axis) {
  SmallVector<int64_t> shape(data.take_front(axis));
  shape.append(indices.begin(), indices.end());
  shape.append(data.begin() + axis + 1, data.end());
  return shape;
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor a, SmallVectorImpl<Type> &types) {
  auto data = tensorType(a.getData());
  int64_t axis = a.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "gather axis ", axis, " is outside [0, ", data.getRank(), ")");
  auto shape = gatheredShape(data.getShape(), tensorType(a.getIndices()).getShape(), axis);
  types.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

// The scatter-add sums in float32 when the gradient is 16-bit (a gather of
// a mixed-precision activation, as ViT's class token): a repeated index
// adds many contributions, and the kernel library sums float32.
LogicalResult GatherOp::buildGradients(OpBuilder &b, ValueRange dy,
                                       SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  auto data = tensorType(getData());
  Type sum = data.getElementType().getIntOrFloatBitWidth() < 32 ? b.getF32Type()
                                                                  : data.getElementType();
  Value g = GatherGradOp::create(b, loc, data.clone(sum), castElements(b, loc, dy[0], sum),
                                 getIndices(), getAxisAttr());
  grads.push_back(castElements(b, loc, g, data.getElementType()));
  grads.push_back(nullptr); // indices are integers
  return success();
}

LogicalResult GatherGradOp::buildGradients(OpBuilder &b, ValueRange dy,
                                           SmallVectorImpl<Value> &grads) {
  grads.push_back(GatherOp::create(b, getLoc(), dy[0], getIndices(), getAxisAttr()));
  grads.push_back(nullptr); // indices are integers
  return success();
}

LogicalResult GatherGradOp::verify() {
  auto out = tensorType(getResult());
  if (getAxis() < 0 || getAxis() >= out.getRank())
    return emitOpError("axis ") << getAxis() << " is outside [0, " << out.getRank() << ")";
  auto want = gatheredShape(out.getShape(), tensorType(getIndices()).getShape(), getAxis());
  if (tensorType(getGrad()).getShape() != ArrayRef<int64_t>(want) ||
      tensorType(getGrad()).getElementType() != out.getElementType())
    return emitOpError("grad type ") << getGrad().getType() << " does not match gathering "
                                     << out << " at " << getIndices().getType();
  return success();
}

/// Checks that stepping `steps` from `starts` through `big` gives `small`.
static LogicalResult verifySlice(Operation *op, RankedTensorType big, RankedTensorType small,
                                 ArrayRef<int64_t> starts, ArrayRef<int64_t> steps) {
  int64_t rank = big.getRank();
  if (small.getRank() != rank || (int64_t)starts.size() != rank || (int64_t)steps.size() != rank)
    return op->emitOpError("starts, steps and both types need rank ") << rank;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t last;
    if (starts[d] < 0 || steps[d] < 1 ||
        __builtin_mul_overflow(small.getDimSize(d) - 1, steps[d], &last) ||
        __builtin_add_overflow(last, starts[d], &last) || last >= big.getDimSize(d))
      return op->emitOpError("dim ") << d << ": " << small.getDimSize(d) << " elements from "
                                     << starts[d] << " by " << steps[d] << " leave "
                                     << big.getDimSize(d);
  }
  return success();
}

LogicalResult SliceOp::verify() {
  return verifySlice(*this, tensorType(getInput()), tensorType(getResult()), getStarts(),
                     getSteps());
}

LogicalResult SliceGradOp::verify() {
  return verifySlice(*this, tensorType(getResult()), tensorType(getGrad()), getStarts(),
                     getSteps());
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ValueRange dy,
                                      SmallVectorImpl<Value> &grads) {
  if (!isa<FloatType>(tensorType(getInput()).getElementType())) {
    grads.push_back(nullptr);
    return success();
  }
  grads.push_back(SliceGradOp::create(b, getLoc(), getInput().getType(), dy[0],
                                      getStartsAttr(), getStepsAttr()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor a, SmallVectorImpl<Type> &types) {
  if (a.getInputs().empty())
    return emitOptionalError(loc, "concat needs inputs");
  auto first = tensorType(a.getInputs()[0]);
  int64_t axis = a.getAxis();
  if (axis < 0 || axis >= first.getRank())
    return emitOptionalError(loc, "concat axis ", axis, " is outside [0, ", first.getRank(), ")");
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : a.getInputs().drop_front()) {
    auto t = tensorType(v);
    if (t.getRank() != first.getRank() || t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "concat inputs differ in rank or element type");
    for (int64_t d = 0; d < first.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, "concat inputs differ off the axis: ", first, " and ", t);
    shape[axis] += t.getDimSize(axis);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

// Each input's gradient is its slice of dy.
LogicalResult ConcatOp::buildGradients(OpBuilder &b, ValueRange dy,
                                       SmallVectorImpl<Value> &grads) {
  int64_t rank = tensorType(getResult()).getRank(), at = 0;
  for (Value v : getInputs()) {
    auto t = tensorType(v);
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
    starts[getAxis()] = at;
    at += t.getDimSize(getAxis());
    if (!isa<FloatType>(t.getElementType())) {
      grads.push_back(nullptr);
      continue;
    }
    grads.push_back(SliceOp::create(b, getLoc(), t, dy[0], b.getDenseI64ArrayAttr(starts),
                                    b.getDenseI64ArrayAttr(steps)));
  }
  return success();
}
