// ONNX bytes -> import -> the training-step IR -> (small graphs) generated
// source: otc compile without the host compiler. The first two bytes pick
// the options: the loss (the model's own, or cross-entropy / mse on its
// first output) and the micro-batch.
#include "OnnxMutator.h"
#include "otc/Codegen/Codegen.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Frontend/Import.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "onnx/onnx_pb.h"

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>

namespace {

/// A fresh context now and then: uniqued types and attributes of every input
/// would otherwise pile up over a million runs.
mlir::MLIRContext &context() {
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static int uses = 0;
  if (!ctx || ++uses % 2000 == 0) {
    ctx = std::make_unique<mlir::MLIRContext>(mlir::MLIRContext::Threading::DISABLED);
    ctx->loadDialect<otc::OtcDialect, mlir::func::FuncDialect>();
  }
  return *ctx;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  otc::ImportOptions options;
  static const char *const losses[] = {"", "cross-entropy:", "mse:"};
  options.loss = losses[data[0] % 3];
  options.microBatch = 1 + data[1] % 4;
  std::string bytes(reinterpret_cast<const char *>(data + 2), size - 2);
  if (!options.loss.empty()) {
    // The output name is the model's first output when it parses.
    onnx::ModelProto probe;
    if (!probe.ParseFromString(bytes) || probe.graph().output_size() == 0)
      return 0;
    options.loss += probe.graph().output(0).name();
  }
  mlir::MLIRContext &ctx = context();
  mlir::ScopedDiagnosticHandler quiet(&ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  std::string error;
  auto module = otc::importOnnxBytes(ctx, bytes, "", "fuzz.onnx", options, error);
  if (!module) {
    if (error.empty())
      std::abort(); // a rejection must say why
    return 0;
  }
  mlir::PassManager pm(&ctx);
  otc::buildTrainingPipeline(pm);
  if (mlir::failed(pm.run(*module)))
    return 0;
  auto func = module->lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!func)
    return 0;
  otc::CodegenOptions codegen;
  codegen.target = data[1] & 4 ? otc::Target::Cuda : otc::Target::Cpu;
  codegen.optimizer = OTC_ADAM;
  otc::CodegenOutput out;
  if (!otc::emitCode(func, codegen, out, error) && error.empty())
    std::abort();
  return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

/// Three times in four, a model that parses is mutated as a model; otherwise
/// (and when it does not parse) libFuzzer mutates the bytes.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  onnx::ModelProto model;
  if (size >= 2 && seed % 4 != 0 && model.ParseFromArray(data + 2, int(size - 2))) {
    otc::mutateModel(model, seed);
    std::string out;
    if (model.SerializeToString(&out) && out.size() + 2 <= maxSize) {
      std::memcpy(data + 2, out.data(), out.size());
      if (seed % 16 == 1)
        data[seed % 2] = uint8_t(seed >> 8);
      return out.size() + 2;
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}
