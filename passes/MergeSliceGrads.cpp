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
    // The pieces along the axis most of them share; each start once.
    std::map<int64_t, std::map<int64_t, SliceGradOp>> byAxis;
    for (Value t : terms)
      if (auto s = t.getDefiningOp<SliceGradOp>(); s && s->hasOneUse())
        if (int64_t axis = pieceAxis(s); axis >= 0)
          byAxis[axis].emplace(s.getStarts()[axis], s);
    int64_t axis = -1;
    for (auto &[a, pieces] : byAxis)
      if (pieces.size() >= 2 && (axis < 0 || pieces.size() > byAxis[axis].size()))
        axis = a;
    if (axis < 0)
      return failure();
    // In order of start; a piece overlapping the one before stays a term.
    SmallVector<Value> inputs;
    llvm::DenseSet<Operation *> merged;
    int64_t at = 0, n = type.getShape()[axis];
    Location loc = root.getLoc();
    auto zeros = [&](int64_t size) {
      SmallVector<int64_t> shape(type.getShape());
      shape[axis] = size;
      auto t = RankedTensorType::get(shape, type.getElementType());
      return ConstantOp::create(rewriter, loc,
                                DenseElementsAttr::get(t, rewriter.getZeroAttr(type.getElementType())));
    };
    rewriter.setInsertionPoint(root);
    for (auto &[start, s] : byAxis[axis]) {
      if (start < at)
        continue;
      if (start > at)
        inputs.push_back(zeros(start - at));
      inputs.push_back(s.getGrad());
      merged.insert(s);
      at = start + tensorType(s.getGrad()).getShape()[axis];
    }
    if (merged.size() < 2)
      return failure();
    if (at < n)
      inputs.push_back(zeros(n - at));
    Value sum = ConcatOp::create(rewriter, loc, inputs, axis);
    for (Value t : terms)
      if (!merged.contains(t.getDefiningOp()))
        sum = AddOp::create(rewriter, loc, sum, t);
    rewriter.replaceOp(root, sum);
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
