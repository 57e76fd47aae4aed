#include "GraphImporter.h"
#include "ParameterNames.h"
#include "ModelChecks.h"

#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include <set>
#include "otc/runtime/limits.h"

using namespace mlir;

namespace otc {

size_t GraphImporter::numInputs() const {
  // Trailing optional inputs may be given as empty names.
  size_t n = current->input_size();
  while (n > 0 && current->input(n - 1).empty())
    --n;
  return n;
}

const GraphImporter::Entry *GraphImporter::lookup(const std::string &name) const {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

const HostTensor *GraphImporter::constantInput(size_t i) const {
  if (i >= numInputs())
    return nullptr;
  const Entry *e = lookup(current->input(i));
  return e && e->host ? &*e->host : nullptr;
}

FailureOr<Value> GraphImporter::input(size_t i) {
  if (i >= numInputs() || current->input(i).empty())
    return fail("missing input " + std::to_string(i));
  auto it = values.find(current->input(i));
  if (it == values.end())
    return fail("input " + quoted(current->input(i)) + " is not defined");
  if (sequences.count(current->input(i)))
    return fail("input " + quoted(current->input(i)) +
                " is a sequence; otc reads one only with SequenceAt, SequenceLength and "
                "ConcatFromSequence");
  // Masked rows are read only by their rules (importMaskedNode), never
  // by an importer reached another way (a sequence's Concat, a loop's
  // stacking), which would take the unselected rows for data.
  if (!readingMasked && masked.count(current->input(i)))
    return fail("input " + quoted(current->input(i)) +
                " is what a run-time boolean mask selects (x[mask]), which otc keeps dense "
                "beside the mask and reads only where each row stays apart");
  if (!it->second.value && it->second.host && it->second.host->numElements() == 0)
    return fail("input " + quoted(current->input(i)) +
                " has no elements; otc takes an empty tensor only as a part of a Concat");
  if (!materialize(it->second, nodeLoc))
    return fail("input " + quoted(current->input(i)) + " has an unsupported type");
  return it->second.value;
}

FailureOr<Value> GraphImporter::optionalInput(size_t i) {
  if (i >= numInputs() || current->input(i).empty())
    return Value();
  return input(i);
}

FailureOr<SmallVector<Value>> GraphImporter::inputs() {
  SmallVector<Value> values;
  for (size_t i = 0; i < numInputs(); ++i) {
    auto v = input(i);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  return values;
}

bool GraphImporter::allInputsConstant() const {
  for (size_t i = 0; i < numInputs(); ++i)
    if (!constantInput(i))
      return false;
  return true;
}

bool GraphImporter::materialize(Entry &e, Location loc) {
  if (e.value)
    return true;
  if (!e.host || !elementTypeFor(b, e.host->elemType))
    return false;
  e.value = ConstantOp::create(b, loc, toAttr(b, *e.host));
  return true;
}

void GraphImporter::defineSequence(size_t output, std::vector<std::string> parts) {
  if (output >= (size_t)current->output_size())
    return;
  values[current->output(output)] = Entry{};
  sequences[current->output(output)] = std::move(parts);
}

const std::vector<std::string> *GraphImporter::sequenceInput(size_t i) const {
  if (i >= numInputs())
    return nullptr;
  auto it = sequences.find(current->input(i));
  return it == sequences.end() ? nullptr : &it->second;
}

void GraphImporter::defineAs(size_t output, const std::string &name) {
  if (output >= (size_t)current->output_size())
    return;
  if (auto it = sequences.find(name); it != sequences.end())
    sequences[current->output(output)] = it->second;
  if (const Entry *e = lookup(name))
    values[current->output(output)] = *e;
  // (An If's or Loop's output that is masked rows stays so.)
  if (auto it = masked.find(name); it != masked.end())
    masked[current->output(output)] = MaskedRows(it->second);
  else
    masked.erase(current->output(output));
}

const GraphImporter::MaskedRows *GraphImporter::maskedInput(size_t i) const {
  if (i >= numInputs() || current->input(i).empty())
    return nullptr;
  auto it = masked.find(current->input(i));
  return it == masked.end() ? nullptr : &it->second;
}

void GraphImporter::defineMasked(size_t output, MaskedRows m) {
  if (output >= (size_t)current->output_size() || current->output(output).empty())
    return;
  if (m.form != MaskedRows::Form::Rows)
    values[current->output(output)] = Entry{};
  masked[current->output(output)] = std::move(m);
}

Value GraphImporter::outputValue(size_t output) const {
  if (output >= (size_t)current->output_size())
    return nullptr;
  const Entry *e = lookup(current->output(output));
  return e ? e->value : nullptr;
}

Value GraphImporter::swapInputValue(size_t i, Value v) {
  Entry &e = values[current->input(i)];
  Value old = e.value;
  e.value = v;
  return old;
}

void GraphImporter::define(size_t output, Value v) {
  if (output < (size_t)current->output_size())
    values[current->output(output)] = Entry{v, std::nullopt};
}

LogicalResult GraphImporter::define(size_t output, HostTensor t) {
  if (t.shape.size() > OTC_MAX_RANK)
    return fail("the result has rank " + std::to_string(t.shape.size()) +
                ", more than the limit of " + std::to_string(OTC_MAX_RANK));
  // Zero-sized results count their other dims too, so that no stride or
  // product computed from the shape later can overflow.
  int64_t n = t.numElements();
  if (boundedVolume(t.shape.data(), t.shape.size()) < 0)
    return fail("the result's dimensions multiply past " + std::to_string(OTC_MAX_ELEMENTS) +
                ", the limit of one tensor");
  if (n < 0 || n > OTC_MAX_HOST_ELEMENTS)
    return fail("the result has more than " + std::to_string(OTC_MAX_HOST_ELEMENTS) +
                " elements, the limit of a tensor folded at compile time");
  if ((int64_t)t.values.size() != n)
    return fail("internal error: a folded result holds " +
                std::to_string(t.values.size()) + " values for " +
                std::to_string(n) + " elements");
  // Folds compute in double; each node's result holds what its type does
  // (DeBERTa's position buckets, Ceil(Log(d / 2) / log(3.5f)), land on an
  // integer only in float32).
  roundToType(t);
  if (output < (size_t)current->output_size())
    values[current->output(output)] = Entry{Value(), std::move(t)};
  return success();
}

std::string describeNode(const onnx::NodeProto &n) {
  std::string op = quoted(n.op_type());
  return "node " + quoted(nodeName(n)) + " (" + op.substr(1, op.size() - 2) + ")";
}

int defaultOpset(const onnx::ModelProto &model) {
  int fallback = 0;
  for (const auto &o : model.opset_import()) {
    if (o.domain().empty())
      return int(std::clamp<int64_t>(o.version(), 0, INT32_MAX));
    if (o.domain() == "ai.onnx")
      fallback = int(std::clamp<int64_t>(o.version(), 0, INT32_MAX));
  }
  return fallback;
}

std::string unsupportedReason(const onnx::NodeProto &n, int opset) {
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    return "operators of domain " + quoted(n.domain()) + " are not supported";
  if (!findOpImporter(n.op_type(), opset))
    return "unsupported operator at opset " + std::to_string(opset);
  return "";
}

LogicalResult GraphImporter::addFixedRows(const onnx::TensorProto &init, NamedAttrList &attrs) {
  SmallVector<int64_t> rows;
  for (const auto &[name, given] : fixedRows) {
    if (name != init.name())
      continue;
    if (init.dims_size() < 1) {
      error = "--fixed-rows " + quoted(name) + ": a scalar has no rows";
      return failure();
    }
    int64_t n = init.dims(0);
    for (int64_t r : given) {
      if (r < -n || r >= n) {
        error = "--fixed-rows " + quoted(name) + ": row " + std::to_string(r) +
                " is out of range for " + std::to_string(n) + " rows";
        return failure();
      }
      rows.push_back(r < 0 ? r + n : r);
    }
  }
  if (!rows.empty() && !forwardOnly)
    attrs.append(attr::kFixedRows, b.getDenseI64ArrayAttr(rows));
  return success();
}

void GraphImporter::markBuffer(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return;
  auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  func.removeArgAttr(arg.getArgNumber(), attr::kTrainable);
}

bool GraphImporter::isParameter(Value v) const {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return false;
  auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return bool(func.getArgAttr(arg.getArgNumber(), attr::kParam));
}

LogicalResult GraphImporter::fail(const llvm::Twine &message) {
  if (error.empty())
    error = describeNode(*current) + ": " + message.str();
  return failure();
}

std::string nodeName(const onnx::NodeProto &n) {
  return n.name().empty() && n.output_size() > 0 ? n.output(0) : n.name();
}

/// Why `type` is no tensor code generation can hold, or nothing.
static std::optional<std::string> runtimeTypeProblem(Type type, const std::string &what) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return what + " is not a ranked tensor";
  if (t.getRank() > OTC_MAX_RANK)
    return what + " has rank " + std::to_string(t.getRank()) +
           ", more than the limit of " + std::to_string(OTC_MAX_RANK);
  int64_t n = 1;
  for (int64_t d : t.getShape()) {
    if (d < 1)
      return what + " has a dimension of size " +
             (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d)) +
             "; run-time tensors need static sizes of at least 1";
    if (!otc_mul_count(n, d, &n) || n > OTC_MAX_ELEMENTS)
      return what + " has more than " + std::to_string(OTC_MAX_ELEMENTS) +
             " elements, the limit of one tensor";
  }
  return std::nullopt;
}

LogicalResult GraphImporter::checkRuntimeType(Type type, const std::string &what) {
  if (auto problem = runtimeTypeProblem(type, what))
    return fail(*problem);
  return success();
}

LogicalResult GraphImporter::checkArgType(Type type, const std::string &what) {
  if (auto problem = runtimeTypeProblem(type, what)) {
    error = *problem;
    return failure();
  }
  return success();
}

const onnx::AttributeProto *GraphImporter::attr(llvm::StringRef name) const {
  for (const auto &a : current->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t GraphImporter::intAttr(llvm::StringRef name, int64_t fallback) const {
  const auto *a = attr(name);
  return a ? a->i() : fallback;
}

double GraphImporter::floatAttr(llvm::StringRef name, double fallback) const {
  const auto *a = attr(name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> GraphImporter::intsAttr(llvm::StringRef name) const {
  const auto *a = attr(name);
  if (!a)
    return {};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

LogicalResult GraphImporter::importNested(const onnx::NodeProto &n) {
  const onnx::NodeProto *saved = current;
  Location savedLoc = nodeLoc;
  int savedForm = formVersion;
  LogicalResult r = importNode(n);
  current = saved;
  nodeLoc = savedLoc;
  formVersion = savedForm;
  return r;
}

LogicalResult GraphImporter::chargeUnrolled(int64_t work) {
  unrolledWork += work;
  if (unrolledWork > kMaxUnrolledWork)
    return fail("unrolling would exceed otc's bound of " + std::to_string(kMaxUnrolledWork) +
                " (nodes, and KiB of bodies and carried constants, over all iterations)");
  return success();
}

LogicalResult GraphImporter::decodePending(const std::string &name) {
  auto it = values.find(name);
  if (it == values.end() || !it->second.pending)
    return success();
  HostTensor t;
  if (!decodeTensor(*it->second.pending, t, error))
    return failure();
  it->second.host = std::move(t);
  it->second.pending = nullptr;
  return success();
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &n) {
  current = &n;
  nodeLoc = NameLoc::get(b.getStringAttr(nodeName(n)));
  if (n.output_size() == 0)
    return fail("the node has no outputs");
  if (std::string why = unsupportedReason(n, opsetVersion); !why.empty())
    return fail(why);
  const OpImporter *importer = findOpImporter(n.op_type(), opsetVersion);
  for (size_t i = 0; i < numInputs(); ++i) {
    if (!n.input(i).empty() && !lookup(n.input(i)))
      return fail("input " + quoted(n.input(i)) + " is not defined");
    // An initializer's values are decoded when a node first reads them.
    if (failed(decodePending(n.input(i))))
      return failure();
  }
  formVersion = importer->sinceVersion;
  Block *block = b.getInsertionBlock();
  Operation *last = block->empty() ? nullptr : &block->back();
  bool readsMasked = false;
  for (size_t i = 0; i < numInputs(); ++i)
    readsMasked |= maskedInput(i) != nullptr;
  LogicalResult imported = success();
  if (readsMasked) {
    readingMasked = true;
    imported = importMaskedNode(*this, *importer);
    readingMasked = false;
  } else {
    imported = importer->import(*this);
  }
  if (failed(imported))
    return failure();
  // What the importer built verifies here, so a refusal names the node.
  for (Operation &op : llvm::make_range(last ? std::next(last->getIterator()) : block->begin(),
                                        block->end()))
    if (failed(mlir::verify(&op)))
      return fail(oneLine(lastDiagnostic));
  // Every run-time result must be a tensor code generation can hold.
  for (const auto &out : n.output())
    if (const Entry *e = lookup(out); e && e->value &&
        failed(checkRuntimeType(e->value.getType(), "output " + quoted(out))))
      return failure();
  return success();
}

void forEachSubgraph(const onnx::NodeProto &n,
                     llvm::function_ref<void(const onnx::GraphProto &)> f) {
  for (const auto &a : n.attribute()) {
    if (a.has_g())
      f(a.g());
    for (const auto &g : a.graphs())
      f(g);
  }
}

void forEachNestedNode(const onnx::NodeProto &n,
                       llvm::function_ref<void(const onnx::NodeProto &)> f) {
  forEachSubgraph(n, [&](const onnx::GraphProto &g) {
    for (const auto &inner : g.node()) {
      f(inner);
      forEachNestedNode(inner, f);
    }
  });
}

void forEachNestedRead(const onnx::NodeProto &n,
                       llvm::function_ref<void(const std::string &, const onnx::NodeProto *, int)> f) {
  forEachSubgraph(n, [&](const onnx::GraphProto &g) {
    for (const auto &inner : g.node()) {
      for (int i = 0; i < inner.input_size(); ++i)
        f(inner.input(i), &inner, i);
      forEachNestedRead(inner, f);
    }
    for (const auto &out : g.output())
      f(out.name(), nullptr, -1);
  });
}

/// Every name node `n` reads: its inputs and its subgraphs' reads.
static std::vector<std::string> readsOf(const onnx::NodeProto &n) {
  std::vector<std::string> names(n.input().begin(), n.input().end());
  forEachNestedRead(n, [&](const std::string &name, const onnx::NodeProto *, int) {
    names.push_back(name);
  });
  return names;
}

/// Names of every value the loss depends on. A node's subgraphs read outer
/// values by name (a Loop body's captures): those count as its inputs.
static llvm::StringSet<> valuesReaching(const onnx::GraphProto &g,
                                        const std::string &loss) {
  llvm::StringSet<> needed;
  needed.insert(loss);
  for (int i = g.node_size() - 1; i >= 0; --i) {
    const auto &n = g.node(i);
    if (llvm::any_of(n.output(), [&](const std::string &o) { return needed.contains(o); }))
      for (const std::string &in : readsOf(n))
        needed.insert(in);
  }
  return needed;
}

static RankedTensorType valueType(Builder &b, const onnx::ValueInfoProto &v) {
  const auto &t = v.type().tensor_type();
  SmallVector<int64_t> shape;
  for (const auto &d : t.shape().dim())
    shape.push_back(d.has_dim_value() ? d.dim_value() : ShapedType::kDynamic);
  // Integers of every width compute in int64; the runtime widens the data.
  using P = onnx::TensorProto;
  bool narrowInteger = llvm::is_contained({P::INT8, P::INT16, P::INT32, P::UINT8, P::UINT16,
                                           P::UINT32, P::UINT64},
                                          t.elem_type());
  Type elem = narrowInteger ? b.getI64Type() : elementTypeFor(b, t.elem_type());
  return elem ? RankedTensorType::get(shape, elem) : nullptr;
}

namespace {

/// `used`: every value a node reads. `usedAtRunTime`: those read at an
/// input that runs; a float initializer read only where its node wants a
/// compile-time value (Resize's scales) is a constant.
void readersOf(const onnx::GraphProto &g, int opset, llvm::StringSet<> &used,
               llvm::StringSet<> &usedAtRunTime) {
  // Node `reader`'s input `i` (none: a subgraph's output, which runs).
  auto read = [&](const std::string &name, const onnx::NodeProto *reader, int i) {
    used.insert(name);
    const OpImporter *row =
        reader && (reader->domain().empty() || reader->domain() == "ai.onnx")
            ? findOpImporter(reader->op_type(), opset)
            : nullptr;
    if (!row || i >= 32 || !(row->hostInputs >> i & 1))
      usedAtRunTime.insert(name);
  };
  for (const auto &n : g.node()) {
    for (int i = 0; i < n.input_size(); ++i)
      read(n.input(i), &n, i);
    // (and its subgraphs' reads of outer values: a Loop body's captures)
    forEachNestedRead(n, read);
  }
}

/// The values that reach a node only through comparisons: each reader
/// compares it, or moves it (Slice, Reshape, ...: data input 0) into a
/// value that does. Nothing differentiable reads them, so no gradient
/// reaches them: a registered causal-mask buffer read as `mask == 0`, which
/// then folds on the host and reaches otc-fuse-attention as a constant.
class ComparedOnly {
public:
  explicit ComparedOnly(const onnx::GraphProto &g) { add(g); }

  bool operator()(const std::string &value) {
    if (auto it = memo.find(value); it != memo.end())
      return it->second;
    memo[value] = false; // (ONNX graphs are acyclic; this only guards)
    bool ok = true;
    for (auto [node, input] : readers[value]) {
      const std::string &op = node->op_type();
      bool compares = llvm::is_contained(
          {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}, op);
      bool moves = input == 0 && llvm::is_contained({"Slice", "Reshape", "Unsqueeze", "Squeeze",
                                                     "Expand", "Transpose", "Identity",
                                                     "Flatten", "Cast"},
                                                    op);
      // A cast to bool or an integer type ends the float's reach as well.
      if (op == "Cast")
        for (const auto &a : node->attribute())
          if (a.name() == "to" && !llvm::is_contained({onnx::TensorProto::FLOAT,
                                                       onnx::TensorProto::DOUBLE,
                                                       onnx::TensorProto::FLOAT16,
                                                       onnx::TensorProto::BFLOAT16},
                                                      a.i()))
            compares = true;
      if (!node->domain().empty() && node->domain() != "ai.onnx")
        compares = moves = false;
      if (moves)
        for (const std::string &out : node->output())
          moves &= (*this)(out);
      if (!(ok = compares || moves))
        break;
    }
    return memo[value] = ok;
  }

private:
  /// The readers of `g` and of the graphs its nodes carry: a subgraph reads
  /// outer values by name, and what leaves it as an output (a Loop body's)
  /// reaches the outer node's results, which count as not compared.
  void add(const onnx::GraphProto &g) {
    for (const auto &n : g.node()) {
      for (int i = 0; i < n.input_size(); ++i)
        readers[n.input(i)].push_back({&n, i});
      forEachSubgraph(n, [&](const onnx::GraphProto &sub) { add(sub); });
    }
    for (const auto &o : g.output())
      memo[o.name()] = false;
  }

  llvm::StringMap<std::vector<std::pair<const onnx::NodeProto *, int>>> readers;
  llvm::StringMap<bool> memo;
};

/// For a model with a TorchSignature, the initializers that are not the
/// module's parameters but train as them: BatchNorm's running statistics
/// (inputs 3 and 4, which otc updates) and the matrix operands of MatMul
/// and Gemm (a weight its optimizer stored transposed, as PyTorch 1's
/// constant folding did).
llvm::StringSet<> trainedUnlisted(const onnx::GraphProto &g, const TorchSignature &sig) {
  llvm::StringSet<> out;
  for (const auto &n : g.node()) {
    if (n.op_type() == "BatchNormalization")
      for (int i = 3; i < std::min(n.input_size(), 5); ++i)
        out.insert(n.input(i));
    if (n.op_type() == "MatMul" || n.op_type() == "Gemm")
      for (int i = 0; i < std::min(n.input_size(), 2); ++i)
        if (!sig.buffers.contains(n.input(i))) // a listed buffer is not
          out.insert(n.input(i));
  }
  return out;
}

/// A float initializer that a node reads at run time, unless only
/// comparisons do (then it is a compile-time value, if small enough to fold).
/// Where the exporter lists the module's tensors (PyTorch 2), the others
/// are constants (a scale, a Pow's exponent, a mask, which PyTorch 1 wrote
/// as Constant nodes), except those `trainedUnlisted` names. A value its
/// optimizer folded from a parameter otherwise (positions gathered from a
/// table) is a constant too: whether the fold kept the parameter's values
/// one to one, otc cannot tell, and the import warns of the parameters the
/// graph lacks.
bool isParameterTensor(const onnx::TensorProto &init, const llvm::StringSet<> &usedAtRunTime,
                       ComparedOnly &comparedOnly, const std::optional<TorchSignature> &sig,
                       const llvm::StringSet<> &unlisted) {
  bool isFloat = init.data_type() == onnx::TensorProto::FLOAT ||
                 init.data_type() == onnx::TensorProto::DOUBLE;
  if (!isFloat || !usedAtRunTime.contains(init.name()))
    return false;
  int64_t count = 1;
  for (int64_t d : init.dims())
    count = d < 0 || d > OTC_MAX_HOST_ELEMENTS || count > OTC_MAX_HOST_ELEMENTS
                ? OTC_MAX_HOST_ELEMENTS + 1
                : count * d; // (both at most 2^24: no overflow)
  // (Beyond what folds on the host it stays a parameter, as without one.)
  if (sig && count <= OTC_MAX_HOST_ELEMENTS && !sig->parameters.contains(init.name()) &&
      !unlisted.contains(init.name()))
    return false;
  return count > OTC_MAX_HOST_ELEMENTS || !comparedOnly(init.name());
}

} // namespace

std::optional<TorchSignature> torchSignature(const onnx::GraphProto &g) {
  // GraphProto.metadata_props (IR 10, field 16) is newer than libonnx
  // 1.12's schema, so protobuf keeps it among the unknown fields.
  constexpr int kGraphMetadataProps = 16;
  const google::protobuf::UnknownFieldSet &unknown =
      g.GetReflection()->GetUnknownFields(g);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &f = unknown.field(i);
    if (f.number() != kGraphMetadataProps ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto entry;
    if (!entry.ParseFromString(f.length_delimited()) ||
        entry.key() != "pkg.torch.export.ExportedProgram.graph_signature")
      continue;
    // One line per input: "p_name: PARAMETER target='name'", BUFFER or
    // CONSTANT_TENSOR likewise.
    TorchSignature sig;
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(entry.value()).split(lines, '\n');
    for (llvm::StringRef line : lines) {
      auto [kind, rest] = line.split(": ").second.split(" target='");
      llvm::StringRef target = rest.take_until([](char c) { return c == '\''; });
      if (target.empty())
        continue;
      if (kind == "PARAMETER")
        sig.parameters.insert(target);
      else if (kind == "BUFFER" || kind == "CONSTANT_TENSOR")
        sig.buffers.insert(target);
    }
    // A list without parameters is not one otc can read (or a module with
    // none): the initializers decide, as without a list.
    if (sig.parameters.empty())
      return std::nullopt;
    return sig;
  }
  return std::nullopt;
}

llvm::StringSet<> parameterInitializers(const onnx::GraphProto &g, int opset) {
  llvm::StringSet<> used, usedAtRunTime, params;
  readersOf(g, opset, used, usedAtRunTime);
  ComparedOnly comparedOnly(g);
  std::optional<TorchSignature> sig = torchSignature(g);
  llvm::StringSet<> unlisted = sig ? trainedUnlisted(g, *sig) : llvm::StringSet<>();
  for (const auto &init : g.initializer())
    if (isParameterTensor(init, usedAtRunTime, comparedOnly, sig, unlisted))
      params.insert(init.name());
  return params;
}

OwningOpRef<ModuleOp> GraphImporter::import(const onnx::ModelProto &model,
                                            const std::string &path) {
  opsetVersion = defaultOpset(model);
  const onnx::GraphProto &g = model.graph();
  if (g.output_size() == 0) {
    error = "the model has no outputs";
    return nullptr;
  }
  const std::string &lossName = g.output(0).name();
  llvm::StringSet<> reaching = valuesReaching(g, lossName);
  llvm::StringSet<> used, usedAtRunTime;
  readersOf(g, opsetVersion, used, usedAtRunTime);
  ComparedOnly comparedOnly(g);
  std::optional<TorchSignature> sig = torchSignature(g);
  llvm::StringSet<> unlisted = sig ? trainedUnlisted(g, *sig) : llvm::StringSet<>();

  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    lastDiagnostic = d.str();
    return success();
  });

  // Arguments: the data inputs, then the floating-point initializers.
  SmallVector<Type> argTypes;
  SmallVector<NamedAttrList> argAttrs;
  llvm::StringSet<> initializerNames;
  for (const auto &init : g.initializer()) {
    initializerNames.insert(init.name());
    graphNames.insert(init.name());
  }
  for (const auto &in : g.input())
    graphNames.insert(in.name());
  for (const auto &n : g.node()) {
    for (const auto &o : n.output())
      graphNames.insert(o);
    // (and its subgraphs': a name made for an unrolled copy avoids them all)
    forEachNestedNode(n, [&](const onnx::NodeProto &inner) {
      for (const auto &o : inner.output())
        graphNames.insert(o);
    });
  }
  for (const auto &in : g.input()) {
    if (initializerNames.contains(in.name()))
      continue;
    RankedTensorType t = valueType(b, in);
    if (!t) {
      error = "input " + quoted(in.name()) + " has an unsupported element type";
      return nullptr;
    }
    if (failed(checkArgType(t, "input " + quoted(in.name()))))
      return nullptr;
    argTypes.push_back(t);
    NamedAttrList attrs;
    attrs.append(attr::kInput, b.getStringAttr(in.name()));
    argAttrs.push_back(attrs);
  }
  // --freeze: '*' patterns over the initializer's name, or over the PyTorch
  // name its readers imply for an anonymous one (ParameterNames.h).
  llvm::StringMap<std::string> exported = exportedNames(g);
  std::vector<bool> matched(freeze.size(), false);
  auto frozen = [&](const std::string &name) {
    bool any = false;
    auto alias = exported.find(name);
    for (size_t i = 0; i < freeze.size(); ++i)
      if (globMatch(freeze[i], name) ||
          (alias != exported.end() && globMatch(freeze[i], alias->second)))
        matched[i] = any = true;
    return any;
  };
  int64_t frozenCount = 0, frozenValues = 0, paramValues = 0;
  std::vector<const onnx::TensorProto *> params;
  for (const auto &init : g.initializer()) {
    if (!isParameterTensor(init, usedAtRunTime, comparedOnly, sig, unlisted))
      continue;
    params.push_back(&init);
    argTypes.push_back(RankedTensorType::get(
        SmallVector<int64_t>(init.dims().begin(), init.dims().end()),
        elementTypeFor(b, init.data_type())));
    if (failed(checkArgType(argTypes.back(), "initializer " + quoted(init.name()))))
      return nullptr;
    NamedAttrList attrs;
    attrs.append(attr::kParam, b.getStringAttr(init.name()));
    int64_t values = cast<RankedTensorType>(argTypes.back()).getNumElements();
    paramValues += values;
    if (!freeze.empty() && frozen(init.name())) {
      ++frozenCount;
      frozenValues += values;
    } else if (!forwardOnly && reaching.contains(init.name())) {
      attrs.append(attr::kTrainable, b.getUnitAttr());
    }
    if (failed(addFixedRows(init, attrs)))
      return nullptr;
    argAttrs.push_back(attrs);
  }
  static std::set<std::string> told; // auto-fit imports again: say it once
  // An initializer that would not train anyway (a buffer in PyTorch 2's
  // list: BART's final_logits_bias) is frozen already; only a name that
  // matches no initializer at all is an error.
  for (size_t i = 0; i < freeze.size(); ++i)
    if (!matched[i] && llvm::any_of(g.initializer(), [&](const onnx::TensorProto &t) {
          auto alias = exported.find(t.name());
          return globMatch(freeze[i], t.name()) ||
                 (alias != exported.end() && globMatch(freeze[i], alias->second));
        })) {
      matched[i] = true;
      if (told.insert("--freeze " + freeze[i]).second)
        llvm::errs() << "otc: note: --freeze " << quoted(freeze[i])
                   << " names no parameter, only tensors that do not train anyway (buffers or "
                      "constants)\n";
    }
  for (size_t i = 0; i < freeze.size(); ++i)
    if (!matched[i]) {
      error = "--freeze " + quoted(freeze[i]) +
              " matches no parameter of the model (by its initializer name, or for an anonymous "
              "onnx::* one by the PyTorch name its reader implies, e.g. model.layers.0.mlp.up_proj.weight)";
      return nullptr;
    }
  std::string freezeNote = std::to_string(frozenCount) + "/" + std::to_string(params.size());
  if (frozenCount && told.insert(freezeNote).second)
    llvm::errs() << "otc: note: --freeze keeps " << frozenCount << " of " << params.size()
                 << " parameters fixed (" << frozenValues << " of " << paramValues << " values)\n";
  for (const auto &fixed : fixedRows) // (a structured binding: clang 14 cannot capture it)
    if (!llvm::any_of(params, [&](const onnx::TensorProto *p) { return p->name() == fixed.first; })) {
      error = "--fixed-rows " + quoted(fixed.first) + " matches no parameter of the model";
      return nullptr;
    }

  Location fileLoc = FileLineColLoc::get(b.getStringAttr(path), 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, fileLoc, forwardOnly ? "forward" : "train_step",
                                   b.getFunctionType(argTypes, {}));
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    func.setArgAttrs(i, attrs.getDictionary(&ctx));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToEnd(body);

  unsigned argIndex = 0;
  for (const auto &in : g.input())
    if (!initializerNames.contains(in.name()))
      values[in.name()] = Entry{body->getArgument(argIndex++), std::nullopt};
  for (const onnx::TensorProto *p : params)
    values[p->name()] = Entry{body->getArgument(argIndex++), std::nullopt};
  for (const auto &init : g.initializer())
    if (!values.count(init.name()) && used.contains(init.name()))
      values[init.name()] = Entry{Value(), std::nullopt, &init};

  // A constant's host values (doubles) live from its first reader to its
  // last: a 1024-token GPT-2's twelve [1024, 1024] masks, sliced and cast
  // on the host, held 560 MB at once where one layer's now suffice.
  // A node's subgraphs (a Loop's body) read outer values while it imports.
  llvm::StringMap<int> readersLeft;
  std::vector<std::vector<std::string>> reads;
  for (const auto &n : g.node())
    for (const std::string &in : reads.emplace_back(readsOf(n)))
      ++readersLeft[in];
  for (const auto &out : g.output())
    readersLeft[out.name()] += 1 << 30; // never released
  for (int k = 0; k < g.node_size(); ++k) {
    if (failed(importNode(g.node(k))))
      return nullptr;
    for (const std::string &in : reads[k])
      if (--readersLeft[in] == 0)
        if (auto it = values.find(in); it != values.end())
          it->second.host.reset();
  }
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), attr::kFixedRows) &&
        llvm::none_of(arg.getUsers(), [&](Operation *u) {
          auto gather = dyn_cast<GatherOp>(u);
          return gather && gather.getData() == arg;
        })) {
      error = "--fixed-rows " +
              quoted(func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr::kParam).str()) +
              ": no Gather (embedding lookup) reads it";
      return nullptr;
    }

