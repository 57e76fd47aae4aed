// Transposed copies of initializers tied back to their source, and merged
// equal ones split again (TiedWeights.h).
#include "TiedWeights.h"
#include "ParameterNames.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

namespace otc {
namespace {

/// The float32 values of a checked initializer, or null for another type.
const float *floatsOf(const onnx::TensorProto &t, int64_t count) {
  if (t.data_type() != onnx::TensorProto::FLOAT)
    return nullptr;
  if (t.has_raw_data())
    return t.raw_data().size() == size_t(count) * 4
               ? reinterpret_cast<const float *>(t.raw_data().data())
               : nullptr;
  return t.float_data_size() == count ? t.float_data().data() : nullptr;
}

/// The bytes of a float32 or float64 initializer's values, or "" when the
/// tensor is another type or its size does not match its dims.
std::string_view valuesOf(const onnx::TensorProto &t) {
  int64_t count = 1;
  for (int64_t d : t.dims())
    count *= d;
  if (t.data_type() == onnx::TensorProto::FLOAT)
    if (const float *v = floatsOf(t, count))
      return {reinterpret_cast<const char *>(v), size_t(count) * 4};
  if (t.data_type() == onnx::TensorProto::DOUBLE) {
    if (t.has_raw_data())
      return t.raw_data().size() == size_t(count) * 8 ? std::string_view(t.raw_data())
                                                      : std::string_view();
    if (t.double_data_size() == count)
      return {reinterpret_cast<const char *>(t.double_data().data()), size_t(count) * 8};
  }
  return {};
}

/// One value repeated (a fresh zero or one initialisation, or a scalar):
/// equal values there say nothing about the model.
bool repeated(std::string_view bytes, size_t width) {
  for (size_t i = width; i < bytes.size(); i += width)
    if (bytes.compare(i, width, bytes.substr(0, width)) != 0)
      return false;
  return true;
}

struct Matrix {
  const onnx::TensorProto *tensor;
  int64_t rows, cols;
  const float *values;
  int index; // in the initializers
};

/// Bitwise equal floats (so -0 and 0 differ, and a NaN matches itself).
bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool isTransposeOf(const Matrix &b, const Matrix &a) {
  if (b.rows != a.cols || b.cols != a.rows)
    return false;
  for (int64_t i = 0; i < b.rows; ++i)
    for (int64_t j = 0; j < b.cols; ++j)
      if (!same(b.values[i * b.cols + j], a.values[j * a.cols + i]))
        return false;
  return true;
}

bool uniform(const Matrix &m) {
  for (int64_t i = 1; i < m.rows * m.cols; ++i)
    if (!same(m.values[i], m.values[0]))
      return false;
  return true;
}

/// Each copy leaves the initializers (and the graph inputs, where an old
/// exporter listed initializers) and becomes a node at the head of the
/// graph reading its source: Transpose, or Identity.
void replaceByNodes(onnx::GraphProto &g, const std::map<std::string, std::string> &sourceOf,
                    bool transposed) {
  auto keep = [&](auto *field) {
    int out = 0;
    for (int i = 0; i < field->size(); ++i)
      if (!sourceOf.count(field->Get(i).name()))
        field->SwapElements(out++, i);
    while (field->size() > out)
      field->RemoveLast();
  };
  keep(g.mutable_initializer());
  keep(g.mutable_input());
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto &[copy, source] : sourceOf) {
    onnx::NodeProto *n = nodes.Add();
    n->set_op_type(transposed ? "Transpose" : "Identity");
    n->set_name("otc_tied/" + copy);
    n->add_input(source);
    n->add_output(copy);
    if (!transposed)
      continue;
    onnx::AttributeProto *perm = n->add_attribute();
    perm->set_name("perm");
    perm->set_type(onnx::AttributeProto::INTS);
    perm->add_ints(1);
    perm->add_ints(0);
  }
  for (auto &n : *g.mutable_node())
    *nodes.Add() = std::move(n);
  g.mutable_node()->Swap(&nodes);
}

} // namespace

std::vector<std::string> tieTransposedCopies(onnx::ModelProto &model) {
  onnx::GraphProto &g = *model.mutable_graph();
  // Candidates by shape: a copy's source has the reversed shape.
  std::multimap<std::pair<int64_t, int64_t>, Matrix> byShape;
  std::vector<Matrix> matrices;
  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto &t = g.initializer(i);
    if (t.dims_size() != 2 || t.dims(0) < 2 || t.dims(1) < 2)
      continue;
    Matrix m{&t, t.dims(0), t.dims(1), floatsOf(t, t.dims(0) * t.dims(1)), i};
    if (m.values && !uniform(m))
      matrices.push_back(m);
  }
  for (const Matrix &m : matrices)
    byShape.emplace(std::make_pair(m.rows, m.cols), m);
  std::vector<std::string> tied;
  std::map<std::string, std::string> sourceOf; // copy -> source
  // The copy is the exporter's folded constant (named "onnx::..."), or else
  // the later initializer; a tensor is tied once.
  auto folded = [](const Matrix &m) { return m.tensor->name().rfind("onnx::", 0) == 0; };
  std::set<const onnx::TensorProto *> done;
  for (size_t i = 0; i < matrices.size(); ++i) {
    const Matrix &b = matrices[i];
    auto [lo, hi] = byShape.equal_range({b.cols, b.rows});
    for (auto it = lo; it != hi && !done.count(b.tensor); ++it) {
      const Matrix &a = it->second;
      // A square matrix may be its own transpose.
      if (a.index >= b.index || done.count(a.tensor) ||
          !isTransposeOf(b, a))
        continue;
      bool copyIsA = folded(a) && !folded(b);
      const Matrix &copy = copyIsA ? a : b, &source = copyIsA ? b : a;
      sourceOf[copy.tensor->name()] = source.tensor->name();
      done.insert(a.tensor);
      done.insert(b.tensor);
    }
  }
  replaceByNodes(g, sourceOf, true);
  for (const auto &[copy, source] : sourceOf)
    tied.push_back("'" + copy + "' is '" + source + "' transposed");
  return tied;
}

