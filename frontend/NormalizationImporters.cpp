// Reductions, softmax, layer normalization and global average pooling.
#include "ImportHelpers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace otc {
namespace {

using Imp = GraphImporter;

/// Reductions: `axesFromInput` selects the opset-13/18 form with axes as an
/// optional second input instead of an attribute.
template <typename Op, bool axesFromInput>
LogicalResult importReduce(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto given = intsFromInputOrAttr(imp, axesFromInput, 1, "axes", "the reduction axes");
  if (failed(given))
    return failure();
  std::vector<int64_t> axes = *given;
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  if (axes.empty()) {
    if (imp.intAttr("noop_with_empty_axes", 0)) {
      return imp.defineResult(*x);
    }
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  auto norm = normaliseAxes(imp, axes, rank);
  if (failed(norm))
    return failure();
  return imp.defineResult(
      imp.create<Op>(*x, imp.builder().getDenseI64ArrayAttr(*norm),
                     imp.builder().getBoolAttr(imp.intAttr("keepdims", 1) != 0)));
}

/// Softmax and LogSoftmax. From opset 13 along `axis` (default -1); before,
/// over the input flattened to 2-D at `axis` (default 1), which is a reshape
/// around the same op along the last dim.
template <typename Op, bool before13>
LogicalResult importSoftmax(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  auto axis = normaliseAxes(imp, {imp.intAttr("axis", before13 ? 1 : -1)}, rank);
  if (failed(axis))
    return failure();
  int64_t a = (*axis)[0];
  OpBuilder &b = imp.builder();
  if (!before13 || a == rank - 1) {
    imp.define(0, Op::create(b, imp.loc(), *x, b.getI64IntegerAttr(a)).getResult());
    return success();
  }
  int64_t outer = product(type.getShape().take_front(a));
  auto flat = withShape(*x, {outer, type.getNumElements() / outer});
  Value v = ReshapeOp::create(b, imp.loc(), flat, *x);
  Value y = Op::create(b, imp.loc(), v, b.getI64IntegerAttr(1));
  imp.define(0, ReshapeOp::create(b, imp.loc(), type, y).getResult());
  return success();
}

/// LayerNormalization (opset 17): normalize over the dims from `axis` on,
/// then scale and bias as elementwise ops, whose gradients come from the
/// primitives.
LogicalResult importLayerNormalization(Imp &imp) {
  for (int i = 1; i < imp.node().output_size(); ++i)
    if (!imp.node().output(i).empty())
      return imp.fail("the Mean and InvStdDev outputs are not supported");
  if (imp.intAttr("stash_type", 1) != 1)
    return imp.fail("stash_type " + std::to_string(imp.intAttr("stash_type", 1)) +
                    " is not supported (statistics are computed in float32)");
  auto x = imp.input(0);
  auto scale = imp.input(1);
  if (failed(x) || failed(scale))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  auto axis = normaliseAxes(imp, {imp.intAttr("axis", -1)}, rank);
  if (failed(axis))
    return failure();
  double eps = imp.floatAttr("epsilon", 1e-5);
  if (!(eps >= 0) || !std::isfinite(eps))
    return imp.fail("epsilon must be a finite number, at least 0");
  OpBuilder &b = imp.builder();
  Value n = NormalizeOp::create(b, imp.loc(), *x, b.getI64IntegerAttr((*axis)[0]),
                                b.getF64FloatAttr(eps));
  auto y = imp.create<MulOp>(n, *scale);
  if (failed(y) || imp.numInputs() < 3)
    return imp.defineResult(y);
  auto bias = imp.input(2);
  if (failed(bias))
    return failure();
  return imp.defineResult(imp.create<AddOp>(*y, *bias));
}

/// GlobalAveragePool: the mean over every dim after N and C, kept.
LogicalResult importGlobalAveragePool(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  if (rank < 3)
    return imp.fail("the input needs spatial dims after N and C");
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  OpBuilder &b = imp.builder();
  return imp.defineResult(
      imp.create<ReduceMeanOp>(*x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true)));
}

} // namespace

llvm::ArrayRef<OpImporter> normalizationImporters() {
  static const OpImporter table[] = {
      {"GlobalAveragePool", 1, importGlobalAveragePool},
      {"LayerNormalization", 17, importLayerNormalization},
      {"LogSoftmax", 1, importSoftmax<LogSoftmaxOp, true>},
      {"LogSoftmax", 13, importSoftmax<LogSoftmaxOp, false>},
      {"ReduceMean", 1, importReduce<ReduceMeanOp, false>},
      {"ReduceMean", 18, importReduce<ReduceMeanOp, true>},
      {"ReduceSum", 1, importReduce<ReduceSumOp, false>},
      {"ReduceSum", 13, importReduce<ReduceSumOp, true>},
      {"Softmax", 1, importSoftmax<SoftmaxOp, true>},
      {"Softmax", 13, importSoftmax<SoftmaxOp, false>},
  };
  return table;
}

} // namespace otc
