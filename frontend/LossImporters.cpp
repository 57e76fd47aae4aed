// Losses: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss over
// N x C x d1 ... inputs, and the stable form of the log-sigmoid that
// exporters write for BCE-with-logits.
//
// The common case (softmax cross-entropy, mean, no class weights) is the
// fused otc.softmax_cross_entropy: one row kernel, no one-hot. Class
// weights, other reductions, the log_prob output and NLL are composed of
// primitives around a one-hot of the labels, so autodiff derives them.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace otc {
namespace {

/// Records on the labels' argument (through reshapes) that its values are
/// class indices in [0, classes) or ignore_index, which the runtime checks
/// before a step reads the data.
void markLabels(Value labels, int64_t classes, std::optional<int64_t> ignore) {
  while (auto r = labels.getDefiningOp<ReshapeOp>())
    labels = r.getInput();
  auto arg = dyn_cast<BlockArgument>(labels);
  if (!arg)
    return;
  auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  Builder b(func.getContext());
  func.setArgAttr(arg.getArgNumber(), attr::kClasses, b.getI64IntegerAttr(classes));
  if (ignore)
    func.setArgAttr(arg.getArgNumber(), attr::kIgnoreIndex, b.getI64IntegerAttr(*ignore));
}

/// The general form: per-position losses -w[y] log p[y], reduced.
LogicalResult composedLoss(GraphImporter &imp, Value logp, Value labels, Value weight,
                           std::optional<int64_t> ignore, StringRef reduction) {
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  auto type = cast<RankedTensorType>(logp.getType());
  auto labelType = cast<RankedTensorType>(labels.getType());
  Type elem = type.getElementType();
  int64_t rank = type.getRank(), classes = type.getDimSize(1);
  SmallVector<int64_t> positions = {type.getDimSize(0)};
  for (int64_t d = 2; d < rank; ++d)
    positions.push_back(type.getDimSize(d));
  if (labelType.getShape() != ArrayRef<int64_t>(positions))
    return imp.fail("the labels' shape does not match the input's N x d1 x ... positions");
  if (weight && cast<RankedTensorType>(weight.getType()).getShape() != ArrayRef<int64_t>{classes})
    return imp.fail("the class weights must have shape [" + std::to_string(classes) + "]");

  // onehot[n, c, d...] = (labels[n, d...] == c), zero where ignored.
  SmallVector<int64_t> perClass(rank, 1), labelShape(type.getShape());
  perClass[1] = classes;
  labelShape[1] = 1;
  if (failed(checkFoldSize(imp, classes))) // the class ids are a constant
    return failure();
  SmallVector<int64_t> iota(classes);
  for (int64_t c = 0; c < classes; ++c)
    iota[c] = c;
  auto iotaType = RankedTensorType::get(perClass, labelType.getElementType());
  Value classIds = ConstantOp::create(b, loc, DenseElementsAttr::get(iotaType, ArrayRef(iota)));
  Value y = reshaped(imp, labels, labelShape);
  auto boolType = RankedTensorType::get(type.getShape(), b.getI1Type());
  Value hit = CompareOp::create(b, loc, boolType, y, classIds, ComparePredicate::eq);
  Value onehot;
  if (ignore && *ignore >= 0 && *ignore < classes) {
    auto keepType = RankedTensorType::get(labelShape, b.getI1Type());
    Value ii = ConstantOp::create(
        b, loc, DenseElementsAttr::get(RankedTensorType::get({}, labelType.getElementType()),
                                       ArrayRef<int64_t>{*ignore}));
    Value keep = CompareOp::create(b, loc, keepType, y, ii, ComparePredicate::ne);
    hit = AndOp::create(b, loc, boolType, hit, keep);
    onehot = CastOp::create(b, loc, type, hit);
  }
  if (!onehot)
    onehot = CastOp::create(b, loc, type, hit);
  markLabels(labels, classes, ignore);

  auto sumClasses = [&](Value v) {
    return ReduceSumOp::create(b, loc, RankedTensorType::get(positions, elem), v,
                               b.getDenseI64ArrayAttr({1}), b.getBoolAttr(false))
        .getResult();
  };
  // log p[y], or 0: selected rather than multiplied by the one-hot, so a
  // -inf at another class (a masked logit, log of a zero probability)
  // does not make 0 * -inf = NaN.
  Value picked = sumClasses(WhereOp::create(b, loc, type, hit, logp,
                                            scalarConstant(b, loc, elem, 0.0)));
  Value w = onehot;
  if (weight)
    w = MulOp::create(b, loc, type, onehot, reshaped(imp, weight, perClass));
  Value wy = sumClasses(w); // w[y], 1 without weights, 0 where ignored
  Value losses = NegOp::create(
      b, loc, weight ? MulOp::create(b, loc, picked.getType(), picked, wy).getResult() : picked);
  if (reduction == "none") {
    return imp.defineResult(losses);
  }
  SmallVector<int64_t> all;
  for (size_t d = 0; d < positions.size(); ++d)
    all.push_back(int64_t(d));
  auto scalar = RankedTensorType::get({}, elem);
  auto total = [&](Value v) {
    return ReduceSumOp::create(b, loc, scalar, v, b.getDenseI64ArrayAttr(all),
                               b.getBoolAttr(false))
        .getResult();
  };
  Value sum = total(losses);
  // Mean: divided by the summed weights of the positions that count.
  imp.define(0, reduction == "sum" ? sum : DivOp::create(b, loc, scalar, sum, total(wy)).getResult());
  return success();
}

struct LossAttrs {
  std::string reduction = "mean";
  std::optional<int64_t> ignore;
};

FailureOr<LossAttrs> lossAttrs(GraphImporter &imp) {
  LossAttrs a;
  if (const auto *r = imp.attr("reduction"))
    a.reduction = r->s();
  if (a.reduction != "mean" && a.reduction != "sum" && a.reduction != "none")
    return imp.fail("unknown reduction " + quoted(a.reduction));
  if (imp.attr("ignore_index"))
    a.ignore = imp.intAttr("ignore_index", 0);
  return a;
}

} // namespace

