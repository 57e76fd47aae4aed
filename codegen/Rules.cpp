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
    registerRecurrentRules(r);
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

bool lowerLibraryCall(mlir::Operation *op, Lowering &l, LibraryCall::Kernel kernel,
                      std::vector<int64_t> constants, llvm::ArrayRef<mlir::Value> inputs,
                      llvm::ArrayRef<int> scratch, llvm::ArrayRef<mlir::Value> results,
                      std::vector<LibraryCall::Scalar> scalars) {
  LibraryCall c;
  c.kernel = kernel;
  c.constants = std::move(constants);
  std::vector<int64_t> offsets;
  // A row view is its base's buffer from an offset (the pitch is the rule's
  // constant); a result written so is its base's owner's to record.
  auto add = [&](mlir::Value v, bool result) {
    const RowView *view = l.rowView(v);
    int b = view ? l.buffer(view->base, op) : result ? l.ownResult(v, op) : l.buffer(v, op);
    c.buffers.push_back(b);
    offsets.push_back(view ? view->offset : 0);
    return b >= 0;
  };
  for (mlir::Value v : inputs)
    if (v && !add(v, false))
      return false;
  c.buffers.insert(c.buffers.end(), scratch.begin(), scratch.end());
  offsets.resize(c.buffers.size(), 0);
  for (mlir::Value v : results)
    if (!add(v, true))
      return false;
  if (llvm::any_of(offsets, [](int64_t o) { return o != 0; }))
    c.offsets = std::move(offsets);
  c.outputs = int(scratch.size() + results.size());
  c.scalars = std::move(scalars);
  l.newStep(Step::LibraryCall, op).call = c;
  return true;
}

} // namespace otc
