// Softmax cross-entropy as RowReduce steps: a warp (or thread) per sample
// finds the row's max, its sum of exponentials and the labelled logit in two
// passes over the row (the gradient, a third that writes the row); a
// second step averages over the samples. softmax_cross_entropy_with_grad
// does both in the one row step.
#include "../Rules.h"

#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {
namespace {

/// With ignore_index: a RowReduce over the labels that counts the samples
/// not ignored, into a scratch scalar (its buffer is returned). Else -1.
int countStep(Operation *op, Value labels, std::optional<int64_t> ignore,
              Lowering &l, int64_t n) {
  if (!ignore)
    return -1;
  int buf = l.scratch(ElemType::F32, {}, "counted samples");
  Step &s = l.newStep(Step::RowReduce, op, {1, n}, {false, true});
  NodeBuilder b(s);
  int y = l.expr(b, labels, {1});
  int kept = b.unary(Node::ToF32, b.binary(Node::Ne, y, b.integer(*ignore)));
  b.store(buf, {0, 0}, b.reduce(Reduction::Sum, kept));
  return buf;
}

/// The count as a node of `b`: the constant N or the counted scalar.
int countNode(NodeBuilder &b, int buf, int64_t n) {
  if (buf < 0)
    return b.constant(double(n));
  return b.load(buf, ElemType::F32, std::vector<int64_t>(b.getStep().shape.size(), 0));
}

/// The row max m, the sum of exp(x - m) and, over the row, the nodes x and
/// the column coordinate.
struct RowSoftmax {
  int x, y, m, s, e, col;
};
RowSoftmax rowSoftmax(Value logits, Value labels, NodeBuilder &b, Lowering &l) {
  RowSoftmax r;
  r.x = l.expr(b, logits, {0, 1});
  r.y = l.expr(b, labels, {0});
  r.m = b.reduce(Reduction::Max, r.x);
  r.e = b.unary(Node::Exp, b.binary(Node::Sub, r.x, r.m));
  r.s = b.reduce(Reduction::Sum, r.e);
  r.col = b.coord(1);
  return r;
}

std::optional<int64_t> ignoreOf(IntegerAttr a) {
  return a ? std::optional<int64_t>(a.getInt()) : std::nullopt;
}

/// The loss and the gradient of one softmax cross-entropy, either or both
/// (`loss`, `dlogits` null where not wanted): a RowReduce over the logits
/// that stores each row's loss into a scratch row and writes the gradient
/// (seed `grad`) over the row, then a step that averages the rows' losses.
struct CrossEntropy {
  Value logits, labels, grad, loss, dlogits;
  std::optional<int64_t> ignore;
};
bool lowerCrossEntropy(Operation *op, Lowering &l, const CrossEntropy &ce) {
  auto shape = cast<RankedTensorType>(ce.logits.getType()).getShape();
  int64_t n = shape[0], c = shape[1];
  int rows = ce.loss ? l.scratch(ElemType::F32, {n}, "per-sample loss") : -1;
  int counted = countStep(op, ce.labels, ce.ignore, l, n);

  Step &s = l.newStep(Step::RowReduce, op, {n, c}, {false, true});
  NodeBuilder b(s);
  RowSoftmax r = rowSoftmax(ce.logits, ce.labels, b, l);
  if (r.x < 0 || r.y < 0)
    return false;
  int zero = b.constant(0.0);
  int kept = ce.ignore ? b.binary(Node::Ne, r.y, b.integer(*ce.ignore)) : -1;
  if (ce.loss) {
    // The labelled logit: a sum where only column y contributes (exact).
    int isLabel = b.binary(Node::Eq, r.col, r.y);
    int picked = b.reduce(Reduction::Sum, b.select(isLabel, r.x, zero));
    int loss = b.binary(Node::Sub, b.binary(Node::Add, b.unary(Node::Log, r.s), r.m), picked);
    b.store(rows, {1, 0}, kept < 0 ? loss : b.select(kept, loss, zero));
  }
  if (ce.dlogits) {
    int g = l.expr(b, ce.grad, {});
    if (g < 0)
      return false;
    int scale = b.binary(Node::Div, g, countNode(b, counted, n));
    if (kept >= 0)
      scale = b.select(kept, scale, zero);
    int onehot = b.unary(Node::ToF32, b.binary(Node::Eq, r.col, r.y));
    int p = b.binary(Node::Div, r.e, r.s);
    l.store(b, ce.dlogits, b.binary(Node::Mul, scale, b.binary(Node::Sub, p, onehot)), {0, 1});
  }
  if (!ce.loss)
    return true;
  Step &mean = l.newStep(Step::RowReduce, op, {1, n}, {false, true});
  NodeBuilder mb(mean);
  int total = mb.reduce(Reduction::Sum, mb.load(rows, ElemType::F32, {0, 1}));
  int count = countNode(mb, counted, n);
  l.store(mb, ce.loss, mb.binary(Node::Div, total, count), {});
  return true;
}

bool lowerForward(Operation *op, Lowering &l) {
  auto ce = cast<SoftmaxCrossEntropyOp>(op);
  return lowerCrossEntropy(op, l, {ce.getLogits(), ce.getLabels(), {}, ce.getResult(), {},
                                   ignoreOf(ce.getIgnoreIndexAttr())});
}

bool lowerBackward(Operation *op, Lowering &l) {
  auto ce = cast<SoftmaxCrossEntropyGradOp>(op);
  return lowerCrossEntropy(op, l, {ce.getLogits(), ce.getLabels(), ce.getGrad(), {},
                                   ce.getResult(), ignoreOf(ce.getIgnoreIndexAttr())});
}

bool lowerWithGrad(Operation *op, Lowering &l) {
  auto ce = cast<SoftmaxCrossEntropyWithGradOp>(op);
  return lowerCrossEntropy(op, l, {ce.getLogits(), ce.getLabels(), ce.getGrad(), ce.getLoss(),
                                   ce.getLogitsGrad(), ignoreOf(ce.getIgnoreIndexAttr())});
}

bool readsAll(Operation *, unsigned) { return true; }

} // namespace

void registerLossRules(RuleRegistry &r) {
  r.steps[SoftmaxCrossEntropyOp::getOperationName()] = {lowerForward, readsAll};
  // The gradient overwrites the logits it was computed from: its stores run
  // after the row's max and sum passes, each element read then written by
  // one thread, so the step's peak holds one [N, V] tensor rather than two.
  StepRule backward{lowerBackward, readsAll};
  backward.inPlace = 1;
  r.steps[SoftmaxCrossEntropyGradOp::getOperationName()] = backward;
  StepRule fused{lowerWithGrad, readsAll};
  fused.inPlace = 1;
  fused.inPlaceResult = 1;
  r.steps[SoftmaxCrossEntropyWithGradOp::getOperationName()] = fused;
}

} // namespace otc
