// Reads and checks an ONNX model, appends the requested loss, specialises the
// batch dimension, then hands the graph to the importer.
#include "AppendLoss.h"
#include "ExportBugs.h"
#include "GraphImporter.h"
#include "HostTensor.h"
#include "ModelChecks.h"
#include "TiedWeights.h"
#include "WeightFiles.h"
#include "otc/Frontend/Import.h"
#include "otc/Passes/Passes.h"
#include "otc/runtime/abi.h"
#include "otc/runtime/hash.h"
#include "otc/runtime/limits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"
#include "onnx/checker.h"
#include "onnx/shape_inference/implementation.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace otc {
namespace {

/// Parses the model file at `path` straight from the file: no copy of its
/// bytes is held beside the parsed model, and unless `withWeights` its large
/// tensors stay in the file (parseLeavingWeights).
bool readModel(const std::string &path, bool withWeights, onnx::ModelProto &model,
               std::string &error) {
  // Non-blocking, so a FIFO is refused instead of waited on.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > INT32_MAX) {
    error = fd < 0                 ? "cannot open model " + quotedPath(path)
            : !S_ISREG(st.st_mode) ? "model " + quotedPath(path) + " is not a regular file"
                                   : "model " + quotedPath(path) +
                                         " is larger than 2 GiB, more than one ONNX file holds";
    if (fd >= 0)
      close(fd);
    return false;
  }
  bool parsed = (!withWeights && parseLeavingWeights(path, model)) ||
                (model.Clear(), model.ParseFromFileDescriptor(fd));
  close(fd);
  if (!parsed || !model.has_graph())
    error = quotedPath(path) + " is not an ONNX model (it does not parse as one)";
  return parsed && model.has_graph();
}

std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

/// Operators and forms newer than libonnx 1.12 (opset 17) that otc
/// imports, each checked by the checker and shape inference as an older
/// one with the same signature and type and shape rule. (The importer
/// infers its own types; libonnx's checks are validation only.)
struct StandIn {
  const char *newer;
  int fromOpset;     // the model's opset from which the newer form applies
  const char *older;
  bool keepAttributes; // else they are dropped
  std::array<const char *, 2> dropped{}; // attributes the older form lacks
};
const StandIn kStandIns[] = {
    // Opset 20: one tensor in, one of the same shape out.
    {"Gelu", 1, "Identity", false},
    // Opset 18's bitwise ops: integers of one type, broadcast as Add's.
    {"BitwiseAnd", 1, "Add", false},
    {"BitwiseOr", 1, "Add", false},
    {"BitwiseXor", 1, "Add", false},
    {"BitwiseNot", 1, "Identity", false},
    // Opset 18 moved the axes of every reduction to an input, as ReduceSum
    // had them from 13, with the same attributes and shape rule.
    {"ReduceL1", 18, "ReduceSum", true},
    {"ReduceL2", 18, "ReduceSum", true},
    {"ReduceLogSum", 18, "ReduceSum", true},
    {"ReduceLogSumExp", 18, "ReduceSum", true},
    {"ReduceMax", 18, "ReduceSum", true},
    {"ReduceMean", 18, "ReduceSum", true},
    {"ReduceMin", 18, "ReduceSum", true},
    {"ReduceProd", 18, "ReduceSum", true},
    {"ReduceSumSquare", 18, "ReduceSum", true},
    // Opset 18's num_outputs equals the outputs' count (the importer checks
    // it and takes a smaller last part); splitAsOlder gives Split-13 sizes
    // it cannot read, so its inference allows an uneven last part.
    {"Split", 18, "Split", true, {"num_outputs"}},
    // Opset 18's antialias and keep_aspect_ratio_policy (PyTorch 2 writes
    // their defaults), which the importer reads and refuses otherwise.
    {"Resize", 18, "Resize", true, {"antialias", "keep_aspect_ratio_policy"}},
    // Opset 19's saturate applies to float8 targets only, which otc refuses.
    {"Cast", 19, "Cast", true, {"saturate"}},
    {"CastLike", 19, "CastLike", true, {"saturate"}},
};

/// The stand-in node `n` of a model at `opset` is checked as, or null.
const StandIn *standInFor(const onnx::NodeProto &n, int opset) {
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    return nullptr;
  for (const StandIn &s : kStandIns)
    if (n.op_type() == s.newer && opset >= s.fromOpset)
      return &s;
  return nullptr;
}

/// Whether `n` is an opset-18 Pad with its axes input, which libonnx 1.12's
/// Pad-13 lacks.
bool padWithAxes(const onnx::NodeProto &n, int opset) {
  return opset >= 18 && n.op_type() == "Pad" && (n.domain().empty() || n.domain() == "ai.onnx") &&
         n.input_size() > 3 && !n.input(3).empty() && n.output_size() > 0;
}

