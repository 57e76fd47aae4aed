// otc-fuse-gemm-epilogues: a Linear layer's bias rides on its GEMM, forward
// (the bias add as the GEMM's C, a cuBLASLt epilogue on CUDA) and backward
// (the bias gradient as otc.gemm_bias_grad beside the weight gradient), so
// neither is a pass over memory of its own.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace otc {
#define GEN_PASS_DEF_FUSEGEMMEPILOGUES
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

Value throughReshapes(Value v) {
  while (auto r = v.getDefiningOp<ReshapeOp>())
    v = r.getInput();
  return v;
}

/// A product `add` can take as its C: a matmul with a 2-D right operand, or
/// a gemm without C (through a reshape back to the rows' shape), used only
/// by the add.
struct Product {
  Value a, b;
  bool transA = false, transB = false;
  double alpha = 1;
};

std::optional<Product> productOf(Value v) {
  if (!v.hasOneUse())
    return std::nullopt;
  if (auto mm = v.getDefiningOp<MatMulOp>()) {
    if (tensorType(mm.getRhs()).getRank() != 2)
      return std::nullopt;
    return Product{mm.getLhs(), mm.getRhs()};
  }
  Value inner = v;
  if (auto r = v.getDefiningOp<ReshapeOp>())
    inner = r.getInput();
  auto g = inner.getDefiningOp<GemmOp>();
  if (!g || g.getC() || !inner.hasOneUse() || tensorType(v).getRank() == 0 ||
      tensorType(inner).getShape().back() != tensorType(v).getShape().back())
    return std::nullopt;
  return Product{g.getA(), g.getB(), g.getTransA(), g.getTransB(),
                 g.getAlpha().convertToDouble()};
}

/// add(product, bias) with a bias of shape [N] or [1, ..., 1, N]: the gemm
/// with the bias as C, beta 1, reshaped back.
struct BiasIntoGemm {
  LogicalResult operator()(AddOp add, RewriterBase &rw) const {
    for (auto [p, bias] : {std::pair(add.getLhs(), add.getRhs()),
                           std::pair(add.getRhs(), add.getLhs())}) {
      std::optional<Product> prod = productOf(p);
      if (!prod || p.getType() != add.getType())
        continue;
      auto bt = tensorType(bias);
      int64_t n = tensorType(p).getShape().back();
      if (bt.getElementType() != tensorType(p).getElementType() || bt.getRank() == 0 ||
          bt.getShape().back() != n || bt.getNumElements() != n ||
          bt.getRank() > tensorType(p).getRank())
        continue;
      Location loc = add.getLoc();
      Value a = prod->a;
      if (tensorType(a).getRank() != 2) { // a matmul's rows, flattened
        auto at = tensorType(a);
        int64_t k = at.getShape().back();
        a = ReshapeOp::create(rw, loc,
                              RankedTensorType::get({at.getNumElements() / k, k},
                                                    at.getElementType()),
                              a);
      }
      Value c = bias;
      if (bt.getRank() != 1)
        c = ReshapeOp::create(rw, loc, RankedTensorType::get({n}, bt.getElementType()), bias);
      Value y = GemmOp::create(rw, loc, a, prod->b, c, prod->transA, prod->transB,
                               APFloat(prod->alpha), APFloat(1.0));
      if (y.getType() != add.getType())
        y = ReshapeOp::create(rw, loc, add.getType(), y);
      rw.replaceOp(add, y);
      for (Operation *dead = p.getDefiningOp(); dead && dead->use_empty();) {
        Operation *next = dead->getOperand(0).getDefiningOp();
        rw.eraseOp(dead);
        dead = isa_and_nonnull<GemmOp>(next) ? next : nullptr;
      }
      return success();
    }
    return failure();
  }
};

/// Whether `v` is defined before `op` (or is a block argument).
bool dominates(Value v, Operation *op) {
  Operation *d = v.getDefiningOp();
  return !d || (d->getBlock() == op->getBlock() && d->isBeforeInBlock(op));
}

/// `v` available before `at`: itself, or a copy of the reshapes that make it
/// from a value that is.
Value availableBefore(Value v, Operation *at, RewriterBase &rw) {
  if (dominates(v, at))
    return v;
  auto r = v.getDefiningOp<ReshapeOp>();
  if (!r)
    return Value();
  Value in = availableBefore(r.getInput(), at, rw);
  if (!in)
    return Value();
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPoint(at);
  return ReshapeOp::create(rw, r.getLoc(), r.getType(), in);
}

/// The sole user of `v` if it widens a 16-bit value to f32.
CastOp wideningUser(Value v) {
  if (!v.hasOneUse())
    return CastOp();
  auto c = dyn_cast<CastOp>(*v.getUsers().begin());
  if (!c || !tensorType(c.getResult()).getElementType().isF32() ||
      tensorType(v).getElementType().getIntOrFloatBitWidth() != 16)
    return CastOp();
  return c;
}

