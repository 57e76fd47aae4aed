// Training step to target source: a kernel program (fusion groups, matrix
// products, one arena) emitted as C++ for the CPU or CUDA C++ for GPUs.
#ifndef OTC_CODEGEN_CODEGEN_H
#define OTC_CODEGEN_CODEGEN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "otc/runtime/abi.h" // otc_optimizer, shared with the runtime
#include <string>

namespace otc {

enum class Target { Cpu, Cuda };


/// Emits the source of `func`, which must be the output of the training
/// pipeline. Returns false with one line in `error` on unsupported input.
bool emitTrainingStep(mlir::func::FuncOp func, Target target,
                      int64_t microBatch, otc_optimizer optimizer,
                      std::string &source, std::string &error);

} // namespace otc

#endif