  for (const auto &out : g.output())
    if (masked.count(out.name())) {
      error = "output " + quoted(out.name()) + " is what a run-time boolean mask selects "
              "(x[mask]), whose count the data decides; otc's outputs have compile-time shapes";
      return nullptr;
    }
  current = nullptr;
  if (forwardOnly)
    return finishForward(module, func, g, argTypes);
  const Entry *loss = lookup(lossName);
  Value lossValue = loss ? loss->value : Value();
  auto lossType = lossValue ? dyn_cast<RankedTensorType>(lossValue.getType()) : nullptr;
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType())) {
    error = "the loss output " + quoted(lossName) + " is not a scalar float tensor "
            "computed from the inputs";
    return nullptr;
  }
  func::ReturnOp::create(b, fileLoc, lossValue);
  func.setType(b.getFunctionType(argTypes, {lossType}));
  func.setResultAttr(0, attr::kLoss, b.getUnitAttr());
  if (failed(verify(*module))) {
    error = "the imported model does not verify: " + oneLine(lastDiagnostic);
    return nullptr;
  }
  return module;
}

/// Returns every graph output, in order; outputs folded at compile time
/// become constants.
OwningOpRef<ModuleOp> GraphImporter::finishForward(OwningOpRef<ModuleOp> &module,
                                                   func::FuncOp func,
                                                   const onnx::GraphProto &g,
                                                   ArrayRef<Type> argTypes) {
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &out : g.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) {
      error = "output " + quoted(out.name()) + " is not computed by the graph";
      return nullptr;
    }
    Entry &e = it->second;
    if (!materialize(e, func.getLoc())) {
      error = "output " + quoted(out.name()) + " has an unsupported element type";
      return nullptr;
    }
    if (failed(checkArgType(e.value.getType(), "output " + quoted(out.name()))))
      return nullptr;
    results.push_back(e.value);
    resultTypes.push_back(e.value.getType());
  }
  func::ReturnOp::create(b, func.getLoc(), results);
  func.setType(b.getFunctionType(argTypes, resultTypes));
  for (auto [i, out] : llvm::enumerate(g.output()))
    func.setResultAttr(i, attr::kOutput, b.getStringAttr(out.name()));
  if (failed(verify(*module))) {
    error = "the imported model does not verify: " + oneLine(lastDiagnostic);
    return nullptr;
  }
  return std::move(module);
}

} // namespace otc