/// Whether `n` is an opset-18 Split by num_outputs, without sizes.
bool splitByCount(const onnx::NodeProto &n, int opset) {
  return opset >= 18 && n.op_type() == "Split" && (n.domain().empty() || n.domain() == "ai.onnx") &&
         (n.input_size() < 2 || n.input(1).empty()) && n.input_size() > 0;
}

/// Whether `n` is a DFT-20, whose axis is an input where DFT-17 (libonnx
/// 1.12) has an attribute.
bool dftWithAxisInput(const onnx::NodeProto &n, int opset) {
  return opset >= 20 && n.op_type() == "DFT" && (n.domain().empty() || n.domain() == "ai.onnx");
}

/// DFT-20 `n` checked as DFT-17: its axis input, a Constant node's or an
/// initializer's scalar (the importer refuses any other, naming it), as the
/// attribute.
void dftAsOlder(const onnx::GraphProto &g, onnx::NodeProto &n) {
  int64_t axis = -2; // DFT-20's default
  auto read = [&](const onnx::TensorProto &t) {
    HostTensor h;
    std::string ignored;
    if (decodeTensor(t, h, ignored) && h.numElements() == 1)
      axis = toInt64(h.values[0]);
  };
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const std::string &name = n.input(2);
    for (const auto &t : g.initializer())
      if (t.name() == name)
        read(t);
    for (const auto &c : g.node())
      if (c.op_type() == "Constant" && c.output_size() == 1 && c.output(0) == name)
        for (const auto &a : c.attribute())
          if (a.name() == "value_int")
            axis = a.i();
          else if (a.name() == "value")
            read(a.t());
  }
  while (n.input_size() > 2)
    n.mutable_input()->RemoveLast();
  onnx::AttributeProto *a = n.add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(axis);
}

/// Split-18 `n` by num_outputs checked as Split-13 with sizes from a fresh
/// graph input: libonnx's Split-13 wants equal parts when it has none, and
/// skips sizes it cannot read. The importer splits by the count.
void splitAsOlder(onnx::GraphProto &g, onnx::NodeProto &n) {
  onnx::ValueInfoProto *sizes = g.add_input();
  sizes->set_name(n.output(0) + "/otc_split");
  auto *t = sizes->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::INT64);
  t->mutable_shape()->add_dim()->set_dim_value(n.output_size());
  if (n.input_size() < 2)
    n.add_input(sizes->name());
  else
    n.set_input(1, sizes->name());
}

/// Pad-18 `n` checked as Pad-13: the axes dropped, and the pads, which
/// name only those axes, read from a fresh graph input, so that shape
/// inference keeps the rank and the importer checks the values.
void padAsOlder(onnx::GraphProto &g, onnx::NodeProto &n) {
  onnx::ValueInfoProto *pads = g.add_input();
  pads->set_name(n.output(0) + "/otc_pads");
  auto *t = pads->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::INT64);
  t->mutable_shape()->add_dim();
  n.set_input(1, pads->name());
  n.mutable_input()->RemoveLast();
}

/// `model`, or, when it uses such an operator or is of a newer IR version
/// than libonnx 1.12's, a copy in `scratch` with the stand-ins in place and
/// the version lowered (no copy of a model that needs none). IR 9 and 10
/// add element types (float8, 4-bit), which ModelChecks refuses, and
/// function overloads, which otc does not read; PyTorch 2's exporter
/// writes IR 10 with neither.
onnx::ModelProto &withStandIns(onnx::ModelProto &model, onnx::ModelProto &scratch) {
  int opset = defaultOpset(model);
  auto any = [&](const onnx::NodeProto &n) {
    return standInFor(n, opset) != nullptr || padWithAxes(n, opset) || splitByCount(n, opset) ||
           dftWithAxisInput(n, opset);
  };
  bool newerIr = model.ir_version() > onnx::IR_VERSION;
  if (!newerIr && llvm::none_of(model.graph().node(), any))
    return model;
  scratch = model;
  if (newerIr)
    scratch.set_ir_version(onnx::IR_VERSION);
  for (auto &n : *scratch.mutable_graph()->mutable_node()) {
    if (const StandIn *s = standInFor(n, opset)) {
      n.set_op_type(s->older);
      if (!s->keepAttributes)
        n.clear_attribute();
      auto *attrs = n.mutable_attribute();
      for (const char *name : s->dropped)
        if (name)
          attrs->erase(std::remove_if(attrs->begin(), attrs->end(),
                                      [&](const auto &a) { return a.name() == name; }),
                       attrs->end());
    }
    if (padWithAxes(n, opset))
      padAsOlder(*scratch.mutable_graph(), n);
    if (splitByCount(n, opset) && n.output_size() > 0)
      splitAsOlder(*scratch.mutable_graph(), n);
    if (dftWithAxisInput(n, opset))
      dftAsOlder(scratch.graph(), n);
  }
  return scratch;
}

