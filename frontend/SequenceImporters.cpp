// Sequences, as PyTorch 2's exporter writes a tensor split into a Python
// list (GPT-2's q, k, v = x.split(n, dim=2)): SplitToSequence, then
// SequenceAt, SequenceLength or ConcatFromSequence. A sequence is the names
// of its parts, each imported by the ordinary Split (and Squeeze, Concat)
// on a node made for it; nothing of it exists at run time.
#include "Importers.h"

#include "otc/runtime/limits.h"

using namespace mlir;

namespace otc {

namespace {

onnx::NodeProto madeNode(const onnx::NodeProto &n, const char *op) {
  onnx::NodeProto m;
  m.set_name(n.name());
  m.set_op_type(op);
  return m;
}

void setInts(onnx::NodeProto &n, const char *name, const std::vector<int64_t> &values) {
  onnx::AttributeProto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values)
    a->add_ints(v);
}

} // namespace

LogicalResult importSplitToSequence(GraphImporter &imp) {
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  auto axis = axisAttr(imp, 0, shape.size());
  if (failed(axis))
    return failure();
  int64_t a = *axis, length = shape[a];
  const HostTensor *split = imp.constantInput(1);
  if (imp.numInputs() > 1 && !split)
    return imp.fail("the split sizes must be known at compile time");
  std::vector<int64_t> sizes;
  if (!split) {
    sizes.assign(length, 1);
  } else if (split->shape.empty()) { // one size; the last part may be smaller
    int64_t chunk = split->asInts()[0];
    if (chunk < 1)
      return imp.fail("the split size must be positive");
    for (int64_t at = 0; at < length; at += chunk)
      sizes.push_back(std::min(chunk, length - at));
  } else {
    sizes = split->asInts();
  }
  // Each part is an op and a name: a bound keeps a tiny model from making
  // millions (an ordinary Split has as many as the file lists outputs).
  constexpr size_t kMaxParts = 4096;
  if (sizes.empty() || sizes.size() > kMaxParts)
    return imp.fail("the sequence would have " + std::to_string(sizes.size()) +
                    " parts; otc takes 1 to " + std::to_string(kMaxParts));
  const onnx::NodeProto &n = imp.node();
  onnx::NodeProto parts = madeNode(n, "Split");
  parts.add_input(n.input(0));
  // The parts' names: the node's output with a suffix no other value has,
  // for any part (the graph may define one later, and a later reader of
  // the part would get that value instead).
  std::string base = n.output(0) + "/otc_part";
  auto clashes = [&] {
    for (size_t k = 0; k < sizes.size(); ++k)
      if (imp.isDefined(base + std::to_string(k)) ||
          imp.isDefined(base + std::to_string(k) + "/squeezed"))
        return true;
    return false;
  };
  while (clashes())
    base += "_";
  for (size_t k = 0; k < sizes.size(); ++k)
    parts.add_output(base + std::to_string(k));
  onnx::AttributeProto *axisAttr = parts.add_attribute();
  axisAttr->set_name("axis");
  axisAttr->set_type(onnx::AttributeProto::INT);
  axisAttr->set_i(a);
  setInts(parts, "split", sizes); // the attribute form: this row's form is 11
  if (failed(imp.withNode(parts, [&] { return importSplit(imp); })))
    return failure();
  std::vector<std::string> names(parts.output().begin(), parts.output().end());
  // keepdims = 0 (without sizes given) drops the split axis from each part.
  if (!split && imp.intAttr("keepdims", 1) == 0)
    for (std::string &name : names) {
      onnx::NodeProto squeeze = madeNode(n, "Squeeze");
      squeeze.add_input(name);
      squeeze.add_output(name + "/squeezed");
      setInts(squeeze, "axes", {a});
      if (failed(imp.withNode(squeeze, [&] { return importSqueeze(imp); })))
        return failure();
      name = squeeze.output(0);
    }
  imp.defineSequence(0, std::move(names));
  return success();
}

LogicalResult importSequenceAt(GraphImporter &imp) {
  const std::vector<std::string> *parts = imp.sequenceInput(0);
  if (!parts)
    return imp.fail("the input is not a sequence otc built (only SplitToSequence's are)");
  const HostTensor *at = imp.constantInput(1);
  if (!at || at->numElements() != 1)
    return imp.fail("the position must be a scalar known at compile time");
  int64_t n = parts->size(), k = at->asInts()[0];
  if (k < -n || k >= n)
    return imp.fail("position " + std::to_string(k) + " is outside the sequence's " +
                    std::to_string(n) + " parts");
  imp.defineAs(0, (*parts)[k < 0 ? k + n : k]);
  return success();
}

LogicalResult importSequenceLength(GraphImporter &imp) {
  const std::vector<std::string> *parts = imp.sequenceInput(0);
  if (!parts)
    return imp.fail("the input is not a sequence otc built (only SplitToSequence's are)");
  HostTensor t;
  t.values = {double(parts->size())};
  return imp.define(0, std::move(t));
}

LogicalResult importConcatFromSequence(GraphImporter &imp) {
  const std::vector<std::string> *parts = imp.sequenceInput(0);
  if (!parts)
    return imp.fail("the input is not a sequence otc built (only SplitToSequence's are)");
  if (imp.intAttr("new_axis", 0) != 0)
    return imp.fail("new_axis = 1 (stacking) is not supported");
  onnx::NodeProto concat = madeNode(imp.node(), "Concat");
  for (const std::string &p : *parts)
    concat.add_input(p);
  concat.add_output(imp.node().output(0));
  onnx::AttributeProto *axis = concat.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(imp.intAttr("axis", 0));
  return imp.withNode(concat, [&] { return importConcat(imp); });
}

} // namespace otc
