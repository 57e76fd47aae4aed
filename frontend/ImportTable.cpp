// The versioned import table: every ONNX operator otc imports, one row per
// (operator, first opset of that form). A model's node takes the latest
// row at or below the model's opset; an importer serving two forms tells
// them apart by imp.form(). Rows are grouped by importer; the importers
// live in the family files (torch-mlir's split), named in Importers.h.
#include "Importers.h"

#include "otc/Frontend/Import.h"

#include <functional>

using namespace mlir;

namespace otc {
namespace {

using P = ComparePredicate;

const OpImporter kImporters[] = {
    // One otc op of input 0.
    {"Abs", 6, importUnary<AbsOp>},
    {"Atan", 7, importUnary<AtanOp>},
    {"Ceil", 6, importUnary<CeilOp>},
    {"Cos", 7, importUnary<CosOp>},
    {"Erf", 9, importUnary<ErfOp>},
    {"Exp", 6, importUnary<ExpOp>},
    {"Floor", 6, importUnary<FloorOp>},
    {"Neg", 6, importUnary<NegOp>},
    {"Reciprocal", 6, importUnary<ReciprocalOp>},
    {"Relu", 6, importUnary<ReluOp>},
    {"Round", 11, importUnary<RoundOp>},
    {"Sigmoid", 6, importUnary<SigmoidOp>},
    {"Sign", 9, importUnary<SignOp>},
    {"Sin", 7, importUnary<SinOp>},
    {"Softplus", 1, importUnary<SoftplusOp>},
    {"Sqrt", 6, importUnary<SqrtOp>},
    {"Tan", 7, importUnary<TanOp>},
    {"Tanh", 6, importUnary<TanhOp>},
    // Arithmetic and logic, folded on the host when both inputs are constant.
    {"Add", 7, importBinary<AddOp, std::plus<double>>},
    {"Div", 7, importBinary<DivOp, std::divides<double>>},
    {"Mul", 7, importBinary<MulOp, std::multiplies<double>>},
    {"Sub", 7, importBinary<SubOp, std::minus<double>>},
    {"And", 7, importLogic<AndOp, std::logical_and<double>>},
    {"Or", 7, importLogic<OrOp, std::logical_or<double>>},
    {"Xor", 7, importXor},
    // Comparisons, folded likewise.
    {"Equal", 7, importCompare<P::eq>},
    {"Greater", 7, importCompare<P::gt>},
    {"GreaterOrEqual", 12, importCompare<P::ge>},
    {"Less", 7, importCompare<P::lt>},
    {"LessOrEqual", 12, importCompare<P::le>},
    // Activations composed from primitives.
    {"Acos", 7, importActivation<acos>},
    {"Acosh", 9, importActivation<acosh>},
    {"Asin", 7, importActivation<asin>},
    {"Asinh", 9, importActivation<asinh>},
    {"Atanh", 9, importActivation<atanh>},
    {"Cosh", 9, importActivation<cosh>},
    {"Sinh", 9, importActivation<sinh>},
    {"Celu", 12, importActivation<celu>},
    {"Elu", 6, importActivation<elu>},
    {"Gelu", 20, importActivation<gelu>},
    {"HardSigmoid", 6, importActivation<hardSigmoidOf>},
    {"HardSwish", 14, importActivation<hardSwish>},
    {"LeakyRelu", 6, importActivation<leakyRelu>},
    {"Selu", 6, importActivation<selu>},
    {"Softsign", 1, importActivation<softsign>},
    {"ThresholdedRelu", 10, importActivation<thresholdedRelu>},
    {"Shrink", 9, importActivation<shrink>},
    // Reductions (axes an input from the second form) and softmax (along
    // one axis from 13, over a flattened 2-D view before).
    {"ReduceMax", 1, importReduce<ReduceMaxOp>},
    {"ReduceMax", 18, importReduce<ReduceMaxOp>},
    {"ReduceMean", 1, importReduce<ReduceMeanOp>},
    {"ReduceMean", 18, importReduce<ReduceMeanOp>},
    {"ReduceProd", 1, importReduceProd},
    {"ReduceProd", 18, importReduceProd}, // axes an input
    {"ReduceSum", 1, importReduceSum},
    {"ReduceSum", 13, importReduceSum},
    {"LogSoftmax", 1, importSoftmax<LogSoftmaxOp>},
    {"LogSoftmax", 13, importSoftmax<LogSoftmaxOp>},
    {"Softmax", 1, importSoftmax<SoftmaxOp>},
    {"Softmax", 13, importSoftmax<SoftmaxOp>},
    // Reductions composed from sum and max.
    {"ReduceL1", 1, importComposedReduce<reduceL1>},
    {"ReduceL1", 18, importComposedReduce<reduceL1>},
    {"ReduceL2", 1, importComposedReduce<reduceL2>},
    {"ReduceL2", 18, importComposedReduce<reduceL2>},
    {"ReduceLogSum", 1, importComposedReduce<reduceLogSum>},
    {"ReduceLogSum", 18, importComposedReduce<reduceLogSum>},
    {"ReduceLogSumExp", 1, importComposedReduce<reduceLogSumExp>},
    {"ReduceLogSumExp", 18, importComposedReduce<reduceLogSumExp>},
    {"ReduceMin", 1, importComposedReduce<reduceMin>},
    {"ReduceMin", 18, importComposedReduce<reduceMin>},
    {"ReduceSumSquare", 1, importComposedReduce<reduceSumSquare>},
    {"ReduceSumSquare", 18, importComposedReduce<reduceSumSquare>},
    // Importers of their own.
    {"ArgMax", 1, importArgMax},
    {"ArgMin", 1, importArgMin},
    {"AveragePool", 7, importAveragePool},
    {"BatchNormalization", 7, importBatchNormalization},
    {"BitwiseAnd", 18, importBitwiseAnd},
    {"BitwiseNot", 18, importBitwiseNot},
    {"BitwiseOr", 18, importBitwiseOr},
    {"BitwiseXor", 18, importBitwiseXor},
    {"Cast", 6, importCast},
    {"CastLike", 15, importCastLike},
    {"Clip", 6, importClip},
    {"Clip", 11, importClip},
    {"Concat", 4, importConcat},
    {"ConcatFromSequence", 11, importConcatFromSequence},
    {"Constant", 1, importConstant},
    {"ConstantOfShape", 9, importConstantOfShape},
    {"Conv", 1, importConv},
    {"ConvTranspose", 1, importConvTranspose},
    {"CumSum", 11, importCumSum},
    {"DepthToSpace", 1, importBlocksMove<true>},
    {"DFT", 17, importDft},
    {"DFT", 20, importDft}, // axis an input
    {"Dropout", 12, importDropout},
    {"Einsum", 12, importEinsum},
    {"Expand", 8, importExpand},
    {"EyeLike", 9, importEyeLike},
    {"Flatten", 1, importFlatten},
    {"Gather", 1, importGather},
    {"GatherElements", 11, importGatherElements},
    {"GatherND", 11, importGatherND},
    {"Gemm", 7, importGemm},
    {"GlobalAveragePool", 1, importGlobalAveragePool},
    {"GlobalMaxPool", 1, importGlobalMaxPool},
    {"GridSample", 16, importGridSample},
    {"GRU", 7, importGru},
    {"Identity", 1, importIdentity},
    {"InstanceNormalization", 6, importInstanceNormalization},
    {"IsInf", 10, importIsInf},
    {"IsNaN", 9, importIsNaN},
    {"Hardmax", 1, importHardmax},
    {"Hardmax", 13, importHardmax}, // along one axis, not the flattened tail
    {"LayerNormalization", 17, importLayerNormalization},
    {"LRN", 1, importLrn},
    {"MeanVarianceNormalization", 9, importMeanVarianceNormalization},
    {"Log", 6, importLog},
    {"LSTM", 7, importLstm},
    {"If", 1, importIf, 0b1}, // the branch its condition picks
    {"Loop", 1, importLoop, 0b11}, // unrolled: its trip count and condition
    {"Max", 8, importMax},
    {"MatMul", 1, importMatMul},
    {"MaxPool", 1, importMaxPool},
    {"Mean", 8, importMean},
    {"Min", 8, importMin},
    {"Mod", 10, importMod},
    {"NegativeLogLikelihoodLoss", 12, importNegativeLogLikelihoodLoss},
    {"NonZero", 9, importNonZero},
    {"Not", 1, importNot},
    {"OneHot", 9, importOneHot, 0b10}, // depth
    {"Pad", 2, importPad},
    {"Pad", 11, importPad},
    {"Pad", 18, importPad}, // axes
    {"Pow", 7, importPow},
    {"PRelu", 7, importPRelu},
    {"Range", 11, importRange},
    {"Reshape", 5, importReshape},
    {"RNN", 7, importRnn},
    {"Resize", 10, importResize, 0b10},
    {"Resize", 11, importResize, 0b1110}, // roi, scales, sizes; coordinate transforms
    {"Resize", 18, importResize, 0b1110}, // axes
    {"Upsample", 7, importResize},
    {"Upsample", 9, importResize, 0b10}, // scales an input
    {"Scatter", 9, importScatterElements}, // ScatterElements before its rename
    {"ScatterElements", 11, importScatterElements},
    {"ScatterND", 11, importScatterND},
    {"SequenceAt", 11, importSequenceAt, 0b10}, // position
    {"SequenceConstruct", 11, importSequenceConstruct},
    {"SequenceEmpty", 11, importSequenceEmpty},
    {"SequenceErase", 11, importSequenceErase, 0b10}, // position
    {"SequenceInsert", 11, importSequenceInsert, 0b100}, // position
    {"SequenceLength", 11, importSequenceLength},
    {"Shape", 1, importShape},
    {"Size", 1, importSize},
    {"SpaceToDepth", 1, importBlocksMove<false>},
    {"Slice", 1, importSlice},
    {"Slice", 10, importSlice},
    {"SoftmaxCrossEntropyLoss", 12, importSoftmaxCrossEntropyLoss},
    {"Split", 2, importSplit},
    {"Split", 13, importSplit},
    {"SplitToSequence", 11, importSplitToSequence, 0b10}, // split sizes
    {"Squeeze", 1, importSqueeze},
    {"Squeeze", 13, importSqueeze},
    {"Sum", 8, importSum},
    {"Tile", 6, importTile},
    {"TopK", 1, importTopK},
    {"TopK", 10, importTopK},
    {"Transpose", 1, importTranspose},
    {"Trilu", 14, importTrilu},
    {"Unsqueeze", 1, importUnsqueeze},
    {"Unsqueeze", 13, importUnsqueeze},
    {"Where", 9, importWhere},
};

} // namespace

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> ops;
  for (const OpImporter &e : kImporters)
    ops.push_back(e.opType);
  llvm::sort(ops);
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

const OpImporter *findOpImporter(llvm::StringRef opType, int opset) {
  const OpImporter *best = nullptr;
  for (const OpImporter &e : kImporters)
    if (opType == e.opType && e.sinceVersion <= opset &&
        (!best || e.sinceVersion >= best->sinceVersion))
      best = &e;
  return best;
}

} // namespace otc