/// For a PyTorch 2 export that its optimizer folded, the module's
/// parameters that the graph lacks, in one line; "" when none. Folding
/// shows as initializers the signature does not list (values it made);
/// without them a missing parameter is one the forward does not read (the
/// tied copy of another), and nothing is said.
std::string foldedParameters(const onnx::GraphProto &g, const TorchSignature &sig) {
  llvm::StringSet<> held;
  bool made = false;
  for (const auto &t : g.initializer()) {
    held.insert(t.name());
    made |= !sig.parameters.contains(t.name()) && !sig.buffers.contains(t.name());
  }
  std::vector<std::string> missing;
  for (const auto &p : sig.parameters)
    if (!held.contains(p.getKey()))
      missing.push_back(p.getKey().str());
  if (!made || missing.empty())
    return "";
  std::sort(missing.begin(), missing.end());
  std::string names;
  for (size_t i = 0; i < missing.size() && i < 4; ++i)
    names += (i ? ", " : "") + quoted(missing[i]);
  if (missing.size() > 4)
    names += ", ...";
  return std::to_string(missing.size()) + " of the module's " +
         std::to_string(sig.parameters.size()) + " parameters are not in the graph (" + names +
         "): PyTorch's exporter folded them into constants (torch.onnx.export's optimize=True) "
         "or tied them to another. A weight it stored transposed trains, under the copy's "
         "name; any other folded value does not. Export with optimize=False to train the "
         "module's own parameters";
}

/// A convolution weight or bias that torch.onnx.export computed rather than
/// read: an initializer named as its folded values are ("onnx::Conv_N"),
/// read by a Conv or ConvTranspose as its weight or bias. A parameter keeps
/// its own name there; a computed one is BatchNorm fused into its
/// convolution (an eval-mode export) or weight norm or standardization
/// folded, and trains in place of what PyTorch trains. One line, or "".
std::string foldedConvolutionWeights(const onnx::GraphProto &g) {
  std::map<std::string, const onnx::TensorProto *> byName;
  for (const auto &t : g.initializer())
    byName[t.name()] = &t;
  auto floatInitializer = [&](const std::string &name) {
    auto it = byName.find(name);
    return it != byName.end() && it->second->data_type() == onnx::TensorProto::FLOAT;
  };
  // Values computed from initializers alone (int64 Reshape targets too): a
  // BatchNormalization of one is a weight transform (timm's NFNet
  // standardises its convolution weights with F.batch_norm, whose weight
  // gain * scale folds), where an anonymous scale was computed too; an
  // activation's BatchNorm without affine reads anonymous ones and zeros,
  // which is not folding.
  llvm::StringSet<> computed;
  auto fromWeights = [&](const std::string &name) {
    return byName.count(name) || computed.contains(name);
  };
  // A BatchNorm scale of ones or a bias of zeros is F.batch_norm without
  // affine (timm's StdConv2d), nothing folded.
  auto allEqual = [](const onnx::TensorProto &t, float v) {
    if (t.float_data_size() > 0)
      return llvm::all_of(t.float_data(), [&](float f) { return f == v; });
    const std::string &raw = t.raw_data();
    if (raw.empty() || raw.size() % 4 != 0)
      return false;
    for (size_t i = 0; i < raw.size(); i += 4) {
      float f;
      std::memcpy(&f, raw.data() + i, 4);
      if (f != v)
        return false;
    }
    return true;
  };
  std::set<std::string> folded;
  for (const auto &n : g.node()) {
    bool weightsOnly = n.op_type() == "Constant" ||
                       (n.input_size() > 0 && llvm::all_of(n.input(), [&](const std::string &i) {
                          return i.empty() || fromWeights(i);
                        }));
    if (weightsOnly)
      for (const auto &o : n.output())
        computed.insert(o);
    bool weightTransform = n.op_type() == "BatchNormalization" && n.input_size() > 0 &&
                           fromWeights(n.input(0));
    if (n.op_type() == "Conv" || n.op_type() == "ConvTranspose" || weightTransform)
      for (int i = 1; i < n.input_size() && i < 3; ++i)
        if (llvm::StringRef(n.input(i)).starts_with("onnx::") &&
            floatInitializer(n.input(i)) &&
            !(weightTransform && allEqual(*byName[n.input(i)], i == 1 ? 1.0f : 0.0f)))
          folded.insert(n.input(i));
  }
  if (folded.empty())
    return "";
  return std::to_string(folded.size()) + " convolution or BatchNorm weights or biases (as " +
         quoted(*folded.begin()) +
         ") are values the export computed from parameters (BatchNorm fused into its "
         "convolution by an eval-mode export, or weight norm or standardization folded) and "
         "train in their place, unlike the model in PyTorch; export with "
         "training=torch.onnx.TrainingMode.TRAINING and do_constant_folding=False to train "
         "the model's own parameters";
}

