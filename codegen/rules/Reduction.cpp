// Sum, mean and max over any axes: one Reduce step. A bias gradient stores
// through Lowering::store, which accumulates it into its gradient buffer in
// the same step (first ? r : acc + r).
#include "../Rules.h"

#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {
namespace {

template <class OpTy>
bool lowerReduce(Operation *op, Lowering &l) {
  auto r = cast<OpTy>(op);
  auto in = cast<RankedTensorType>(r.getInput().getType()).getShape().vec();
  size_t outRank = cast<RankedTensorType>(r.getType()).getRank();
  std::vector<bool> reduced(in.size(), false);
  int64_t count = 1;
  for (int64_t a : r.getAxes()) {
    reduced[a] = true;
    count *= in[a];
  }
  // The result's dims are the kept ones (or all, with keepdims).
  DimMap outMap;
  for (size_t d = 0; d < in.size(); ++d)
    if (!reduced[d] || outRank == in.size())
      outMap.push_back(reduced[d] ? -1 : (int)d);
  bool any = llvm::is_contained(reduced, true);
  Step &s = l.newStep(any ? Step::Reduce : Step::Elementwise, op, in, reduced);
  NodeBuilder b(s);
  int x = l.expr(b, r.getInput(), identityMap(in.size()));
  if (x < 0)
    return false;
  auto kind = std::is_same_v<OpTy, ReduceMaxOp> ? Reduction::Max : Reduction::Sum;
  int result = any ? b.reduce(kind, x) : x;
  if (std::is_same_v<OpTy, ReduceMeanOp>)
    result = b.binary(Node::Mul, result, b.constant(1.0 / double(count)));
  l.store(b, r.getResult(), result, outMap);
  return true;
}

bool readsInput(Operation *, unsigned k) { return k == 0; }

} // namespace

void registerReductionRules(RuleRegistry &r) {
  r.steps[ReduceSumOp::getOperationName()] = {lowerReduce<ReduceSumOp>, readsInput};
  r.steps[ReduceMeanOp::getOperationName()] = {lowerReduce<ReduceMeanOp>, readsInput};
  r.steps[ReduceMaxOp::getOperationName()] = {lowerReduce<ReduceMaxOp>, readsInput};
}

} // namespace otc
