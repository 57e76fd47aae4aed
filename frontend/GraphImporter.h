// Walks an ONNX graph in order, giving each node to its op importer, and
// builds `func.func @train_step` from the results.
#ifndef OTC_FRONTEND_GRAPHIMPORTER_H
#define OTC_FRONTEND_GRAPHIMPORTER_H

#include "HostTensor.h"
#include "ModelChecks.h"
#include "otc/Frontend/Import.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <optional>

namespace otc {

/// The initializers that become parameters (function arguments whose
/// values the executable reads at start): float tensors some node reads at
/// run time. The others are compile-time constants.
llvm::StringSet<> parameterInitializers(const onnx::GraphProto &g, int opset);

/// What PyTorch 2's exporter (torch.export) lists in the graph's metadata
/// (`pkg.torch.export.ExportedProgram.graph_signature`): the module's
/// parameters, and its buffers and lifted constant tensors, by their module
/// names. Its other initializers are values it made (folded expressions,
/// literals).
struct TorchSignature {
  llvm::StringSet<> parameters, buffers;
};
/// The model's signature, or none when it has none (PyTorch 1's exporter).
std::optional<TorchSignature> torchSignature(const onnx::GraphProto &g);

class GraphImporter {
public:
  /// Reads options.freeze, fixedRows and forwardOnly.
  GraphImporter(mlir::MLIRContext &ctx, std::string &error, const ImportOptions &options)
      : ctx(ctx), b(&ctx), error(error), freeze(options.freeze), fixedRows(options.fixedRows),
        forwardOnly(options.forwardOnly), evaluation(options.evaluation),
        convOp(options.convOp), batchNormTrain(options.batchNormTrain) {}

  /// Importing the evaluation loss (ImportOptions::evaluation).
  bool evaluating() const { return evaluation; }
  /// Conv as one op (ImportOptions::convOp).
  bool convAsOneOp() const { return convOp; }
  /// Every BatchNormalization in training mode (ImportOptions::batchNormTrain).
  bool batchNormInTraining() const { return batchNormTrain; }

  /// Imports a checked, batch-specialised model whose graph has exactly one
  /// output, the scalar loss; or, forward-only, any outputs.
  mlir::OwningOpRef<mlir::ModuleOp> import(const onnx::ModelProto &model,
                                           const std::string &path);

  // The interface op importers use, all about the current node.
  const onnx::NodeProto &node() const { return *current; }
  mlir::OpBuilder &builder() { return b; }
  mlir::Location loc() const { return nodeLoc; }
  int opset() const { return opsetVersion; }
  /// The first opset of the node's form: the sinceVersion of the table row
  /// that imports it (an importer serving two forms tells them apart).
  int form() const { return formVersion; }
  size_t numInputs() const;
  /// The runtime value of input `i`, materialising a host constant.
  mlir::FailureOr<mlir::Value> input(size_t i);
  /// Input `i`, or a null Value when the node omits it (absent or "").
  mlir::FailureOr<mlir::Value> optionalInput(size_t i);
  /// Every input's runtime value, in order.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> inputs();
  /// Whether every input is known at compile time.
  bool allInputsConstant() const;
  /// Input `i` when it is known at compile time, else null.
  const HostTensor *constantInput(size_t i) const;
  void define(size_t output, mlir::Value v);
  /// Defines a compile-time output; fails when `t` breaks the host limits.
  mlir::LogicalResult define(size_t output, HostTensor t);
  /// Defines output 0 as `v` (a Value or FailureOr), or passes a failure on.
  mlir::LogicalResult defineResult(mlir::FailureOr<mlir::Value> v) {
    if (mlir::failed(v))
      return mlir::failure();
    define(0, *v);
    return mlir::success();
  }
  /// Sequences (SplitToSequence): a sequence is the names of its parts,
  /// each an ordinary value; its own name holds no value.
  void defineSequence(size_t output, std::vector<std::string> parts);
  /// Input `i`'s parts when it is a sequence, else null.
  const std::vector<std::string> *sequenceInput(size_t i) const;
  /// What x[mask] selects for a run-time boolean mask (NonZero, Transpose,
  /// GatherND), whose row count the data decides: kept dense, a row for
  /// every position of the mask's shape, with the mask beside it
  /// (MaskedRows.cpp). NonZero's coordinates hold no value of their own.
  struct MaskedRows {
    enum class Form { Coordinates, CoordinatesTransposed, Rows };
    Form form;
    std::string mask;                   // the mask's ONNX name
    std::vector<int64_t> maskShape;     // its dims; N, their product, rows
    mlir::Value selected;               // i1 [N]: the rows the mask selects
  };
  /// Input `i`'s masked rows, or null when it holds an ordinary value.
  const MaskedRows *maskedInput(size_t i) const;
  /// Output `output` holds masked rows (for Rows, the dense value is the
  /// one define() gave it).
  void defineMasked(size_t output, MaskedRows m);
  /// Sets the value input `i` reads to `v`, returning the one it had: a
  /// masked-rows rule gives an importer its input with the unselected
  /// rows made neutral, then puts the original back.
  mlir::Value swapInputValue(size_t i, mlir::Value v);

