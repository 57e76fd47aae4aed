// Helpers shared by the op importers of every family, and the import
// functions of the families that live in files of their own.
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

/// `v` reshaped to `shape` (itself when it already has it).
mlir::Value reshaped(GraphImporter &imp, mlir::Value v, llvm::ArrayRef<int64_t> shape);

// WindowImporters.cpp
mlir::LogicalResult importConv(GraphImporter &imp);
mlir::LogicalResult importMaxPool(GraphImporter &imp);
mlir::LogicalResult importAveragePool(GraphImporter &imp);
mlir::LogicalResult importGlobalMaxPool(GraphImporter &imp);
// RecurrentImporters.cpp
mlir::LogicalResult importLstm(GraphImporter &imp);
mlir::LogicalResult importGru(GraphImporter &imp);
// LossImporters.cpp
mlir::LogicalResult importSoftmaxCrossEntropyLoss(GraphImporter &imp);
mlir::LogicalResult importNegativeLogLikelihoodLoss(GraphImporter &imp);
mlir::LogicalResult importLog(GraphImporter &imp);
// BatchNormImporter.cpp
mlir::LogicalResult importBatchNormalization(GraphImporter &imp);

} // namespace otc

#endif
