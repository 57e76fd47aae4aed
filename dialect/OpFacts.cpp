// The op facts interface (OpFacts.td), the FLOP counts that ops compute
// themselves (products and windows), and the step's count.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

#include "otc/Dialect/OtcOpsEnums.cpp.inc"
#include "otc/Dialect/OpFactsInterface.cpp.inc"

namespace otc {
namespace {

int64_t elements(Type t) {
  auto s = dyn_cast<ShapedType>(t);
  return s && s.hasStaticShape() ? s.getNumElements() : 0;
}

int64_t taps(ArrayRef<int64_t> kernel) {
  int64_t n = 1;
  for (int64_t k : kernel)
    n *= k;
  return n;
}

} // namespace

int64_t resultElements(Operation *op) {
  return op->getNumResults() ? elements(op->getResult(0).getType()) : 0;
}

int64_t operandElements(Operation *op) {
  return op->getNumOperands() ? elements(op->getOperand(0).getType()) : 0;
}

int64_t opFlops(Operation *op) {
  auto facts = dyn_cast<OpFactsInterface>(op);
  return facts ? facts.getFlopCount() : 0;
}

StepFlops countFlops(Operation *root) {
  StepFlops f;
  root->walk([&](Operation *op) {
    int64_t n = opFlops(op);
    f.total += n;
    if (op->hasAttr(kRecomputedAttr))
      f.recomputed += n;
  });
  return f;
}

// Matrix products: a multiply and an add per term (and one for C).
int64_t MatMulOp::getFlopCount() {
  return 2 * elements(getType()) * cast<ShapedType>(getLhs().getType()).getShape().back();
}

int64_t GemmOp::getFlopCount() {
  auto a = cast<ShapedType>(getA().getType()).getShape();
  int64_t k = getTransA() ? a[0] : a[1];
  return (2 * k + (getC() ? 1 : 0)) * elements(getType());
}

// The product, and one add per element of the summed operand.
int64_t GemmBiasGradOp::getFlopCount() {
  auto a = cast<ShapedType>(getA().getType()).getShape();
  int64_t k = getTransA() ? a[0] : a[1];
  return 2 * k * elements(getWeightGrad().getType()) +
         k * elements(getBiasGrad().getType());
}

// The product, the bias and GELU's eight per element.
int64_t GemmGeluOp::getFlopCount() {
  auto a = cast<ShapedType>(getA().getType()).getShape();
  int64_t k = getTransA() ? a[0] : a[1];
  return (2 * k + (getBias() ? 1 : 0) + 8) * elements(getResult().getType());
}

// The product and the GELU derivative's twelve per element.
int64_t GemmDgeluOp::getFlopCount() {
  auto a = cast<ShapedType>(getA().getType()).getShape();
  int64_t k = getTransA() ? a[0] : a[1];
  return (2 * k + 12) * elements(getResult().getType());
}

// Windows: one term per tap.
int64_t MaxPoolOp::getFlopCount() { return elements(getResult().getType()) * taps(getKernel()); }
int64_t AvgPoolOp::getFlopCount() { return elements(getType()) * taps(getKernel()); }
int64_t AvgPoolGradOp::getFlopCount() { return elements(getGrad().getType()) * taps(getKernel()); }

// The loss's five per logit and its gradient's five.
int64_t SoftmaxCrossEntropyWithGradOp::getFlopCount() { return 10 * elements(getLogits().getType()); }

// Convolutions: a multiply and an add per tap of each output, the same
// products in each direction (elements of dy times those of one filter).
namespace {
int64_t convTerms(Value dy, Value weight) {
  auto w = cast<ShapedType>(weight.getType()).getShape();
  return 2 * elements(dy.getType()) * w[1] * w[2] * w[3];
}
} // namespace
int64_t ConvOp::getFlopCount() { return convTerms(getResult(), getWeight()); }
int64_t ConvDataGradOp::getFlopCount() { return convTerms(getGrad(), getWeight()); }
int64_t ConvFilterGradOp::getFlopCount() { return convTerms(getGrad(), getResult()); }

// Attention: the two products over every (t, s) pair, masked or not, as
// PyTorch's FLOP counter counts them; the backward recomputes the scores
// and makes four more.
namespace {

int64_t attentionPairs(Value q, Value k, AttentionLayout layout) {
  auto qs = cast<ShapedType>(q.getType()).getShape();
  return qs[0] * qs[1] * qs[2] * attentionRows(cast<ShapedType>(k.getType()).getShape(), layout)[2];
}

} // namespace

int64_t AttentionOp::getFlopCount() {
  int64_t d = cast<ShapedType>(getQuery().getType()).getShape()[3];
  int64_t dv = cast<ShapedType>(getValue().getType()).getShape()[3];
  return 2 * attentionPairs(getQuery(), getKey(), getLayout()) * (d + dv);
}

int64_t AttentionGradOp::getFlopCount() {
  int64_t d = cast<ShapedType>(getQuery().getType()).getShape()[3];
  int64_t dv = cast<ShapedType>(getValue().getType()).getShape()[3];
  return 2 * attentionPairs(getQuery(), getKey(), getLayout()) * (3 * d + 2 * dv);
}

} // namespace otc
