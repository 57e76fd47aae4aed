// otc-recompute: the backward recomputes forward values from values it
// keeps, instead of keeping them (activation checkpointing). The policies
// differ only in what they keep; one engine clones the rest.
#include "RecomputePlan.h"
#include "otc/Dialect/Helpers.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace otc {
#define GEN_PASS_DEF_RECOMPUTE
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace otc {

/// Megatron's and AOTAutograd's "cheap" class, declared on each op
/// (OpFacts.td): elementwise ops, views and copies, casts, dropout (its mask
/// is regenerated from the same counter) and the normalisation's row
/// kernel. Never GEMMs, convolutions' im2col, pooling, softmax (attention)
/// or reductions.
bool isCheap(Operation *op) {
  auto facts = dyn_cast<OpFactsInterface>(op);
  return facts && facts.getRecomputeClass() == RecomputeClass::Cheap;
}

int64_t valueBytes(Value v) {
  auto t = cast<ShapedType>(v.getType());
  return t.getNumElements() * std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
}

Forward::Forward(func::FuncOp func) {
  Block &body = func.getBody().front();
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), attr::kLossSeed))
      for (Operation *u : arg.getUsers())
        if (!boundary || u->isBeforeInBlock(boundary))
          boundary = u;
  if (!boundary)
    return; // no backward (forward-only)
  for (Operation &op : body) {
    if (&op == boundary)
      break;
    position[&op] = (int)ops.size();
    ops.push_back(&op);
  }
  auto isData = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg ? bool(func.getArgAttr(arg.getArgNumber(), attr::kInput))
               : dataDependent.contains(v);
  };
  for (Operation *op : ops)
    if (!op->hasTrait<OpTrait::ConstantLike>() && llvm::any_of(op->getOperands(), isData))
      for (Value r : op->getResults())
        dataDependent.insert(r);
  for (Operation *op = boundary; op; op = op->getNextNode())
    for (Value o : op->getOperands())
      if (o.getDefiningOp() && contains(o.getDefiningOp()))
        backwardRead.insert(o);
  func.walk([&](AssignOp a) { assigned.insert(a.getTarget()); });
}

bool Forward::mustKeep(Value v) const {
  Operation *def = v.getDefiningOp();
  if (!def || !contains(def) || !dataDependent.contains(v) || !isMemoryEffectFree(def))
    return true;
  return llvm::any_of(def->getOperands(), [&](Value o) { return assigned.contains(o); });
}

bool KeepRule::operator()(Value v) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  bool k = f.mustKeep(v);
  Operation *def = v.getDefiningOp();
  // A value that enters or leaves a segment is kept (a checkpoint); the
  // rest of a segment is recomputed; outside segments, selective.
  if (!k)
    k = f.leaves(v, seg) || (!seg.count(def) && !isCheap(def));
  // A narrowing cast's copy would keep its wider operand instead of it.
  if (!k && isa<CastOp>(def) &&
      cast<ShapedType>(def->getOperand(0).getType()).getElementTypeBitWidth() >
          cast<ShapedType>(v.getType()).getElementTypeBitWidth())
    k = (*this)(def->getOperand(0));
  return memo[v] = k;
}

llvm::DenseSet<Value> checkpoints(const Forward &f, llvm::function_ref<bool(Value)> kept) {
  llvm::DenseSet<Value> out, seen;
  SmallVector<Value> work(f.backwardRead.begin(), f.backwardRead.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (kept(v)) {
      if (v.getDefiningOp() && f.contains(v.getDefiningOp()))
        out.insert(v);
      continue;
    }
    for (Value o : v.getDefiningOp()->getOperands())
      work.push_back(o);
  }
  return out;
}

bool Forward::leaves(Value v, const llvm::DenseMap<Operation *, int> &seg) const {
  auto segmentOf = [&](Operation *op) {
    auto it = seg.find(op);
    return it == seg.end() ? -1 : it->second;
  };
  int own = segmentOf(v.getDefiningOp());
  return llvm::any_of(v.getUsers(),
                      [&](Operation *u) { return contains(u) && segmentOf(u) != own; });
}

} // namespace otc

namespace {

/// Clones into the backward every forward value it reads that `kept` says
/// is not kept, with the operands that are not kept either (depth first,
/// with an explicit stack: chains can be long), just before the first
/// backward op that reads it.
void recompute(func::FuncOp func, const Forward &f, llvm::function_ref<bool(Value)> kept) {
  Block &body = func.getBody().front();
  IRMapping clones; // forward value -> its recomputed copy in the backward
  OpBuilder b(func.getContext());
  auto copyOf = [&](Value v, Operation *user) -> Value {
    SmallVector<std::pair<Value, bool>> stack{{v, false}};
    while (!stack.empty()) {
      auto [cur, expanded] = stack.back();
      if (clones.contains(cur) || kept(cur)) {
        stack.pop_back();
        continue;
      }
      Operation *def = cur.getDefiningOp();
      if (!expanded) {
        stack.back().second = true;
        for (Value o : def->getOperands())
          stack.push_back({o, false});
        continue;
      }
      b.setInsertionPoint(user);
      Operation *copy = b.clone(*def, clones);
      copy->setAttr(kRecomputedAttr, b.getUnitAttr());
      stack.pop_back();
    }
    return clones.lookupOrDefault(v);
  };
  SmallVector<Operation *> backward;
  for (Operation *op = f.boundary; op != body.getTerminator(); op = op->getNextNode())
    backward.push_back(op); // not the return: the loss it returns is the forward's
  for (Operation *op : backward)
    for (OpOperand &use : op->getOpOperands())
      use.set(copyOf(use.get(), op));
  // Originals nothing reads any more (the backward reads the copies).
  for (Operation *op : llvm::reverse(f.ops))
    if (op->use_empty() && isMemoryEffectFree(op))
      op->erase();
}

LogicalResult run(func::FuncOp func, RecomputePolicy policy, StringRef boundary,
                  int64_t layers) {
  Forward f(func);
  if (!f.boundary)
    return success(); // no backward (forward-only)
  llvm::DenseMap<Operation *, int> seg;
  std::string summary = stringifyRecomputePolicy(policy).str();
  int64_t candidates = -1;
  switch (policy) {
  case RecomputePolicy::Blocks:
    if (failed(segmentBlocks(f, func, boundary, seg, summary)))
      return failure();
    break;
  case RecomputePolicy::Sqrt:
    segmentSqrt(f, seg, summary);
    break;
  case RecomputePolicy::Budget:
    segmentBudget(f, layers, seg, summary, candidates);
    break;
  case RecomputePolicy::None:
  case RecomputePolicy::Selective:
    break;
  }
  KeepRule kept(f, seg);
  recompute(func, f, kept);
  OpBuilder b(func.getContext());
  func->setAttr(kRecomputePolicy, RecomputePolicyAttr::get(func.getContext(), policy));
  func->setAttr(kRecomputeSummary, b.getStringAttr(summary));
  if (candidates >= 0)
    func->setAttr(kRecomputeLayers, b.getI64IntegerAttr(candidates));
  return success();
}

struct RecomputePass : otc::impl::RecomputeBase<RecomputePass> {
  using RecomputeBase::RecomputeBase;
  void runOnOperation() override {
    if (layers < 0) {
      getOperation().emitError("recompute layers must not be negative");
      return signalPassFailure();
    }
    if (policy == RecomputePolicy::None)
      return;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(run(func, policy, boundary, layers)))
        return signalPassFailure();
  }
};

} // namespace