/// reduce_sum(g) over every dim but the last, beside a weight gradient gemm
/// that contracts over g's rows (g as op(B) = g, or op(A) = gᵀ): one
/// otc.gemm_bias_grad. When both results are only widened to f32, the op
/// makes f32 itself and the casts go.
struct BiasGradIntoGemm {
  LogicalResult operator()(ReduceSumOp sum, RewriterBase &rw) const {
    Value g = sum.getInput();
    auto gt = tensorType(g);
    int64_t rank = gt.getRank(), n = rank ? gt.getShape().back() : 0;
    if (rank < 2 || sum.getAxes() != ArrayRef<int64_t>(llvm::to_vector(llvm::seq<int64_t>(0, rank - 1))) ||
        tensorType(sum.getResult()).getNumElements() != n)
      return failure();
    // The gemm may read g's root through reshapes to [M, N].
    SmallVector<Value> views{throughReshapes(g)};
    for (size_t i = 0; i < views.size(); ++i)
      for (Operation *u : views[i].getUsers())
        if (isa<ReshapeOp>(u))
          views.push_back(u->getResult(0));
    for (Value view : views)
      for (Operation *u : view.getUsers()) {
        auto gemm = dyn_cast<GemmOp>(u);
        if (!gemm || gemm.getC() || gemm.getAlpha().convertToDouble() != 1.0 ||
            tensorType(view).getShape() != ArrayRef<int64_t>{gt.getNumElements() / n, n})
          continue;
        if (gemm.getB() == view && !gemm.getTransB() && gemm.getA() != view)
          return fuse(sum, gemm, BiasOperand::B, rw);
        if (gemm.getA() == view && gemm.getTransA() && gemm.getB() != view)
          return fuse(sum, gemm, BiasOperand::A, rw);
      }
    return failure();
  }

  LogicalResult fuse(ReduceSumOp sum, GemmOp gemm, BiasOperand of, RewriterBase &rw) const {
    // The sum's result, through a reshape to its final shape.
    Value db = sum.getResult();
    ReshapeOp dbView;
    if (db.hasOneUse())
      if ((dbView = dyn_cast<ReshapeOp>(*db.getUsers().begin())))
        db = dbView.getResult();
    Value dw = gemm.getResult();
    Type elem = tensorType(dw).getElementType();
    if (tensorType(db).getElementType() != elem)
      return failure();
    Operation *at = sum->isBeforeInBlock(gemm) ? sum.getOperation() : gemm.getOperation();
    Value a = availableBefore(gemm.getA(), at, rw), b = availableBefore(gemm.getB(), at, rw);
    if (!a || !b)
      return failure();
    CastOp wideW = wideningUser(dw), wideB = wideningUser(db);
    bool widen = wideW && wideB;
    Type out = widen ? rw.getF32Type() : elem;
    int64_t n = tensorType(sum.getResult()).getNumElements();
    rw.setInsertionPoint(at);
    auto fused = GemmBiasGradOp::create(
        rw, gemm.getLoc(), RankedTensorType::get(tensorType(dw).getShape(), out),
        RankedTensorType::get({n}, out), a, b, gemm.getTransA(), gemm.getTransB(), of);
    Value newDb = fused.getBiasGrad();
    Value oldDb = widen ? wideB.getResult() : db;
    if (tensorType(oldDb).getShape() != tensorType(newDb).getShape())
      newDb = ReshapeOp::create(rw, sum.getLoc(), oldDb.getType(), newDb);
    rw.replaceAllUsesWith(widen ? wideW.getResult() : dw, fused.getWeightGrad());
    rw.replaceAllUsesWith(oldDb, newDb);
    // Its accumulation into the bias's buffer (otc-grad-accumulation puts
    // them all at the end) right after it, so the buffer is final early
    // (data parallelism's all-reduce starts then) and the sums die young.
    if (newDb.hasOneUse())
      if (auto acc = dyn_cast<AccumulateOp>(*newDb.getUsers().begin());
          acc && isa<BlockArgument>(acc.getAcc()) && isa<BlockArgument>(acc.getFirst()))
        acc->moveAfter(newDb.getDefiningOp());
    if (widen) {
      rw.eraseOp(wideW);
      rw.eraseOp(wideB);
    }
    SmallVector<Value> views{gemm.getA(), gemm.getB()};
    rw.eraseOp(gemm);
    // Reshapes the gemm alone read, copied above, die with it.
    for (Value v : views)
      for (auto r = v.getDefiningOp<ReshapeOp>(); r && r->use_empty();) {
        auto in = r.getInput().getDefiningOp<ReshapeOp>();
        rw.eraseOp(r);
        r = in;
      }
    if (dbView)
      rw.eraseOp(dbView);
    rw.eraseOp(sum);
    return success();
  }
};