/// Makes every data input static: a symbolic leading dimension becomes the
/// micro-batch size, any other one the size --dim gives its name. A training
/// step's data inputs all carry the batch as axis 0; a forward-only graph's
/// may have any fixed shape. Graph outputs lose their shapes so that
/// inference recomputes them from the inputs.
bool specialiseBatch(onnx::ModelProto &model, const ImportOptions &options,
                     std::string &error) {
  onnx::GraphProto &g = *model.mutable_graph();
  int64_t n = options.microBatch;
  std::set<std::string> inits;
  for (const auto &i : g.initializer())
    inits.insert(i.name());
  std::map<std::string, int64_t> given;
  for (const auto &[name, size] : options.dims)
    given[name] = size; // the last --dim of a name wins
  std::set<std::string> used, symbolic, batchNames;
  for (const auto &in : g.input()) // one name is one size: the batch's too
    if (!inits.count(in.name()) && in.type().tensor_type().shape().dim_size() > 0 &&
        !in.type().tensor_type().shape().dim(0).dim_param().empty())
      batchNames.insert(in.type().tensor_type().shape().dim(0).dim_param());
  for (auto &in : *g.mutable_input()) {
    if (inits.count(in.name()))
      continue;
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) {
      error = "input " + quoted(in.name()) + " has no tensor shape";
      return false;
    }
    auto *shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() == 0 && !options.forwardOnly) {
      error = "input " + quoted(in.name()) +
              " is a scalar; data inputs need the batch as axis 0";
      return false;
    }
    for (int d = 0; d < shape->dim_size(); ++d) {
      auto *dim = shape->mutable_dim(d);
      const std::string &param = dim->dim_param();
      if (dim->has_dim_value()) {
        if (d == 0 && dim->dim_value() != n && !options.forwardOnly) {
          error = "input " + quoted(in.name()) + " has a fixed batch dimension of " +
                  std::to_string(dim->dim_value()) + ", but --micro-batch is " +
                  std::to_string(n);
          return false;
        }
        continue;
      }
      symbolic.insert(param);
      if (d == 0 || (batchNames.count(param) && !given.count(param))) {
        if (given.count(param)) {
          error = "--dim " + param + "=" + std::to_string(given[param]) + ": " +
                  quoted(param) + " is input " + quoted(in.name()) +
                  "'s batch axis, which --micro-batch sets";
          return false;
        }
        dim->set_dim_value(n);
        continue;
      }
      auto it = param.empty() ? given.end() : given.find(param);
      if (it == given.end()) {
        error = "input " + quoted(in.name()) + " has a symbolic dimension " +
                (param.empty() ? std::string("with no name")
                               : quoted(param)) +
                " at axis " + std::to_string(d) +
                (param.empty() ? "; export it with a fixed size"
                               : "; give its size with --dim " + param + "=N");
        return false;
      }
      used.insert(param);
      dim->set_dim_value(it->second);
    }
  }
  for (const auto &[name, size] : given)
    if (!used.count(name)) {
      std::string names;
      for (const std::string &s : symbolic)
        if (!s.empty())
          names += (names.empty() ? "" : ", ") + quoted(s);
      error = "--dim " + name + "=" + std::to_string(size) +
              ": no input has a symbolic dimension of that name beyond axis 0 (the "
              "inputs' symbolic dimensions: " +
              (names.empty() ? std::string("none") : names) + ")";
      return false;
    }
  g.clear_value_info();
  for (auto &o : *g.mutable_output())
    o.mutable_type()->mutable_tensor_type()->clear_shape();
  return true;
}

