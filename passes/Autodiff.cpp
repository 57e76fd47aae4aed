// Reverse-mode differentiation of a loss function, one VJP rule per op.
#include "otc/Dialect/Helpers.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace otc {
#define GEN_PASS_DEF_AUTODIFF
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// Values that depend on a trainable argument: only these need gradients.
llvm::DenseSet<Value> findActiveValues(func::FuncOp func) {
  llvm::DenseSet<Value> active;
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), attr::kTrainable))
      active.insert(arg);
  func.walk([&](Operation *op) {
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return active.contains(v); }))
      active.insert(op->result_begin(), op->result_end());
  });
  return active;
}

/// `g` with rows `rows` of dim 0 set to zero: a where against a constant
/// [R, 1, ...] mask, broadcast along the other dims.
Value withoutRows(OpBuilder &b, Value g, ArrayRef<int64_t> rows) {
  auto type = cast<RankedTensorType>(g.getType());
  SmallVector<int64_t> shape(type.getRank(), 1);
  shape[0] = type.getDimSize(0);
  SmallVector<bool> keep(shape[0], true);
  for (int64_t r : rows)
    keep[r] = false;
  auto maskType = RankedTensorType::get(shape, b.getI1Type());
  Value mask = ConstantOp::create(b, g.getLoc(), DenseElementsAttr::get(maskType, ArrayRef<bool>(keep)));
  Value zero = scalarConstant(b, g.getLoc(), type.getElementType(), 0.0);
  return WhereOp::create(b, g.getLoc(), mask, g, zero);
}

/// The --fixed-rows of `operand` when `op` looks it up (a Gather of the
/// parameter): as PyTorch's padding_idx, those rows get no gradient from
/// the lookup, while other uses (a tied head) still train them.
ArrayRef<int64_t> fixedRowsOf(Operation *op, Value operand) {
  auto gather = dyn_cast<GatherOp>(op);
  auto arg = dyn_cast<BlockArgument>(operand);
  if (!gather || !arg || gather.getData() != operand)
    return {};
  auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto rows = func.getArgAttrOfType<DenseI64ArrayAttr>(arg.getArgNumber(), attr::kFixedRows);
  return rows ? rows.asArrayRef() : ArrayRef<int64_t>();
}

LogicalResult differentiate(func::FuncOp func, unsigned lossIndex) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("autodiff needs a single-block function");
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  Value loss = ret.getOperand(lossIndex);
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return func.emitError("the loss must be a scalar float tensor, got ")
           << loss.getType();

  MLIRContext *ctx = func.getContext();
  OpBuilder b(ret);
  unsigned seedIndex = func.getNumArguments();
  if (failed(func.insertArgument(
          seedIndex, lossType,
          DictionaryAttr::get(ctx, {b.getNamedAttr(attr::kLossSeed,
                                                   b.getUnitAttr())}),
          func.getLoc())))
    return failure();

  llvm::DenseSet<Value> active = findActiveValues(func);
  llvm::DenseMap<Value, Value> grads;
  grads[loss] = func.getArgument(seedIndex);
  auto addGrad = [&](Value v, Value g) {
    Value &slot = grads[v];
    slot = slot ? AddOp::create(b, g.getLoc(), slot, g).getResult() : g;
  };

  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads.lookup(r));
      any |= bool(resultGrads.back());
    }
    if (!any || !llvm::any_of(op->getOperands(),
                              [&](Value v) { return active.contains(v); }))
      continue;
    // Comparisons, integer ops and gradients pass no gradient on.
    if (op->hasTrait<trait::NotDifferentiable>())
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitOpError("has no gradient rule");
    SmallVector<Value> operandGrads;
    b.setInsertionPoint(ret);
    if (failed(rule.buildGradients(b, resultGrads, operandGrads)))
      return failure();
    // A rule must give one gradient (or none) per operand, of its type.
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("gradient rule returned ")
             << operandGrads.size() << " gradients for " << op->getNumOperands()
             << " operands";
    for (auto [operand, g] : llvm::zip_equal(op->getOperands(), operandGrads)) {
      if (g && g.getType() != operand.getType())
        return op->emitOpError("gradient rule returned ")
               << g.getType() << " for an operand of type " << operand.getType();
      if (!g || !active.contains(operand))
        continue;
      ArrayRef<int64_t> fixed = fixedRowsOf(op, operand);
      addGrad(operand, fixed.empty() ? g : withoutRows(b, g, fixed));
    }
  }

  // Every trainable argument the loss reaches through differentiable ops gets
  // a gradient result. One it does not (a mask read only through
  // comparisons, or an unused tensor) stops being trainable: as with
  // PyTorch's grad of None, the optimizer then leaves it alone, weight decay
  // included.
  b.setInsertionPoint(ret);
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Type> newTypes;
  SmallVector<DictionaryAttr> newAttrs;
  for (BlockArgument arg : func.getArguments()) {
    if (!func.getArgAttr(arg.getArgNumber(), attr::kParam) ||
        !func.getArgAttr(arg.getArgNumber(), attr::kTrainable))
      continue;
    Value g = grads.lookup(arg);
    if (!g) {
      func.removeArgAttr(arg.getArgNumber(), attr::kTrainable);
      continue;
    }
    results.push_back(g);
    newTypes.push_back(g.getType());
    // The parameter by its argument index: a binding, not a name to match.
    newAttrs.push_back(DictionaryAttr::get(
        ctx, {b.getNamedAttr(attr::kGradOf, b.getI64IntegerAttr(arg.getArgNumber()))}));
  }
  ret->setOperands(results);
  SmallVector<unsigned> indices(newTypes.size(), func.getNumResults());
  return func.insertResults(indices, newTypes, newAttrs);
}

struct AutodiffPass : otc::impl::AutodiffBase<AutodiffPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      for (unsigned i = 0; i < func.getNumResults(); ++i) {
        if (!func.getResultAttr(i, attr::kLoss))
          continue;
        if (failed(differentiate(func, i)))
          return signalPassFailure();
        break;
      }
    }
  }
};

} // namespace
