// Matrix products: one Gemm step each. A weight gradient that feeds an
// accumulate is written straight into the gradient buffer through beta. A
// Linear's bias, and its gradient, are the step's epilogue.
#include "../Rules.h"

#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {
namespace {

/// Whether `gemm`'s C is a bias its epilogue reads as a buffer.
bool biasEpilogue(GemmOp gemm) {
  Value c = gemm.getC();
  auto b = shapeOf(gemm.getB());
  return c && shapeOf(c).size() == 1 && shapeOf(c)[0] == (gemm.getTransB() ? b[0] : b[1]) &&
         gemm.getBeta().convertToDouble() == 1.0;
}

/// Fills the operand and result buffers of `g` for `op` with result `out`.
bool finish(Operation *op, Value a, Value b, Value out, otc::Gemm g, Lowering &l) {
  g.a = l.buffer(a, op);
  g.b = l.buffer(b, op);
  if (g.a < 0 || g.b < 0)
    return false;
  const auto &bufs = l.program().buffers;
  if (bufs[g.a].type != bufs[g.b].type || !isFloat(bufs[g.a].type))
    return l.fail(op, "a matrix product needs float operands of one element type");
  if (int acc = l.accumulatorOf(op); acc >= 0) {
    g.c = acc;
    g.beta = otc::Gemm::Beta::FirstZeroElseOne;
  } else {
    g.c = l.ownResult(out, op);
    if (g.c < 0)
      return false;
  }
  // Padded rows (Lowering::padRows): the pitch is the leading dimension.
  g.lda = bufs[g.a].pitch;
  g.ldb = bufs[g.b].pitch;
  g.ldc = bufs[g.c].pitch;
  l.newStep(Step::Gemm, op).gemm = g;
  return true;
}

otc::Gemm shapeOf2d(Value a, Value b, bool transA, bool transB) {
  auto as = shapeOf(a), bs = shapeOf(b);
  otc::Gemm g;
  g.transA = transA;
  g.transB = transB;
  g.m = transA ? as[1] : as[0];
  g.n = transB ? bs[0] : bs[1];
  g.k = transA ? as[0] : as[1];
  return g;
}

bool lowerGemm(Operation *op, Lowering &l) {
  auto gemm = cast<GemmOp>(op);
  otc::Gemm g = shapeOf2d(gemm.getA(), gemm.getB(), gemm.getTransA(), gemm.getTransB());
  g.alpha = gemm.getAlpha().convertToDouble();
  if (Value c = gemm.getC()) {
    double beta = gemm.getBeta().convertToDouble();
    if (biasEpilogue(gemm)) {
      // A Linear's bias: the product's epilogue.
      g.bias = l.buffer(c, op);
      if (g.bias < 0)
        return false;
    } else {
      // beta * C, broadcast, written first; the product then adds into it.
      Step &s = l.newStep(Step::Elementwise, op, {g.m, g.n});
      NodeBuilder nb(s);
      int cn = l.expr(nb, c, broadcastMap(shapeOf(c), {g.m, g.n}, {0, 1}));
      if (cn < 0)
        return false;
      if (beta != 1.0)
        cn = nb.binary(Node::Mul, nb.constant(beta), cn);
      l.store(nb, gemm.getResult(), cn, {0, 1});
      g.beta = otc::Gemm::Beta::One;
    }
  }
  return finish(op, gemm.getA(), gemm.getB(), gemm.getResult(), g, l);
}

bool lowerGemmGelu(Operation *op, Lowering &l) {
  auto gemm = cast<GemmGeluOp>(op);
  otc::Gemm g = shapeOf2d(gemm.getA(), gemm.getB(), gemm.getTransA(), gemm.getTransB());
  g.alpha = gemm.getAlpha().convertToDouble();
  g.gelu = true;
  if (Value bias = gemm.getBias())
    if ((g.bias = l.buffer(bias, op)) < 0)
      return false;
  g.aux = l.ownResult(gemm.getPreactivation(), op);
  if (g.aux < 0)
    return false;
  return finish(op, gemm.getA(), gemm.getB(), gemm.getResult(), g, l);
}

bool lowerGemmDgelu(Operation *op, Lowering &l) {
  auto gemm = cast<GemmDgeluOp>(op);
  otc::Gemm g = shapeOf2d(gemm.getA(), gemm.getB(), gemm.getTransA(), gemm.getTransB());
  g.alpha = gemm.getAlpha().convertToDouble();
  g.dgelu = true;
  if ((g.aux = l.buffer(gemm.getPreactivation(), op)) < 0)
    return false;
  return finish(op, gemm.getA(), gemm.getB(), gemm.getResult(), g, l);
}

bool lowerGemmBiasGrad(Operation *op, Lowering &l) {
  auto gemm = cast<GemmBiasGradOp>(op);
  otc::Gemm g = shapeOf2d(gemm.getA(), gemm.getB(), gemm.getTransA(), gemm.getTransB());
  g.biasGradOf = gemm.getBiasOf() == BiasOperand::A ? otc::Gemm::BiasGradOf::A
                                                    : otc::Gemm::BiasGradOf::B;
  g.biasGrad = l.ownResult(gemm.getBiasGrad(), op);
  if (g.biasGrad < 0)
    return false;
  return finish(op, gemm.getA(), gemm.getB(), gemm.getWeightGrad(), g, l);
}

bool lowerMatMul(Operation *op, Lowering &l) {
  auto mm = cast<MatMulOp>(op);
  auto a = shapeOf(mm.getLhs()), b = shapeOf(mm.getRhs());
  otc::Gemm g;
  g.m = a[a.size() - 2];
  g.k = a.back();
  g.n = b.back();
  g.batch = cast<RankedTensorType>(mm.getLhs().getType()).getNumElements() / (g.m * g.k);
  g.strideA = g.m * g.k;
  g.strideB = g.k * g.n;
  g.strideC = g.m * g.n;
  // An operand that is a transpose of its last two dims reads the
  // transpose's input through the trans flag (Lowering::transposedView).
  Value lhs = mm.getLhs(), rhs = mm.getRhs();
  if (Value stored = l.transposedView(lhs))
    lhs = stored, g.transA = true;
  if (Value stored = l.transposedView(rhs))
    rhs = stored, g.transB = true;
  if (b.size() == 2) { // one matrix shared by every leading index
    if (!g.transA) {
      g.m *= g.batch;
      g.batch = 1;
    } else {
      g.strideB = 0; // op(A) per index is not one matrix's rows
    }
  }
  return finish(op, lhs, rhs, mm.getResult(), g, l);
}

bool readsOperands(Operation *, unsigned k) { return k < 2; }

/// A GEMM accumulates through beta when neither C nor a bias takes it.
bool withoutC(Operation *op) { return !cast<GemmOp>(op).getC(); }

bool readsC(Operation *op, unsigned k) {
  auto g = cast<GemmOp>(op);
  Value v = op->getOperand(k);
  return v == g.getC() && v != g.getA() && v != g.getB() && !biasEpilogue(g);
}

} // namespace

void registerLinalgRules(RuleRegistry &r) {
  auto own = StepRule::Output::Own;
  r.steps[GemmOp::getOperationName()] = {lowerGemm, readsC, own, withoutC};
  StepRule matmul{lowerMatMul, nullptr, own, always};
  matmul.readsTransposed = readsOperands;
  r.steps[MatMulOp::getOperationName()] = matmul;
  // The weight gradient accumulates through beta; the bias gradient, which
  // the epilogue writes, through an accumulate step of its own.
  r.steps[GemmBiasGradOp::getOperationName()] = {lowerGemmBiasGrad, nullptr, own, always};
  r.steps[GemmGeluOp::getOperationName()] = {lowerGemmGelu, nullptr, own};
  r.steps[GemmDgeluOp::getOperationName()] = {lowerGemmDgelu, nullptr, own};
}

} // namespace otc
