// Auto-fit: `otc compile --memory-budget` compiles the step up to its
// memory plan for candidate micro-batch sizes and recompute policies, and
// picks the configuration that fits with the best estimated throughput.
#ifndef OTC_TOOLS_AUTOFIT_H
#define OTC_TOOLS_AUTOFIT_H

#include "Compile.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace otc {

/// One compiled configuration's plan and estimate.
struct Plan {
  int64_t microBatch = 0, accum = 1;
  RecomputeOptions recompute;
  std::string summary;     // the recompute policy in words
  int64_t planned = 0;     // bytes: persistent memory plus the arena
  int64_t kept = 0;        // arena bytes kept from the forward to the backward
  int64_t traffic = 0, steps = 0, candidates = -1;
  StepFlops flops;
  double seconds = 0;      // estimated time of K micro-batches
  std::string error;       // set when the configuration does not compile
};

/// Imports, runs the training pipeline and plans the step (no source).
bool planStep(mlir::MLIRContext &ctx, const CompileOptions &o, Plan &plan);

struct FitRequest {
  int64_t budget = 0;      // bytes
  int64_t globalBatch = 0; // 0: the largest micro-batch that fits (--micro-batch auto)
  bool microBatchAuto = false;
  bool policyGiven = false; // --recompute named a policy other than budget
};

/// Chooses micro-batch, accumulation and recompute policy, prints the choice
/// and the runners-up to `log`, and sets them in `o` (the accumulation as
/// the executable's default). False with one line in `error` when nothing
/// fits, giving the smallest planned peak it found.
bool autoFit(mlir::MLIRContext &ctx, CompileOptions &o, const FitRequest &request,
             std::string &error, llvm::raw_ostream &log);

} // namespace otc

#endif
