// Helpers shared by the op importers of every family.
#ifndef OTC_FRONTEND_IMPORTHELPERS_H
#define OTC_FRONTEND_IMPORTHELPERS_H

#include "GraphImporter.h"

namespace otc {

/// The product of `dims`, or -1 when one is negative or it overflows.
int64_t product(llvm::ArrayRef<int64_t> dims);

/// `v`'s tensor type with another shape.
mlir::RankedTensorType withShape(mlir::Value v, llvm::ArrayRef<int64_t> shape);

/// Normalises ONNX axes (negative counts from the end) to sorted unique ones.
mlir::FailureOr<llvm::SmallVector<int64_t>> normaliseAxes(GraphImporter &imp,
                                                          std::vector<int64_t> axes,
                                                          int64_t rank);

/// The node's "axis" attribute (`fallback` when absent), normalised for
/// `rank`.
mlir::FailureOr<int64_t> axisAttr(GraphImporter &imp, int64_t fallback, int64_t rank);

/// `v` reshaped to `shape` (itself when it already has it).
mlir::Value reshaped(GraphImporter &imp, mlir::Value v, llvm::ArrayRef<int64_t> shape);

/// Int64 `v` with negative entries counted back from `extent`:
/// where(v < 0, v + extent, v).
mlir::FailureOr<mlir::Value> wrapNegative(GraphImporter &imp, mlir::Value v, int64_t extent);

/// The row-major position in a tensor of dims `dims` of each index tuple
/// along the last dim of int64 `idx` [..., k], k = dims.size(), negative
/// entries counted from the end: an int64 [...] computed at run time. A
/// tuple with an entry out of range gets a position past any tensor, which
/// gather reads as 0 and gather_grad drops.
mlir::FailureOr<mlir::Value> flatIndex(GraphImporter &imp, mlir::Value idx,
                                       llvm::ArrayRef<int64_t> dims);

/// The element offset of each coordinate of `shape` in a row-major tensor
/// of strides `strides`, dim `skip` left out (-1: none): an int64 constant
/// of shape `shape`.
mlir::Value coordinateOffsets(GraphImporter &imp, const std::vector<int64_t> &shape,
                              const std::vector<int64_t> &strides, int64_t skip);

/// `v` gathered along `axis` at the compile-time `positions` (each in
/// range): an otc.gather of a constant index vector.
mlir::FailureOr<mlir::Value> gatherAt(GraphImporter &imp, mlir::Value v, int64_t axis,
                                      const std::vector<int64_t> &positions);

/// The flat position in a row-major tensor of strides `strides` of each
/// element of int64 `idx` read as the coordinate along `axis` (negative
/// from the end of `extent`), the other coordinates being the element's
/// own: wrap(idx) * strides[axis] + the offsets of the others; past any
/// tensor where the index is out of range, as flatIndex.
mlir::FailureOr<mlir::Value> elementPositions(GraphImporter &imp, mlir::Value idx, int64_t axis,
                                              int64_t extent, const std::vector<int64_t> &strides);

/// `x` with `before` and `after` zero slices along `axis` (a Concat with
/// zero constants; itself when both are 0).
mlir::FailureOr<mlir::Value> zeroPadded(GraphImporter &imp, mlir::Value x, int64_t axis,
                                        int64_t before, int64_t after);

/// Input `i` when it is a float tensor; else fails, naming it.
mlir::FailureOr<mlir::Value> floatInput(GraphImporter &imp, size_t i);

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);

/// Fails unless a folded result of `count` elements fits the host limit;
/// checked before the fold allocates or loops.
mlir::LogicalResult checkFoldSize(GraphImporter &imp, int64_t count);

/// Input `i` reshaped (on the host when constant) to `shape`, as output 0.
mlir::LogicalResult defineReshaped(GraphImporter &imp, size_t i, std::vector<int64_t> shape);

/// A node of type `opType` under `n`'s name (so that errors name `n`), with
/// no inputs, outputs or attributes yet: what an importer builds to import
/// another op in `n`'s place.
onnx::NodeProto madeNode(const onnx::NodeProto &n, const char *opType);

/// Defines the value (or sequence) `name` as `source`'s, on a node made
/// for it (a Loop body's input, a sequence's own copy of a part).
mlir::LogicalResult bindAs(GraphImporter &imp, const std::string &name, const std::string &source);

/// Sets `shape` to input `i`'s, constant or not.
mlir::LogicalResult shapeOfInput(GraphImporter &imp, size_t i, std::vector<int64_t> &shape);

/// Fails unless the node has `minInputs` inputs, all compile-time constants.
mlir::LogicalResult needConstants(GraphImporter &imp, size_t minInputs);

/// An int list that a later opset moved from attribute `attr` to input `i`:
/// the input's compile-time value when `fromInput` (empty when the node
/// omits it), else the attribute (empty when absent). Fails, naming `what`,
/// when the input is known only at run time.
mlir::FailureOr<std::vector<int64_t>> intsFromInputOrAttr(GraphImporter &imp, bool fromInput,
                                                          size_t i, llvm::StringRef attr,
                                                          llvm::StringRef what);

enum class FoldResult { NotConstant, Folded, Failed };

/// Folds a binary op on two host constants with numpy broadcasting. The
/// result has the lhs's type, or `resultType` (a comparison's BOOL).
FoldResult foldBinary(GraphImporter &imp, llvm::function_ref<double(double, double)> f,
                      int resultType = -1);

} // namespace otc

#endif
