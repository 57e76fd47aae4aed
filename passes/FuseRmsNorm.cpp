// otc-fuse-rms-norm: the hand-written RMSNorm pattern becomes one
// `otc.normalize {center = false}`, a single RowReduce step forward and
// backward instead of five passes over memory each way.
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace otc {
#define GEN_PASS_DEF_FUSERMSNORM
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// The value of a splat float constant, if `v` is one.
std::optional<double> splatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

struct RmsMatch {
  int64_t axis;
  double epsilon;
};

/// Whether `s` is sqrt(mean(x², trailing dims from some axis, keepdims) +
/// eps) with a constant eps >= 0; the square is pow(x, 2) or x * x.
std::optional<RmsMatch> matchRms(Value x, Value s) {
  auto sqrt = s.getDefiningOp<SqrtOp>();
  auto add = sqrt ? sqrt.getInput().getDefiningOp<AddOp>() : AddOp();
  if (!add)
    return std::nullopt;
  for (auto [meanSide, epsSide] : {std::pair(add.getLhs(), add.getRhs()),
                                   std::pair(add.getRhs(), add.getLhs())}) {
    auto mean = meanSide.getDefiningOp<ReduceMeanOp>();
    std::optional<double> eps = splatValue(epsSide);
    if (!mean || !eps || !(*eps >= 0) || !mean.getKeepdims() ||
        add.getType() != mean.getType())
      continue;
    Value sq = mean.getInput();
    bool isSquare = false;
    if (auto pow = sq.getDefiningOp<PowOp>())
      isSquare = pow.getInput() == x && pow.getExponent().convertToDouble() == 2.0;
    if (auto mul = sq.getDefiningOp<MulOp>())
      isSquare = mul.getLhs() == x && mul.getRhs() == x;
    if (!isSquare || sq.getType() != x.getType())
      continue;
    // The axes must be the trailing dims, contiguous.
    ArrayRef<int64_t> axes = mean.getAxes();
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    if (axes.empty() || axes.back() != rank - 1 ||
        axes.back() - axes.front() + 1 != int64_t(axes.size()))
      continue;
    return RmsMatch{axes.front(), *eps};
  }
  return std::nullopt;
}

/// `r` as 1 / s: reciprocal(s) or div(1, s).
Value reciprocalOf(Value r) {
  if (auto rec = r.getDefiningOp<ReciprocalOp>())
    return rec.getInput();
  if (auto div = r.getDefiningOp<DivOp>())
    if (splatValue(div.getLhs()) == 1.0 && div.getType() == div.getRhs().getType())
      return div.getRhs();
  return Value();
}

LogicalResult fuse(Operation *root, Value x, Value s, PatternRewriter &rewriter) {
  if (root->getResult(0).getType() != x.getType())
    return failure();
  std::optional<RmsMatch> m = matchRms(x, s);
  if (!m)
    return failure();
  rewriter.replaceOpWithNewOp<NormalizeOp>(root, x, rewriter.getI64IntegerAttr(m->axis),
                                           rewriter.getF64FloatAttr(m->epsilon),
                                           rewriter.getBoolAttr(false));
  return success();
}

/// x * (1 / sqrt(...)) in either operand order.
struct FuseMul : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (auto [x, r] : {std::pair(op.getLhs(), op.getRhs()), std::pair(op.getRhs(), op.getLhs())})
      if (Value s = reciprocalOf(r); s && succeeded(fuse(op, x, s, rewriter)))
        return success();
    return failure();
  }
};

/// x / sqrt(...).
struct FuseDiv : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DivOp op, PatternRewriter &rewriter) const override {
    return fuse(op, op.getLhs(), op.getRhs(), rewriter);
  }
};

struct FuseRmsNormPass : otc::impl::FuseRmsNormBase<FuseRmsNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseMul, FuseDiv>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
