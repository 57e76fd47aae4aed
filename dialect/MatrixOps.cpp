// Matrix products: shape inference and gradient rules.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace otc;

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor a, SmallVectorImpl<Type> &types) {
  auto lt = tensorType(a.getLhs()), rt = tensorType(a.getRhs());
  ArrayRef<int64_t> l = lt.getShape(), r = rt.getShape();
  if (l.size() < 2 || r.size() < 2)
    return emitOptionalError(loc, "matmul operands must have rank >= 2, got ",
                             lt, " and ", rt);
  if (r.size() != 2 && l.drop_back(2) != r.drop_back(2))
    return emitOptionalError(loc, "matmul rhs ", rt,
                             " must be 2-D or share the leading dimensions of ",
                             lt);
  if (l.back() != r[r.size() - 2])
    return emitOptionalError(loc, "matmul contraction sizes differ: ", lt,
                             " and ", rt);
  SmallVector<int64_t> shape(l.drop_back());
  shape.push_back(r.back());
  types.push_back(RankedTensorType::get(shape, lt.getElementType()));
  return success();
}

static Value swapLastTwo(OpBuilder &b, Location loc, Value v) {
  int64_t rank = tensorType(v).getRank();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(b, loc, v, b.getDenseI64ArrayAttr(perm));
}

static Value gemm(OpBuilder &b, Location loc, Value A, Value B, bool ta,
                  bool tb, double alpha) {
  return GemmOp::create(b, loc, A, B, Value(), ta, tb, llvm::APFloat(alpha),
                        llvm::APFloat(1.0));
}

static Value flattenToMatrix(OpBuilder &b, Location loc, Value v) {
  auto t = tensorType(v);
  int64_t cols = t.getShape().back();
  auto type = RankedTensorType::get({t.getNumElements() / cols, cols},
                                    t.getElementType());
  return ReshapeOp::create(b, loc, type, v);
}

namespace {
/// matmul(x, transpose(w)) with a 2-D w is a gemm with trans_b over the
/// rows of x, so the transposed copy is never made. PyTorch's exporter
/// writes Linear on 3-D inputs in this form, and matmul's input gradient
/// has it too.
struct MatMulOfTransposed : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp op, PatternRewriter &rw) const override {
    auto t = op.getRhs().getDefiningOp<TransposeOp>();
    if (!t || tensorType(op.getRhs()).getRank() != 2)
      return failure();
    Location loc = op.getLoc();
    Value y = gemm(rw, loc, flattenToMatrix(rw, loc, op.getLhs()), t.getInput(),
                   /*ta=*/false, /*tb=*/true, 1.0);
    rw.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), y);
    return success();
  }
};
} // namespace

void MatMulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<MatMulOfTransposed>(ctx);
}

// dA = dY * B^T; dB = A^T * dY, summed over the leading dimensions when B is
// shared by all of them.
LogicalResult MatMulOp::buildGradients(OpBuilder &b, ValueRange dy,
                                       SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value lhs = getLhs(), rhs = getRhs(), g = dy[0];
  grads.push_back(MatMulOp::create(b, loc, g, swapLastTwo(b, loc, rhs)));
  if (tensorType(rhs).getRank() == 2)
    grads.push_back(gemm(b, loc, flattenToMatrix(b, loc, lhs),
                         flattenToMatrix(b, loc, g), /*ta=*/true, /*tb=*/false,
                         1.0));
  else
    grads.push_back(MatMulOp::create(b, loc, swapLastTwo(b, loc, lhs), g));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc, Adaptor a,
                                       SmallVectorImpl<Type> &types) {
  auto at = tensorType(a.getA()), bt = tensorType(a.getB());
  if (at.getRank() != 2 || bt.getRank() != 2)
    return emitOptionalError(loc, "gemm operands must be 2-D, got ", at,
                             " and ", bt);
  int64_t m = at.getDimSize(a.getTransA() ? 1 : 0);
  int64_t ka = at.getDimSize(a.getTransA() ? 0 : 1);
  int64_t kb = bt.getDimSize(a.getTransB() ? 1 : 0);
  int64_t n = bt.getDimSize(a.getTransB() ? 0 : 1);
  if (ka != kb)
    return emitOptionalError(loc, "gemm contraction sizes differ: ", ka,
                             " vs ", kb);
  if (at.getElementType() != bt.getElementType())
    return emitOptionalError(loc, "gemm operand element types differ");
  if (Value c = a.getC()) {
    auto ct = tensorType(c);
    if (!broadcastsTo(ct.getShape(), {m, n}))
      return emitOptionalError(loc, "gemm C of type ", ct,
                               " does not broadcast to ", m, "x", n);
  }
  types.push_back(RankedTensorType::get({m, n}, at.getElementType()));
  return success();
}

