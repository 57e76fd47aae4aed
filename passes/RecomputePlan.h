// What otc-recompute's policies share: the step's forward, what must be
// kept whatever the policy, and the segments a policy recomputes whole.
#ifndef OTC_PASSES_RECOMPUTEPLAN_H
#define OTC_PASSES_RECOMPUTEPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace otc {

/// The training step's forward: every op before the first reader of the
/// loss seed (autodiff appends the backward after it).
struct Forward {
  mlir::Operation *boundary = nullptr; // the backward's first op; null: none
  llvm::SmallVector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Operation *, int> position;
  /// Values computed, through forward ops, from a data input.
  llvm::DenseSet<mlir::Value> dataDependent;
  /// Forward values a backward op reads.
  llvm::DenseSet<mlir::Value> backwardRead;
  /// Parameters the step assigns (BatchNorm's running statistics).
  llvm::DenseSet<mlir::Value> assigned;

  explicit Forward(mlir::func::FuncOp func);
  bool contains(mlir::Operation *op) const { return position.count(op); }
  /// Kept whatever the policy: not a forward value, a constant or a value of
  /// parameters alone, an op with effects, a reader of an assigned
  /// parameter. (Narrowing casts are decided by the engine.)
  bool mustKeep(mlir::Value v) const;
  /// A forward op in another segment of `seg` than `v`'s reads `v` (no
  /// segment counts as one).
  bool leaves(mlir::Value v, const llvm::DenseMap<mlir::Operation *, int> &seg) const;
};

/// Whether the backward keeps a forward value (rather than recompute it),
/// given the segments `seg`: what must be kept, what enters or leaves a
/// segment, and outside segments what is not cheap. Memoised.
class KeepRule {
public:
  KeepRule(const Forward &f, const llvm::DenseMap<mlir::Operation *, int> &seg)
      : f(f), seg(seg) {}
  bool operator()(mlir::Value v);

private:
  const Forward &f;
  const llvm::DenseMap<mlir::Operation *, int> &seg;
  llvm::DenseMap<mlir::Value, bool> memo;
};

/// The forward values the backward reads once `kept` decides: the kept ones
/// the recomputation reaches from what the backward reads.
llvm::DenseSet<mlir::Value> checkpoints(const Forward &f,
                                        llvm::function_ref<bool(mlir::Value)> kept);

/// `selective`'s cheap ops: a pass over memory, not arithmetic.
bool isCheap(mlir::Operation *op);

/// Bytes of a tensor value.
int64_t valueBytes(mlir::Value v);

/// Forward op -> segment (ops recomputed together from the values that
/// enter it); ops not in the map follow `selective`. Each returns a summary
/// in words, or fails with an error on the function.
mlir::LogicalResult segmentBlocks(const Forward &f, mlir::func::FuncOp func,
                                  llvm::StringRef boundary,
                                  llvm::DenseMap<mlir::Operation *, int> &seg,
                                  std::string &summary);
void segmentSqrt(const Forward &f, llvm::DenseMap<mlir::Operation *, int> &seg,
                 std::string &summary);
/// `layers` best layers; `candidates` is how many there are.
void segmentBudget(const Forward &f, int64_t layers,
                   llvm::DenseMap<mlir::Operation *, int> &seg, std::string &summary,
                   int64_t &candidates);

} // namespace otc

#endif
