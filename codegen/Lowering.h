// Lowering of a function on the otc dialect to the kernel program. The
// driver decides which values fuse into their consumers and which get
// buffers; the per-op rules (Rules.h) build the steps.
#ifndef OTC_CODEGEN_LOWERING_H
#define OTC_CODEGEN_LOWERING_H

#include "NodeBuilder.h"
#include "Program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>

namespace otc {

class ConstantOp;

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// C literals: a float (NAN and INFINITY for those), a long long that may be
/// INT64_MIN, and a string whose every unusual byte is an octal escape.
std::string floatLiteral(double v);
std::string intLiteral(int64_t v);
std::string cString(const std::string &s);

/// The storage type of a tensor type's elements; false if none fits.
bool elemTypeOf(mlir::Type type, ElemType &out);

// Shared by the lowering's files.
llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);
/// The value a chain of reshapes (views in the same element order) shows.
mlir::Value viewBase(mlir::Value v);
/// Whether `t` is one of the 16-bit float storage types.
bool isHalf(mlir::Type t);
std::string typeText(mlir::Type t);

/// A buffer's size and live range, in op positions, both ends inclusive.
struct Interval {
  int64_t bytes, begin, end;
  int64_t offset = 0;
};

/// Gives each interval an arena offset so that buffers live at the same time
/// never overlap. Returns the arena size.
int64_t placeBuffers(std::vector<Interval> &intervals);

/// A tensor kept as rows inside another's memory: rows `pitch` elements
/// apart from element `offset` of `base`'s buffer. A slice of a packed
/// projection, read in place (q, k and v of one GEMM), or a result written
/// straight into its place in a concat (their gradients).
struct RowView {
  mlir::Value base;
  int64_t offset = 0, pitch = 0;
};

/// How a value's coordinates come from a step's iteration coordinates:
/// entry j is the iteration dim that indexes the value's dim j, or -1 where
/// the value's dim has size 1 and is read at 0 (broadcasting).
using DimMap = std::vector<int>;

/// The element strides of a value of `shape` held in `buffer`: dense, or
/// with its last dim's rows `buffer.pitch` apart.
std::vector<int64_t> storedStrides(llvm::ArrayRef<int64_t> shape, const Buffer &buffer);
/// A value's own strides `own` at a step's dims through `map` (rank dims).
std::vector<int64_t> mapStrides(const std::vector<int64_t> &own, const DimMap &map, size_t rank);

class Lowering {
public:
  /// `training`: the function is the training pipeline's step (loss, seed,
  /// gradient buffers). Otherwise a plain function: arguments in, results out.
  Lowering(mlir::func::FuncOp func, bool training, std::string &error);
  bool run(Program &program);

