// Ops without kernels of their own: constants are literals, reshapes are
// views, an accumulate is empty when its producer already accumulated, and an
// assign stores into a parameter.
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

// An assign stores its value into the parameter's own memory.
bool lowerAssign(Operation *op, Lowering &l) {
  auto a = cast<AssignOp>(op);
  int target = l.buffer(a.getTarget(), op);
  if (target < 0)
    return false;
  auto shape = a.getTarget().getType().getShape().vec();
  Step &s = l.newStep(Step::Elementwise, op, shape);
  NodeBuilder b(s);
  int v = l.expr(b, a.getValue(), identityMap(shape.size()));
  if (v < 0)
    return false;
  b.store(target, stridesOf(shape), v);
  return true;
}

bool readsValue(Operation *op, unsigned k) { return k == 1; }

bool readsGrad(Operation *op, unsigned k) {
  return op->getOperand(k) == cast<AccumulateOp>(op).getGrad();
}

} // namespace

void registerStructuralRules(RuleRegistry &r) {
  r.steps[ConstantOp::getOperationName()] = {nothing, nullptr, StepRule::Output::None};
  r.steps[ReshapeOp::getOperationName()] = {nothing, nullptr, StepRule::Output::None};
  r.steps[AccumulateOp::getOperationName()] = {lowerAccumulate, readsGrad};
  r.steps[AssignOp::getOperationName()] = {lowerAssign, readsValue, StepRule::Output::None};
}

} // namespace otc
