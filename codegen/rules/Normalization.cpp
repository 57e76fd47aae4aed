// Softmax and log-softmax: one RowReduce step over the axis. Each row's max,
// then the sum of exp(x - max), then the row again for the result.
// Normalize (layer norm, or RMS norm without centering), with its affine
// (layer_norm) or without, and its gradient: one RowReduce step each, over
// the trailing dims.
#include "../Rules.h"

#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {
namespace {

template <class OpTy, bool Log>
bool lowerSoftmax(Operation *op, Lowering &l) {
  auto sm = cast<OpTy>(op);
  auto shape = cast<RankedTensorType>(sm.getType()).getShape().vec();
  std::vector<bool> reduced(shape.size(), false);
  reduced[sm.getAxis()] = true;
  Step &s = l.newStep(Step::RowReduce, op, shape, reduced);
  NodeBuilder b(s);
  DimMap map = identityMap(shape.size());
  int x = l.expr(b, sm.getInput(), map);
  if (x < 0)
    return false;
  int shifted = b.binary(Node::Sub, x, b.reduce(Reduction::Max, x));
  int e = b.unary(Node::Exp, shifted);
  int sum = b.reduce(Reduction::Sum, e);
  int y = Log ? b.binary(Node::Sub, shifted, b.unary(Node::Log, sum))
              : b.binary(Node::Div, e, sum);
  l.store(b, sm.getResult(), y, map);
  return true;
}

/// The row statistics of normalize: the centred value and 1/sqrt(var + eps)
/// (two passes: the mean, then the variance of the centred values). Without
/// centering (RMS norm) x itself and one pass for mean(x²).
struct RowStats {
  int centred, rstd, n, mean; // mean: -1 without centering
};
RowStats rowStats(NodeBuilder &b, int x, int64_t count, double epsilon, bool center) {
  int inv = b.constant(1.0 / double(count));
  int centred = x, mean = -1;
  if (center) {
    mean = b.binary(Node::Mul, b.reduce(Reduction::Sum, x), inv);
    centred = b.binary(Node::Sub, x, mean);
  }
  int sq = b.binary(Node::Mul, centred, centred);
  int var = b.binary(Node::Mul, b.reduce(Reduction::Sum, sq), inv);
  int shifted = b.binary(Node::Add, var, b.constant(epsilon));
  int one = b.constant(1.0);
  int rstd = b.binary(Node::Div, one, b.unary(Node::Sqrt, shifted));
  return {centred, rstd, inv, mean};
}

template <class OpTy>
bool lowerNormalize(Operation *op, Lowering &l) {
  auto nm = cast<OpTy>(op);
  auto shape = cast<RankedTensorType>(op->getResult(0).getType()).getShape().vec();
  std::vector<bool> reduced(shape.size(), false);
  int64_t count = 1;
  for (size_t d = nm.getAxis(); d < shape.size(); ++d) {
    reduced[d] = true;
    count *= shape[d];
  }
  bool grad = std::is_same_v<OpTy, NormalizeGradOp>;
  Step &s = l.newStep(Step::RowReduce, op, shape, reduced);
  NodeBuilder b(s);
  DimMap map = identityMap(shape.size());
  int x = l.expr(b, op->getOperand(grad ? 1 : 0), map);
  if (x < 0)
    return false;
  bool center = nm.getCenter();
  RowStats st = rowStats(b, x, count, nm.getEpsilon().convertToDouble(), center);
  int y = b.binary(Node::Mul, st.centred, st.rstd);
  if (grad) { // rstd * (g - mean(g) - y * mean(g * y)), no mean(g) for RMS
    int g = l.expr(b, op->getOperand(0), map);
    if (g < 0)
      return false;
    int gy = b.binary(Node::Mul, g, y);
    int meanGY = b.binary(Node::Mul, b.reduce(Reduction::Sum, gy), st.n);
    int centredG = center ? b.binary(Node::Sub, g, b.binary(Node::Mul, b.reduce(Reduction::Sum, g), st.n))
                          : g;
    int correction = b.binary(Node::Mul, y, meanGY);
    y = b.binary(Node::Mul, st.rstd, b.binary(Node::Sub, centredG, correction));
  }
  if (auto ln = dyn_cast<LayerNormOp>(op)) { // the affine, before the one rounding
    // The row statistics, where the backward reads them: one value per row.
    auto statShape = cast<RankedTensorType>(ln.getMean().getType()).getShape();
    DimMap perRow = broadcastMap(statShape, shape, map);
    if (!ln.getMean().use_empty())
      l.store(b, ln.getMean(), center ? st.mean : b.constant(0.0), perRow);
    if (!ln.getRstd().use_empty())
      l.store(b, ln.getRstd(), st.rstd, perRow);
    for (Value v : {ln.getScale(), ln.getBias()}) {
      if (!v)
        continue;
      auto vShape = cast<RankedTensorType>(v.getType()).getShape();
      int a = l.expr(b, v, broadcastMap(vShape, shape, map));
      if (a < 0)
        return false;
      y = b.binary(v == ln.getScale() ? Node::Mul : Node::Add, y, a);
    }
  }
  l.store(b, op->getResult(0), y, map);
  return true;
}

bool readsInput(Operation *, unsigned k) { return k == 0; }
bool readsAll(Operation *, unsigned) { return true; }
bool overInput(Operation *, unsigned k) { return k == 0; }
bool firstResult(Operation *, unsigned k) { return k == 0; }

} // namespace

void registerNormalizationRules(RuleRegistry &r) {
  r.steps[NormalizeOp::getOperationName()] = {lowerNormalize<NormalizeOp>, readsInput};
  r.steps[LayerNormOp::getOperationName()] = {lowerNormalize<LayerNormOp>, readsAll};
  r.steps[NormalizeOp::getOperationName()].hosts = overInput;
  r.steps[LayerNormOp::getOperationName()].hosts = overInput;
  r.steps[NormalizeGradOp::getOperationName()] = {lowerNormalize<NormalizeGradOp>, readsAll};
  r.steps[SoftmaxOp::getOperationName()] = {lowerSoftmax<SoftmaxOp, false>, readsInput};
  r.steps[LogSoftmaxOp::getOperationName()] = {lowerSoftmax<LogSoftmaxOp, true>, readsInput};
  for (StringRef name : {NormalizeOp::getOperationName(), LayerNormOp::getOperationName(),
                         NormalizeGradOp::getOperationName(), SoftmaxOp::getOperationName(),
                         LogSoftmaxOp::getOperationName()})
    r.steps[name].feeds = firstResult; // over the step's whole shape
}

} // namespace otc