/// gelu_tanh(gemm(...)), perhaps through a reshape of the rows: one
/// otc.gemm_gelu, whose preactivation takes the gemm result's other uses.
LogicalResult geluIntoGemm(GeluOp gelu, RewriterBase &rw) {
  if (gelu.getApproximate() != GeluApproximation::Tanh)
    return failure();
  Value v = gelu.getInput();
  Value inner = v;
  if (auto r = v.getDefiningOp<ReshapeOp>())
    inner = r.getInput();
  auto gemm = inner.getDefiningOp<GemmOp>();
  if (!gemm || tensorType(v).getRank() == 0 ||
      tensorType(v).getShape().back() != tensorType(inner).getShape().back())
    return failure();
  Value bias = gemm.getC();
  if (bias && (tensorType(bias).getRank() != 1 || gemm.getBeta().convertToDouble() != 1.0 ||
               bias.getType() != RankedTensorType::get({tensorType(inner).getShape().back()},
                                                       tensorType(inner).getElementType())))
    return failure();
  rw.setInsertionPoint(gemm);
  auto fused = GemmGeluOp::create(rw, gemm.getLoc(), gemm.getType(), gemm.getType(), gemm.getA(),
                                  gemm.getB(), bias, gemm.getTransA(), gemm.getTransB(),
                                  gemm.getAlpha());
  rw.replaceAllUsesWith(gemm.getResult(), fused.getPreactivation());
  rw.eraseOp(gemm);
  rw.setInsertionPoint(gelu);
  Value y = fused.getResult();
  if (y.getType() != gelu.getType())
    y = ReshapeOp::create(rw, gelu.getLoc(), gelu.getType(), y);
  rw.replaceOp(gelu, y);
  return success();
}

/// gelu_grad_tanh(gemm(...), pre), perhaps through reshapes of the rows:
/// one otc.gemm_dgelu, the gemm's result not kept.
LogicalResult dgeluIntoGemm(GeluGradOp grad, RewriterBase &rw) {
  if (grad.getApproximate() != GeluApproximation::Tanh)
    return failure();
  Value g = grad.getGrad();
  ReshapeOp view = g.getDefiningOp<ReshapeOp>();
  Value inner = view ? view.getInput() : g;
  auto gemm = inner.getDefiningOp<GemmOp>();
  if (!gemm || gemm.getC() || !inner.hasOneUse() || (view && !g.hasOneUse()) ||
      tensorType(g).getRank() == 0 ||
      tensorType(g).getShape().back() != tensorType(inner).getShape().back())
    return failure();
  rw.setInsertionPoint(grad);
  Value pre = grad.getValue();
  if (pre.getType() != inner.getType())
    pre = ReshapeOp::create(rw, grad.getLoc(), inner.getType(), pre);
  Value d = GemmDgeluOp::create(rw, gemm.getLoc(), gemm.getType(), gemm.getA(), gemm.getB(), pre,
                                gemm.getTransA(), gemm.getTransB(), gemm.getAlpha());
  if (d.getType() != grad.getType())
    d = ReshapeOp::create(rw, grad.getLoc(), grad.getType(), d);
  rw.replaceOp(grad, d);
  if (view)
    rw.eraseOp(view);
  rw.eraseOp(gemm);
  return success();
}

struct FuseGemmEpiloguesPass : otc::impl::FuseGemmEpiloguesBase<FuseGemmEpiloguesPass> {
  using FuseGemmEpiloguesBase::FuseGemmEpiloguesBase;
  void runOnOperation() override {
    // A walk, not the greedy driver: after otc-recompute nothing may be
    // folded or merged, only these rewrites made.
    IRRewriter rw(&getContext());
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp op) { adds.push_back(op); });
    for (AddOp op : adds) {
      rw.setInsertionPoint(op);
      (void)BiasIntoGemm()(op, rw);
    }
    // The fused ops below have no gradient rule: never before autodiff.
    if (!afterAutodiff)
      return;
    SmallVector<ReduceSumOp> sums;
    getOperation().walk([&](ReduceSumOp op) { sums.push_back(op); });
    for (ReduceSumOp op : sums)
      (void)BiasGradIntoGemm()(op, rw);
    SmallVector<GeluOp> gelus;
    getOperation().walk([&](GeluOp op) { gelus.push_back(op); });
    for (GeluOp op : gelus)
      (void)geluIntoGemm(op, rw);
    SmallVector<GeluGradOp> grads;
    getOperation().walk([&](GeluGradOp op) { grads.push_back(op); });
    for (GeluGradOp op : grads)
      (void)dgeluIntoGemm(op, rw);
  }
};

} // namespace
