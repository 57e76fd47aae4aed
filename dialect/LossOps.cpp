// Loss operations: shapes, verification and gradient rules.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using namespace otc;

static LogicalResult checkLogitsLabels(std::optional<Location> loc,
                                       RankedTensorType logits,
                                       RankedTensorType labels) {
  if (logits.getRank() != 2 || labels.getRank() != 1 ||
      logits.getDimSize(0) != labels.getDimSize(0))
    return emitOptionalError(loc, "softmax cross-entropy needs [N, C] logits "
                                  "and [N] labels, got ",
                             logits, " and ", labels);
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor a,
    SmallVectorImpl<Type> &types) {
  auto logits = tensorType(a.getLogits());
  if (failed(checkLogitsLabels(loc, logits, tensorType(a.getLabels()))))
    return failure();
  types.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::buildGradients(
    OpBuilder &b, ValueRange dy, SmallVectorImpl<Value> &grads) {
  grads.push_back(SoftmaxCrossEntropyGradOp::create(
      b, getLoc(), dy[0], getLogits(), getLabels(), getIgnoreIndexAttr()));
  grads.push_back(Value()); // integer labels have no gradient
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  auto logits = tensorType(getLogits());
  if (failed(checkLogitsLabels(getLoc(), logits, tensorType(getLabels()))))
    return failure();
  if (tensorType(getGrad()).getElementType() != logits.getElementType())
    return emitOpError("gradient and logits element types differ");
  return success();
}

LogicalResult SoftmaxCrossEntropyWithGradOp::verify() {
  auto logits = tensorType(getLogits());
  if (failed(checkLogitsLabels(getLoc(), logits, tensorType(getLabels()))))
    return failure();
  if (tensorType(getGrad()).getElementType() != logits.getElementType() ||
      tensorType(getLoss()).getElementType() != logits.getElementType())
    return emitOpError("seed, loss and logits element types differ");
  return success();
}