/// Fills the dims after the batch that the --loss output leaves symbolic or
/// unknown (sizes the graph computes from the input's shape, as an interpolation to
/// a given size, which ONNX's shape inference cannot follow) from a
/// forward-only import, which computes every shape. Leaves the model as it
/// is when nothing is symbolic or that import fails (the training import
/// then says why).
void resolveLossDims(mlir::MLIRContext &ctx, onnx::ModelProto &model,
                     const ImportOptions &options, const std::string &name) {
  LossSpec loss;
  std::string ignored;
  if (options.forwardOnly || !parseLossSpec(options.loss, loss, ignored))
    return; // (applyLoss reports a bad spec)
  bool unknown = false;
  for (const std::string &out : loss.outputs) {
    onnx::ValueInfoProto *target = findOutput(*model.mutable_graph(), out);
    if (!target || !target->type().has_tensor_type())
      continue;
    unknown |= !target->type().tensor_type().has_shape();
    const onnx::TensorShapeProto &given = target->type().tensor_type().shape();
    for (int d = 1; d < given.dim_size(); ++d)
      unknown |= !given.dim(d).has_dim_value();
  }
  if (!unknown)
    return;
  onnx::ModelProto copy = model;
  ImportOptions forward;
  forward.microBatch = options.microBatch;
  forward.dims = options.dims;
  forward.forwardOnly = true;
  if (!specialiseBatch(copy, forward, ignored))
    return;
  // The importers may assume what ONNX's shape inference checks (types
  // that match, shapes that broadcast): a model it rejects is left to that
  // check's own error below.
  try {
    onnx::ModelProto scratch;
    onnx::shape_inference::InferShapes(withStandIns(copy, scratch),
                                       onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception &) {
    return;
  }
  GraphImporter importer(ctx, ignored, forward);
  mlir::OwningOpRef<mlir::ModuleOp> module = importer.import(copy, name);
  if (!module)
    return;
  // Changed only now: a failed import leaves the model as it was.
  for (auto f : module->getOps<mlir::func::FuncOp>())
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      auto named = f.getResultAttrOfType<mlir::StringAttr>(i, attr::kOutput);
      auto type = llvm::dyn_cast<mlir::RankedTensorType>(f.getResultTypes()[i]);
      if (!named || !llvm::is_contained(loss.outputs, named.getValue().str()) || !type ||
          type.getRank() == 0)
        continue;
      onnx::ValueInfoProto *target = findOutput(*model.mutable_graph(), named.getValue().str());
      auto *shape = target->mutable_type()->mutable_tensor_type()->mutable_shape();
      if (type.getRank() != shape->dim_size()) { // no shape was given: all of it
        shape->clear_dim();
        shape->add_dim()->set_dim_param("batch");
      }
      for (int d = 1; d < type.getRank(); ++d) {
        if (d == shape->dim_size())
          shape->add_dim();
        shape->mutable_dim(d)->set_dim_value(type.getDimSize(d));
      }
    }
}

