// Sequences, as PyTorch 2's exporter writes a tensor split into a Python
// list (GPT-2's q, k, v = x.split(n, dim=2)): SplitToSequence, then
// SequenceAt, SequenceLength or ConcatFromSequence; and as an unrolled Loop
// builds one (SequenceEmpty, SequenceInsert). A sequence is the names of
// its parts, each imported by the ordinary Split (and Squeeze, Concat) on a
// node made for it; nothing of it exists at run time.
#include "Importers.h"

#include "otc/runtime/limits.h"

using namespace mlir;

namespace otc {

namespace {

void setInt(onnx::NodeProto &n, const char *name, int64_t value) {
  onnx::AttributeProto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void setInts(onnx::NodeProto &n, const char *name, const std::vector<int64_t> &values) {
  onnx::AttributeProto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values)
    a->add_ints(v);
}

// Each part is an op and a name: a bound keeps a tiny model from making
// millions (an ordinary Split has as many as the file lists outputs).
constexpr size_t kMaxParts = 4096;

constexpr const char *kNotASequence =
    "the input is not a sequence otc built (SplitToSequence, SequenceConstruct, SequenceEmpty "
    "and SequenceInsert make them)";

/// A name no value of the graph has: `base`, with '_' added as needed.
std::string freshName(GraphImporter &imp, std::string base) {
  while (imp.isDefined(base))
    base += "_";
  return base;
}

/// A fresh name for the tensor `source` as a sequence's part: the part
/// outlives the source's last reader, when a constant's values are let go.
FailureOr<std::string> partOf(GraphImporter &imp, const std::string &source,
                              const std::string &sequence) {
  std::string part = freshName(imp, sequence + "/otc_part_of_" + source);
  if (failed(bindAs(imp, part, source)))
    return failure();
  return part;
}

/// The sequence position input `i` names, in [0, n] when `insert` (one
/// past the end appends), else in [0, n); the default is the end.
FailureOr<int64_t> position(GraphImporter &imp, size_t i, int64_t n, bool insert) {
  if (imp.numInputs() <= i)
    return insert ? n : n - 1;
  const HostTensor *at = imp.constantInput(i);
  if (!at || at->numElements() != 1)
    return imp.fail("the position must be a scalar known at compile time");
  int64_t k = at->asInts()[0], end = insert ? n : n - 1;
  if (k < -n || k > end)
    return imp.fail("position " + std::to_string(k) + " is outside the sequence's " +
                    std::to_string(n) + " parts");
  return k < 0 ? k + n : k;
}

} // namespace

LogicalResult stackParts(GraphImporter &imp, const std::vector<std::string> &parts, int64_t axis,
                         const std::string &out) {
  if (parts.empty())
    return imp.fail("stacking needs at least one part to know the result's shape");
  // Each part with a new axis of 1 (a Reshape), then one Concat on it.
  const onnx::NodeProto &n = imp.node();
  onnx::NodeProto concat = madeNode(n, "Concat");
  int64_t a = 0;
  for (const std::string &p : parts) {
    onnx::NodeProto probe = madeNode(n, "Identity");
    probe.add_input(p);
    probe.add_output(out); // (a node without a name goes by its output's)
    std::vector<int64_t> shape;
    if (failed(imp.withNode(probe, [&] { return shapeOfInput(imp, 0, shape); })))
      return failure();
    int64_t rank = shape.size();
    a = axis < 0 ? axis + rank + 1 : axis;
    if (a < 0 || a > rank)
      return imp.fail("axis " + std::to_string(axis) + " is outside [" +
                      std::to_string(-rank - 1) + ", " + std::to_string(rank) + "]");
    shape.insert(shape.begin() + a, 1);
    onnx::NodeProto shapeNode = madeNode(n, "Constant");
    shapeNode.add_output(freshName(imp, p + "/otc_stack_shape"));
    HostTensor t;
    t.shape = {int64_t(shape.size())};
    t.values.assign(shape.begin(), shape.end());
    if (failed(imp.withNode(shapeNode, [&] { return imp.define(0, std::move(t)); })))
      return failure();
    onnx::NodeProto reshape = madeNode(n, "Reshape");
    reshape.add_input(p);
    reshape.add_input(shapeNode.output(0));
    reshape.add_output(freshName(imp, p + "/otc_stacked"));
    setInt(reshape, "allowzero", 1); // a 0 in the shape is a size here
    if (failed(imp.withNode(reshape, [&] { return importReshape(imp); })))
      return failure();
    concat.add_input(reshape.output(0));
  }
  // (Parts of another rank than the first fail in Concat, naming the input.)
  setInt(concat, "axis", a);
  concat.add_output(out);
  return imp.withNode(concat, [&] { return importConcat(imp); });
}

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
  setInt(parts, "axis", a);
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
    return imp.fail(kNotASequence);
  if (imp.numInputs() < 2)
    return imp.fail("the position input is missing");
  auto k = position(imp, 1, parts->size(), false);
  if (failed(k))
    return failure();
  imp.defineAs(0, (*parts)[*k]);
  return success();
}

