// Reads and checks an ONNX model, appends the requested loss, specialises the
// batch dimension, then hands the graph to the importer.
#include "GraphImporter.h"
#include "otc/Frontend/Import.h"

#include "onnx/checker.h"
#include "onnx/shape_inference/implementation.h"

#include <fstream>
#include <sstream>

namespace otc {
namespace {

bool readModel(const std::string &path, onnx::ModelProto &model,
               std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open model '" + path + "'";
    return false;
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!model.ParseFromString(bytes.str()) || !model.has_graph()) {
    error = "'" + path + "' is not an ONNX model (it does not parse as one)";
    return false;
  }
  return true;
}

onnx::ValueInfoProto *findOutput(onnx::GraphProto &g, const std::string &name) {
  for (auto &o : *g.mutable_output())
    if (o.name() == name)
      return &o;
  return nullptr;
}

bool hasInput(const onnx::GraphProto &g, const std::string &name) {
  for (const auto &i : g.input())
    if (i.name() == name)
      return true;
  return false;
}

onnx::NodeProto *addNode(onnx::GraphProto &g, const std::string &op,
                         std::vector<std::string> ins, const std::string &out) {
  onnx::NodeProto *n = g.add_node();
  n->set_op_type(op);
  n->set_name("otc_loss/" + op);
  for (auto &i : ins)
    n->add_input(i);
  n->add_output(out);
  return n;
}

/// Rewrites the graph so its only output is the scalar loss.
bool applyLoss(onnx::ModelProto &model, const std::string &spec,
               std::string &error) {
  onnx::GraphProto &g = *model.mutable_graph();
  if (spec.empty()) {
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
              "cross-entropy:OUT or --loss mse:OUT";
      return false;
    }
    onnx::ValueInfoProto loss = g.output(scalars[0]);
    g.clear_output();
    *g.add_output() = loss;
    return true;
  }

  size_t colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  std::string out = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if ((kind != "cross-entropy" && kind != "mse") || out.empty()) {
    error = "unknown --loss '" + spec + "' (expected cross-entropy:OUT or mse:OUT)";
    return false;
  }
  onnx::ValueInfoProto *target = findOutput(g, out);
  if (!target) {
    error = "--loss names '" + out + "', which is not a model output";
    return false;
  }
  std::string extra = kind == "mse" ? "targets" : "labels";
  if (hasInput(g, extra)) {
    error = "--loss " + kind + " adds an input '" + extra +
            "', but the model already has one";
    return false;
  }
  onnx::ValueInfoProto *in = g.add_input();
  in->set_name(extra);
  auto *tt = in->mutable_type()->mutable_tensor_type();
  const auto &outType = target->type().tensor_type();
  if (kind == "cross-entropy") {
    tt->set_elem_type(onnx::TensorProto::INT64);
    tt->mutable_shape()->add_dim()->set_dim_param("batch");
    addNode(g, "SoftmaxCrossEntropyLoss", {out, extra}, "otc_loss")
        ->add_attribute()->CopyFrom([] {
          onnx::AttributeProto a;
          a.set_name("reduction");
          a.set_type(onnx::AttributeProto::STRING);
          a.set_s("mean");
          return a;
        }());
  } else {
    *tt = outType;
    if (tt->shape().dim_size() > 0)
      tt->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
    addNode(g, "Sub", {out, extra}, "otc_loss/diff");
    addNode(g, "Mul", {"otc_loss/diff", "otc_loss/diff"}, "otc_loss/sq");
    onnx::NodeProto *mean = addNode(g, "ReduceMean", {"otc_loss/sq"}, "otc_loss");
    onnx::AttributeProto *keep = mean->add_attribute();
    keep->set_name("keepdims");
    keep->set_type(onnx::AttributeProto::INT);
    keep->set_i(0);
  }
  g.clear_output();
  onnx::ValueInfoProto *loss = g.add_output();
  loss->set_name("otc_loss");
  loss->mutable_type()->mutable_tensor_type()->set_elem_type(outType.elem_type());
  loss->mutable_type()->mutable_tensor_type()->mutable_shape();
  return true;
}

/// Makes every data input static: a symbolic leading dimension becomes the
/// micro-batch size. Graph outputs lose their shapes so that inference
/// recomputes them from the specialised inputs.
bool specialiseBatch(onnx::ModelProto &model, int64_t n, std::string &error) {
  onnx::GraphProto &g = *model.mutable_graph();
  std::set<std::string> inits;
  for (const auto &i : g.initializer())
    inits.insert(i.name());
  for (auto &in : *g.mutable_input()) {
    if (inits.count(in.name()))
      continue;
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) {
      error = "input '" + in.name() + "' has no tensor shape";
      return false;
    }
    auto *shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int d = 0; d < shape->dim_size(); ++d) {
      auto *dim = shape->mutable_dim(d);
      if (!dim->has_dim_value()) {
        if (d != 0) {
          error = "input '" + in.name() + "' has a symbolic dimension at axis " +
                  std::to_string(d) + "; only the batch axis 0 may be symbolic";
          return false;
        }
        dim->set_dim_value(n);
      } else if (d == 0 && dim->dim_value() != n) {
        error = "input '" + in.name() + "' has a fixed batch dimension of " +
                std::to_string(dim->dim_value()) + ", but --micro-batch is " +
                std::to_string(n);
        return false;
      }
    }
  }
  g.clear_value_info();
  for (auto &o : *g.mutable_output())
    o.mutable_type()->mutable_tensor_type()->clear_shape();
  return true;
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &ctx,
                                                  const std::string &path,
                                                  const ImportOptions &options,
                                                  std::string &error) {
  onnx::ModelProto model;
  if (!readModel(path, model, error))
    return nullptr;
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    error = "'" + path + "' fails the ONNX checker: " + e.what();
    return nullptr;
  }
  if (!applyLoss(model, options.loss, error) ||
      !specialiseBatch(model, options.microBatch, error))
    return nullptr;
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception &e) {
    error = "ONNX shape inference rejects the model: " + std::string(e.what());
    return nullptr;
  }
  GraphImporter importer(ctx, error);
  return importer.import(model, path);
}

} // namespace otc