/// The bytes an executable embeds: `model` as rewritten. Unless
/// `withWeights`, the parameters' values are left out: the executable reads
/// them at start from the model's file, whose absolute path the metadata
/// records. Either way it records the sources of the copies otc made
/// (`untied`), which a model file holds under their source's name (--init).
/// An initializer whose data import left in its file without it becoming a
/// parameter (one only copies read) is read here, so the model is whole.
bool embedModel(onnx::ModelProto &model, const std::string &name, bool withWeights,
                const std::vector<std::pair<std::string, std::string>> &untied,
                TensorBytes &bytes, std::string &out, llvm::StringSet<> &params,
                std::string &error) {
  // The runtime's keys: a model that brings its own is not trusted with them.
  auto &props = *model.mutable_metadata_props();
  props.erase(std::remove_if(props.begin(), props.end(),
                             [](const auto &p) { return p.key().rfind(OTC_WEIGHTS_KEY_PREFIX, 0) == 0; }),
              props.end());
  params = withWeights ? llvm::StringSet<>()
                       : parameterInitializers(model.graph(), defaultOpset(model));
  auto add = [&](const char *key, const std::string &value) {
    auto *p = props.Add();
    p->set_key(key);
    p->set_value(value);
  };
  if (!withWeights) {
    // The folder's real path and the file's own name: external data lies
    // beside the name import read, even where that name is a link.
    size_t slash = name.rfind('/');
    std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : name.substr(0, slash);
    char *real = realpath(folder.c_str(), nullptr);
    std::string path = real ? std::string(real) + "/" + name.substr(slash + 1) : "";
    std::free(real);
    if (path.empty()) {
      error = "cannot resolve the path of " + quotedPath(name) + ", which the executable reads";
      return false;
    }
    add(OTC_WEIGHTS_FILE_KEY, path);
  }
  // Each copy's source in the file: chains of copies lead to the first.
  std::map<std::string, std::string> sourceOf(untied.begin(), untied.end());
  std::string aliases;
  for (auto [copy, source] : untied) {
    for (size_t hops = 0; sourceOf.count(source) && hops < untied.size(); ++hops)
      source = sourceOf[source];
    aliases += copy + "\t" + source + "\n";
  }
  if (!aliases.empty())
    add(OTC_WEIGHTS_ALIASES_KEY, aliases);
  onnx::GraphProto &g = *model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> full;
  full.Swap(g.mutable_initializer());
  bool ok = true;
  std::string constants; // OTC_WEIGHTS_CONSTANTS_KEY's lines
  auto leaveOut = [&](const std::string &name, std::string_view data) {
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx",
                  (unsigned long long)fingerprint(data.data(), data.size()));
    constants += name + "\t" + std::to_string(data.size()) + "\t" + hash + "\n";
  };
  auto withoutValues = [&](const onnx::TensorProto &t) {
    onnx::TensorProto *e = g.add_initializer();
    e->set_name(t.name());
    e->set_data_type(t.data_type());
    *e->mutable_dims() = t.dims();
  };
  for (const onnx::TensorProto &t : full) {
    if (params.contains(t.name())) {
      withoutValues(t);
      continue;
    }
    bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
    std::string_view data;
    if (external) {
      int64_t count = 1;
      for (int64_t d : t.dims())
        count *= d;
      data = bytes.of(t, size_t(count) * size_t(elementSize(t.data_type())));
      if (data.empty() && count > 0) {
        error = "cannot read the data of initializer " + quoted(t.name()) + " of " + quotedPath(name);
        ok = false;
        break;
      }
    } else if (t.has_raw_data()) {
      data = t.raw_data();
    }
    // A large constant (a mask buffer per layer) is read back where it is
    // needed, as the parameters are: only a saving run needs its values.
    if (!withWeights && data.size() >= OTC_EMBED_CONSTANT_BYTES) {
      withoutValues(t);
      leaveOut(t.name(), data);
      continue;
    }
    onnx::TensorProto *e = g.add_initializer();
    *e = t;
    if (!external)
      continue;
    e->clear_external_data();
    e->clear_data_location();
    e->set_raw_data(std::string(data));
  }
  // The same of Constant nodes' values (an exporter's masks), named by the
  // node's output; restored in `model` below.
  std::vector<std::pair<onnx::TensorProto *, std::string>> taken;
  for (onnx::NodeProto &n : *g.mutable_node()) {
    if (withWeights || !ok || n.op_type() != "Constant" || n.output_size() != 1 ||
        (!n.domain().empty() && n.domain() != "ai.onnx"))
      continue;
    for (onnx::AttributeProto &a : *n.mutable_attribute())
      if (a.name() == "value" && a.has_t() && a.t().raw_data().size() >= OTC_EMBED_CONSTANT_BYTES) {
        leaveOut(n.output(0), a.t().raw_data());
        taken.emplace_back(a.mutable_t(), std::move(*a.mutable_t()->mutable_raw_data()));
        a.mutable_t()->clear_raw_data();
      }
  }
  if (!constants.empty())
    add(OTC_WEIGHTS_CONSTANTS_KEY, constants);
  if (ok && model.ByteSizeLong() > size_t(INT32_MAX)) {
    error = quotedPath(name) + (withWeights ? " holds more than 2 GiB with its external data, more "
                                             "than one ONNX file can carry (compile without "
                                             "--embed-weights)"
                                           : " holds more than 2 GiB of constants that are not "
                                             "parameters");
    ok = false;
  }
  if (ok)
    model.SerializeToString(&out);
  for (auto &[t, data] : taken)
    t->set_raw_data(std::move(data));
  g.mutable_initializer()->Swap(&full);
  while (props.size() && props.rbegin()->key().rfind(OTC_WEIGHTS_KEY_PREFIX, 0) == 0)
    props.RemoveLast();
  return ok;
}

