// A structure-aware mutation for the import target: most byte flips make a
// protobuf that does not parse, so three mutations in four parse the model,
// change one field an exporter (or an attacker) controls, and serialise it.
#include "OnnxMutator.h"
#include "otc/Frontend/Import.h"

#include <cstdint>
#include <random>

namespace otc {
namespace {

using Rng = std::mt19937_64;

template <typename T>
const T &pick(Rng &rng, const std::vector<T> &v) {
  return v[rng() % v.size()];
}

int64_t oddNumber(Rng &rng) {
  static const std::vector<int64_t> values = {
      -2, -1, 0, 1, 2, 3, 4, 7, 8, 255, 1 << 16, INT32_MAX, int64_t(1) << 32,
      int64_t(1) << 40, int64_t(1) << 62, INT64_MAX, INT64_MIN};
  return rng() % 3 ? pick(rng, values) : int64_t(rng() % 64) - 8;
}

// Every operator the importer knows, plus one it does not.
const std::vector<std::string> kOps = [] {
  std::vector<std::string> ops = otc::supportedOnnxOps();
  ops.push_back("If");
  return ops;
}();
const std::vector<std::string> kAttrs = {
    "axis", "axes", "perm", "keepdims", "transA", "transB", "alpha", "beta",
    "to", "allowzero", "ignore_index", "reduction", "start", "end",
    "noop_with_empty_axes", "value", "epsilon", "stash_type", "split",
    "num_outputs", "starts", "ends", "min", "max", "pads", "mode"};

void mutateTensor(onnx::TensorProto &t, Rng &rng) {
  switch (rng() % 6) {
  case 0:
    if (t.dims_size())
      t.set_dims(rng() % t.dims_size(), oddNumber(rng));
    else
      t.add_dims(oddNumber(rng));
    break;
  case 1:
    t.set_data_type(int(rng() % 18));
    break;
  case 2: { // shorten or lengthen the raw bytes
    std::string raw = t.raw_data();
    raw.resize(rng() % (raw.size() + 17));
    t.set_raw_data(raw);
    break;
  }
  case 3:
    t.add_int64_data(oddNumber(rng));
    break;
  case 4:
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    {
      auto *e = t.add_external_data();
      e->set_key(rng() % 2 ? "location" : "offset");
      e->set_value(rng() % 2 ? "../x" : "w.bin");
    }
    break;
  default:
    t.clear_dims();
    break;
  }
}

void mutateNode(onnx::GraphProto &g, onnx::NodeProto &n, Rng &rng) {
  switch (rng() % 6) {
  case 0:
    n.set_op_type(pick(rng, kOps));
    break;
  case 1: { // rewire an input to another value
    const auto &src = g.node(rng() % g.node_size());
    std::string name = src.output_size() ? src.output(0) : "";
    if (n.input_size())
      n.set_input(rng() % n.input_size(), name);
    else
      n.add_input(name);
    break;
  }
  case 2: { // an attribute with an odd value
    onnx::AttributeProto *a = n.add_attribute();
    a->set_name(pick(rng, kAttrs));
    switch (rng() % 4) {
    case 0: a->set_type(onnx::AttributeProto::INT); a->set_i(oddNumber(rng)); break;
    case 1:
      a->set_type(onnx::AttributeProto::INTS);
      for (int k = rng() % 5; k >= 0; --k)
        a->add_ints(oddNumber(rng));
      break;
    case 2:
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(rng() % 2 ? NAN : float(oddNumber(rng)));
      break;
    default:
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
      for (int k = rng() % 4; k > 0; --k)
        a->mutable_t()->add_int64_data(oddNumber(rng));
      a->mutable_t()->add_dims(a->t().int64_data_size());
      break;
    }
    break;
  }
  case 3:
    if (n.attribute_size()) {
      auto *a = n.mutable_attribute(rng() % n.attribute_size());
      if (a->has_t())
        mutateTensor(*a->mutable_t(), rng);
      else if (a->ints_size())
        a->set_ints(rng() % a->ints_size(), oddNumber(rng));
      else
        a->set_i(oddNumber(rng));
    }
    break;
  case 4: // duplicate it, outputs and all
    *g.add_node() = n;
    break;
  default:
    n.clear_output();
    if (rng() % 2)
      n.add_output(g.output_size() ? g.output(0).name() : "loss");
    break;
  }
}

void mutateValue(onnx::ValueInfoProto &v, Rng &rng) {
  auto *t = v.mutable_type()->mutable_tensor_type();
  if (rng() % 3 == 0) {
    t->set_elem_type(int(rng() % 18));
    return;
  }
  auto *shape = t->mutable_shape();
  if (shape->dim_size() == 0 || rng() % 4 == 0) {
    shape->add_dim()->set_dim_value(oddNumber(rng));
    return;
  }
  auto *d = shape->mutable_dim(rng() % shape->dim_size());
  if (rng() % 3 == 0)
    d->set_dim_param("batch");
  else
    d->set_dim_value(oddNumber(rng));
}

} // namespace

void mutateModel(onnx::ModelProto &m, uint64_t seed) {
  Rng rng(seed);
  onnx::GraphProto &g = *m.mutable_graph();
  // A random element of a repeated field, or null when it is empty.
  auto pick = [&](auto *field) { return field->empty() ? nullptr : field->Mutable(rng() % field->size()); };
  for (int round = 1 + rng() % 2; round > 0; --round) {
    switch (rng() % 5) {
    case 0: if (auto *t = pick(g.mutable_initializer())) mutateTensor(*t, rng); break;
    case 1: if (auto *n = pick(g.mutable_node())) mutateNode(g, *n, rng); break;
    case 2: if (auto *v = pick(g.mutable_input())) mutateValue(*v, rng); break;
    case 3: if (m.opset_import_size()) m.mutable_opset_import(0)->set_version(int64_t(rng() % 22)); break;
    default: // drop a node
      if (g.node_size() > 1)
        g.mutable_node()->DeleteSubrange(int(rng() % g.node_size()), 1);
      break;
    }
  }
}

} // namespace otc
