// --loss: the loss otc appends to a model that outputs what the loss reads
// (logits, predictions) rather than the loss itself.
#ifndef OTC_FRONTEND_APPENDLOSS_H
#define OTC_FRONTEND_APPENDLOSS_H

#include "onnx/onnx_pb.h"
#include <string>
#include <vector>

namespace otc {

/// --loss KIND:OUT[,OUT]: cross-entropy, mse and bce read one output; span
/// reads two, a question-answering head's start and end logits.
struct LossSpec {
  std::string kind;
  std::vector<std::string> outputs;
};

/// Parses `spec` ("" is no spec: the model's own scalar output), or returns
/// false with `error` saying what is wrong.
bool parseLossSpec(const std::string &spec, LossSpec &out, std::string &error);

/// Rewrites the graph so its only output is the scalar loss: the model's
/// single scalar float output when `spec` is empty, else the loss it names,
/// with new inputs for its labels (cross-entropy: int64 `labels`; bce:
/// float `labels`; span: `start_positions` and `end_positions`) or targets
/// (mse: `targets`).
bool applyLoss(onnx::ModelProto &model, const std::string &spec, std::string &error);

onnx::ValueInfoProto *findOutput(onnx::GraphProto &g, const std::string &name);

} // namespace otc

#endif
