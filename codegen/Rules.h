// The registry of per-op lowering rules, filled by one file per op family
// (codegen/rules/). An op with no rule is a compile error that names it.
#ifndef OTC_CODEGEN_RULES_H
#define OTC_CODEGEN_RULES_H

#include "Lowering.h"

#include "llvm/ADT/StringMap.h"

namespace otc {

/// An op computed element by element, fusable into its consumers.
struct ElementwiseRule {
  /// The dim map of operand `k` given the result's. Null: numpy broadcasting.
  DimMap (*operandMap)(mlir::Operation *op, unsigned k, const DimMap &result) = nullptr;
  /// The result's node from the operands' nodes.
  int (*build)(mlir::Operation *op, NodeBuilder &b, llvm::ArrayRef<int> operands) = nullptr;
};

/// An op that becomes steps of its own.
struct StepRule {
  bool (*lower)(mlir::Operation *op, Lowering &l) = nullptr;
  /// Whether the op reads operand `k` through Lowering::expr, so that an
  /// elementwise producer can be computed inside its loops.
  bool (*readsInLoop)(mlir::Operation *op, unsigned k) = nullptr;
  /// How its results are written: through Lowering::store (so they can go
  /// straight to a result, the loss or a gradient buffer), into a buffer the
  /// rule takes itself (Lowering::ownResult, as a GEMM's C), or not at all
  /// (views and constants).
  enum class Output { Store, Own, None } output = Output::Store;
  /// For Output::Own: whether this op can accumulate into a gradient buffer
  /// itself (a GEMM through beta), given by Lowering::accumulatorOf.
  bool (*accumulates)(mlir::Operation *op) = nullptr;
  /// An operand whose arena buffer the result takes over when the op is its
  /// last reader and the two have one type and size, or -1: for a row kernel
  /// that reads each row whole before it writes it, on both targets.
  int inPlace = -1;
  /// The result that takes that operand's buffer over (the cross-entropy
  /// with its gradient: the gradient, result 1).
  unsigned inPlaceResult = 0;
  /// Whether the op's step runs over operand `k`'s elements one to one, with
  /// the identity map (a row kernel over its input), so that an elementwise
  /// producer of it with later users too can be computed there and stored
  /// from there, instead of in a step of its own: the residual add before
  /// a LayerNorm.
  bool (*hosts)(mlir::Operation *op, unsigned k) = nullptr;
  /// Whether the op's step stores result `k` through Lowering::store with
  /// the identity map, once per element, so that an elementwise consumer of
  /// it can be computed there and stored beside it, instead of in a step of
  /// its own: the residual gradient's add after a normalize_grad.
  bool (*feeds)(mlir::Operation *op, unsigned k) = nullptr;
  /// The width in elements of the rows of operand k (`result`: of result k)
  /// that the op's library call reads (writes) with a pitch and an offset
  /// (Lowering::rowView), or 0 where it needs the tensor dense: attention in
  /// the projections' layout, on slices of one packed q, k, v.
  int64_t (*rowWidth)(mlir::Operation *op, bool result, unsigned k) = nullptr;
  /// Whether the op's step can read operand k from memory that holds it
  /// with its last two dims swapped (a matrix product's trans flag), so a
  /// transpose of those dims that only such readers read needs no copy
  /// (Lowering::transposedView).
  bool (*readsTransposed)(mlir::Operation *op, unsigned k) = nullptr;
};

/// For StepRule::accumulates.
inline bool always(mlir::Operation *) { return true; }

struct RuleRegistry {
  llvm::StringMap<ElementwiseRule> elementwise;
  llvm::StringMap<StepRule> steps;

  static const RuleRegistry &get();
  const ElementwiseRule *elementwiseRule(mlir::Operation *op) const;
  const StepRule *stepRule(mlir::Operation *op) const;
};

// One per op family.
void registerElementwiseRules(RuleRegistry &r);
void registerLinalgRules(RuleRegistry &r);
void registerReductionRules(RuleRegistry &r);
void registerLossRules(RuleRegistry &r);
void registerNormalizationRules(RuleRegistry &r);
void registerDataMovementRules(RuleRegistry &r);
void registerStructuralRules(RuleRegistry &r);
void registerWindowRules(RuleRegistry &r);
void registerRotaryRules(RuleRegistry &r);
void registerAttentionRules(RuleRegistry &r);
void registerRecurrentRules(RuleRegistry &r);

/// Numpy broadcasting: the operand dims aligned to the result's trailing
/// dims, size-1 dims read at 0.
DimMap broadcastMap(llvm::ArrayRef<int64_t> operandShape,
                    llvm::ArrayRef<int64_t> resultShape, const DimMap &result);
/// The identity map of a rank-`rank` value.
DimMap identityMap(size_t rank);
/// Lowers an op's single result as an elementwise step over its shape.
bool lowerAsElementwise(mlir::Operation *op, Lowering &l);
/// Lowers an op to one call of library kernel `kernel`: its buffers are
/// `inputs` (null values, absent optional operands, left out), then
/// `scratch`, then `results` (which the call writes, Output::Own).
bool lowerLibraryCall(mlir::Operation *op, Lowering &l, LibraryCall::Kernel kernel,
                      std::vector<int64_t> constants, llvm::ArrayRef<mlir::Value> inputs,
                      llvm::ArrayRef<int> scratch, llvm::ArrayRef<mlir::Value> results,
                      std::vector<LibraryCall::Scalar> scalars = {});

} // namespace otc

#endif
