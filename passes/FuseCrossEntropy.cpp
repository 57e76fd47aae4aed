// otc-fuse-cross-entropy: a softmax cross-entropy and its gradient over the
// same logits become one op, one row kernel over the logits.
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/Dominance.h"

namespace otc {
#define GEN_PASS_DEF_FUSECROSSENTROPY
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// Where the fused op of `loss` and `grad` can go: at the loss when the
/// seed is defined before it, else at the gradient when every reader of the
/// loss comes after that; null when neither holds.
Operation *placeFor(SoftmaxCrossEntropyOp loss, SoftmaxCrossEntropyGradOp grad,
                    DominanceInfo &dom) {
  if (!dom.properlyDominates(loss.getOperation(), grad))
    return nullptr;
  if (dom.properlyDominates(grad.getGrad(), loss))
    return loss;
  for (Operation *user : loss->getUsers())
    if (!dom.properlyDominates(grad.getOperation(), user))
      return nullptr;
  return grad;
}

struct FuseCrossEntropyPass : otc::impl::FuseCrossEntropyBase<FuseCrossEntropyPass> {
  void runOnOperation() override {
    SmallVector<std::pair<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>> pairs;
    getOperation().walk([&](SoftmaxCrossEntropyGradOp grad) {
      for (Operation *user : grad.getLogits().getUsers()) {
        auto loss = dyn_cast<SoftmaxCrossEntropyOp>(user);
        if (loss && loss.getLabels() == grad.getLabels() &&
            loss.getIgnoreIndexAttr() == grad.getIgnoreIndexAttr() &&
            loss->getBlock() == grad->getBlock()) {
          pairs.push_back({loss, grad});
          return;
        }
      }
    });
    DominanceInfo dom(getOperation());
    for (auto [loss, grad] : pairs) {
      Operation *at = placeFor(loss, grad, dom);
      if (!at)
        continue;
      OpBuilder b(at);
      auto fused = SoftmaxCrossEntropyWithGradOp::create(
          b, grad.getLoc(), TypeRange{loss.getType(), grad.getType()}, grad.getGrad(),
          grad.getLogits(), grad.getLabels(), grad.getIgnoreIndexAttr());
      // The forward's marks (its autocast class) carry over.
      for (NamedAttribute a : loss->getDiscardableAttrs())
        fused->setAttr(a.getName(), a.getValue());
      loss.getResult().replaceAllUsesWith(fused.getLoss());
      grad.getResult().replaceAllUsesWith(fused.getLogitsGrad());
      loss->erase();
      grad->erase();
    }
  }
};

} // namespace
