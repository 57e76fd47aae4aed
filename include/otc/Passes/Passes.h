// The otc passes and the pipeline `otc compile` runs.
#ifndef OTC_PASSES_PASSES_H
#define OTC_PASSES_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "otc/Dialect/OtcDialect.h"

namespace otc {

#define GEN_PASS_DECL
#include "otc/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "otc/Passes/Passes.h.inc"

/// Names of the function attributes through which the passes, code generation
/// and the runtime agree on what each argument and result is.
namespace attr {
inline constexpr const char kInput[] = "otc.input";
inline constexpr const char kParam[] = "otc.param";
inline constexpr const char kTrainable[] = "otc.trainable";
/// On a LoRA parameter (otc-insert-lora): how the runtime initialises it
/// ("kaiming_uniform", "zeros"), its base weight, scale and orientation.
inline constexpr const char kLoraInit[] = "otc.lora_init";
inline constexpr const char kLoraBase[] = "otc.lora_base";
inline constexpr const char kLoraScale[] = "otc.lora_scale";
inline constexpr const char kLoraTransposed[] = "otc.lora_transposed";
/// On a trainable parameter: rows (of dim 0) that its lookups (Gather)
/// pass no gradient to, as PyTorch's Embedding padding_idx (--fixed-rows).
inline constexpr const char kFixedRows[] = "otc.fixed_rows";
inline constexpr const char kLoss[] = "otc.loss";
inline constexpr const char kOutput[] = "otc.output"; // a forward-only result
inline constexpr const char kLossSeed[] = "otc.loss_seed";
inline constexpr const char kGradOf[] = "otc.grad_of";
inline constexpr const char kGradBuffer[] = "otc.grad_buffer";
inline constexpr const char kFirstMicroBatch[] = "otc.first_micro_batch";
inline constexpr const char kTiedArg[] = "otc.tied_arg";
/// On the imported module: [[A, B], ...], parameters holding equal values
/// that train apart (TiedWeights.h); the driver warns of those trained.
inline constexpr const char kEqualParams[] = "otc.equal_params";
/// On the imported function: the samples per micro-batch its shapes hold,
/// which code generation reads (a plain function has none).
inline constexpr const char kMicroBatch[] = "otc.micro_batch";
/// On an integer input: class labels in [0, otc.classes), or otc.ignore_index.
inline constexpr const char kClasses[] = "otc.classes";
inline constexpr const char kIgnoreIndex[] = "otc.ignore_index";
/// On the training step: the loss-scaling policy (otc-loss-scaling).
inline constexpr const char kLossScale[] = "otc.loss_scale";
/// On the module: the mixed-precision table (otc-mixed-precision), whose
/// "precision" entry is a PrecisionAttr.
inline constexpr const char kPrecisionPolicy[] = "otc.precision_policy";
} // namespace attr

/// On the training step after otc-recompute: what it did, in words
/// ("blocks: 2 blocks /blocks.N/"), and for policy budget the number of
/// layers it can recompute (what `layers` ranges over).
inline constexpr const char kRecomputeSummary[] = "otc.recompute";
/// The policy it applied, typed (a RecomputePolicyAttr).
inline constexpr const char kRecomputePolicy[] = "otc.recompute_policy";
inline constexpr const char kRecomputeLayers[] = "otc.recompute_layers";

/// Forward graph to training step: cleanups, fusions, autodiff, accumulation,
/// cleanups.
void buildTrainingPipeline(mlir::OpPassManager &pm, const LossScalingOptions &scaling = {},
                           const MixedPrecisionOptions &precision = {},
                           const RecomputeOptions &recompute = {},
                           const InsertLoraOptions &lora = {});

/// The forward graph as imported, cleaned up (--forward-only; with `lora`,
/// the training executable's evaluation function of an adapted model).
void buildForwardPipeline(mlir::OpPassManager &pm, const MixedPrecisionOptions &precision = {},
                          const InsertLoraOptions &lora = {});

/// Registers the otc passes and the `otc-training-pipeline` with the
/// command-line pass registry.
void registerOtcPassesAndPipelines();

} // namespace otc

#endif // OTC_PASSES_PASSES_H