std::vector<std::pair<std::string, std::string>> untieMergedCopies(onnx::ModelProto &model) {
  onnx::GraphProto &g = *model.mutable_graph();
  std::map<std::string, int> initializer;
  for (int i = 0; i < g.initializer_size(); ++i)
    initializer.emplace(g.initializer(i).name(), i);
  std::set<std::string> outputs;
  for (const auto &o : g.output())
    outputs.insert(o.name());
  auto isFloat = [](int type) {
    return type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE ||
           type == onnx::TensorProto::FLOAT16 || type == onnx::TensorProto::BFLOAT16;
  };
  // Both anonymous (folded copies, onnx::MatMul_N) and read by one module
  // called twice (ALBERT's shared layer): one parameter, kept merged.
  // Decided on the whole graph, before the loop below moves nodes out.
  std::set<std::string> calledAgain;
  llvm::StringMap<std::string> modules = readerModules(g);
  for (const auto &n : g.node())
    if (n.op_type() == "Identity" && n.input_size() == 1 && n.output_size() == 1 &&
        llvm::StringRef(n.input(0)).starts_with("onnx::") &&
        llvm::StringRef(n.output(0)).starts_with("onnx::") &&
        sameModuleCalledAgain(modules.lookup(n.input(0)), modules.lookup(n.output(0))))
      calledAgain.insert(n.output(0));
  std::vector<std::pair<std::string, std::string>> untied;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (auto &n : *g.mutable_node()) {
    auto it = n.op_type() == "Identity" && n.domain().empty() && n.input_size() == 1 &&
                      n.output_size() == 1 && !outputs.count(n.output(0)) &&
                      !initializer.count(n.output(0))
                  ? initializer.find(n.input(0))
                  : initializer.end();
    if (it == initializer.end() || !isFloat(g.initializer(it->second).data_type()) ||
        (n.output_size() == 1 && calledAgain.count(n.output(0)))) {
      *nodes.Add() = std::move(n);
      continue;
    }
    onnx::TensorProto copy = g.initializer(it->second);
    copy.set_name(n.output(0));
    initializer.emplace(copy.name(), g.initializer_size());
    *g.add_initializer() = std::move(copy);
    untied.emplace_back(n.output(0), n.input(0));
  }
  g.mutable_node()->Swap(&nodes);
  return untied;
}

std::string tieAsAsked(onnx::ModelProto &model,
                       const std::vector<std::pair<std::string, std::string>> &ties) {
  onnx::GraphProto &g = *model.mutable_graph();
  std::map<std::string, const onnx::TensorProto *> byName;
  for (const auto &t : g.initializer())
    byName.emplace(t.name(), &t);
  std::map<std::string, std::string> equalTo, transposeOf;
  for (const auto &[keep, copy] : ties) {
    std::string tie = "--tie " + keep + "=" + copy + ": ";
    for (const std::string &name : {keep, copy})
      if (!byName.count(name) || valuesOf(*byName[name]).empty())
        return tie + "'" + name + "' is not a float initializer of the model";
    if (keep == copy)
      return tie + "a tensor cannot be tied to itself";
    if (equalTo.count(copy) || transposeOf.count(copy))
      return tie + "'" + copy + "' is tied twice";
    const onnx::TensorProto &a = *byName[keep], &b = *byName[copy];
    bool sameShape = a.data_type() == b.data_type() &&
                     std::equal(a.dims().begin(), a.dims().end(), b.dims().begin(), b.dims().end());
    if (sameShape && valuesOf(a) == valuesOf(b)) {
      equalTo[copy] = keep;
      continue;
    }
    bool matrices = a.data_type() == onnx::TensorProto::FLOAT &&
                    b.data_type() == onnx::TensorProto::FLOAT && a.dims_size() == 2 &&
                    b.dims_size() == 2;
    if (matrices && isTransposeOf(Matrix{&b, b.dims(0), b.dims(1), floatsOf(b, b.dims(0) * b.dims(1)), 0},
                                  Matrix{&a, a.dims(0), a.dims(1), floatsOf(a, a.dims(0) * a.dims(1)), 0})) {
      transposeOf[copy] = keep;
      continue;
    }
    return tie + "'" + copy + "' holds neither the values of '" + keep +
           "' nor their transpose, so the two cannot start as one tensor";
  }
  for (const auto &[keep, copy] : ties)
    if (equalTo.count(keep) || transposeOf.count(keep))
      return "--tie " + keep + "=" + copy + ": '" + keep + "' is itself tied to another; tie to that one";
  replaceByNodes(g, equalTo, false);
  replaceByNodes(g, transposeOf, true);
  return "";
}

std::vector<std::pair<std::string, std::string>> equalInitializers(const onnx::ModelProto &model) {
  std::unordered_map<std::string_view, const onnx::TensorProto *> seen;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto &t : model.graph().initializer()) {
    std::string_view v = valuesOf(t);
    size_t width = t.data_type() == onnx::TensorProto::FLOAT ? 4 : 8;
    if (t.dims_size() < 2 || v.empty() || repeated(v, width))
      continue;
    auto [it, fresh] = seen.emplace(v, &t);
    const onnx::TensorProto &first = *it->second;
    if (!fresh && first.data_type() == t.data_type() &&
        std::equal(first.dims().begin(), first.dims().end(), t.dims().begin(), t.dims().end()))
      pairs.emplace_back(first.name(), t.name());
  }
  return pairs;
}

} // namespace otc