LogicalResult importSoftmaxCrossEntropyLoss(GraphImporter &imp) {
  auto attrs = lossAttrs(imp);
  auto logits = imp.input(0), labels = imp.input(1), weight = imp.optionalInput(2);
  if (failed(attrs) || failed(logits) || failed(labels) || failed(weight))
    return failure();
  auto lt = cast<RankedTensorType>(logits->getType());
  if (lt.getRank() < 2)
    return imp.fail("the scores need a class dim");
  bool wantLogProb = imp.node().output_size() > 1 && !imp.node().output(1).empty();
  OpBuilder &b = imp.builder();
  if (*weight || wantLogProb || attrs->reduction != "mean") {
    Value logp = LogSoftmaxOp::create(b, imp.loc(), *logits, b.getI64IntegerAttr(1));
    if (wantLogProb)
      imp.define(1, logp);
    return composedLoss(imp, logp, *labels, *weight, attrs->ignore, attrs->reduction);
  }
  // N x C x d1 x ... dk: the classes moved last and every position made a
  // row. The mean over the N d non-ignored positions is unchanged.
  if (lt.getRank() > 2) {
    SmallVector<int64_t> perm = {0};
    for (int64_t d = 2; d < lt.getRank(); ++d)
      perm.push_back(d);
    perm.push_back(1);
    auto moved = imp.create<TransposeOp>(*logits, b.getDenseI64ArrayAttr(perm));
    if (failed(moved))
      return failure();
    int64_t c = lt.getDimSize(1), rows = lt.getNumElements() / c;
    logits = ReshapeOp::create(b, imp.loc(), withShape(*moved, {rows, c}), *moved).getResult();
    auto yt = cast<RankedTensorType>(labels->getType());
    if (yt.getNumElements() != rows)
      return imp.fail("labels of shape " + std::to_string(yt.getNumElements()) +
                      " elements do not match the logits' " + std::to_string(rows) + " positions");
    labels = ReshapeOp::create(b, imp.loc(), withShape(*labels, {rows}), *labels).getResult();
  }
  IntegerAttr ignore;
  if (attrs->ignore)
    ignore = b.getI64IntegerAttr(*attrs->ignore);
  return imp.defineResult(imp.create<SoftmaxCrossEntropyOp>(*logits, *labels, ignore));
}

LogicalResult importNegativeLogLikelihoodLoss(GraphImporter &imp) {
  auto attrs = lossAttrs(imp);
  auto logp = imp.input(0), labels = imp.input(1), weight = imp.optionalInput(2);
  if (failed(attrs) || failed(logp) || failed(labels) || failed(weight))
    return failure();
  if (cast<RankedTensorType>(logp->getType()).getRank() < 2)
    return imp.fail("the log-probabilities need a class dim");
  return composedLoss(imp, *logp, *labels, *weight, attrs->ignore, attrs->reduction);
}

/// Log, except that log(sigmoid(x)) and log(1 - sigmoid(x)), which PyTorch
/// exports for BCE-with-logits, become log-sigmoid of x and of -x in the
/// form that neither overflows nor takes log(0):
///   log σ(x) = min(x, 0) - log(1 + e^-|x|),  min(x, 0) = (x - |x|) / 2.
LogicalResult importLog(GraphImporter &imp) {
  if (imp.constantInput(0)) // a position or bucket computation
    return importUnary<LogOp>(imp);
  auto in = imp.input(0);
  if (failed(in))
    return failure();
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value x;
  bool negate = false;
  if (auto s = in->getDefiningOp<SigmoidOp>()) {
    x = s.getInput();
  } else if (auto sub = in->getDefiningOp<SubOp>()) {
    auto s = sub.getRhs().getDefiningOp<SigmoidOp>();
    DenseElementsAttr lhs;
    if (s && matchPattern(sub.getLhs(), m_Constant(&lhs)) && lhs.isSplat() &&
        isa<FloatType>(lhs.getElementType()) &&
        lhs.getSplatValue<APFloat>().convertToDouble() == 1.0 &&
        sub.getType() == s.getType()) {
      x = s.getInput();
      negate = true;
    }
  }
  if (!x)
    return importUnary<LogOp>(imp);
  Type t = x.getType();
  Type elem = cast<RankedTensorType>(t).getElementType();
  if (negate)
    x = NegOp::create(b, loc, x);
  Value mag = AbsOp::create(b, loc, x);
  Value lower = MulOp::create(b, loc, t, SubOp::create(b, loc, t, x, mag),
                              scalarConstant(b, loc, elem, 0.5));
  Value e = ExpOp::create(b, loc, NegOp::create(b, loc, mag));
  Value softplus = LogOp::create(b, loc, AddOp::create(b, loc, t, e,
                                                       scalarConstant(b, loc, elem, 1.0)));
  imp.define(0, SubOp::create(b, loc, t, lower, softplus).getResult());
  return success();
}

} // namespace otc
