// otc-merge-slice-grads: the gradients of slices that split one tensor along
// one axis (GPT's q, k and v from one projection), each zeros with the
// piece placed in them and then summed, become one concat of the pieces.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <map>

namespace otc {
#define GEN_PASS_DEF_MERGESLICEGRADS
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// The one axis along which slice_grad `s` places a contiguous piece
/// (step 1, every other dim whole), or -1.
int64_t pieceAxis(SliceGradOp s) {
  ArrayRef<int64_t> big = tensorType(s.getResult()).getShape(),
                    small = tensorType(s.getGrad()).getShape();
  int64_t axis = -1;
  for (size_t d = 0; d < big.size(); ++d) {
    if (s.getStarts()[d] == 0 && small[d] == big[d])
      continue;
    if (axis >= 0 || s.getSteps()[d] != 1)
      return -1;
    axis = int64_t(d);
  }
  return axis;
}

/// The terms of the sum rooted at `root`: operands of same-typed adds that
/// only feed this sum, left to right.
void collectTerms(AddOp root, SmallVectorImpl<Value> &terms) {
  for (Value v : {root.getLhs(), root.getRhs()}) {
    auto add = v.getDefiningOp<AddOp>();
    if (add && add->hasOneUse() && add.getType() == root.getType() &&
        add.getLhs().getType() == root.getType() && add.getRhs().getType() == root.getType())
      collectTerms(add, terms);
    else
      terms.push_back(v);
  }
}

struct MergePieces : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp root, PatternRewriter &rewriter) const override {
    RankedTensorType type = root.getType();
    if (root.getLhs().getType() != type || root.getRhs().getType() != type)
      return failure();
    // Only the outermost add of a sum: an inner one is merged with it.
    if (root->hasOneUse())
      if (auto outer = dyn_cast<AddOp>(*root->getUsers().begin());
          outer && outer.getType() == type && outer.getLhs().getType() == type &&
          outer.getRhs().getType() == type)
        return failure();
    SmallVector<Value> terms;
    collectTerms(root, terms);
    // Only a sum of pieces alone, along one axis, none overlapping: then
    // each element is one piece's value or zero, and the concat is exact.
    // With other terms the sum's order, and so its rounding, would change.
    std::map<int64_t, SliceGradOp> pieces; // by start
    int64_t axis = -1;
    for (Value t : terms) {
      auto s = t.getDefiningOp<SliceGradOp>();
      if (!s || !s->hasOneUse())
        return failure();
      int64_t a = pieceAxis(s);
      if (a < 0 || (axis >= 0 && a != axis) || !pieces.emplace(s.getStarts()[a], s).second)
        return failure();
      axis = a;
    }
    int64_t at = 0, n = type.getShape()[axis];
    for (auto &[start, s] : pieces) {
      if (start < at) // overlaps the piece before
        return failure();
      at = start + tensorType(s.getGrad()).getShape()[axis];
    }
    Location loc = root.getLoc();
    auto zeros = [&](int64_t size) -> Value {
      SmallVector<int64_t> shape(type.getShape());
      shape[axis] = size;
      auto t = RankedTensorType::get(shape, type.getElementType());
      return ConstantOp::create(rewriter, loc,
                                DenseElementsAttr::get(t, rewriter.getZeroAttr(type.getElementType())));
    };
    rewriter.setInsertionPoint(root);
    SmallVector<Value> inputs;
    at = 0;
    for (auto &[start, s] : pieces) {
      if (start > at)
        inputs.push_back(zeros(start - at));
      inputs.push_back(s.getGrad());
      at = start + tensorType(s.getGrad()).getShape()[axis];
    }
    if (at < n)
      inputs.push_back(zeros(n - at));
    rewriter.replaceOp(root, ConcatOp::create(rewriter, loc, inputs, axis).getResult());
    return success();
  }
};

struct MergeSliceGradsPass : otc::impl::MergeSliceGradsBase<MergeSliceGradsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<MergePieces>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
