#include "ModelFile.h"

#include "SafeFile.h"
#include "otc/runtime/abi.h"
#include "onnx/onnx_pb.h"

#include <cstring>

namespace otc {
namespace {

bool loadEmbedded(onnx::ModelProto &model, std::string &error) {
  if (!model.ParseFromArray(otc_model_begin, int(otc_model_end - otc_model_begin))) {
    error = "the embedded ONNX model does not parse";
    return false;
  }
  return true;
}

} // namespace

bool readInitializers(const std::map<std::string, int64_t> &counts,
                      std::map<std::string, std::vector<float>> &out,
                      std::string &error) {
  onnx::ModelProto model;
  if (!loadEmbedded(model, error))
    return false;
  for (const auto &t : model.graph().initializer()) {
    auto want = counts.find(t.name());
    if (want == counts.end() || out.count(t.name()))
      continue;
    if (t.data_type() != onnx::TensorProto::FLOAT) {
      error = "initializer '" + t.name() + "' is not float32";
      return false;
    }
    // otc compile checked these sizes; a mismatch means the executable's
    // embedded model is not the one it was compiled from.
    int64_t have = t.has_raw_data() ? int64_t(t.raw_data().size() / sizeof(float))
                                    : int64_t(t.float_data_size());
    if (have != want->second ||
        (t.has_raw_data() && t.raw_data().size() % sizeof(float) != 0)) {
      error = "initializer '" + t.name() + "' holds " + std::to_string(have) +
              " values in the embedded model, not " + std::to_string(want->second);
      return false;
    }
    std::vector<float> &v = out[t.name()];
    if (t.has_raw_data()) {
      v.resize(have);
      std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    } else {
      v.assign(t.float_data().begin(), t.float_data().end());
    }
  }
  for (const auto &n : counts)
    if (!out.count(n.first)) {
      error = "initializer '" + n.first + "' is missing from the embedded model";
      return false;
    }
  return true;
}

bool writeTrainedModel(const std::string &path,
                       const std::map<std::string, std::vector<float>> &values,
                       std::string &error) {
  onnx::ModelProto model;
  if (!loadEmbedded(model, error))
    return false;
  for (auto &t : *model.mutable_graph()->mutable_initializer()) {
    auto it = values.find(t.name());
    if (it == values.end())
      continue;
    t.clear_float_data();
    t.set_raw_data(std::string(reinterpret_cast<const char *>(it->second.data()),
                               it->second.size() * sizeof(float)));
  }
  return replaceFile(path, 0666,
                     [&](int fd) { return model.SerializeToFileDescriptor(fd); },
                     error);
}

} // namespace otc
