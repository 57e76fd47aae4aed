// Transposed copies of initializers tied back to their source, and merged
// equal ones split again (TiedWeights.h).
#include "TiedWeights.h"

#include <cstring>
#include <map>
#include <set>

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
  if (sourceOf.empty())
    return tied;
  // The copies leave the initializers (and the graph inputs, where an old
  // exporter listed initializers) and become Transpose nodes of the source.
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
    n->set_op_type("Transpose");
    n->set_name("otc_tied/" + copy);
    n->add_input(source);
    n->add_output(copy);
    onnx::AttributeProto *perm = n->add_attribute();
    perm->set_name("perm");
    perm->set_type(onnx::AttributeProto::INTS);
    perm->add_ints(1);
    perm->add_ints(0);
    tied.push_back("'" + copy + "' is '" + source + "' transposed");
  }
  for (auto &n : *g.mutable_node())
    *nodes.Add() = std::move(n);
  g.mutable_node()->Swap(&nodes);
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
  std::vector<std::pair<std::string, std::string>> untied;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (auto &n : *g.mutable_node()) {
    auto it = n.op_type() == "Identity" && n.domain().empty() && n.input_size() == 1 &&
                      n.output_size() == 1 && !outputs.count(n.output(0)) &&
                      !initializer.count(n.output(0))
                  ? initializer.find(n.input(0))
                  : initializer.end();
    if (it == initializer.end() || !isFloat(g.initializer(it->second).data_type())) {
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

} // namespace otc
