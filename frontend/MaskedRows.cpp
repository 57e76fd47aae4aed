// x[mask] for a run-time boolean mask: the exporter's NonZero, Transpose
// and GatherND, whose row count the data decides. otc's shapes are static,
// so the selection stays dense: a row for every position of the mask's
// shape, with the mask beside it. Ops that keep each row to itself
// (elementwise ops, MatMul, softmax and reductions along the other dims)
// run on every row; where the rows meet (a reduction over them, a loss)
// the unselected ones are made neutral first, so the result is exactly
// the selection's. Anything else that reads the rows is refused by name.
//
// The unselected rows hold a copy of the first selected row, not their
// own data: the mask usually marks where the data is unfit (a depth of 0
// under a log), and a copy of a selected row computes nothing a selected
// row does not, so their gradients, 0 from the meeting point, stay 0
// through every op (never 0 * inf). With no row selected they hold 0.5.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace otc {

using Imp = GraphImporter;
using Masked = GraphImporter::MaskedRows;
using Form = Masked::Form;

namespace {

/// ONNX ops whose every output element reads only the elements at its own
/// position of each input (inputs broadcast): they keep rows apart.
const llvm::StringSet<> &elementwiseOps() {
  static const llvm::StringSet<> ops = {
      "Abs",       "Acos",     "Acosh",       "Add",         "And",       "Asin",
      "Asinh",     "Atan",     "Atanh",       "Cast",        "CastLike",  "Ceil",
      "Celu",      "Clip",     "Cos",         "Cosh",        "Div",       "Dropout",
      "Elu",       "Equal",    "Erf",         "Exp",         "Floor",     "Gelu",
      "Greater",   "GreaterOrEqual",          "HardSigmoid", "HardSwish", "Identity",
      "IsInf",     "IsNaN",    "LeakyRelu",   "Less",        "LessOrEqual",
      "Log",       "Max",      "Mean",        "Min",         "Mish",      "Mod",
      "Mul",       "Neg",      "Not",         "Or",          "Pow",       "PRelu",
      "Reciprocal", "Relu",    "Round",       "Selu",        "Shrink",    "Sigmoid",
      "Sign",      "Sin",      "Sinh",        "Softplus",    "Softsign",  "Sqrt",
      "Sub",       "Sum",      "Tan",         "Tanh",        "ThresholdedRelu",
      "Where",     "Xor"};
  return ops;
}

/// Reductions, with the value an unselected row holds where they reduce
/// over the rows.
std::optional<double> neutralOf(llvm::StringRef op) {
  double inf = std::numeric_limits<double>::infinity();
  if (op == "ReduceMax" || op == "ReduceLogSumExp")
    return -inf;
  if (op == "ReduceMin")
    return inf;
  if (llvm::is_contained({"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2",
                          "ReduceLogSum"},
                         op))
    return 0.0;
  return std::nullopt;
}

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

int64_t rowsOf(const Masked &m) { return product(m.maskShape); }

/// The mask's selection shaped to broadcast against a [N, ...] value.
Value selectionFor(Imp &imp, const Masked &m, Value like) {
  SmallVector<int64_t> shape(rankOf(like), 1);
  shape[0] = rowsOf(m);
  return reshaped(imp, m.selected, shape);
}

LogicalResult refuse(Imp &imp, const Masked &m, llvm::StringRef what) {
  return imp.fail("it reads the rows that the run-time boolean mask " + quoted(m.mask) +
                  " selects (x[mask]: NonZero, Transpose, GatherND), which otc keeps dense, a "
                  "row for every position of the mask, with the mask beside it; " + what);
}

LogicalResult refuseOp(Imp &imp, const Masked &m) {
  return refuse(imp, m,
                "there it supports elementwise ops, MatMul and Gemm, Softmax, LogSoftmax and "
                "LayerNormalization along the other dims, the reductions and the losses, "
                "not " + imp.node().op_type());
}

/// Tags every output of the node as rows of `m`, checking each keeps the
/// rows along dim 0.
LogicalResult tagOutputs(Imp &imp, const Masked &m, int from = 0) {
  Masked rows = m;
  rows.form = Form::Rows;
  for (int k = from; k < imp.node().output_size(); ++k) {
    if (imp.node().output(k).empty() || !imp.hasValue(imp.node().output(k)))
      continue;
    Value v = imp.outputValue(k);
    auto type = v ? dyn_cast<RankedTensorType>(v.getType()) : nullptr;
    if (!type || type.getRank() < 1 || type.getDimSize(0) != rowsOf(m))
      return refuse(imp, m, "output " + std::to_string(k) + " does not keep the rows along its "
                            "first dim");
    imp.defineMasked(k, rows);
  }
  return success();
}

/// x[mask] itself: GatherND(data, Transpose(NonZero(mask))), data's leading
/// dims the mask's: data as [N, rest], the unselected rows the first
/// selected one's copy.
LogicalResult gatherRows(Imp &imp, const Masked &m) {
  if (imp.maskedInput(0) || imp.intAttr("batch_dims", 0) != 0)
    return refuseOp(imp, m);
  auto data = imp.input(0);
  if (failed(data))
    return failure();
  auto shape = cast<RankedTensorType>(data->getType()).getShape();
  size_t r = m.maskShape.size();
  if (shape.size() < r || !llvm::equal(shape.take_front(r), m.maskShape))
    return refuse(imp, m, "the data's leading dims are not the mask's");
  int64_t n = rowsOf(m);
  SmallVector<int64_t> rowShape = {n};
  rowShape.append(shape.begin() + r, shape.end());
  Value rows = reshaped(imp, *data, rowShape);
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Type f32 = b.getF32Type();
  // The first selected row: N - max over selected i of (N - i); none when 0.
  HostTensor down{true, onnx::TensorProto::FLOAT, {n}, {}};
  for (int64_t i = 0; i < n; ++i)
    down.values.push_back(double(n - i));
  Value score = WhereOp::create(b, loc, m.selected, ConstantOp::create(b, loc, toAttr(b, down)),
                                scalarConstant(b, loc, f32, 0.0));
  auto best = imp.create<ReduceMaxOp>(score, b.getDenseI64ArrayAttr({0}), b.getBoolAttr(true));
  if (failed(best))
    return failure();
  Value any = CompareOp::create(b, loc, *best, scalarConstant(b, loc, f32, 0.0),
                                ComparePredicate::gt);
  Value first = SubOp::create(b, loc, scalarConstant(b, loc, f32, double(n)), *best);
  first = WhereOp::create(b, loc, any, first, scalarConstant(b, loc, f32, 0.0));
  auto index = RankedTensorType::get({1}, b.getI64Type());
  Value at = CastOp::create(b, loc, index, first);
  auto copy = imp.create<GatherOp>(rows, at, b.getI64IntegerAttr(0));
  if (failed(copy))
    return failure();
  Type elem = getElementTypeOrSelf(rows.getType());
  Value fill = *copy;
  if (isa<FloatType>(elem))
    fill = WhereOp::create(b, loc, reshaped(imp, any, SmallVector<int64_t>(rankOf(rows), 1)), fill,
                           scalarConstant(b, loc, elem, 0.5));
  auto dense = imp.create<WhereOp>(selectionFor(imp, m, rows), rows, fill);
  if (failed(dense))
    return failure();
  imp.define(0, *dense);
  return tagOutputs(imp, m);
}

/// Whether input `i`, not masked, broadcasts against rows of rank `rank`
/// without reaching their dim 0.
bool keepsRowsApart(Imp &imp, size_t i, int64_t rank) {
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, i, shape)))
    return false;
  return int64_t(shape.size()) < rank || (int64_t(shape.size()) == rank && shape[0] == 1);
}

