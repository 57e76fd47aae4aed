// otc-fuse-layer-norm: otc.normalize followed by its elementwise scale and
// bias becomes one otc.layer_norm, a single RowReduce step computed in
// float32, with no normalized copy kept for the backward.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace otc {
#define GEN_PASS_DEF_FUSELAYERNORM
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// `v`, if it is constant along the rows (the dims before `axis`) and covers
/// the normalized dims exactly: shape [1.., x.shape[axis:]] after numpy
/// alignment, x's element type.
bool isAffineOperand(Value v, RankedTensorType x, int64_t axis) {
  RankedTensorType t = tensorType(v);
  ArrayRef<int64_t> shape = t.getShape(), normalized = x.getShape().drop_front(axis);
  if (t.getElementType() != x.getElementType() || shape.size() < normalized.size() ||
      shape.size() > size_t(x.getRank()))
    return false;
  size_t lead = shape.size() - normalized.size();
  return llvm::all_of(shape.take_front(lead), [](int64_t d) { return d == 1; }) &&
         shape.drop_front(lead) == normalized;
}

/// The operand of the elementwise `op` other than `from`, if `op` is an
/// OpTy with `from` as one operand, of x's type, and the other operand is
/// an affine operand.
template <class OpTy>
Value otherAffineOperand(Operation *op, Value from, RankedTensorType x, int64_t axis) {
  auto bin = dyn_cast_or_null<OpTy>(op);
  if (!bin || bin.getType() != x)
    return Value();
  Value other = bin.getLhs() == from ? bin.getRhs() : bin.getLhs();
  if (bin.getLhs() != from && bin.getRhs() != from)
    return Value();
  return other != from && isAffineOperand(other, x, axis) ? other : Value();
}

struct FuseAffine : OpRewritePattern<NormalizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NormalizeOp n, PatternRewriter &rewriter) const override {
    RankedTensorType x = tensorType(n.getInput());
    int64_t axis = n.getAxis();
    if (!n->hasOneUse())
      return failure();
    Operation *mul = *n->getUsers().begin();
    Value scale = otherAffineOperand<MulOp>(mul, n.getResult(), x, axis);
    if (!scale)
      return failure();
    Operation *root = mul;
    Value bias;
    if (mul->hasOneUse())
      if (Operation *add = *mul->getUsers().begin();
          (bias = otherAffineOperand<AddOp>(add, mul->getResult(0), x, axis)))
        root = add;
    auto normalized = RankedTensorType::get(x.getShape().drop_front(axis), x.getElementType());
    rewriter.setInsertionPoint(root);
    auto exact = [&](Value v) -> Value {
      if (!v || tensorType(v) == normalized)
        return v;
      return ReshapeOp::create(rewriter, n.getLoc(), normalized, v);
    };
    Value w = exact(scale), b = exact(bias);
    auto ln = LayerNormOp::create(rewriter, root->getLoc(), n.getInput(), w, b, n.getAxisAttr(),
                                  n.getEpsilonAttr(), n.getCenterAttr());
    rewriter.replaceOp(root, ln.getResult());
    return success();
  }
};

struct FuseLayerNormPass : otc::impl::FuseLayerNormBase<FuseLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAffine>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
