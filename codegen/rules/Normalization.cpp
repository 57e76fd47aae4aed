// Softmax and log-softmax: one RowReduce step over the axis. Each row's max,
// then the sum of exp(x - max), then the row again for the result.
// Normalize (layer norm, or RMS norm without centering), with its affine
// (layer_norm) or without, and its gradient: one RowReduce step each, over
// the trailing dims. Batch normalization: per-channel Reduce steps, then
// an elementwise one.
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

/// Batch normalization's per-channel steps over x's shape [N, C, ...]:
/// dim 1 kept, every other reduced.
struct Channels {
  std::vector<int64_t> shape;
  std::vector<bool> reduced;
  std::vector<int64_t> perChannel; // the strides of a [C] buffer
  DimMap identity, stats;          // x's map; a [1, C, 1, ...] value's
  int64_t count = 1;               // the values per channel
};
Channels channelsOf(Value x) {
  Channels c;
  c.shape = cast<RankedTensorType>(x.getType()).getShape().vec();
  c.reduced.assign(c.shape.size(), true);
  c.reduced[1] = false;
  c.perChannel.assign(c.shape.size(), 0);
  c.perChannel[1] = 1;
  c.identity = identityMap(c.shape.size());
  c.stats.assign(c.shape.size(), -1);
  c.stats[1] = 1;
  for (size_t d = 0; d < c.shape.size(); ++d)
    c.count *= d == 1 ? 1 : c.shape[d];
  return c;
}

/// 1 / sqrt(var + epsilon), var loaded (per channel) as `var`.
int rstdOf(NodeBuilder &b, int var, double epsilon) {
  return b.binary(Node::Div, b.constant(1.0),
                  b.unary(Node::Sqrt, b.binary(Node::Add, var, b.constant(epsilon))));
}

/// Whether BatchNorm's statistics come from each image's: every image has
/// a warp's worth of pixels per channel, and the images are few enough
/// for one thread per channel to combine.
bool perImage(const Channels &c) {
  int64_t images = c.shape[0], pixels = c.count / images;
  return c.shape.size() >= 3 && pixels >= 32 && images <= 1024;
}

/// The channel statistics in one read of x (perImage): per image and
/// channel, the mean m_n and the centred sum of squares M2_n of its
/// pixels, in two passes over a row that the first leaves in cache; then
/// per channel, Chan's combination: the mean of the m_n, and
/// var = (sum M2_n + P sum (m_n - mean)^2) / (N P), the last sum taken of
/// m_n - m_0, which is near the mean (an image's mean, not one pixel's),
/// as sum e^2 - (sum e)^2 / N. Stores `means` and `vars` [C] and the op's
/// mean and var results.
bool statisticsPerImage(BatchNormOp bn, const Channels &c, int means, int vars, Lowering &l) {
  int64_t images = c.shape[0], channels = c.shape[1], pixels = c.count / images;
  int local = l.scratch(ElemType::F32, {2, images, channels}, "batch_norm image statistics");
  std::vector<bool> perPixel(c.shape.size(), true);
  perPixel[0] = perPixel[1] = false;
  std::vector<int64_t> at(c.shape.size(), 0);
  at[0] = channels;
  at[1] = 1;
  {
    Step &s = l.newStep(Step::Reduce, bn, c.shape, perPixel);
    NodeBuilder b(s);
    int x = l.expr(b, bn.getInput(), c.identity);
    if (x < 0)
      return false;
    int m = b.binary(Node::Mul, b.reduce(Reduction::Sum, x), b.constant(1.0 / double(pixels)));
    int d = b.binary(Node::Sub, x, m);
    b.store(local, at, m);
    b.store(local, at, b.reduce(Reduction::Sum, b.binary(Node::Mul, d, d)), images * channels);
  }
  Step &s = l.newStep(Step::Reduce, bn, {images, channels}, {true, false});
  NodeBuilder b(s);
  int m = b.load(local, ElemType::F32, {channels, 1});
  int m0 = b.load(local, ElemType::F32, {0, 1});
  int m2 = b.load(local, ElemType::F32, {channels, 1}, images * channels);
  int e = b.binary(Node::Sub, m, m0);
  int sum = b.reduce(Reduction::Sum, e), squares = b.reduce(Reduction::Sum, b.binary(Node::Mul, e, e));
  int within = b.reduce(Reduction::Sum, m2);
  int inv = b.constant(1.0 / double(images));
  int mean = b.binary(Node::Add, m0, b.binary(Node::Mul, sum, inv));
  int between = b.binary(Node::Sub, squares, b.binary(Node::Mul, b.binary(Node::Mul, sum, sum), inv));
  between = b.binary(Node::Max, between, b.constant(0.0)); // rounding may leave it below 0
  int var = b.binary(Node::Mul,
                     b.binary(Node::Add, within, b.binary(Node::Mul, between, b.constant(double(pixels)))),
                     b.constant(1.0 / double(c.count)));
  std::vector<int64_t> perChannel = {0, 1};
  b.store(means, perChannel, mean);
  b.store(vars, perChannel, var);
  if (!bn.getMean().use_empty())
    l.store(b, bn.getMean(), mean, c.stats);
  if (!bn.getVar().use_empty())
    l.store(b, bn.getVar(), var, c.stats);
  return true;
}

