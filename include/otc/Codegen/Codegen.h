// A function on the otc dialect to target source: a typed kernel program
// (buffers, fused loop steps, matrix products, one arena) emitted as C++ for
// the CPU or CUDA C++ for GPUs.
#ifndef OTC_CODEGEN_CODEGEN_H
#define OTC_CODEGEN_CODEGEN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "otc/runtime/abi.h" // otc_optimizer, shared with the runtime
#include <string>

namespace otc {

enum class Target { Cpu, Cuda };

struct CodegenOptions {
  Target target = Target::Cpu;
  /// The training pipeline's step (loss, seed, gradient buffers), or a
  /// plain function whose arguments and results the runtime binds.
  bool training = true; // the micro-batch is the function's otc.micro_batch
  otc_optimizer optimizer = OTC_SGD;
  std::string title; // of the memory timeline picture
  bool planOnly = false; // the plan's numbers, no source (auto-fit's trials)
  int64_t defaultAccumSteps = 1; // ./train's --accum-steps default
  int64_t min8bitSize = 4096;    // --min-8bit-size: adamw8bit's float32 threshold
};

struct CodegenOutput {
  std::string source;  // the target's source
  std::string program; // the kernel program as text (--emit program)
  std::string memory;  // the training step's memory report
  std::string peak;     // what is live at its peak, by category
  std::string timeline; // live bytes per step, an SVG picture
  // The plan's numbers (training): parameters, copies, gradients, optimizer
  // state, inputs and constants that persist, plus the arena; the arena
  // bytes kept from the forward to the backward; bytes the steps move; steps.
  int64_t plannedBytes = 0, keptBytes = 0, traffic = 0, steps = 0;
};


/// Bytes with a binary unit, "12.5 MiB".
std::string humanBytes(double bytes);

/// Returns false with one line in `error` on unsupported input.
bool emitCode(mlir::func::FuncOp func, const CodegenOptions &options, CodegenOutput &out,
              std::string &error);

} // namespace otc

#endif