/// An elementwise op: every masked input a row tensor of the output's rank
/// (so dim 0 is the rows'), the others broadcasting from lower rank or a
/// dim 0 of 1.
LogicalResult rowWise(Imp &imp, const OpImporter &importer, const Masked &m) {
  int64_t rank = 0;
  for (size_t i = 0; i < imp.numInputs(); ++i) {
    std::vector<int64_t> shape;
    if (imp.node().input(i).empty())
      continue;
    if (failed(shapeOfInput(imp, i, shape)))
      return failure();
    rank = std::max(rank, int64_t(shape.size()));
  }
  for (size_t i = 0; i < imp.numInputs(); ++i) {
    if (imp.node().input(i).empty())
      continue;
    bool ok = imp.maskedInput(i) ? rankOf(*imp.input(i)) == rank : keepsRowsApart(imp, i, rank);
    if (!ok)
      return refuse(imp, m, "input " + std::to_string(i) + " of " + imp.node().op_type() +
                                " broadcasts along the rows' dim");
  }
  if (failed(importer.import(imp)))
    return failure();
  return tagOutputs(imp, m);
}

/// MatMul and Gemm with the rows on the left: each output row reads its
/// own row of A.
LogicalResult matrixRows(Imp &imp, const OpImporter &importer, const Masked &m) {
  bool gemm = imp.node().op_type() == "Gemm";
  if (!imp.maskedInput(0) || (gemm && imp.intAttr("transA", 0)))
    return refuse(imp, m, "only the left operand of a matrix product may be the rows");
  int64_t rank = rankOf(*imp.input(0));
  for (size_t i = 1; i < imp.numInputs(); ++i)
    if (!imp.node().input(i).empty() &&
        (imp.maskedInput(i) || !keepsRowsApart(imp, i, rank == 2 ? 3 : rank)))
      return refuse(imp, m, "input " + std::to_string(i) + " reaches across the rows");
  if (rank < 2)
    return refuse(imp, m, "a vector of rows in a matrix product sums over them");
  if (failed(importer.import(imp)))
    return failure();
  return tagOutputs(imp, m);
}