// batch_norm: the channel statistics, then y elementwise, in the order of
// the written-out formula, so its values are those. The statistics come
// from each image's (statisticsPerImage), or, for a few long columns
// (BatchNorm1d over many samples), as the means and then the variances of
// the centred values: two Reduce steps, which code generation may split.
bool lowerBatchNorm(Operation *op, Lowering &l) {
  auto bn = cast<BatchNormOp>(op);
  Channels c = channelsOf(bn.getInput());
  int64_t channels = c.shape[1];
  int means = l.scratch(ElemType::F32, {channels}, "batch_norm mean");
  int vars = l.scratch(ElemType::F32, {channels}, "batch_norm var");
  bool byImage = perImage(c);
  if (byImage && !statisticsPerImage(bn, c, means, vars, l))
    return false;
  for (int pass = 0; pass < 2 && !byImage; ++pass) {
    Step &s = l.newStep(Step::Reduce, op, c.shape, c.reduced);
    NodeBuilder b(s);
    int x = l.expr(b, bn.getInput(), c.identity);
    if (x < 0)
      return false;
    int inv = b.constant(1.0 / double(c.count)), v = x;
    if (pass == 1) {
      int centred = b.binary(Node::Sub, x, b.load(means, ElemType::F32, c.perChannel));
      v = b.binary(Node::Mul, centred, centred);
    }
    int stat = b.binary(Node::Mul, b.reduce(Reduction::Sum, v), inv);
    b.store(pass ? vars : means, c.perChannel, stat);
    Value result = pass ? bn.getVar() : bn.getMean();
    if (!result.use_empty())
      l.store(b, result, stat, c.stats);
  }
  Step &s = l.newStep(Step::Elementwise, op, c.shape, std::vector<bool>(c.shape.size(), false));
  NodeBuilder b(s);
  int x = l.expr(b, bn.getInput(), c.identity);
  int scale = l.expr(b, bn.getScale(), {1}), bias = l.expr(b, bn.getBias(), {1});
  if (x < 0 || scale < 0 || bias < 0)
    return false;
  int centred = b.binary(Node::Sub, x, b.load(means, ElemType::F32, c.perChannel));
  int shifted = b.binary(Node::Add, b.load(vars, ElemType::F32, c.perChannel),
                         b.constant(bn.getEpsilon().convertToDouble()));
  int gain = b.binary(Node::Div, scale, b.unary(Node::Sqrt, shifted));
  l.store(b, bn.getResult(), b.binary(Node::Add, b.binary(Node::Mul, centred, gain), bias),
          c.identity);
  return true;
}

