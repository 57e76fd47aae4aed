// otc-recompute: the backward recomputes cheap forward values from values it
// keeps anyway, instead of keeping them (activation checkpointing).
#include "otc/Dialect/Helpers.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace otc {
#define GEN_PASS_DEF_RECOMPUTE
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// `selective`: ops that cost a pass over memory, not arithmetic (Megatron's
/// and AOTAutograd's "cheap" class): elementwise ops, views and copies,
/// casts, dropout (its mask is regenerated from the same counter) and the
/// normalisation's row kernel. Never GEMMs, convolutions' im2col, pooling,
/// softmax (attention) or reductions.
bool isCheap(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, NegOp, ReluOp, TanhOp, SigmoidOp, ExpOp, LogOp,
             SqrtOp, ReciprocalOp, AbsOp, PowOp, ErfOp, SignOp, IdentityOp, CompareOp, NotOp,
             AndOp, OrOp, WhereOp, DropoutOp, CastOp, TransposeOp, ReshapeOp, BroadcastToOp,
             NormalizeOp>(op);
}

LogicalResult recomputeSelective(func::FuncOp func) {
  Block &body = func.getBody().front();
  // The backward begins at the first op that reads the loss seed: autodiff
  // appends every gradient op after the forward.
  Operation *boundary = nullptr;
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), attr::kLossSeed))
      for (Operation *u : arg.getUsers())
        if (!boundary || u->isBeforeInBlock(boundary))
          boundary = u;
  if (!boundary)
    return success(); // no backward (forward-only)
  llvm::DenseSet<Operation *> forward;
  for (Operation &op : body) {
    if (&op == boundary)
      break;
    forward.insert(&op);
  }
  // Parameters the step assigns (BatchNorm's running statistics) change
  // between the forward and a copy placed in the backward.
  llvm::DenseSet<Value> assigned;
  func.walk([&](AssignOp a) { assigned.insert(a.getTarget()); });
  auto recomputable = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || !forward.contains(def) || !isCheap(def))
      return false; // kept: an argument, a GEMM's result, a reduction's...
    // A narrowing cast's copy would keep its wider operand instead of it.
    auto bits = [](Value x) { return cast<ShapedType>(x.getType()).getElementTypeBitWidth(); };
    if (auto c = dyn_cast<CastOp>(def); c && bits(c.getInput()) > bits(v))
      return false;
    return llvm::none_of(def->getOperands(), [&](Value o) { return assigned.contains(o); });
  };
  IRMapping clones; // forward value -> its recomputed copy in the backward
  OpBuilder b(func.getContext());
  // The copy of forward value `v`, made (with its cheap operands', depth
  // first with an explicit stack: chains can be long) just before `user`,
  // the first backward op that reads it.
  auto recompute = [&](Value v, Operation *user) -> Value {
    SmallVector<std::pair<Value, bool>> stack{{v, false}};
    while (!stack.empty()) {
      auto [cur, expanded] = stack.back();
      if (clones.contains(cur) || !recomputable(cur)) {
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
      copy->setAttr("otc.recomputed", b.getUnitAttr());
      stack.pop_back();
    }
    return clones.lookupOrDefault(v);
  };
  SmallVector<Operation *> backward;
  for (Operation *op = boundary; op && op != body.getTerminator(); op = op->getNextNode())
    backward.push_back(op); // not the return: the loss it returns is the forward's
  for (Operation *op : backward)
    for (OpOperand &use : op->getOpOperands())
      use.set(recompute(use.get(), op));
  // Originals nothing reads any more (the backward reads the copies): cheap
  // ops have no side effects, so they go.
  SmallVector<Operation *> order(forward.begin(), forward.end());
  llvm::sort(order, [](Operation *a, Operation *c) { return c->isBeforeInBlock(a); });
  for (Operation *op : order)
    if (isCheap(op) && op->use_empty())
      op->erase();
  return success();
}

struct RecomputePass : otc::impl::RecomputeBase<RecomputePass> {
  using RecomputeBase::RecomputeBase;
  void runOnOperation() override {
    if (policy != "none" && policy != "selective") {
      getOperation().emitError("unknown recompute policy '") << policy << "'";
      return signalPassFailure();
    }
    if (policy == "none")
      return;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(recomputeSelective(func)))
        return signalPassFailure();
  }
};

} // namespace
