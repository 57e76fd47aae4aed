#include "otc/Passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void otc::buildTrainingPipeline(OpPassManager &pm, const LossScalingOptions &scaling,
                                const MixedPrecisionOptions &precision,
                                const RecomputeOptions &recompute,
                                const InsertLoraOptions &lora) {
  if (lora.rank > 0)
    pm.addPass(createInsertLora(lora));
  pm.addPass(createDemoteFloat64());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFuseRmsNorm());
  pm.addPass(createFuseLayerNorm());
  pm.addPass(createFuseRotary());
  pm.addPass(createFuseAttention());
  pm.addPass(createAttentionLayout());
  pm.addPass(createFuseGelu());
  pm.addPass(createFuseGemmEpilogues());
  pm.addPass(createMixedPrecision(precision));
  pm.addPass(createAutodiff());
  pm.addPass(createMergeSliceGrads());
  pm.addPass(createGradAccumulation());
  pm.addPass(createLossScaling(scaling));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Last: CSE would merge the copies back into their originals.
  pm.addPass(createRecompute(recompute));
  // The bias gradients, now there, and GELU (not differentiable fused).
  pm.addPass(createFuseGemmEpilogues(FuseGemmEpiloguesOptions{/*afterAutodiff=*/true}));
  pm.addPass(createFuseCrossEntropy());
}

void otc::buildForwardPipeline(OpPassManager &pm, const MixedPrecisionOptions &precision,
                               const InsertLoraOptions &lora) {
  if (lora.rank > 0)
    pm.addPass(createInsertLora(lora));
  pm.addPass(createDemoteFloat64());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFuseRmsNorm());
  pm.addPass(createFuseLayerNorm());
  pm.addPass(createFuseRotary());
  pm.addPass(createFuseAttention());
  pm.addPass(createAttentionLayout());
  pm.addPass(createFuseGelu());
  pm.addPass(createFuseGemmEpilogues());
  pm.addPass(createMixedPrecision(precision));
  pm.addPass(createCSEPass());
  pm.addPass(createFuseGemmEpilogues(FuseGemmEpiloguesOptions{/*afterAutodiff=*/true}));
}

void otc::registerOtcPassesAndPipelines() {
  registerOtcPasses();
  PassPipelineRegistration<>("otc-training-pipeline",
                             "Forward graph to accumulating training step",
                             [](OpPassManager &pm) { buildTrainingPipeline(pm); });
}
