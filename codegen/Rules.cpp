// The rule registry and the helpers rules share.
#include "Rules.h"

namespace otc {

const RuleRegistry &RuleRegistry::get() {
  static const RuleRegistry registry = [] {
    RuleRegistry r;
    registerElementwiseRules(r);
    registerLinalgRules(r);
    registerReductionRules(r);
    registerLossRules(r);
    registerNormalizationRules(r);
    registerDataMovementRules(r);
    registerWindowRules(r);
    registerRotaryRules(r);
    registerAttentionRules(r);
    registerStructuralRules(r);
    return r;
  }();
  return registry;
}

const ElementwiseRule *RuleRegistry::elementwiseRule(mlir::Operation *op) const {
  auto it = elementwise.find(op->getName().getStringRef());
  return it == elementwise.end() ? nullptr : &it->second;
}

const StepRule *RuleRegistry::stepRule(mlir::Operation *op) const {
  auto it = steps.find(op->getName().getStringRef());
  return it == steps.end() ? nullptr : &it->second;
}

DimMap broadcastMap(llvm::ArrayRef<int64_t> operandShape,
                    llvm::ArrayRef<int64_t> resultShape, const DimMap &result) {
  DimMap m(operandShape.size(), -1);
  size_t lead = resultShape.size() - operandShape.size();
  for (size_t j = 0; j < operandShape.size(); ++j)
    if (!(operandShape[j] == 1 && resultShape[j + lead] != 1))
      m[j] = result[j + lead];
  return m;
}

DimMap identityMap(size_t rank) {
  DimMap m(rank);
  for (size_t j = 0; j < rank; ++j)
    m[j] = (int)j;
  return m;
}

bool lowerAsElementwise(mlir::Operation *op, Lowering &l) {
  mlir::Value r = op->getResult(0);
  auto shape = mlir::cast<mlir::RankedTensorType>(r.getType()).getShape().vec();
  Step &s = l.newStep(Step::Elementwise, op, shape);
  NodeBuilder b(s);
  DimMap map = identityMap(shape.size());
  int n = l.expr(b, r, map, /*compute=*/true);
  if (n < 0)
    return false;
  l.store(b, r, n, map);
  return true;
}

} // namespace otc