  /// The run-time value the current node's output `output` was given, or
  /// null (a compile-time value, or none yet).
  mlir::Value outputValue(size_t output) const;

  /// Whether the graph or the import so far has a value of this name.
  bool isDefined(const std::string &name) const {
    return lookup(name) != nullptr || graphNames.contains(name);
  }
  /// Whether the import so far has defined a value (or sequence) of this name.
  bool hasValue(const std::string &name) const { return lookup(name) != nullptr; }
  /// Output `output` is the value named `name` (a part of a sequence).
  void defineAs(size_t output, const std::string &name);
  /// Runs `body` with `n` as the current node: a node made to reuse an
  /// importer (its outputs name a sequence's parts); then restores it.
  mlir::LogicalResult withNode(const onnx::NodeProto &n,
                               llvm::function_ref<mlir::LogicalResult()> body) {
    const onnx::NodeProto *saved = current;
    current = &n;
    mlir::LogicalResult r = body();
    current = saved;
    return r;
  }
  /// Imports a node of a subgraph (a Loop's unrolled body) as if it stood
  /// here in the graph, then restores the current node.
  mlir::LogicalResult importNested(const onnx::NodeProto &n);
  /// Counts `work` more units of unrolling (nodes, and KiB of the bodies
  /// copied and of the constants carried) against the import's bound;
  /// nested loops multiply. Fails naming the node past it.
  mlir::LogicalResult chargeUnrolled(int64_t work);
  /// Gives back what a loop charged for iterations its condition skipped.
  void refundUnrolled(int64_t work) { unrolledWork -= work; }
  /// The most unrolling work one import may do.
  static constexpr int64_t kMaxUnrolledWork = int64_t(1) << 20;
  /// Keeps `name` from any name made later (isDefined holds for it).
  void reserveName(const std::string &name) { graphNames.insert(name); }
  /// Decodes the initializer `name` if no node has read it yet.
  mlir::LogicalResult decodePending(const std::string &name);
  /// The number of compile-time elements `name` holds (0: none).
  int64_t hostElements(const std::string &name) const {
    const Entry *e = lookup(name);
    return e && e->host ? (int64_t)e->host->values.size() : 0;
  }
  /// Lets go of the compile-time values of `name`, which nothing reads
  /// again (a finished loop iteration's values).
  void releaseHost(const std::string &name) {
    if (auto it = values.find(name); it != values.end())
      it->second.host.reset();
  }
  /// Adds `context` to the import's error, if it has one.
  void addErrorContext(const std::string &context) {
    if (!error.empty())
      error += context;
  }
  /// Makes a parameter argument a buffer: state the model keeps but never
  /// trains (BatchNorm's running statistics). Other values are left alone.
  void markBuffer(mlir::Value v);
  /// Whether `v` is a parameter: an argument read from an initializer.
  bool isParameter(mlir::Value v) const;
  /// Records "node 'NAME' (OP): message" and returns failure.
  mlir::LogicalResult fail(const llvm::Twine &message);

  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t fallback) const;
  double floatAttr(llvm::StringRef name, double fallback) const;
  std::vector<int64_t> intsAttr(llvm::StringRef name) const;

