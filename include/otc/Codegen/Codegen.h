// Training step to target source: a kernel program (fusion groups, matrix
// products, one arena) emitted as C++ for the CPU or CUDA C++ for GPUs.
#ifndef OTC_CODEGEN_CODEGEN_H
#define OTC_CODEGEN_CODEGEN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include <string>

namespace otc {

enum class Target { Cpu, Cuda };

/// The optimizers the runtime implements, numbered as in otc_program.
enum class Optimizer { Sgd = 0, Momentum = 1, Adam = 2, AdamW = 3 };

/// Emits the source of `func`, which must be the output of the training
/// pipeline. Returns false with one line in `error` on unsupported input.
bool emitTrainingStep(mlir::func::FuncOp func, Target target,
                      int64_t microBatch, Optimizer optimizer,
                      std::string &source, std::string &error);

} // namespace otc

#endif
