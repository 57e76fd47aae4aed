// The one compile path: import (or parse) -> passes -> code generation,
// used by `otc compile` (training and --forward-only), `otc import`,
// `otc kernel` and auto-fit's trials.
#ifndef OTC_TOOLS_COMPILE_H
#define OTC_TOOLS_COMPILE_H

#include "otc/Codegen/Codegen.h"
#include "otc/Frontend/Import.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace otc {

/// Everything one compile depends on. The micro-batch is
/// `import.microBatch`, which the importer records on the function
/// (otc.micro_batch) for code generation.
struct CompileOptions {
  std::string model;   // the ONNX model, or (kernel) the .mlir function
  bool kernel = false; // `otc kernel`: one hand-written function, no passes
  ImportOptions import;
  LossScalingOptions scaling;
  MixedPrecisionOptions precision;
  RecomputeOptions recompute;
  InsertLoraOptions lora; // --lora: rank 0 for none
  CodegenOptions codegen;
};

/// Where a compile stops.
enum class Stage { Import, Passes, Plan, Source };

struct CompileResult {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func; // after the passes: the step, forward or kernel
  std::string embedded;    // the model bytes a training executable carries
  CodegenOutput out;       // Stage::Plan: the plan's numbers; Source: all
  /// Stage::Source of a training step: the evaluation function's source
  /// (the loss in inference mode, as a plain function `otc_get_eval`),
  /// linked into the same executable for --eval-data.
  std::string evalSource;
};

/// Runs the compile up to `stage`. False with one line in `error` naming
/// the culprit.
bool compile(mlir::MLIRContext &ctx, const CompileOptions &options, Stage stage,
             CompileResult &result, std::string &error);

} // namespace otc

#endif
