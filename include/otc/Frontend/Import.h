// ONNX model to otc dialect.
#ifndef OTC_FRONTEND_IMPORT_H
#define OTC_FRONTEND_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include <string>
#include <utility>
#include <vector>

namespace otc {

struct ImportOptions {
  /// Samples per micro-batch: symbolic batch dimensions become this size.
  int64_t microBatch = 1;
  /// --dim NAME=N: every input dimension named NAME (an ONNX dim_param, as
  /// a dynamic axis of torch.onnx.export) becomes N. Axis 0 is the batch's,
  /// which only microBatch sets.
  std::vector<std::pair<std::string, int64_t>> dims;
  /// "" (the model's scalar output is the loss), "cross-entropy:OUT",
  /// "mse:OUT", "bce:OUT" or "span:START,END" (AppendLoss.h).
  std::string loss;
  /// Parameters not to train (--freeze): patterns where `*` matches any run,
  /// over initializer names and the PyTorch names of anonymous ones
  /// (ParameterNames.h). Each must match at least one float initializer.
  std::vector<std::string> freeze;
  /// (KEEP, COPY) pairs of --tie KEEP=COPY: COPY trains as KEEP, or as its
  /// transpose (TiedWeights.h).
  std::vector<std::pair<std::string, std::string>> ties;
  /// Rows of a parameter's dim 0 that get no gradient (--fixed-rows
  /// NAME=ROW[,ROW...]), as an Embedding's padding_idx in PyTorch.
  std::vector<std::pair<std::string, std::vector<int64_t>>> fixedRows;
  /// Import `func.func @forward` returning every graph output (each marked
  /// `otc.output`), with no loss, for evaluation (--forward-only).
  bool forwardOnly = false;
  /// The loss in inference mode, for evaluation during training: Dropout
  /// is the identity and BatchNorm normalises with its running statistics
  /// (model.eval() in PyTorch); nothing is assigned.
  bool evaluation = false;
  /// The executable carries the parameters' values (--embed-weights), and
  /// runs without the model's file; by default it reads them from that file
  /// at start.
  bool embedWeights = false;
  /// Conv imports as one `otc.conv` (--conv-op: cuDNN on CUDA) instead of
  /// im2col and a matmul.
  bool convOp = false;
  /// --batch-norm train: every BatchNormalization normalises with the
  /// micro-batch's statistics and updates the running ones (model.train()),
  /// whatever mode the export wrote; PyTorch 2's exporter writes inference
  /// mode even for a module in training mode.
  bool batchNormTrain = false;
};

/// Reads, checks and imports the ONNX model at `path` into a module holding
/// `func.func @train_step`, whose single result is the loss (or, with
/// `forwardOnly`, `func.func @forward`). On failure
/// returns null with one line in `error` naming the culprit. External data
/// must lie in files inside the model's folder. `embeddedModel`, when given,
/// receives the bytes an executable embeds: the model as read, with any
/// external data made inline and, unless `embedWeights`, without the
/// parameters' values (abi.h).
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &ctx,
                                                  const std::string &path,
                                                  const ImportOptions &options,
                                                  std::string &error,
                                                  std::string *embeddedModel = nullptr);

/// The same from the model's bytes; `name` is used in messages and
/// `modelDir` resolves external data (none is allowed when empty).
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxBytes(mlir::MLIRContext &ctx, const std::string &bytes,
                const std::string &modelDir, const std::string &name,
                const ImportOptions &options, std::string &error,
                std::string *embeddedModel = nullptr);

/// The ONNX operator types the import table knows, at any opset, sorted and
/// unique (the fuzzer's vocabulary).
std::vector<std::string> supportedOnnxOps();

} // namespace otc

#endif // OTC_FRONTEND_IMPORT_H
