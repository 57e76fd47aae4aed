// --loss: appends the loss to the ONNX graph, before import, as nodes the
// importers already know (SoftmaxCrossEntropyLoss, Sub, ReduceMean), so
// autodiff and the fused cross-entropy see them as any exported loss.
#include "AppendLoss.h"
#include "GraphImporter.h"
#include "ModelChecks.h"

#include "llvm/ADT/STLExtras.h"

namespace otc {

onnx::ValueInfoProto *findOutput(onnx::GraphProto &g, const std::string &name) {
  for (auto &o : *g.mutable_output())
    if (o.name() == name)
      return &o;
  return nullptr;
}

namespace {

/// Whether `name` is taken by an input, initializer or node output.
bool nameTaken(const onnx::GraphProto &g, const std::string &name) {
  for (const auto &i : g.input())
    if (i.name() == name)
      return true;
  for (const auto &i : g.initializer())
    if (i.name() == name)
      return true;
  for (const auto &n : g.node())
    for (const auto &o : n.output())
      if (o == name)
        return true;
  return false;
}

onnx::NodeProto *addNode(onnx::GraphProto &g, const std::string &op,
                         std::vector<std::string> ins, const std::string &out) {
  onnx::NodeProto *n = g.add_node();
  n->set_op_type(op);
  n->set_name(out == "otc_loss" ? "otc_loss/" + op : out);
  for (auto &i : ins)
    n->add_input(i);
  n->add_output(out);
  return n;
}

void addIntAttribute(onnx::NodeProto *n, const char *name, int64_t value) {
  onnx::AttributeProto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

/// A Constant node, not an initializer: a float initializer would train.
void addConstant(onnx::GraphProto &g, const std::string &name, int type,
                 std::vector<int64_t> dims, std::vector<double> values) {
  onnx::AttributeProto *value = addNode(g, "Constant", {}, name)->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *t = value->mutable_t();
  t->set_data_type(type);
  for (int64_t d : dims)
    t->add_dims(d);
  for (double v : values) {
    if (type == onnx::TensorProto::INT64)
      t->add_int64_data(int64_t(v));
    else if (type == onnx::TensorProto::DOUBLE)
      t->add_double_data(v);
    else
      t->add_float_data(float(v));
  }
}

/// A scalar constant of float type `type`: a 16-bit one as a float32
/// constant cast to it (Constant's float_data holds float32 only).
void addFloatConstant(onnx::GraphProto &g, const std::string &name, int type, double value) {
  if (type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE) {
    addConstant(g, name, type, {}, {value});
    return;
  }
  addConstant(g, name + "/f32", onnx::TensorProto::FLOAT, {}, {value});
  addIntAttribute(addNode(g, "Cast", {name + "/f32"}, name), "to", type);
}

/// Mean softmax cross-entropy of `scores` ([N, C], the classes on axis 1)
/// against int64 `labels` ([N]), ignoring `ignore`, into `out`.
void crossEntropy(onnx::GraphProto &g, const std::string &scores, const std::string &labels,
                  int64_t ignore, const std::string &out) {
  onnx::NodeProto *loss = addNode(g, "SoftmaxCrossEntropyLoss", {scores, labels}, out);
  onnx::AttributeProto *reduction = loss->add_attribute();
  reduction->set_name("reduction");
  reduction->set_type(onnx::AttributeProto::STRING);
  reduction->set_s("mean");
  addIntAttribute(loss, "ignore_index", ignore);
}

/// A new int64 input `name` of shape [batch, dims...].
void addLabelInput(onnx::GraphProto &g, const std::string &name,
                   const std::vector<onnx::TensorShapeProto_Dimension> &dims) {
  onnx::ValueInfoProto *in = g.add_input();
  in->set_name(name);
  auto *tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::INT64);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  for (const auto &d : dims)
    *tt->mutable_shape()->add_dim() = d;
}

/// A new input `name` of the output's type, its batch symbolic.
void addTargetInput(onnx::GraphProto &g, const std::string &name,
                    const onnx::TypeProto_Tensor &outType) {
  onnx::ValueInfoProto *in = g.add_input();
  in->set_name(name);
  auto *tt = in->mutable_type()->mutable_tensor_type();
  *tt = outType;
  if (tt->shape().dim_size() > 0)
    tt->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
}

/// F.cross_entropy(logits.view(-1, C), labels.view(-1)) with PyTorch's
/// default ignore_index (-100): the classes on the last axis, every other
/// position a row, so a language model's [N, T, C] takes labels [N, T].
void appendCrossEntropy(onnx::GraphProto &g, const std::string &out,
                        const onnx::TypeProto_Tensor &outType) {
  // (A shape resolveLossDims could not find leaves the import to say why.)
  int rank = outType.has_shape() ? outType.shape().dim_size() : 0;
  bool rows = rank > 2 && outType.shape().dim(rank - 1).has_dim_value();
  std::vector<onnx::TensorShapeProto_Dimension> dims;
  for (int d = 1; rows && d < rank - 1; ++d)
    dims.push_back(outType.shape().dim(d));
  addLabelInput(g, "labels", dims);
  std::string scores = out, labels = "labels";
  if (rows) {
    addConstant(g, "otc_loss/rows_shape", onnx::TensorProto::INT64, {2},
                {-1, double(outType.shape().dim(rank - 1).dim_value())});
    addConstant(g, "otc_loss/labels_shape", onnx::TensorProto::INT64, {1}, {-1});
    addNode(g, "Reshape", {out, "otc_loss/rows_shape"}, "otc_loss/rows");
    addNode(g, "Reshape", {"labels", "otc_loss/labels_shape"}, "otc_loss/row_labels");
    scores = "otc_loss/rows";
    labels = "otc_loss/row_labels";
  }
  crossEntropy(g, scores, labels, -100, "otc_loss");
}

/// Mean squared error against a new input `targets` of the output's type.
void appendMse(onnx::GraphProto &g, const std::string &out,
               const onnx::TypeProto_Tensor &outType) {
  addTargetInput(g, "targets", outType);
  addNode(g, "Sub", {out, "targets"}, "otc_loss/diff");
  addNode(g, "Mul", {"otc_loss/diff", "otc_loss/diff"}, "otc_loss/sq");
  onnx::NodeProto *mean = addNode(g, "ReduceMean", {"otc_loss/sq"}, "otc_loss");
  addIntAttribute(mean, "keepdims", 0);
}

/// Binary cross-entropy with logits against a new float input `labels` of
/// the output's shape, as F.binary_cross_entropy_with_logits (mean) and
/// Hugging Face's multi-label classification: max(x, 0) - x·y +
/// log(1 + e^-|x|), which neither overflows nor takes log(0). max(x, 0) is
/// (x + |x|) / 2, whose gradient at 0 is PyTorch's σ(0) = 1/2 with the
/// rest (a Relu's would be 0 there: every logit of a zeroed head).
void appendBce(onnx::GraphProto &g, const std::string &out,
               const onnx::TypeProto_Tensor &outType) {
  addTargetInput(g, "labels", outType);
  addFloatConstant(g, "otc_loss/one", outType.elem_type(), 1.0);
  addFloatConstant(g, "otc_loss/half", outType.elem_type(), 0.5);
  addNode(g, "Abs", {out}, "otc_loss/magnitude");
  addNode(g, "Add", {out, "otc_loss/magnitude"}, "otc_loss/twice_positive");
  addNode(g, "Mul", {"otc_loss/twice_positive", "otc_loss/half"}, "otc_loss/positive");
  addNode(g, "Mul", {out, "labels"}, "otc_loss/product");
  addNode(g, "Neg", {"otc_loss/magnitude"}, "otc_loss/negative");
  addNode(g, "Exp", {"otc_loss/negative"}, "otc_loss/exp");
  addNode(g, "Add", {"otc_loss/exp", "otc_loss/one"}, "otc_loss/one_plus");
  addNode(g, "Log", {"otc_loss/one_plus"}, "otc_loss/softplus");
  addNode(g, "Sub", {"otc_loss/positive", "otc_loss/product"}, "otc_loss/linear");
  addNode(g, "Add", {"otc_loss/linear", "otc_loss/softplus"}, "otc_loss/each");
  onnx::NodeProto *mean = addNode(g, "ReduceMean", {"otc_loss/each"}, "otc_loss");
  addIntAttribute(mean, "keepdims", 0);
}

/// Hugging Face's question-answering loss (BertForQuestionAnswering and
/// every *ForQuestionAnswering): the mean of the start and end logits'
/// cross-entropies against `start_positions` and `end_positions`, each
/// clamped to [0, T] with T (an answer cut off by truncation) ignored.
bool appendSpan(onnx::GraphProto &g, const std::vector<std::string> &outs,
                const std::vector<onnx::TypeProto_Tensor> &types, std::string &error) {
  const char *ends[2] = {"start", "end"};
  for (int k = 0; k < 2; ++k) {
    const auto &shape = types[k].shape();
    if (!types[k].has_shape() || shape.dim_size() != 2 || !shape.dim(1).has_dim_value()) {
      error = "--loss span reads [batch, sequence] logits, but " + quoted(outs[k]) +
              (types[k].has_shape() && shape.dim_size() != 2
                   ? " has rank " + std::to_string(shape.dim_size())
                   : " has no known sequence length (give it with --dim)");
      return false;
    }
    int64_t t = shape.dim(1).dim_value();
    std::string e = ends[k], positions = e + "_positions", prefix = "otc_loss/" + e;
    addLabelInput(g, positions, {});
    addConstant(g, prefix + "_first", onnx::TensorProto::INT64, {}, {0});
    addConstant(g, prefix + "_ignored", onnx::TensorProto::INT64, {}, {double(t)});
    addNode(g, "Clip", {positions, prefix + "_first", prefix + "_ignored"},
            prefix + "_clamped");
    crossEntropy(g, outs[k], prefix + "_clamped", t, prefix);
  }
  addFloatConstant(g, "otc_loss/half", types[0].elem_type(), 0.5);
  addNode(g, "Add", {"otc_loss/start", "otc_loss/end"}, "otc_loss/sum");
  addNode(g, "Mul", {"otc_loss/sum", "otc_loss/half"}, "otc_loss");
  return true;
}

} // namespace

bool parseLossSpec(const std::string &spec, LossSpec &out, std::string &error) {
  out = {};
  if (spec.empty())
    return true;
  size_t colon = spec.find(':');
  out.kind = spec.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  // Only span splits at commas: another loss's output may have one in its name.
  if (colon != std::string::npos && out.kind != "span")
    out.outputs.push_back(rest);
  for (size_t start = 0; colon != std::string::npos && out.kind == "span";) {
    size_t comma = rest.find(',', start);
    out.outputs.push_back(rest.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  bool known = out.kind == "cross-entropy" || out.kind == "mse" || out.kind == "bce" ||
               out.kind == "span";
  if (!known) {
    error = "unknown --loss " + quoted(spec) +
            " (expected cross-entropy:OUT, mse:OUT, bce:OUT or span:START,END)";
    return false;
  }
  size_t want = out.kind == "span" ? 2 : 1;
  if (out.outputs.size() != want || colon == std::string::npos ||
      llvm::any_of(out.outputs, [](const std::string &o) { return o.empty(); }) ||
      (want == 2 && out.outputs[0] == out.outputs[1])) {
    error = "--loss " + quoted(spec) + ": " + out.kind + " reads " +
            (want == 2 ? "two different outputs, START,END" : "one output");
    return false;
  }
  return true;
}

bool applyLoss(onnx::ModelProto &model, const std::string &spec, std::string &error) {
  onnx::GraphProto &g = *model.mutable_graph();
  LossSpec loss;
  if (!parseLossSpec(spec, loss, error))
    return false;
  if (loss.kind.empty()) {
    std::vector<int> scalars;
    for (int i = 0; i < g.output_size(); ++i) {
      const auto &t = g.output(i).type().tensor_type();
      bool isFloat = t.elem_type() == onnx::TensorProto::FLOAT ||
                     t.elem_type() == onnx::TensorProto::DOUBLE;
      if (isFloat && t.has_shape() && t.shape().dim_size() == 0)
        scalars.push_back(i);
    }
    if (scalars.size() != 1) {
      error = "the model has " + std::to_string(scalars.size()) +
              " scalar float outputs; pick the loss with --loss "
              "cross-entropy:OUT, mse:OUT, bce:OUT or span:START,END";
      return false;
    }
    onnx::ValueInfoProto only = g.output(scalars[0]); // a copy: outputs are cleared
    g.clear_output();
    *g.add_output() = only;
    return true;
  }

  // Copies: the outputs die when they are cleared below.
  std::vector<onnx::TypeProto_Tensor> types;
  for (const std::string &out : loss.outputs) {
    onnx::ValueInfoProto *target = findOutput(g, out);
    if (!target) {
      error = "--loss names " + quoted(out) + ", which is not a model output";
      return false;
    }
    if (llvm::any_of(g.initializer(), [&](const auto &t) { return t.name() == out; })) {
      error = "--loss names " + quoted(out) + ", an initializer, not a value the graph computes";
      return false;
    }
    types.push_back(target->type().tensor_type());
  }
  // Their targets take the output's type, and a data input is float32.
  int elem = types[0].elem_type();
  if ((loss.kind == "bce" || loss.kind == "mse") && elem != onnx::TensorProto::FLOAT &&
      elem != onnx::TensorProto::DOUBLE) {
    error = "--loss " + loss.kind + " reads a float32 or float64 output, but " +
            quoted(loss.outputs[0]) + " is " +
            onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(elem));
    return false;
  }
  if (int opset = defaultOpset(model); loss.kind == "span" && opset < 12) {
    error = "--loss span clamps the positions with an integer Clip, which needs opset 12 or "
            "later; the model's is " + std::to_string(opset);
    return false;
  }
  // Built apart, so that the names it adds are checked against the model's
  // before any joins it.
  onnx::GraphProto added;
  if (loss.kind == "cross-entropy")
    appendCrossEntropy(added, loss.outputs[0], types[0]);
  else if (loss.kind == "mse")
    appendMse(added, loss.outputs[0], types[0]);
  else if (loss.kind == "bce")
    appendBce(added, loss.outputs[0], types[0]);
  else if (!appendSpan(added, loss.outputs, types, error))
    return false;
  std::vector<std::string> names;
  for (const auto &in : added.input())
    names.push_back(in.name());
  for (const auto &n : added.node())
    names.push_back(n.output(0));
  for (const std::string &name : names)
    if (nameTaken(g, name)) {
      error = "--loss " + loss.kind + " adds a value " + quoted(name) +
              ", but the model already has one of that name";
      return false;
    }
  for (auto &in : *added.mutable_input())
    *g.add_input() = std::move(in);
  for (auto &n : *added.mutable_node())
    *g.add_node() = std::move(n);
  g.clear_output();
  onnx::ValueInfoProto *out = g.add_output();
  out->set_name("otc_loss");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(types[0].elem_type());
  out->mutable_type()->mutable_tensor_type()->mutable_shape();
  return true;
}

} // namespace otc
