// otc-fuse-rotary: the exported rotary embedding, x * cos + rotate_half(x)
// * sin with rotate_half(x) = concat(-x[.., h:], x[.., :h]), becomes one
// `otc.rotary`: two elementwise steps forward and two backward, where the
// pattern took slices, a negation, a concat and three elementwise ops.
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace otc {
#define GEN_PASS_DEF_FUSEROTARY
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// The half of `x` along its last dim that `v` slices (0 first, 1 second),
/// or -1.
int halfOf(Value v, Value &x) {
  auto s = v.getDefiningOp<SliceOp>();
  if (!s)
    return -1;
  auto in = cast<RankedTensorType>(s.getInput().getType());
  auto out = cast<RankedTensorType>(s.getType());
  int64_t rank = in.getRank(), n = rank ? in.getShape().back() : 0;
  if (rank == 0 || n % 2 != 0 || out.getShape().back() != n / 2 ||
      out.getShape().drop_back() != in.getShape().drop_back() ||
      llvm::any_of(s.getSteps(), [](int64_t k) { return k != 1; }) ||
      llvm::any_of(s.getStarts().drop_back(), [](int64_t k) { return k != 0; }))
    return -1;
  int64_t start = s.getStarts().back();
  if (start != 0 && start != n / 2)
    return -1;
  x = s.getInput();
  return start == 0 ? 0 : 1;
}

/// The x of which `v` is rotate_half(x), or null.
Value rotatedFrom(Value v) {
  auto cat = v.getDefiningOp<ConcatOp>();
  if (!cat || cat.getInputs().size() != 2 ||
      cat.getAxis() != cast<RankedTensorType>(cat.getType()).getRank() - 1)
    return Value();
  auto neg = cat.getInputs()[0].getDefiningOp<NegOp>();
  Value x1, x2;
  if (!neg || halfOf(neg.getInput(), x2) != 1 || halfOf(cat.getInputs()[1], x1) != 0 || x1 != x2)
    return Value();
  return x1;
}

/// x * cos + rotate_half(x) * sin, in any operand order.
struct FuseAdd : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rewriter) const override {
    for (auto [p, q] : {std::pair(op.getLhs(), op.getRhs()), std::pair(op.getRhs(), op.getLhs())}) {
      auto plain = p.getDefiningOp<MulOp>(), rotated = q.getDefiningOp<MulOp>();
      if (!plain || !rotated)
        continue;
      for (auto [r, sin] : {std::pair(rotated.getLhs(), rotated.getRhs()),
                            std::pair(rotated.getRhs(), rotated.getLhs())}) {
        Value x = rotatedFrom(r);
        if (!x || x.getType() != op.getType())
          continue;
        Value cos = plain.getLhs() == x ? plain.getRhs() : plain.getRhs() == x ? plain.getLhs() : Value();
        if (!cos || plain.getType() != op.getType() || rotated.getType() != op.getType())
          continue;
        rewriter.replaceOpWithNewOp<RotaryOp>(op, op.getType(), x, cos, sin, false);
        return success();
      }
    }
    return failure();
  }
};

struct FuseRotaryPass : otc::impl::FuseRotaryBase<FuseRotaryPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAdd>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
