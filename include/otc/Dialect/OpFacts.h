// The facts every otc op declares (OpFacts.td): the trait classes that
// carry them and the enums they use.
#ifndef OTC_DIALECT_OPFACTS_H
#define OTC_DIALECT_OPFACTS_H

#include "mlir/IR/OpDefinition.h"

#include "otc/Dialect/OtcOpsEnums.h.inc"

namespace otc {

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