// batch_norm_grad: the channel sums of g and of g (x - mean) in one Reduce
// step, then rstd (g - mean(g) - x̂ mean(g x̂)) elementwise, x̂ computed
// in both.
bool lowerBatchNormGrad(Operation *op, Lowering &l) {
  auto bg = cast<BatchNormGradOp>(op);
  Channels c = channelsOf(bg.getInput());
  int64_t channels = c.shape[1];
  int sums[2] = {l.scratch(ElemType::F32, {channels}, "batch_norm_grad sum"),
                 l.scratch(ElemType::F32, {channels}, "batch_norm_grad centred sum")};
  double eps = bg.getEpsilon().convertToDouble();
  for (int pass = 0; pass < 2; ++pass) {
    Step &s = l.newStep(pass ? Step::Elementwise : Step::Reduce, op, c.shape,
                        pass ? std::vector<bool>(c.shape.size(), false) : c.reduced);
    NodeBuilder b(s);
    int g = l.expr(b, bg.getGrad(), c.identity), x = l.expr(b, bg.getInput(), c.identity);
    int mean = l.expr(b, bg.getMean(), c.stats);
    if (g < 0 || x < 0 || mean < 0)
      return false;
    int centred = b.binary(Node::Sub, x, mean);
    if (pass == 0) {
      b.store(sums[0], c.perChannel, b.reduce(Reduction::Sum, g));
      b.store(sums[1], c.perChannel, b.reduce(Reduction::Sum, b.binary(Node::Mul, g, centred)));
      continue;
    }
    int var = l.expr(b, bg.getVar(), c.stats);
    if (var < 0)
      return false;
    int rstd = rstdOf(b, var, eps), inv = b.constant(1.0 / double(c.count));
    int xhat = b.binary(Node::Mul, centred, rstd);
    int meanG = b.binary(Node::Mul, b.load(sums[0], ElemType::F32, c.perChannel), inv);
    int meanGX = b.binary(Node::Mul, b.binary(Node::Mul, b.load(sums[1], ElemType::F32, c.perChannel),
                                              rstd),
                          inv);
    int dx = b.binary(Node::Mul, rstd,
                      b.binary(Node::Sub, b.binary(Node::Sub, g, meanG),
                               b.binary(Node::Mul, xhat, meanGX)));
    l.store(b, bg.getResult(), dx, c.identity);
  }
  return true;
}

bool readsInput(Operation *, unsigned k) { return k == 0; }
bool readsAll(Operation *, unsigned) { return true; }

/// Batch normalization computes x's producer inside its loops only when it
/// is a widening cast (16-bit x read as float32). Any other producer is
/// stored and loaded: a reduction's loop body decides how the CPU compiler
/// vectorizes it, hence the order of its sum, and otc-recompute's copy
/// must sum in the order of the original, whichever else reads x.
bool readsCastOfInput(Operation *op, unsigned k) {
  unsigned x = isa<BatchNormGradOp>(op) ? 1 : 0;
  return k != x || isa_and_nonnull<CastOp>(op->getOperand(k).getDefiningOp());
}
bool overInput(Operation *, unsigned k) { return k == 0; }
bool firstResult(Operation *, unsigned k) { return k == 0; }

} // namespace

void registerNormalizationRules(RuleRegistry &r) {
  r.steps[NormalizeOp::getOperationName()] = {lowerNormalize<NormalizeOp>, readsInput};
  r.steps[LayerNormOp::getOperationName()] = {lowerNormalize<LayerNormOp>, readsAll};
  r.steps[NormalizeOp::getOperationName()].hosts = overInput;
  r.steps[LayerNormOp::getOperationName()].hosts = overInput;
  r.steps[NormalizeGradOp::getOperationName()] = {lowerNormalize<NormalizeGradOp>, readsAll};
  r.steps[BatchNormOp::getOperationName()] = {lowerBatchNorm, readsCastOfInput};
  r.steps[BatchNormGradOp::getOperationName()] = {lowerBatchNormGrad, readsCastOfInput};
  r.steps[SoftmaxOp::getOperationName()] = {lowerSoftmax<SoftmaxOp, false>, readsInput};
  r.steps[LogSoftmaxOp::getOperationName()] = {lowerSoftmax<LogSoftmaxOp, true>, readsInput};
  for (StringRef name : {NormalizeOp::getOperationName(), LayerNormOp::getOperationName(),
                         NormalizeGradOp::getOperationName(), SoftmaxOp::getOperationName(),
                         LogSoftmaxOp::getOperationName(), BatchNormOp::getOperationName()})
    r.steps[name].feeds = firstResult; // over the step's whole shape
}

} // namespace otc
