#include "ExportBugs.h"
#include "ModelChecks.h"

#include "llvm/ADT/STLExtras.h"

#include <cstring>
#include <map>
#include <optional>
#include <vector>

namespace otc {
namespace {

/// The values of a small int64 tensor, or nothing.
std::optional<std::vector<int64_t>> ints(const onnx::TensorProto &t) {
  if (t.data_type() != onnx::TensorProto::INT64 || t.data_location() == onnx::TensorProto::EXTERNAL)
    return std::nullopt;
  if (t.int64_data_size() > 0)
    return std::vector<int64_t>(t.int64_data().begin(), t.int64_data().end());
  const std::string &raw = t.raw_data();
  if (raw.size() % 8 != 0 || raw.size() > 64)
    return std::nullopt;
  std::vector<int64_t> v(raw.size() / 8);
  std::memcpy(v.data(), raw.data(), raw.size()); // ONNX stores little-endian, as x86 and arm64
  return v;
}

} // namespace

std::string offByOneCircularPadding(const onnx::GraphProto &g) {
  std::map<std::string, const onnx::TensorProto *> constants;
  std::map<std::string, const onnx::NodeProto *> producer;
  for (const auto &t : g.initializer())
    constants[t.name()] = &t;
  for (const auto &n : g.node()) {
    for (const auto &o : n.output())
      producer[o] = &n;
    if (n.op_type() == "Constant" && n.output_size() == 1)
      for (const auto &a : n.attribute())
        if (a.name() == "value" && a.has_t())
          constants[n.output(0)] = &a.t();
  }
  auto values = [&](const onnx::NodeProto &n, int i) -> std::optional<std::vector<int64_t>> {
    auto it = i < n.input_size() ? constants.find(n.input(i)) : constants.end();
    return it == constants.end() ? std::nullopt : ints(*it->second);
  };
  for (const auto &n : g.node()) {
    if (n.op_type() != "Concat" || n.input_size() < 2)
      continue;
    int64_t axis = 0;
    for (const auto &a : n.attribute())
      if (a.name() == "axis")
        axis = a.i();
    auto it = producer.find(n.input(0));
    if (it == producer.end() || it->second->op_type() != "Slice")
      continue;
    const onnx::NodeProto &s = *it->second;
    auto starts = values(s, 1), ends = values(s, 2), axes = values(s, 3);
    bool wraps = starts && ends && axes && starts->size() == 1 && ends->size() == 1 &&
                 axes->size() == 1 && (*axes)[0] == axis && (*ends)[0] == -1 && (*starts)[0] < -1;
    if (!wraps || n.input(1) != s.input(0))
      continue;
    // PyTorch up to 1.9 padded in two steps along one axis, y = Concat(x,
    // x[0:r]) first: y[-(l+r):-r] is then right, and reads like the bug
    // when r is 1.
    auto first = producer.find(s.input(0));
    if (first != producer.end() && first->second->op_type() == "Concat" &&
        llvm::any_of(first->second->attribute(), [&](const onnx::AttributeProto &a) {
          return a.name() == "axis" && a.i() == axis;
        }))
      continue;
    return "node " + quoted(n.name()) + " (Concat) pads its input circularly as torch.onnx "
           "before 2.0 exported padding_mode=\"circular\": one element off, x[" +
           std::to_string((*starts)[0]) + ":-1] where PyTorch wraps x[" +
           std::to_string((*starts)[0] + 1) + ":]. otc trains the graph as written (onnxruntime "
           "computes the same), not the module; export with PyTorch 2 to train the module "
           "(pytorch/pytorch#86690)";
  }
  return "";
}

} // namespace otc
