// Every importer that the one import table (ImportTable.cpp) names, by the
// family file that defines it. An importer generic over an otc op is a thin
// template here over a function of its family, so the table can name
// `importUnary<SinOp>` while the body is compiled once, in its family.
#ifndef OTC_FRONTEND_IMPORTERS_H
#define OTC_FRONTEND_IMPORTERS_H

#include "ImportHelpers.h"

#include "otc/Dialect/OtcDialect.h"

namespace otc {

/// The op-generic importers' callbacks: build the otc op from its operands.
using BuildUnary = mlir::Value (*)(GraphImporter &, mlir::Value);
using BuildBinary =
    llvm::function_ref<mlir::FailureOr<mlir::Value>(GraphImporter &, mlir::Value, mlir::Value)>;
using BuildReduce = mlir::FailureOr<mlir::Value> (*)(GraphImporter &, mlir::Value,
                                                     llvm::ArrayRef<int64_t> axes, bool keepDims);
using BuildSoftmax = mlir::Value (*)(GraphImporter &, mlir::Value, int64_t axis);
using BuildActivation = mlir::FailureOr<mlir::Value> (*)(GraphImporter &, mlir::Value);
/// A binary op's meaning on host constants (std::plus<double>, ...).
using HostFold = llvm::function_ref<double(double, double)>;

// The importers of one operator or a few, each in its family's file
// (ArithmeticImporters.cpp, ShapeImporters.cpp, ...).
/// DepthToSpace (true) and SpaceToDepth (false).
template <bool ToSpace>
mlir::LogicalResult importBlocksMove(GraphImporter &imp);
mlir::LogicalResult importArgMax(GraphImporter &imp);
mlir::LogicalResult importArgMin(GraphImporter &imp);
mlir::LogicalResult importAveragePool(GraphImporter &imp);
mlir::LogicalResult importBatchNormalization(GraphImporter &imp);
mlir::LogicalResult importCast(GraphImporter &imp);
mlir::LogicalResult importCastLike(GraphImporter &imp);
mlir::LogicalResult importClip(GraphImporter &imp);
mlir::LogicalResult importConcat(GraphImporter &imp);
mlir::LogicalResult importConstant(GraphImporter &imp);
mlir::LogicalResult importConstantOfShape(GraphImporter &imp);
mlir::LogicalResult importEyeLike(GraphImporter &imp);
mlir::LogicalResult importTopK(GraphImporter &imp);
mlir::LogicalResult importConv(GraphImporter &imp);
mlir::LogicalResult importConvTranspose(GraphImporter &imp);
mlir::LogicalResult importCumSum(GraphImporter &imp);
mlir::LogicalResult importBitwiseAnd(GraphImporter &imp);
mlir::LogicalResult importBitwiseNot(GraphImporter &imp);
mlir::LogicalResult importBitwiseOr(GraphImporter &imp);
mlir::LogicalResult importBitwiseXor(GraphImporter &imp);
mlir::LogicalResult importDft(GraphImporter &imp);
mlir::LogicalResult importDropout(GraphImporter &imp);
mlir::LogicalResult importEinsum(GraphImporter &imp);
mlir::LogicalResult importExpand(GraphImporter &imp);
mlir::LogicalResult importFlatten(GraphImporter &imp);
mlir::LogicalResult importGather(GraphImporter &imp);
mlir::LogicalResult importGatherElements(GraphImporter &imp);
mlir::LogicalResult importGatherND(GraphImporter &imp);
mlir::LogicalResult importGemm(GraphImporter &imp);
mlir::LogicalResult importGlobalAveragePool(GraphImporter &imp);
mlir::LogicalResult importGlobalMaxPool(GraphImporter &imp);
mlir::LogicalResult importGru(GraphImporter &imp);
mlir::LogicalResult importRnn(GraphImporter &imp);
mlir::LogicalResult importReduceProd(GraphImporter &imp);
mlir::LogicalResult importReduceSum(GraphImporter &imp);
mlir::LogicalResult importIdentity(GraphImporter &imp);
mlir::LogicalResult importInstanceNormalization(GraphImporter &imp);
mlir::LogicalResult importIsInf(GraphImporter &imp);
mlir::LogicalResult importIsNaN(GraphImporter &imp);
mlir::LogicalResult importHardmax(GraphImporter &imp);
mlir::LogicalResult importLayerNormalization(GraphImporter &imp);
mlir::LogicalResult importLrn(GraphImporter &imp);
mlir::LogicalResult importMeanVarianceNormalization(GraphImporter &imp);
mlir::LogicalResult importXor(GraphImporter &imp);
mlir::LogicalResult importLog(GraphImporter &imp);
mlir::LogicalResult importLstm(GraphImporter &imp);
mlir::LogicalResult importMax(GraphImporter &imp);
mlir::LogicalResult importMatMul(GraphImporter &imp);
mlir::LogicalResult importMaxPool(GraphImporter &imp);
mlir::LogicalResult importMean(GraphImporter &imp);
mlir::LogicalResult importMin(GraphImporter &imp);
mlir::LogicalResult importMod(GraphImporter &imp);
mlir::LogicalResult importNegativeLogLikelihoodLoss(GraphImporter &imp);
mlir::LogicalResult importNot(GraphImporter &imp);
mlir::LogicalResult importOneHot(GraphImporter &imp);
mlir::LogicalResult importPad(GraphImporter &imp);
mlir::LogicalResult importPow(GraphImporter &imp);
mlir::LogicalResult importPRelu(GraphImporter &imp);
mlir::LogicalResult importNonZero(GraphImporter &imp);
/// NonZero of a run-time mask: the start of its masked rows (MaskedRows.cpp).
mlir::LogicalResult importMaskedSelection(GraphImporter &imp);
mlir::LogicalResult importRange(GraphImporter &imp);
mlir::LogicalResult importReshape(GraphImporter &imp);
mlir::LogicalResult importGridSample(GraphImporter &imp);
mlir::LogicalResult importResize(GraphImporter &imp);
mlir::LogicalResult importScatterElements(GraphImporter &imp);
mlir::LogicalResult importScatterND(GraphImporter &imp);
mlir::LogicalResult importShape(GraphImporter &imp);
mlir::LogicalResult importSize(GraphImporter &imp);
mlir::LogicalResult importSlice(GraphImporter &imp);
mlir::LogicalResult importSoftmaxCrossEntropyLoss(GraphImporter &imp);
mlir::LogicalResult importSplit(GraphImporter &imp);
mlir::LogicalResult importSplitToSequence(GraphImporter &imp);
mlir::LogicalResult importSequenceAt(GraphImporter &imp);
mlir::LogicalResult importSequenceLength(GraphImporter &imp);
mlir::LogicalResult importConcatFromSequence(GraphImporter &imp);
mlir::LogicalResult importSequenceEmpty(GraphImporter &imp);
mlir::LogicalResult importSequenceConstruct(GraphImporter &imp);
mlir::LogicalResult importSequenceInsert(GraphImporter &imp);
mlir::LogicalResult importSequenceErase(GraphImporter &imp);
mlir::LogicalResult importLoop(GraphImporter &imp);
mlir::LogicalResult importIf(GraphImporter &imp);
/// Defines the value `out` as `parts` (tensors of one shape) stacked on a
/// new axis `axis` (ConcatFromSequence's new_axis, a Loop's scan outputs).
mlir::LogicalResult stackParts(GraphImporter &imp, const std::vector<std::string> &parts,
                               int64_t axis, const std::string &out);
mlir::LogicalResult importSqueeze(GraphImporter &imp);
mlir::LogicalResult importSum(GraphImporter &imp);
mlir::LogicalResult importTile(GraphImporter &imp);
mlir::LogicalResult importTranspose(GraphImporter &imp);
mlir::LogicalResult importTrilu(GraphImporter &imp);
mlir::LogicalResult importUnsqueeze(GraphImporter &imp);
mlir::LogicalResult importWhere(GraphImporter &imp);

// The bodies of the op-generic importers below.
/// Input 0 through `build`; with `host`, folded on a constant input.
mlir::LogicalResult importUnaryWith(GraphImporter &imp, BuildUnary build,
                                    double (*host)(double) = nullptr);
/// Inputs 0 and 1 through `build`; with `fold`, folded on the host when both
/// are constant, to element type `resultType` (-1: the lhs's).
mlir::LogicalResult importBinaryWith(GraphImporter &imp, BuildBinary build,
                                     std::optional<HostFold> fold, int resultType = -1);
mlir::LogicalResult importCompareWith(GraphImporter &imp, ComparePredicate predicate);
/// Input 0 through `build`, which may fail naming the attribute at fault.
mlir::LogicalResult importActivationWith(GraphImporter &imp, BuildActivation build);
mlir::LogicalResult importReduceWith(GraphImporter &imp, BuildReduce build);
mlir::LogicalResult importSoftmaxWith(GraphImporter &imp, BuildSoftmax build);

// Reductions composed from sum and max (NormalizationImporters.cpp).
mlir::FailureOr<mlir::Value> reduceL1(GraphImporter &imp, mlir::Value x, llvm::ArrayRef<int64_t> axes,
                                      bool keepDims);
mlir::FailureOr<mlir::Value> reduceL2(GraphImporter &imp, mlir::Value x, llvm::ArrayRef<int64_t> axes,
                                      bool keepDims);
mlir::FailureOr<mlir::Value> reduceLogSum(GraphImporter &imp, mlir::Value x,
                                          llvm::ArrayRef<int64_t> axes, bool keepDims);
mlir::FailureOr<mlir::Value> reduceLogSumExp(GraphImporter &imp, mlir::Value x,
                                             llvm::ArrayRef<int64_t> axes, bool keepDims);
mlir::FailureOr<mlir::Value> reduceMin(GraphImporter &imp, mlir::Value x,
                                       llvm::ArrayRef<int64_t> axes, bool keepDims);
mlir::FailureOr<mlir::Value> reduceSumSquare(GraphImporter &imp, mlir::Value x,
                                             llvm::ArrayRef<int64_t> axes, bool keepDims);
mlir::FailureOr<mlir::Value> reduceSum(GraphImporter &imp, mlir::Value x,
                                       llvm::ArrayRef<int64_t> axes, bool keepDims);

// Activations composed from primitives (ActivationImporters.cpp).
mlir::FailureOr<mlir::Value> acos(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> acosh(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> asin(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> asinh(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> atanh(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> celu(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> cosh(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> elu(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> gelu(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> hardSigmoidOf(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> hardSwish(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> leakyRelu(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> selu(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> sinh(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> softsign(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> shrink(GraphImporter &imp, mlir::Value x);
mlir::FailureOr<mlir::Value> thresholdedRelu(GraphImporter &imp, mlir::Value x);

/// A unary otc op's float64 meaning, from its Nodes.def row (which the
/// unit tests' interpreter reads too): it folds the op on host constants
/// (shape and position subgraphs). Null for an op without a row.
template <typename Op>
inline constexpr double (*kHostMeaning)(double) = nullptr;
#define OTC_UNARY_NODE(Kind, name, Op, expr, f)                                                    \
  template <>                                                                                      \
  inline constexpr double (*kHostMeaning<Op>)(double) = f;
#include "../codegen/Nodes.def"

// The thin templates.
template <typename Op>
mlir::LogicalResult importUnary(GraphImporter &imp) {
  return importUnaryWith(
      imp,
      [](GraphImporter &i, mlir::Value x) -> mlir::Value {
        return Op::create(i.builder(), i.loc(), x);
      },
      kHostMeaning<Op>);
}

template <typename Op>
mlir::FailureOr<mlir::Value> buildBinary(GraphImporter &imp, mlir::Value a, mlir::Value b) {
  return imp.create<Op>(a, b);
}

/// Arithmetic (`F` a std functional), folded on constants.
template <typename Op, typename F>
mlir::LogicalResult importBinary(GraphImporter &imp) {
  return importBinaryWith(imp, buildBinary<Op>, HostFold(F()));
}

/// And and Or: bool results, folded on constants.
template <typename Op, typename F>
mlir::LogicalResult importLogic(GraphImporter &imp) {
  return importBinaryWith(imp, buildBinary<Op>, HostFold(F()), onnx::TensorProto::BOOL);
}

template <ComparePredicate P>
mlir::LogicalResult importCompare(GraphImporter &imp) {
  return importCompareWith(imp, P);
}

template <BuildActivation F>
mlir::LogicalResult importActivation(GraphImporter &imp) {
  return importActivationWith(imp, F);
}

template <typename Op>
mlir::LogicalResult importReduce(GraphImporter &imp) {
  return importReduceWith(imp, [](GraphImporter &i, mlir::Value x, llvm::ArrayRef<int64_t> axes,
                                  bool keepDims) {
    mlir::OpBuilder &b = i.builder();
    return i.create<Op>(x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepDims));
  });
}

template <BuildReduce F>
mlir::LogicalResult importComposedReduce(GraphImporter &imp) {
  return importReduceWith(imp, F);
}

template <typename Op>
mlir::LogicalResult importSoftmax(GraphImporter &imp) {
  return importSoftmaxWith(imp, [](GraphImporter &i, mlir::Value x, int64_t axis) -> mlir::Value {
    return Op::create(i.builder(), i.loc(), x, i.builder().getI64IntegerAttr(axis));
  });
}

} // namespace otc

#endif
