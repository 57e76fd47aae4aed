// The compiler's FLOP count of a training step, by op: what --recompute's
// cost is measured in and auto-fit's throughput estimate starts from.
#include "otc/Dialect/Helpers.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace otc {

int64_t opFlops(Operation *op) {
  // Each otc op declares its count (OpFacts.td); func.return computes nothing.
  auto facts = dyn_cast<OpFactsInterface>(op);
  return facts ? facts.getFlopCount() : 0;
}

StepFlops countFlops(func::FuncOp func) {
  StepFlops f;
  func.walk([&](Operation *op) {
    int64_t n = opFlops(op);
    f.total += n;
    if (op->hasAttr(kRecomputedAttr))
      f.recomputed += n;
  });
  return f;
}

} // namespace otc