mlir::OwningOpRef<mlir::ModuleOp>
importChecked(mlir::MLIRContext &ctx, onnx::ModelProto &model,
              const std::string &modelDir, const std::string &name,
              const ImportOptions &options, std::string &error,
              std::string *embeddedModel) {
  if (options.microBatch < 1 || options.microBatch > OTC_MAX_MICRO_BATCH) {
    error = "--micro-batch must lie in [1, " + std::to_string(OTC_MAX_MICRO_BATCH) + "]";
    return nullptr;
  }
  // Before any library reads the tensors: libonnx trusts their sizes. The
  // parameters' external data is read only to be embedded; else it is
  // checked and left where it lies, read there to tie copies.
  llvm::StringSet<> params = parameterInitializers(model.graph(), defaultOpset(model));
  size_t slash = name.rfind('/');
  if (!checkModel(model, modelDir, options.embedWeights ? llvm::StringSet<>() : params, error,
                  slash == std::string::npos ? name : name.substr(slash + 1)))
    return nullptr;
  TensorBytes bytes(modelDir);
  // Unsupported operators are refused before libonnx's checker and shape
  // inference run on them (and on any subgraphs they carry).
  int opset = defaultOpset(model);
  for (const auto &n : model.graph().node()) {
    if (std::string why = unsupportedReason(n, opset); !why.empty()) {
      error = describeNode(n) + ": " + why;
      return nullptr;
    }
    std::string nested;
    forEachNestedNode(n, [&](const onnx::NodeProto &inner) {
      if (std::string why = unsupportedReason(inner, opset); !why.empty() && nested.empty())
        nested = describeNode(inner) + " in the body of " + describeNode(n) + ": " + why;
    });
    if (!nested.empty()) {
      error = nested;
      return nullptr;
    }
  }
  // Before embedding: a saved model keeps the tie (as a Transpose node) and
  // the split (as initializers).
  // Before untying: its initializers are not in PyTorch 2's list, and
  // would read as values an optimizer folded.
  std::optional<TorchSignature> sig = torchSignature(model.graph());
  std::string folded = sig ? foldedParameters(model.graph(), *sig) : "";
  auto untied = untieMergedCopies(model, bytes, sig ? &sig->buffers : nullptr,
                                  sig ? &sig->parameters : nullptr);
  if (error = tieAsAsked(model, options.ties, bytes); !error.empty())
    return nullptr;
  auto aliases = untied; // every copy's source, for the runtime
  llvm::erase_if(untied, [&](const auto &u) {
    return llvm::any_of(options.ties, [&](const auto &t) { return t.second == u.first || t.second == u.second; });
  });
  std::vector<std::string> tied = tieTransposedCopies(model, bytes);
  std::vector<std::string> blocks = tieTransposedBlocks(model, bytes);
  std::vector<std::string> expressions = tieFoldedExpressions(model, bytes);
  static std::set<std::string> told; // auto-fit imports again: say it once
  std::vector<std::pair<std::string, std::string>> equal = equalInitializers(model, bytes);
  if (!untied.empty() && told.insert("untied").second)
    llvm::errs() << "otc: note: " << untied.size()
                 << " parameters that the export merged with an equal one (as '"
                 << untied[0].first << "' into '" << untied[0].second
                 << "') train as tensors of their own, as in PyTorch\n";
  for (const std::string &t : tied)
    if (told.insert(t).second)
      llvm::errs() << "otc: note: " << t
                   << " (a copy that constant folding in the export made); trained as one tensor\n";
  for (const std::string &t : blocks)
    if (told.insert(t).second)
      llvm::errs() << "otc: note: " << t
                   << " (a concatenation that constant folding in the export made); that block "
                      "trains as the tensor it copies, the rest as the copy's\n";
  for (const std::string &t : expressions)
    if (told.insert(t).second)
      llvm::errs() << "otc: " << (t[0] == '!' ? "warning: " + t.substr(1) : "note: " + t +
                                  " (arithmetic that constant folding in the export did on a "
                                  "parameter the graph also reads); trained through it")
                   << "\n";
  if (std::string w = options.forwardOnly ? "" : foldedConvolutionWeights(model.graph());
      !w.empty() && told.insert(w).second)
    llvm::errs() << "otc: warning: " << w << "\n";
  if (std::string w = offByOneCircularPadding(model.graph()); !w.empty() && told.insert(w).second)
    llvm::errs() << "otc: warning: " << w << "\n";
  if (!folded.empty() && told.insert(folded).second)
    llvm::errs() << "otc: warning: " << folded << "\n";
  if (!options.forwardOnly && !options.batchNormTrain && sig) {
    int inference = 0; // nodes whose training_mode (opset 14, PyTorch 2's 18+) is 0
    for (const auto &n : model.graph().node())
      inference += n.op_type() == "BatchNormalization" &&
                   llvm::none_of(n.attribute(), [](const onnx::AttributeProto &a) {
                     return a.name() == "training_mode" && a.i() != 0;
                   });
    if (inference > 0 && told.insert("batch-norm").second)
      llvm::errs() << "otc: note: " << inference
                   << " BatchNormalization nodes normalise with their running statistics, as the "
                      "export wrote them (PyTorch 2's exporter does so even for a module in "
                      "training mode); --batch-norm train uses each micro-batch's statistics and "
                      "updates the running ones, as model.train()\n";
  }
  llvm::StringSet<> stripped;
  if (embeddedModel && !embedModel(model, name, options.embedWeights, aliases, bytes,
                                   *embeddedModel, stripped, error))
    return nullptr;
  // The parameters' values are the executable's to read: import needs their
  // types and shapes, so the model holds no copy of the weights from here.
  // One zero element stands in for them: libonnx's checker wants a value
  // field, and nothing reads a parameter's values at compile time.
  // (Data still in a file is an initializer that only copies read.)
  params = parameterInitializers(model.graph(), defaultOpset(model));
  for (auto &t : *model.mutable_graph()->mutable_initializer())
    if (params.contains(t.name()) || t.data_location() == onnx::TensorProto::EXTERNAL) {
      t.clear_float_data();
      t.clear_double_data();
      t.clear_external_data();
      t.clear_data_location();
      std::string(t.data_type() == onnx::TensorProto::DOUBLE ? 8 : 4, '\0').swap(*t.mutable_raw_data());
    }
  // libonnx writes warnings (experimental ops) to std::cerr; otc's output
  // stays one line per error, so they are dropped.
  std::ostringstream libonnxChatter;
  struct RestoreCerr {
    std::streambuf *old;
    ~RestoreCerr() { std::cerr.rdbuf(old); }
  } restore{std::cerr.rdbuf(libonnxChatter.rdbuf())};
  try {
    onnx::ModelProto scratch;
    onnx::checker::check_model(withStandIns(model, scratch));
  } catch (const std::exception &e) {
    error = quotedPath(name) + " fails the ONNX checker: " + oneLine(e.what());
    return nullptr;
  }
  if (options.forwardOnly && !options.loss.empty()) {
    error = "--loss does not apply to a forward-only executable";
    return nullptr;
  }
  resolveLossDims(ctx, model, options, name);
  if ((!options.forwardOnly && !applyLoss(model, options.loss, error)) ||
      !specialiseBatch(model, options, error))
    return nullptr;
  try {
    onnx::ModelProto scratch;
    onnx::shape_inference::InferShapes(withStandIns(model, scratch),
                                       onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception &e) {
    error = "ONNX shape inference rejects the model: " + oneLine(e.what());
    return nullptr;
  }
  GraphImporter importer(ctx, error, options);
  mlir::OwningOpRef<mlir::ModuleOp> module = importer.import(model, name);
  if (!module)
    return module;
  // What the executable reads at start is what the embedded model left out.
  if (embeddedModel && !options.embedWeights) {
    size_t params = 0;
    for (auto f : module->getOps<mlir::func::FuncOp>())
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (auto p = f.getArgAttrOfType<mlir::StringAttr>(i, attr::kParam)) {
          ++params;
          if (!stripped.contains(p.getValue())) {
            error = "internal error: parameter " + quoted(p.getValue().str()) +
                    " keeps its values in the embedded model";
            return nullptr;
          }
        }
    if (params != stripped.size()) {
      error = "internal error: the embedded model leaves out the values of " +
              std::to_string(stripped.size()) + " initializers for " + std::to_string(params) +
              " parameters";
      return nullptr;
    }
  }
  mlir::Builder b(&ctx);
  for (auto f : module->getOps<mlir::func::FuncOp>())
    f->setAttr(attr::kMicroBatch, b.getI64IntegerAttr(options.microBatch));
  // Whether they train is known after autodiff. Pairs of parameters only:
  // an initializer imported as a constant (a compared-only mask) is none.
  llvm::StringSet<> paramNames;
  for (auto f : module->getOps<mlir::func::FuncOp>())
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto p = f.getArgAttrOfType<mlir::StringAttr>(i, attr::kParam))
        paramNames.insert(p.getValue());
  llvm::SmallVector<mlir::Attribute> pairs;
  for (const auto &[a, c] : equal)
    if (paramNames.contains(a) && paramNames.contains(c))
      pairs.push_back(b.getStrArrayAttr({a, c}));
  if (!pairs.empty())
    (*module)->setAttr(attr::kEqualParams, b.getArrayAttr(pairs));
  return module;
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp>
importOnnxBytes(mlir::MLIRContext &ctx, const std::string &bytes,
                const std::string &modelDir, const std::string &name,
                const ImportOptions &options, std::string &error,
                std::string *embeddedModel) {
  try {
    auto model = std::make_unique<onnx::ModelProto>();
    if (bytes.size() > size_t(INT32_MAX) || !model->ParseFromString(bytes) ||
        !model->has_graph()) {
      error = quotedPath(name) + " is not an ONNX model (it does not parse as one)";
      return nullptr;
    }
    return importChecked(ctx, *model, modelDir, name, options, error, embeddedModel);
  } catch (const std::bad_alloc &) {
    error = "out of memory importing " + quotedPath(name);
    return nullptr;
  }
}

mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &ctx,
                                                  const std::string &path,
                                                  const ImportOptions &options,
                                                  std::string &error,
                                                  std::string *embeddedModel) {
  try {
    auto model = std::make_unique<onnx::ModelProto>();
    if (!readModel(path, options.embedWeights, *model, error))
      return nullptr;
    return importChecked(ctx, *model, folderOf(path), path, options, error, embeddedModel);
  } catch (const std::bad_alloc &) {
    error = "out of memory importing " + quotedPath(path);
    return nullptr;
  }
}

} // namespace otc