  // The interface of the per-op rules.
  bool fail(mlir::Operation *op, const std::string &message);
  Step &newStep(Step::Kind kind, mlir::Operation *op,
                std::vector<int64_t> shape = {}, std::vector<bool> reduced = {});
  /// `v` at the iteration coordinates, through `map`. Inlined producers are
  /// built into the step (iteratively: chains of any length). `compute`:
  /// build `v` from its own op's rule even though it has a buffer.
  int expr(NodeBuilder &b, mlir::Value v, const DimMap &map, bool compute = false);
  /// Writes `node` as the value `result` whose coordinates are `map`: into
  /// its buffer, or accumulated into a gradient buffer or the loss.
  void store(NodeBuilder &b, mlir::Value result, int node, const DimMap &map);
  /// The buffer holding `v` (views resolved), for steps that need memory.
  int buffer(mlir::Value v, mlir::Operation *user);
  /// A temporary of the current op, in the arena.
  int scratch(ElemType type, std::vector<int64_t> shape, const std::string &name);
  /// For a rule that accumulates itself: the gradient buffer, or -1.
  int accumulatorOf(mlir::Operation *producer) const;
  /// Whether the producer of `acc`'s gradient already accumulated it into
  /// the gradient buffer (a GEMM through beta, another step through store).
  bool accumulateFused(mlir::Operation *acc) const {
    auto it = fusedAccumulates.find(acc);
    if (it == fusedAccumulates.end())
      return false;
    mlir::Operation *p = it->second.getDefiningOp();
    return nativeAccumulator.count(p) || stored.contains(it->second);
  }
  /// The buffer an Output::Own rule writes `v` into (its arena buffer or its
  /// result's), recorded as written.
  int ownResult(mlir::Value v, mlir::Operation *op);
  /// `v`'s rows in another tensor's memory (through reshapes), where its
  /// readers or its producer take them so (StepRule::rowWidth); null where
  /// `v` has memory of its own.
  const RowView *rowView(mlir::Value v) const;
  /// The tensor `v` transposes (its last two dims swapped) where `v` is not
  /// copied because every reader reads it so (StepRule::readsTransposed);
  /// null otherwise.
  mlir::Value transposedView(mlir::Value v) const;
  Program &program() { return *prog; }

private:
  bool classify();
  /// Whether `v` is a parameter or input argument the step never writes.
  bool unwrittenArgument(mlir::Value v);
  /// Whether elementwise `op`, read in the loops of several steps (directly
  /// or through `repeated` users), moves fewer bytes computed again in each
  /// than stored once and read back.
  bool cheaperRepeated(mlir::Operation &op, const struct RuleRegistry &rules,
                       const llvm::DenseSet<mlir::Operation *> &repeated);
  /// The step op that computes and stores elementwise `op`'s result, or null.
  mlir::Operation *hostFor(mlir::Operation &op, const struct RuleRegistry &rules);
  /// The earlier step op that stores an operand of elementwise `op` one to
  /// one (StepRule::feeds) and can compute and store `op` beside it, or null;
  /// `fed` is that operand.
  mlir::Operation *feederFor(mlir::Operation &op, const struct RuleRegistry &rules,
                             mlir::Value &fed);
  /// A float32 value's narrowing cast to 16 bits, where the value is
  /// computed in another op's step (hosted or fed) and also read
  /// elsewhere: computed and stored in that step too (the residual
  /// gradient's 16-bit copy for the GEMMs).
  void feedNarrowingCasts();
  /// Whether every user of `v` is fed `v` in its producer's step, so `v`
  /// itself needs no memory.
  bool onlyFed(mlir::Value v) const;
  /// Finds the row views: slices whose every reader reads their rows in
  /// place, and results whose one reader is a concat they can be written
  /// into; and the transposed views. After the bindings (a concat that
  /// accumulates is left alone).
  void findRowViews();
  bool bindArguments();
  bool bindResults();
  bool fuseAccumulations();
  bool storable(mlir::Value v) const;
  bool owned(mlir::Value v) const;
  bool makeBuffers();
  /// Pads the rows of arena buffers whose last dim leaves rows misaligned
  /// for a GEMM that reads or writes them (Buffer::pitch), where every
  /// reader and writer can take the pitch (PadRows.cpp). After makeBuffers.
  void padRows();
  /// Merges adjacent sibling Reduce steps and splits long column
  /// reductions (ReduceSteps.h), before the arena is placed.
  void rewriteReduces();
  /// Runs small Elementwise steps as the epilogue of the Reduce step whose
  /// results they read (ReduceSteps.h: foldsIntoReduce), where no step in
  /// between touches what they write or writes what they read. After
  /// rewriteReduces (MoveSteps.cpp, as hoistAccumulates; OTC_MOVE_STEPS=0
  /// turns both off).
  void foldEpilogues();
  /// Moves each accumulate into a gradient buffer to right after the last
  /// step that writes what it reads, where nothing between touches the
  /// gradient; a temporary it was the last to read dies there.
  void hoistAccumulates();
  /// Extends the arena intervals of `ids` over positions [from, to].
  void spanBuffers(const std::vector<int> &ids, int64_t from, int64_t to);
  /// Marks frozen parameters that no step reads in float32 (TensorDesc::lowOnly).
  void markLowOnly();
  bool placeArena();
  bool finishResults();
  int64_t usePosition(mlir::Operation *op);
  /// The arena buffer of `op`'s operand `operand` when `result` (stored as
  /// `type`) can take it over (StepRule::inPlace), or -1.
  int inPlaceBuffer(mlir::Operation *op, int operand, unsigned resultIndex, ElemType type,
                    mlir::Value result);
  int addBuffer(ElemType type, std::vector<int64_t> shape, Buffer::Place place,
                int binding, std::string name);
  int leaf(NodeBuilder &b, mlir::Value v, const DimMap &map);
  /// A Constant buffer holding `c`'s elements.
  int constantBuffer(ConstantOp c);

  mlir::func::FuncOp func;
  bool training;
  std::string &error;
  Program *prog = nullptr;
  mlir::Operation *current = nullptr;
  mlir::Operation *lastCallOp = nullptr; // newStep: the op a library call last came from

  llvm::DenseMap<mlir::Operation *, int64_t> position;
  /// The op whose loops compute each op: itself, or its fusion group's root.
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> rootOf;
  mlir::Value loss;
  int lossBuffer = -1;
  void tokenLabels(mlir::Value loss);
  std::vector<int> resultBuffers;
  llvm::DenseSet<mlir::Value> writtenByOwner;
  llvm::DenseSet<mlir::Value> inlined;
  /// Elementwise values computed and stored by their first user's step
  /// (StepRule::hosts) rather than by a step of their own.
  llvm::DenseMap<mlir::Value, mlir::Operation *> hostOf;
  /// Elementwise ops computed and stored where their host stores the
  /// operand it feeds them (StepRule::feeds), by that operand.
  llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::Operation *, 2>> fedTo;
  llvm::DenseMap<mlir::Value, RowView> rowViews;
  llvm::DenseMap<mlir::Value, mlir::Value> transposedViews;
  /// A concat's result: the first position at which a producer writes rows
  /// into it (its buffer lives from there).
  llvm::DenseMap<mlir::Value, int64_t> rowsWrittenFrom;
  /// Parameters the step writes itself (otc.assign targets), found by classify.
  llvm::DenseSet<mlir::Value> assigned;
  /// Narrowing casts whose producer stores the 16-bit value itself.
  llvm::DenseSet<mlir::Operation *> foldedCasts;
  llvm::DenseMap<mlir::Value, int> buffers;
  /// Values written somewhere other than their own arena buffer.
  struct Target {
    int buffer;
    bool accumulate;
  };
  llvm::DenseMap<mlir::Value, Target> targets;
  llvm::DenseMap<mlir::Operation *, int> nativeAccumulator;
  llvm::DenseMap<mlir::Operation *, mlir::Value> fusedAccumulates;
  llvm::DenseSet<mlir::Value> stored;
  std::vector<Interval> intervals; // per arena buffer
  std::vector<int64_t> stepAt;      // the op position of each step
  std::vector<int> intervalBuffer;
};

} // namespace otc

#endif