  /// Creates an op whose result type is inferred, turning an inference error
  /// into a failure instead of an abort.
  template <typename Op, typename... Args>
  mlir::FailureOr<mlir::Value> create(Args &&...args) {
    auto placeholder = mlir::UnrankedTensorType::get(b.getF32Type());
    auto op = Op::create(b, nodeLoc, placeholder, std::forward<Args>(args)...);
    llvm::SmallVector<mlir::Type, 1> types;
    if (mlir::failed(Op::inferReturnTypes(&ctx, nodeLoc, typename Op::Adaptor(op), types))) {
      op->erase();
      return fail(oneLine(lastDiagnostic));
    }
    op->getResult(0).setType(types[0]);
    return op->getResult(0);
  }

private:
  struct Entry {
    mlir::Value value;
    std::optional<HostTensor> host;
    /// An initializer whose values `host` takes when a node first reads it.
    const onnx::TensorProto *pending = nullptr;
  };
  mlir::LogicalResult importNode(const onnx::NodeProto &n);
  /// Adds --fixed-rows' attribute for initializer `init`, checking its rows.
  mlir::LogicalResult addFixedRows(const onnx::TensorProto &init, mlir::NamedAttrList &attrs);
  /// Fails naming `what` unless `t` is a tensor type code generation takes.
  mlir::LogicalResult checkRuntimeType(mlir::Type t, const std::string &what);
  /// The same for a function argument, outside any node.
  mlir::LogicalResult checkArgType(mlir::Type t, const std::string &what);
  const Entry *lookup(const std::string &name) const;
  /// Gives a host tensor's entry an otc.constant; false for a type otc
  /// cannot hold at run time.
  bool materialize(Entry &e, mlir::Location loc);
  mlir::OwningOpRef<mlir::ModuleOp> finishForward(mlir::OwningOpRef<mlir::ModuleOp> &module,
                                                  mlir::func::FuncOp func,
                                                  const onnx::GraphProto &g,
                                                  llvm::ArrayRef<mlir::Type> argTypes);

  mlir::MLIRContext &ctx;
  mlir::OpBuilder b;
  std::string &error;
  std::vector<std::string> freeze;
  std::vector<std::pair<std::string, std::vector<int64_t>>> fixedRows;
  bool forwardOnly;
  bool evaluation;
  bool convOp;
  bool batchNormTrain;
  std::string lastDiagnostic;
  llvm::StringMap<Entry> values;
  llvm::StringMap<std::vector<std::string>> sequences;
  llvm::StringMap<MaskedRows> masked;
  bool readingMasked = false; // a masked-rows rule is importing the node
  llvm::StringSet<> graphNames; // every name the graph defines
  const onnx::NodeProto *current = nullptr;
  mlir::Location nodeLoc = mlir::UnknownLoc::get(&ctx);
  int opsetVersion = 0;
  int formVersion = 0;
  int64_t unrolledWork = 0;
};

/// One entry of the versioned import table: `import` handles `opType` from
/// opset `sinceVersion` until the next entry for the same op.
struct OpImporter {
  const char *opType;
  int sinceVersion;
  mlir::LogicalResult (*import)(GraphImporter &);
  /// The inputs read at compile time only, a bit each (Resize's scales): a
  /// float initializer read nowhere else is a constant, not a parameter.
  unsigned hostInputs = 0;
};

/// Imports a node that reads masked rows (GraphImporter::MaskedRows), by
/// `importer` where the op keeps each row to itself (MaskedRows.cpp).
mlir::LogicalResult importMaskedNode(GraphImporter &imp, const OpImporter &importer);

/// The importer for `opType` at `opset`, or null when it is unsupported.
const OpImporter *findOpImporter(llvm::StringRef opType, int opset);

/// The default-domain opset the model imports, as libonnx reads it: the ""
/// entry, else "ai.onnx".
int defaultOpset(const onnx::ModelProto &model);

/// Why otc cannot import node `n` at `opset` (domain or operator), or an
/// empty string. Checked for every node before libonnx sees the model.
std::string unsupportedReason(const onnx::NodeProto &n, int opset);

/// Calls `f` on each graph that node `n` carries (a Loop's body, If's
/// branches), not on graphs nested in those.
void forEachSubgraph(const onnx::NodeProto &n,
                     llvm::function_ref<void(const onnx::GraphProto &)> f);

/// Calls `f` on every node of the graphs that node `n` carries (a Loop's
/// body), nested ones included.
void forEachNestedNode(const onnx::NodeProto &n,
                       llvm::function_ref<void(const onnx::NodeProto &)> f);

/// Calls `f(name, reader, input)` for every name that node `n`'s graphs
/// read: nested nodes' inputs, and each graph's outputs (reader null).
void forEachNestedRead(
    const onnx::NodeProto &n,
    llvm::function_ref<void(const std::string &, const onnx::NodeProto *, int)> f);

/// A node's name, or its first output's when it has none.
std::string nodeName(const onnx::NodeProto &n);

/// "node 'NAME' (OP)": how messages name a node.
std::string describeNode(const onnx::NodeProto &n);

} // namespace otc

#endif