/// Softmax, LogSoftmax, Hardmax and LayerNormalization along dims after
/// the rows'.
LogicalResult alongOtherDims(Imp &imp, const OpImporter &importer, const Masked &m) {
  llvm::StringRef op = imp.node().op_type();
  if (!imp.maskedInput(0))
    return refuseOp(imp, m);
  int64_t rank = rankOf(*imp.input(0));
  int64_t fallback = op == "LayerNormalization" || imp.opset() >= 13 ? -1 : 1;
  auto axis = axisAttr(imp, fallback, rank);
  if (failed(axis))
    return failure();
  if (*axis == 0)
    return refuse(imp, m, op.str() + " along the rows' dim mixes them");
  for (size_t i = 1; i < imp.numInputs(); ++i)
    if (!imp.node().input(i).empty() && (imp.maskedInput(i) || !keepsRowsApart(imp, i, rank)))
      return refuse(imp, m, "input " + std::to_string(i) + " reaches across the rows");
  if (failed(importer.import(imp)))
    return failure();
  return tagOutputs(imp, m);
}

/// A reduction: along other dims it keeps the rows; over them, the
/// unselected rows are first made its neutral value, and a mean is taken
/// over the selected ones.
LogicalResult reduction(Imp &imp, const OpImporter &importer, const Masked &m, double neutral) {
  if (!imp.maskedInput(0))
    return refuseOp(imp, m);
  Value x = *imp.input(0);
  int64_t rank = rankOf(x);
  auto given = intsFromInputOrAttr(imp, imp.form() >= 13, 1, "axes", "the reduction axes");
  if (failed(given))
    return failure();
  bool overRows = given->empty() ? !imp.intAttr("noop_with_empty_axes", 0) : false;
  auto norm = normaliseAxes(imp, *given, rank);
  if (failed(norm))
    return failure();
  overRows |= llvm::is_contained(*norm, 0);
  if (!overRows) {
    if (failed(importer.import(imp)))
      return failure();
    return tagOutputs(imp, m);
  }
  Type elem = getElementTypeOrSelf(x.getType());
  if (!isa<FloatType>(elem))
    return refuse(imp, m, "an integer reduction over the rows is not supported");
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  auto kept = imp.create<WhereOp>(selectionFor(imp, m, x), x,
                                 scalarConstant(b, loc, elem, neutral));
  if (failed(kept))
    return failure();
  Value original = imp.swapInputValue(0, *kept);
  LogicalResult r = importer.import(imp);
  imp.swapInputValue(0, original);
  if (failed(r) || imp.node().op_type() != "ReduceMean")
    return r;
  // The importer divided by all N rows: the mean is over the selected ones
  // (NaN when none is, as PyTorch's mean of nothing).
  // The ratio in float32: N passes a 16-bit float's range.
  Value mean = imp.outputValue(0);
  if (!mean)
    return imp.fail("the mean over the selected rows was not computed");
  Type f32 = b.getF32Type();
  auto count = imp.create<ReduceSumOp>(
      CastOp::create(b, loc, RankedTensorType::get({rowsOf(m)}, f32), m.selected).getResult(),
      b.getDenseI64ArrayAttr({0}), b.getBoolAttr(false));
  auto ratio = failed(count) ? count
                             : imp.create<DivOp>(scalarConstant(b, loc, f32, double(rowsOf(m))),
                                                 *count);
  if (failed(ratio))
    return failure();
  auto meanType = cast<RankedTensorType>(mean.getType());
  Value wide = elem == f32 ? mean : CastOp::create(b, loc, meanType.clone(f32), mean).getResult();
  auto scaled = imp.create<MulOp>(wide, *ratio);
  if (failed(scaled) || elem == f32)
    return imp.defineResult(scaled);
  return imp.defineResult(CastOp::create(b, loc, meanType, *scaled).getResult());
}

/// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss of rows and their
/// labels (the same mask's): the unselected rows' labels become the
/// ignored index, so a mean is over the selected rows, as the selection's.
LogicalResult loss(Imp &imp, const OpImporter &importer, const Masked &m) {
  if (imp.numInputs() < 2 || !imp.maskedInput(0) || !imp.maskedInput(1))
    return refuse(imp, m, "a loss needs both its scores and its labels selected by the mask");
  if (imp.numInputs() > 2 && imp.maskedInput(2))
    return refuse(imp, m, "the class weights cannot be rows");
  Value labels = *imp.input(1);
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  // Without ignore_index every label is a class, so -1 is free.
  bool given = imp.attr("ignore_index") != nullptr;
  int64_t ignore = given ? imp.intAttr("ignore_index", 0) : -1;
  if (rankOf(labels) < 1)
    return refuse(imp, m, "the labels are not rows");
  auto kept = imp.create<WhereOp>(selectionFor(imp, m, labels), labels,
                                  scalarConstant(b, loc, getElementTypeOrSelf(labels.getType()),
                                                 double(ignore)));
  if (failed(kept))
    return failure();
  onnx::NodeProto node = imp.node();
  if (!given) {
    auto *a = node.add_attribute();
    a->set_name("ignore_index");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(ignore);
  }
  Value original = imp.swapInputValue(1, *kept);
  LogicalResult r = imp.withNode(node, [&] { return importer.import(imp); });
  imp.swapInputValue(1, original);
  if (failed(r))
    return failure();
  bool perRow = imp.attr("reduction") && imp.attr("reduction")->s() == "none";
  return tagOutputs(imp, m, perRow ? 0 : 1);
}

} // namespace

LogicalResult importMaskedSelection(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() == 0)
    return imp.fail("NonZero of a run-time scalar is not supported");
  int64_t n = type.getNumElements();
  if (n == 0)
    return imp.fail("NonZero of an empty run-time tensor is not supported");
  // The first selected row is found in float32, exact up to 2^24 rows.
  if (n > (int64_t(1) << 24))
    return imp.fail("a run-time mask of " + std::to_string(n) +
                    " elements is past otc's 2^24 for NonZero");
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value flat = reshaped(imp, *x, {n});
  Value selected = flat;
  if (!type.getElementType().isInteger(1))
    selected = CompareOp::create(b, loc, flat, scalarConstant(b, loc, type.getElementType(), 0.0),
                                 ComparePredicate::ne);
  imp.defineMasked(0, Masked{Form::Coordinates, imp.node().input(0), type.getShape().vec(),
                             selected});
  return success();
}

LogicalResult importMaskedNode(Imp &imp, const OpImporter &importer) {
  const Masked *m = nullptr;
  for (size_t i = 0; i < imp.numInputs(); ++i)
    if (const Masked *in = imp.maskedInput(i)) {
      if (m && (in->mask != m->mask || in->form != m->form))
        return refuse(imp, *in, "it also reads what the mask " + quoted(m->mask) +
                                    " selects, and the two need not line up");
      m = in;
    }
  Masked mask = *m; // the node's outputs may be entered in the map
  llvm::StringRef op = imp.node().op_type();
  switch (mask.form) {
  case Form::Coordinates:
    // (No perm reverses the dims: [1, 0] too.)
    if (op == "Transpose" && (imp.intsAttr("perm").empty() ||
                              imp.intsAttr("perm") == std::vector<int64_t>{1, 0})) {
      mask.form = Form::CoordinatesTransposed;
      imp.defineMasked(0, mask);
      return success();
    }
    return refuse(imp, mask, "NonZero's coordinates are supported only through Transpose "
                             "and GatherND, not " + op.str());
  case Form::CoordinatesTransposed:
    if (op == "GatherND" && imp.numInputs() == 2 && imp.maskedInput(1))
      return gatherRows(imp, mask);
    return refuse(imp, mask, "NonZero's coordinates are supported only as GatherND's indices");
  case Form::Rows:
    break;
  }
  if (elementwiseOps().contains(op))
    return rowWise(imp, importer, mask);
  if (op == "MatMul" || op == "Gemm")
    return matrixRows(imp, importer, mask);
  if (llvm::is_contained({"Softmax", "LogSoftmax", "Hardmax", "LayerNormalization"}, op))
    return alongOtherDims(imp, importer, mask);
  if (op == "SoftmaxCrossEntropyLoss" || op == "NegativeLogLikelihoodLoss")
    return loss(imp, importer, mask);
  if (auto neutral = neutralOf(op))
    return reduction(imp, importer, mask, *neutral);
  return refuseOp(imp, mask);
}

} // namespace otc