// With Y = alpha op(A) op(B) + beta C, each operand's gradient is again one
// gemm whose transpose flags are chosen so no transpose is materialised.
LogicalResult GemmOp::buildGradients(OpBuilder &b, ValueRange dy,
                                     SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value g = dy[0], A = getA(), B = getB();
  bool ta = getTransA(), tb = getTransB();
  double alpha = getAlpha().convertToDouble();
  if (!ta)
    grads.push_back(gemm(b, loc, g, B, false, !tb, alpha));
  else
    grads.push_back(gemm(b, loc, B, g, tb, true, alpha));
  if (!tb)
    grads.push_back(gemm(b, loc, A, g, !ta, false, alpha));
  else
    grads.push_back(gemm(b, loc, g, A, true, ta, alpha));
  if (Value c = getC()) {
    Value dc = g;
    double beta = getBeta().convertToDouble();
    if (beta != 1.0)
      dc = MulOp::create(b, loc, g,
                         scalarConstant(b, loc, tensorType(g).getElementType(), beta));
    grads.push_back(sumToShape(b, loc, dc, tensorType(c)));
  }
  return success();
}

/// The fused GEMMs' operands: 2-D, of one type, with equal contraction
/// sizes; `m` and `n` are op(A)'s rows and op(B)'s columns.
template <typename OpTy>
static LogicalResult verifyProduct(OpTy op, int64_t &m, int64_t &n) {
  auto at = tensorType(op.getA()), bt = tensorType(op.getB());
  if (at.getRank() != 2 || bt.getRank() != 2)
    return op.emitOpError("operands must be 2-D, got ") << at << " and " << bt;
  if (at.getElementType() != bt.getElementType())
    return op.emitOpError("operand element types differ");
  m = at.getDimSize(op.getTransA() ? 1 : 0);
  n = bt.getDimSize(op.getTransB() ? 0 : 1);
  int64_t ka = at.getDimSize(op.getTransA() ? 0 : 1), kb = bt.getDimSize(op.getTransB() ? 1 : 0);
  if (ka != kb)
    return op.emitOpError("contraction sizes differ: ") << ka << " vs " << kb;
  return success();
}

LogicalResult GemmBiasGradOp::verify() {
  int64_t m, n;
  if (failed(verifyProduct(*this, m, n)))
    return failure();
  auto at = tensorType(getA());
  auto wt = tensorType(getWeightGrad()), bgt = tensorType(getBiasGrad());
  Type out = wt.getElementType();
  if (out != at.getElementType() && !out.isF32())
    return emitOpError("results must have the operands' type or f32, got ") << out;
  if (bgt.getElementType() != out)
    return emitOpError("the bias gradient's type ") << bgt.getElementType()
           << " differs from the weight gradient's " << out;
  if (wt.getShape() != ArrayRef<int64_t>{m, n})
    return emitOpError("weight gradient must be ") << m << "x" << n << ", got " << wt;
  int64_t len = getBiasOf() == BiasOperand::A ? m : n;
  if (bgt.getShape() != ArrayRef<int64_t>{len})
    return emitOpError("bias gradient must be 1-D of ") << len << ", got " << bgt;
  return success();
}

LogicalResult GemmGeluOp::verify() {
  int64_t m, n;
  if (failed(verifyProduct(*this, m, n)))
    return failure();
  auto at = tensorType(getA());
  auto want = RankedTensorType::get({m, n}, at.getElementType());
  if (getResult().getType() != want || getPreactivation().getType() != want)
    return emitOpError("results must both be ") << want;
  if (Value bias = getBias())
    if (tensorType(bias) != RankedTensorType::get({n}, at.getElementType()))
      return emitOpError("bias must be ") << RankedTensorType::get({n}, at.getElementType())
             << ", got " << bias.getType();
  return success();
}

LogicalResult GemmDgeluOp::verify() {
  int64_t m, n;
  if (failed(verifyProduct(*this, m, n)))
    return failure();
  auto want = RankedTensorType::get({m, n}, tensorType(getA()).getElementType());
  if (getResult().getType() != want || getPreactivation().getType() != want)
    return emitOpError("the result and the preactivation must both be ") << want;
  return success();
}
