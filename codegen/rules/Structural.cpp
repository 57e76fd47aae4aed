// Ops without kernels of their own: constants are literals, reshapes are
// views, and an accumulate is empty when its producer already accumulated.
#include "../Rules.h"

#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {
namespace {

bool nothing(Operation *, Lowering &) { return true; }

bool lowerAccumulate(Operation *op, Lowering &l) {
  auto acc = cast<AccumulateOp>(op);
  if (l.accumulateFused(op))
    return true; // its producer's step already accumulated it
  auto shape = acc.getType().getShape().vec();
  Step &s = l.newStep(Step::Elementwise, op, shape);
  NodeBuilder b(s);
  DimMap map = identityMap(shape.size());
  int g = l.expr(b, acc.getGrad(), map), prior = l.expr(b, acc.getAcc(), map);
  if (g < 0 || prior < 0)
    return false;
  int added = b.binary(Node::Add, prior, g);
  int sum = b.select(b.first(), g, added);
  l.store(b, acc.getResult(), sum, map);
  return true;
}

bool readsGrad(Operation *op, unsigned k) {
  return op->getOperand(k) == cast<AccumulateOp>(op).getGrad();
}

} // namespace

void registerStructuralRules(RuleRegistry &r) {
  r.steps[ConstantOp::getOperationName()] = {nothing, nullptr, StepRule::Output::None};
  r.steps[ReshapeOp::getOperationName()] = {nothing, nullptr, StepRule::Output::None};
  r.steps[AccumulateOp::getOperationName()] = {lowerAccumulate, readsGrad};
}

} // namespace otc
