// The facts every otc op declares (OpFacts.td): the trait classes that
// carry them and the enums they use.
#ifndef OTC_DIALECT_OPFACTS_H
#define OTC_DIALECT_OPFACTS_H

#include "mlir/IR/OpDefinition.h"

#include "otc/Dialect/OtcOpsEnums.h.inc"

namespace otc {

/// The attribute otc-recompute puts on the ops it clones into the backward.
inline constexpr const char kRecomputedAttr[] = "otc.recomputed";

/// The step's floating-point operations by the compiler's model, the sum of
/// each op's declared count (getFlopCount): what --recompute's cost is
/// measured in and auto-fit's throughput estimate starts from.
struct StepFlops {
  int64_t total = 0, recomputed = 0; // recomputed: ops marked otc.recomputed
  /// What recompute adds, in percent of the step without it.
  double addedPercent() const {
    return total > recomputed ? 100.0 * double(recomputed) / double(total - recomputed) : 0.0;
  }
};
/// One op's count (0 for ops of other dialects: func.return).
int64_t opFlops(mlir::Operation *op);
/// Every op under `root`.
StepFlops countFlops(mlir::Operation *root);

/// Elements of an op's first result or first operand (0 if it has none).
int64_t resultElements(mlir::Operation *op);
int64_t operandElements(mlir::Operation *op);

namespace trait {
// Markers: the methods they bring are in OpFacts.td, injected into the op.
template <typename Op>
class PrecisionFact : public mlir::OpTrait::TraitBase<Op, PrecisionFact> {};
template <typename Op>
class RecomputeFact : public mlir::OpTrait::TraitBase<Op, RecomputeFact> {};
template <typename Op>
class FlopsFact : public mlir::OpTrait::TraitBase<Op, FlopsFact> {};
template <typename Op>
class NotDifferentiable : public mlir::OpTrait::TraitBase<Op, NotDifferentiable> {};
} // namespace trait

} // namespace otc

#include "otc/Dialect/OpFactsInterface.h.inc"

#endif
