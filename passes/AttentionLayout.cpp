// otc-attention-layout: attention whose query, key and value are all
// transposed from [B, T, H, D] (the projections' layout) to [B, H, T, D],
// and whose result is transposed back, reads and writes [B, T, H, D]
// itself (layout = bthd): the four transposes forward, and the four of the
// gradients backward, have no step.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace otc {
#define GEN_PASS_DEF_ATTENTIONLAYOUT
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// Whether `op` swaps dims 1 and 2 of a rank-4 tensor.
bool swapsSeqAndHeads(Operation *op) {
  auto t = dyn_cast_or_null<TransposeOp>(op);
  return t && t.getPerm() == ArrayRef<int64_t>{0, 2, 1, 3};
}

struct ToSequenceMajor : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    if (op.getLayout() != AttentionLayout::Bhtd)
      return failure();
    SmallVector<Value> inputs;
    for (Value v : {op.getQuery(), op.getKey(), op.getValue()}) {
      if (!swapsSeqAndHeads(v.getDefiningOp()))
        return failure();
      inputs.push_back(v.getDefiningOp<TransposeOp>().getInput());
    }
    auto bthd = AttentionOp::create(rewriter, op.getLoc(), inputs[0], inputs[1], inputs[2],
                                    op.getMask(), op.getScaleAttr(), op.getCausalAttr(),
                                    op.getFillAttr(),
                                    AttentionLayoutAttr::get(getContext(), AttentionLayout::Bthd));
    // Readers that transposed the result back take it as it is; any other
    // reader gets one transpose.
    Value back;
    for (OpOperand &use : llvm::make_early_inc_range(op.getResult().getUses())) {
      Operation *user = use.getOwner();
      if (swapsSeqAndHeads(user)) {
        rewriter.replaceOp(user, bthd.getResult());
        continue;
      }
      if (!back) {
        rewriter.setInsertionPointAfter(bthd);
        back = TransposeOp::create(rewriter, op.getLoc(), bthd.getResult(),
                                   rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}));
      }
      rewriter.modifyOpInPlace(user, [&] { use.set(back); });
    }
    rewriter.replaceOp(op, {bthd.getResult(), bthd.getStats()});
    return success();
  }
};

struct AttentionLayoutPass : otc::impl::AttentionLayoutBase<AttentionLayoutPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ToSequenceMajor>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
