// otc-loss-scaling: checks the loss-scaling policy and records it on the
// training step for code generation and the runtime (see Passes.td).
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cfloat>
#include <cmath>

namespace otc {
#define GEN_PASS_DEF_LOSSSCALING
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;

namespace {

struct LossScalingPass : otc::impl::LossScalingBase<LossScalingPass> {
  using LossScalingBase::LossScalingBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Powers of two keep scaling and unscaling exact.
    if (!(initScale > 0) || !std::isfinite(float(initScale)) || float(initScale) < FLT_MIN ||
        !(minScale >= 0) ||
        !std::isfinite(float(minScale)) || minScale > initScale || window < 1 ||
        hysteresis < 1) {
      module.emitError("otc-loss-scaling: the scale must be positive and normal in "
                       "float32, min-scale within [0, scale], window and hysteresis "
                       "at least 1");
      return signalPassFailure();
    }
    Builder b(module.getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      bool hasLoss = false;
      for (unsigned r = 0; r < func.getNumResults(); ++r)
        hasLoss |= bool(func.getResultAttr(r, otc::attr::kLoss));
      if (!hasLoss)
        continue;
      NamedAttrList policy;
      policy.append("mode", otc::LossScaleModeAttr::get(module.getContext(), mode));
      policy.append("init_scale",
                    b.getF64FloatAttr(mode == otc::LossScaleMode::None ? 1.0 : double(initScale)));
      policy.append("window", b.getI64IntegerAttr(window));
      policy.append("hysteresis", b.getI64IntegerAttr(hysteresis));
      policy.append("min_scale", b.getF64FloatAttr(minScale));
      func->setAttr(otc::attr::kLossScale, policy.getDictionary(module.getContext()));
    }
  }
};

} // namespace
