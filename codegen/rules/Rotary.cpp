// otc.rotary: one elementwise step per half of the last dim, each reading
// x (and, transposed, sin) at the other half by a load offset, so nothing
// rotated is materialised.
#include "../Rules.h"

#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {
namespace {

/// The strides, over the iteration dims of `shape` (x's, the last halved),
/// that read operand `v` broadcast to x, and the stride of its last dim.
std::pair<std::vector<int64_t>, int64_t> broadcastStrides(Value v, ArrayRef<int64_t> shape) {
  auto own = shapeOf(v);
  std::vector<int64_t> s = stridesOf(own), out(shape.size(), 0);
  size_t lead = shape.size() - own.size();
  for (size_t j = 0; j < own.size(); ++j)
    if (own[j] != 1)
      out[j + lead] = s[j];
  return {out, own.empty() ? 0 : out.back()};
}

bool lowerRotary(Operation *op, Lowering &l) {
  auto r = cast<RotaryOp>(op);
  auto full = shapeOf(r.getResult()).vec();
  int64_t h = full.back() / 2;
  std::vector<int64_t> half = full;
  half.back() = h;
  int out = l.ownResult(r.getResult(), op), x = l.buffer(r.getInput(), op);
  int cos = l.buffer(r.getCos(), op), sin = l.buffer(r.getSin(), op);
  if (out < 0 || x < 0 || cos < 0 || sin < 0)
    return false;
  const auto &buffers = l.program().buffers;
  std::vector<int64_t> xs = stridesOf(full);
  auto [cs, cLast] = broadcastStrides(r.getCos(), full);
  auto [ss, sLast] = broadcastStrides(r.getSin(), full);
  bool t = r.getTransposed();
  for (int second = 0; second < 2; ++second) {
    // Positions c of this half; the partner is c + h, or c - h.
    int64_t here = second * h, there = (1 - second) * h;
    Step &s = l.newStep(Step::Elementwise, op, half);
    NodeBuilder b(s);
    int xc = b.load(x, buffers[x].type, xs, here);
    int xp = b.load(x, buffers[x].type, xs, there);
    int c = b.load(cos, buffers[cos].type, cs, here * cLast);
    int sn = b.load(sin, buffers[sin].type, ss, (t ? there : here) * sLast);
    // s(c) x[partner] sin: -1 in the first half, negated again when transposed.
    int term = b.binary(Node::Mul, xp, sn);
    if ((second == 0) != t)
      term = b.unary(Node::Neg, term);
    int y = b.binary(Node::Add, b.binary(Node::Mul, xc, c), term);
    b.store(out, xs, y, here);
  }
  return true;
}

} // namespace

void registerRotaryRules(RuleRegistry &r) {
  r.steps[RotaryOp::getOperationName()] = {lowerRotary, nullptr, StepRule::Output::Own};
}

} // namespace otc