LogicalResult importSequenceEmpty(GraphImporter &imp) {
  imp.defineSequence(0, {});
  return success();
}

LogicalResult importSequenceConstruct(GraphImporter &imp) {
  const onnx::NodeProto &n = imp.node();
  if (imp.numInputs() == 0)
    return imp.fail("a sequence needs at least one tensor");
  for (size_t i = 0; i < imp.numInputs(); ++i)
    if (n.input(i).empty() || imp.sequenceInput(i))
      return imp.fail("input " + std::to_string(i) + " is not a tensor");
  std::vector<std::string> parts;
  for (size_t i = 0; i < imp.numInputs(); ++i) {
    auto part = partOf(imp, n.input(i), n.output(0));
    if (failed(part))
      return failure();
    parts.push_back(*part);
  }
  imp.defineSequence(0, std::move(parts));
  return success();
}

LogicalResult importSequenceInsert(GraphImporter &imp) {
  const std::vector<std::string> *parts = imp.sequenceInput(0);
  if (!parts)
    return imp.fail(kNotASequence);
  if (imp.numInputs() < 2 || imp.node().input(1).empty() || imp.sequenceInput(1))
    return imp.fail("input 1 must be the tensor to insert");
  if (parts->size() >= kMaxParts)
    return imp.fail("the sequence would have more than " + std::to_string(kMaxParts) + " parts");
  auto k = position(imp, 2, parts->size(), true);
  if (failed(k))
    return failure();
  std::vector<std::string> out = *parts; // (before new names grow the maps)
  auto part = partOf(imp, imp.node().input(1), imp.node().output(0));
  if (failed(part))
    return failure();
  out.insert(out.begin() + *k, *part);
  imp.defineSequence(0, std::move(out));
  return success();
}

LogicalResult importSequenceErase(GraphImporter &imp) {
  const std::vector<std::string> *parts = imp.sequenceInput(0);
  if (!parts)
    return imp.fail(kNotASequence);
  if (parts->empty())
    return imp.fail("the sequence is empty");
  auto k = position(imp, 1, parts->size(), false);
  if (failed(k))
    return failure();
  std::vector<std::string> out = *parts;
  out.erase(out.begin() + *k);
  imp.defineSequence(0, std::move(out));
  return success();
}

LogicalResult importSequenceLength(GraphImporter &imp) {
  const std::vector<std::string> *parts = imp.sequenceInput(0);
  if (!parts)
    return imp.fail(kNotASequence);
  HostTensor t;
  t.values = {double(parts->size())};
  return imp.define(0, std::move(t));
}

LogicalResult importConcatFromSequence(GraphImporter &imp) {
  const std::vector<std::string> *parts = imp.sequenceInput(0);
  if (!parts)
    return imp.fail(kNotASequence);
  if (parts->empty())
    return imp.fail("the sequence is empty");
  if (imp.intAttr("new_axis", 0) != 0)
    return stackParts(imp, std::vector<std::string>(*parts), imp.intAttr("axis", 0),
                      imp.node().output(0));
  onnx::NodeProto concat = madeNode(imp.node(), "Concat");
  for (const std::string &p : *parts)
    concat.add_input(p);
  concat.add_output(imp.node().output(0));
  setInt(concat, "axis", imp.intAttr("axis", 0));
  return imp.withNode(concat, [&] { return importConcat(imp); });
}

} // namespace otc
