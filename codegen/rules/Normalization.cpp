// Softmax and log-softmax: one RowReduce step over the axis. Each row's max,
// then the sum of exp(x - max), then the row again for the result.
#include "../Rules.h"

#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {
namespace {

template <class OpTy, bool Log>
bool lowerSoftmax(Operation *op, Lowering &l) {
  auto sm = cast<OpTy>(op);
  auto shape = cast<RankedTensorType>(sm.getType()).getShape().vec();
  std::vector<bool> reduced(shape.size(), false);
  reduced[sm.getAxis()] = true;
  Step &s = l.newStep(Step::RowReduce, op, shape, reduced);
  NodeBuilder b(s);
  DimMap map = identityMap(shape.size());
  int x = l.expr(b, sm.getInput(), map);
  if (x < 0)
    return false;
  int shifted = b.binary(Node::Sub, x, b.reduce(Reduction::Max, x));
  int e = b.unary(Node::Exp, shifted);
  int sum = b.reduce(Reduction::Sum, e);
  int y = Log ? b.binary(Node::Sub, shifted, b.unary(Node::Log, sum))
              : b.binary(Node::Div, e, sum);
  l.store(b, sm.getResult(), y, map);
  return true;
}

bool readsInput(Operation *, unsigned k) { return k == 0; }

} // namespace

void registerNormalizationRules(RuleRegistry &r) {
  r.steps[SoftmaxOp::getOperationName()] = {lowerSoftmax<SoftmaxOp, false>, readsInput};
  r.steps[LogSoftmaxOp::getOperationName()] = {lowerSoftmax<LogSoftmaxOp, true>, readsInput};
}

} // namespace otc
