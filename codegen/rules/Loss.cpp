// Softmax cross-entropy as RowReduce steps: a warp (or thread) per sample
// finds the row's max, its sum of exponentials and the labelled logit in two
// passes over the row; a second step averages over the samples.
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

bool lowerForward(Operation *op, Lowering &l) {
  auto ce = cast<SoftmaxCrossEntropyOp>(op);
  auto shape = cast<RankedTensorType>(ce.getLogits().getType()).getShape();
  int64_t n = shape[0], c = shape[1];
  auto ignore = ignoreOf(ce.getIgnoreIndexAttr());
  int rows = l.scratch(ElemType::F32, {n}, "per-sample loss");
  int counted = countStep(op, ce.getLabels(), ignore, l, n);

  Step &s = l.newStep(Step::RowReduce, op, {n, c}, {false, true});
  NodeBuilder b(s);
  RowSoftmax r = rowSoftmax(ce.getLogits(), ce.getLabels(), b, l);
  if (r.x < 0 || r.y < 0)
    return false;
  // The labelled logit: a sum where only column y contributes (exact).
  int zero = b.constant(0.0);
  int isLabel = b.binary(Node::Eq, r.col, r.y);
  int picked = b.reduce(Reduction::Sum, b.select(isLabel, r.x, zero));
  int loss = b.binary(Node::Sub, b.binary(Node::Add, b.unary(Node::Log, r.s), r.m), picked);
  if (ignore) {
    int counted = b.binary(Node::Ne, r.y, b.integer(*ignore));
    loss = b.select(counted, loss, zero);
  }
  b.store(rows, {1, 0}, loss);

  Step &mean = l.newStep(Step::RowReduce, op, {1, n}, {false, true});
  NodeBuilder mb(mean);
  int total = mb.reduce(Reduction::Sum, mb.load(rows, ElemType::F32, {0, 1}));
  int count = countNode(mb, counted, n);
  l.store(mb, ce.getResult(), mb.binary(Node::Div, total, count), {});
  return true;
}

bool lowerBackward(Operation *op, Lowering &l) {
  auto ce = cast<SoftmaxCrossEntropyGradOp>(op);
  auto shape = cast<RankedTensorType>(ce.getLogits().getType()).getShape();
  int64_t n = shape[0], c = shape[1];
  auto ignore = ignoreOf(ce.getIgnoreIndexAttr());
  int counted = countStep(op, ce.getLabels(), ignore, l, n);
  Step &s = l.newStep(Step::RowReduce, op, {n, c}, {false, true});
  NodeBuilder b(s);
  RowSoftmax r = rowSoftmax(ce.getLogits(), ce.getLabels(), b, l);
  int g = l.expr(b, ce.getGrad(), {});
  if (r.x < 0 || r.y < 0 || g < 0)
    return false;
  int count = countNode(b, counted, n);
  int scale = b.binary(Node::Div, g, count);
  if (ignore) {
    int counted = b.binary(Node::Ne, r.y, b.integer(*ignore));
    int zero = b.constant(0.0);
    scale = b.select(counted, scale, zero);
  }
  int onehot = b.unary(Node::ToF32, b.binary(Node::Eq, r.col, r.y));
  int p = b.binary(Node::Div, r.e, r.s);
  l.store(b, ce.getResult(), b.binary(Node::Mul, scale, b.binary(Node::Sub, p, onehot)), {0, 1});
  return true;
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
}

} // namespace otc
