#include "ModelFile.h"

#include "otc/runtime/abi.h"
#include "onnx/onnx_pb.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

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

bool readInitializers(const std::vector<std::string> &names,
                      std::map<std::string, std::vector<float>> &out,
                      std::string &error) {
  onnx::ModelProto model;
  if (!loadEmbedded(model, error))
    return false;
  for (const auto &t : model.graph().initializer()) {
    bool wanted = false;
    for (const auto &n : names)
      wanted |= n == t.name();
    if (!wanted)
      continue;
    if (t.data_type() != onnx::TensorProto::FLOAT) {
      error = "initializer '" + t.name() + "' is not float32";
      return false;
    }
    std::vector<float> &v = out[t.name()];
    if (t.has_raw_data()) {
      v.resize(t.raw_data().size() / sizeof(float));
      std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    } else {
      v.assign(t.float_data().begin(), t.float_data().end());
    }
  }
  for (const auto &n : names)
    if (!out.count(n)) {
      error = "initializer '" + n + "' is missing from the embedded model";
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
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !model.SerializeToOstream(&out) || !out.flush()) {
      std::remove(tmp.c_str());
      error = "cannot write '" + path + "'";
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    error = "cannot rename the trained model into '" + path + "'";
    return false;
  }
  return true;
}

} // namespace otc
