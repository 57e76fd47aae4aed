// The compiler's FLOP count of a training step, by op: what --recompute's
// cost is measured in and auto-fit's throughput estimate starts from.
#include "otc/Dialect/Helpers.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace otc {

namespace {

int64_t elements(Type t) {
  auto s = dyn_cast<ShapedType>(t);
  return s && s.hasStaticShape() ? s.getNumElements() : 0;
}

} // namespace

int64_t opFlops(Operation *op) {
  // Matrix products: a multiply and an add per term.
  if (auto m = dyn_cast<MatMulOp>(op))
    return 2 * elements(m.getType()) * cast<ShapedType>(m.getLhs().getType()).getShape().back();
  if (auto g = dyn_cast<GemmOp>(op)) {
    auto a = cast<ShapedType>(g.getA().getType()).getShape();
    int64_t k = g.getTransA() ? a[0] : a[1];
    return (2 * k + (g.getC() ? 1 : 0)) * elements(g.getType());
  }
  // Data movement computes nothing.
  if (isa<ConstantOp, TransposeOp, ReshapeOp, BroadcastToOp, SliceOp, SliceGradOp, ConcatOp,
          GatherOp, IdentityOp, CastOp, Im2ColOp, AssignOp>(op))
    return 0;
  if (op->getNumOperands() == 0 || op->getNumResults() == 0)
    return 0;
  int64_t in = elements(op->getOperand(0).getType());
  // Row kernels, per element: max, subtract, exp, sum, scale (softmax);
  // mean, subtract, square, sum, scale (normalize); and their gradients.
  if (isa<SoftmaxOp, LogSoftmaxOp, NormalizeOp, SoftmaxCrossEntropyOp>(op))
    return 5 * in;
  if (isa<NormalizeGradOp>(op))
    return 8 * elements(op->getResult(0).getType());
  if (auto g = dyn_cast<SoftmaxCrossEntropyGradOp>(op))
    return 5 * elements(g.getLogits().getType());
  // Windows: one term per tap.
  auto taps = [](ArrayRef<int64_t> kernel) {
    int64_t n = 1;
    for (int64_t k : kernel)
      n *= k;
    return n;
  };
  if (auto p = dyn_cast<MaxPoolOp>(op))
    return elements(p.getResult().getType()) * taps(p.getKernel());
  if (auto p = dyn_cast<AvgPoolOp>(op))
    return elements(p.getType()) * taps(p.getKernel());
  if (auto p = dyn_cast<MaxPoolGradOp>(op))
    return elements(p.getGrad().getType());
  if (auto p = dyn_cast<AvgPoolGradOp>(op))
    return elements(p.getGrad().getType()) * taps(p.getKernel());
  // Reductions and scatters: one add per element read.
  if (isa<ReduceSumOp, ReduceMeanOp, Col2ImOp, GatherGradOp>(op))
    return in;
  // Elementwise: one per result element.
  return elements(op->getResult(0).getType());
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
