#include "Interpreter.h"
#include "otc/runtime/kernel_support.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include <algorithm>
#include <cmath>
#include <stdexcept>

using namespace mlir;

namespace otc::test {
namespace {

std::vector<int64_t> shapeOf(Value v) {
  auto s = cast<RankedTensorType>(v.getType()).getShape();
  return {s.begin(), s.end()};
}

int64_t count(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Element of `t` (broadcast to `to`) at linear index `i` of `to`.
double at(const Tensor &t, const std::vector<int64_t> &to, int64_t i) {
  int64_t idx = 0, stride = 1;
  size_t lead = to.size() - t.shape.size();
  for (int d = (int)to.size() - 1; d >= (int)lead; --d) {
    int64_t c = i % to[d];
    i /= to[d];
    int64_t dim = t.shape[d - lead];
    idx += (dim == 1 ? 0 : c) * stride;
    stride *= dim;
  }
  return t.data[idx];
}

template <typename F>
Tensor map(const std::vector<int64_t> &shape, F f) {
  Tensor r{shape, std::vector<double>(count(shape))};
  for (int64_t i = 0; i < (int64_t)r.data.size(); ++i)
    r.data[i] = f(i);
  return r;
}

Tensor matmul2d(const Tensor &a, const Tensor &b, bool ta, bool tb, double alpha) {
  int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  int64_t n = tb ? b.shape[0] : b.shape[1];
  Tensor r{{m, n}, std::vector<double>(m * n, 0.0)};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t q = 0; q < k; ++q)
        s += (ta ? a.data[q * m + i] : a.data[i * k + q]) *
             (tb ? b.data[j * k + q] : b.data[q * n + j]);
      r.data[i * n + j] = alpha * s;
    }
  return r;
}

Tensor slice(const Tensor &t, int64_t index, std::vector<int64_t> shape) {
  int64_t n = count(shape);
  return {shape, std::vector<double>(t.data.begin() + index * n, t.data.begin() + (index + 1) * n)};
}

/// Row losses and softmax of [N, C] logits.
void softmaxRows(const Tensor &x, std::vector<double> &lse) {
  int64_t n = x.shape[0], c = x.shape[1];
  lse.assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    double m = x.data[i * c];
    for (int64_t j = 1; j < c; ++j)
      m = std::max(m, x.data[i * c + j]);
    double s = 0;
    for (int64_t j = 0; j < c; ++j)
      s += std::exp(x.data[i * c + j] - m);
    lse[i] = std::log(s) + m;
  }
}

Tensor reduce(const Tensor &x, ArrayRef<int64_t> axes, const std::vector<int64_t> &out, bool mean) {
  Tensor r{out, std::vector<double>(count(out), 0.0)};
  int64_t reduced = 1;
  for (int64_t a : axes)
    reduced *= x.shape[a];
  for (int64_t i = 0; i < (int64_t)x.data.size(); ++i) {
    int64_t rem = i, o = 0, stride = 1;
    for (int d = (int)x.shape.size() - 1; d >= 0; --d) {
      int64_t c = rem % x.shape[d];
      rem /= x.shape[d];
      if (!llvm::is_contained(axes, d)) {
        o += c * stride;
        stride *= x.shape[d];
      }
    }
    r.data[o] += x.data[i];
  }
  if (mean)
    for (double &v : r.data)
      v /= reduced;
  return r;
}

/// Calls f(n, c, oh, ow, kh, kw, ih, iw) for every tap of every window of a
/// window op over `image` [N, C, H, W] with output OH x OW; ih and iw may
/// lie in the padding, outside the image.
template <class OpTy, class F>
void forTaps(OpTy op, const std::vector<int64_t> &image, int64_t oh, int64_t ow, F f) {
  auto k = op.getKernel(), s = op.getStrides(), p = op.getPads(), d = op.getDilations();
  for (int64_t n = 0; n < image[0]; ++n)
    for (int64_t c = 0; c < image[1]; ++c)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          for (int64_t i = 0; i < k[0]; ++i)
            for (int64_t j = 0; j < k[1]; ++j)
              f(n, c, y, x, i, j, y * s[0] - p[0] + i * d[0], x * s[1] - p[1] + j * d[1]);
}

/// Average pooling's divisor per window [N, C, OH, OW]: its taps inside the
/// padded image (count_include_pad), or inside the image.
template <class OpTy>
Tensor avgDivisors(OpTy op, const std::vector<int64_t> &image, const std::vector<int64_t> &out) {
  auto p = op.getPads();
  Tensor r{out, std::vector<double>(count(out), 0.0)};
  forTaps(op, image, out[2], out[3], [&](int64_t n, int64_t c, int64_t y, int64_t x, int64_t,
                                         int64_t, int64_t ih, int64_t iw) {
    bool padded = ih >= -p[0] && ih < image[2] + p[2] && iw >= -p[1] && iw < image[3] + p[3];
    bool inside = ih >= 0 && ih < image[2] && iw >= 0 && iw < image[3];
    if (op.getCountIncludePad() ? padded : inside)
      r.data[((n * out[1] + c) * out[2] + y) * out[3] + x] += 1;
  });
  return r;
}

/// The unary ops lowered as one node, with their float64 meaning.
const llvm::StringMap<double (*)(double)> kUnaryNodes = {
#define OTC_UNARY_NODE(Kind, name, Op, expr, f) {Op::getOperationName(), f},
#include "../../codegen/Nodes.def"
};


/// otc.attention and its gradient in float64, row by row: the scores x[s]
/// of query row (b, h, t) against key head h / G, masked and causal as the
/// op says; p = exp(x - m - l) from the row statistics (m, l).
template <typename OpTy>
struct AttentionRef {
  mutable OpTy op; // generated accessors are not const
  const Tensor &q, &k, &v;
  const Tensor *mask;
  int64_t B, H, G, T, S, D, DV;

  AttentionRef(OpTy op, const Tensor &q, const Tensor &k, const Tensor &v, const Tensor *mask)
      : op(op), q(q), k(k), v(v), mask(mask), B(q.shape[0]), H(q.shape[1]),
        G(q.shape[1] / k.shape[1]), T(q.shape[2]), S(k.shape[2]), D(q.shape[3]), DV(v.shape[3]) {}

  int64_t kv(int64_t b, int64_t h, int64_t s) const { return (b * (H / G) + h / G) * S + s; }
  int64_t end(int64_t t) const { return op.getCausal() ? t + 1 : S; }
  double score(int64_t b, int64_t h, int64_t t, int64_t s, bool &masked) const {
    double x = 0;
    for (int64_t d = 0; d < D; ++d)
      x += q.data[((b * H + h) * T + t) * D + d] * k.data[kv(b, h, s) * D + d];
    x *= op.getScale().convertToDouble();
    masked = false;
    if (mask) {
      double m = at(*mask, {B, H, T, S}, ((b * H + h) * T + t) * S + s);
      if (!op.getFill())
        x += m;
      else if (m == 0) {
        masked = true;
        x = op.getFill()->convertToDouble();
      }
    }
    return x;
  }
};

/// A rank-4 tensor with dims 1 and 2 swapped ([B, T, H, D] and [B, H, T, D]).
Tensor swap12(const Tensor &x) {
  int64_t n0 = x.shape[0], n1 = x.shape[1], n2 = x.shape[2], n3 = x.shape[3];
  Tensor y{{n0, n2, n1, n3}, std::vector<double>(x.data.size())};
  for (int64_t a = 0; a < n0; ++a)
    for (int64_t b = 0; b < n1; ++b)
      for (int64_t c = 0; c < n2; ++c)
        for (int64_t d = 0; d < n3; ++d)
          y.data[((a * n2 + c) * n1 + b) * n3 + d] = x.data[((a * n1 + b) * n2 + c) * n3 + d];
  return y;
}

/// A recurrence's sizes and walk: step s runs at time t(s), after p(s).
struct RecurrenceRef {
  int64_t T, B, H;
  bool reverse;
  const Tensor *lens = nullptr;
  /// Whether row b holds its state at walk step s (past its length).
  bool held(int64_t s, int64_t b) const { return lens && double(t(s)) >= lens->data[b]; }
  int64_t t(int64_t s) const { return reverse ? T - 1 - s : s; }
  int64_t p(int64_t s) const { return reverse ? T - s : s - 1; }
  /// Element (b, j) of the [B, H] state before step s: `init` or `states`.
  double before(const Tensor &states, const Tensor &init, int64_t s, int64_t b, int64_t j) const {
    return s == 0 ? init.data[b * H + j] : states.data[(p(s) * B + b) * H + j];
  }
  /// Row b of h R_g^T at column j: Σ_q h[b, q] R[g H + j, q].
  double product(const Tensor &states, const Tensor &init, int64_t s, const Tensor &r, int64_t g,
                 int64_t b, int64_t j) const {
    double sum = 0;
    for (int64_t q = 0; q < H; ++q)
      sum += before(states, init, s, b, q) * r.data[(g * H + j) * H + q];
    return sum;
  }
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

} // namespace

std::vector<Tensor> evaluate(func::FuncOp func, const std::vector<Tensor> &args) {
  llvm::DenseMap<Value, Tensor> env;
  for (auto [arg, t] : llvm::zip(func.getArguments(), args))
    env[arg] = t;
  auto get = [&](Value v) -> const Tensor & { return env.find(v)->second; };
  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> out;
      for (Value v : ret.getOperands())
        out.push_back(get(v));
      return out;
    }
    Value res = op.getResult(0);
    auto shape = shapeOf(res);
    auto binary = [&](auto f) {
      const Tensor &a = get(op.getOperand(0)), &b = get(op.getOperand(1));
      return map(shape, [&](int64_t i) { return f(at(a, shape, i), at(b, shape, i)); });
    };
    auto unary = [&](auto f) {
      const Tensor &a = get(op.getOperand(0));
      return map(shape, [&](int64_t i) { return f(a.data[i]); });
    };
    if (auto it = kUnaryNodes.find(op.getName().getStringRef()); it != kUnaryNodes.end()) {
      env[res] = unary(it->second);
      continue;
    }
    env[res] = llvm::TypeSwitch<Operation *, Tensor>(&op)
        .Case([&](ConstantOp c) {
          auto d = cast<DenseElementsAttr>(c.getValue());
          Tensor t{shape, {}};
          if (isa<FloatType>(d.getElementType()))
            for (APFloat v : d.getValues<APFloat>())
              t.data.push_back(v.convertToDouble());
          else // integers and booleans
            for (APInt v : d.getValues<APInt>())
              t.data.push_back(d.getElementType().isInteger(1) ? double(v.getBoolValue())
                                                               : double(v.getSExtValue()));
          return t;
        })
        .Case([&](DropoutOp d) { // seed 0 at micro-batch 0, as a kernel run gets
          const Tensor &x = get(d.getInput());
          double ratio = d.getRatio().convertToDouble();
          Tensor y{shape, x.data}, mask{shape, x.data};
          for (size_t i = 0; i < x.data.size(); ++i) {
            bool keep = otc_uniform(0, 0, uint32_t(d.getStream()), i) >= float(ratio);
            mask.data[i] = keep;
            y.data[i] = keep ? x.data[i] / (1 - ratio) : 0.0;
          }
          env[d.getMask()] = mask;
          return y;
        })
        .Case([&](CompareOp c) {
          ComparePredicate p = c.getPredicate();
          return binary([p](double a, double b) { return double(holds(p, a, b)); });
        })
        .Case([&](NotOp) { return unary([](double a) { return double(a == 0); }); })
        .Case([&](AndOp) { return binary([](double a, double b) { return double(a != 0 && b != 0); }); })
        .Case([&](OrOp) { return binary([](double a, double b) { return double(a != 0 || b != 0); }); })
        .Case([&](BitwiseAndOp) { return binary([](double a, double b) { return double(int64_t(a) & int64_t(b)); }); })
        .Case([&](BitwiseOrOp) { return binary([](double a, double b) { return double(int64_t(a) | int64_t(b)); }); })
        .Case([&](BitwiseXorOp) { return binary([](double a, double b) { return double(int64_t(a) ^ int64_t(b)); }); })
        .Case([&](WhereOp w) {
          const Tensor &c = get(w.getCondition()), &a = get(w.getLhs()), &b = get(w.getRhs());
          return map(shape, [&](int64_t i) {
            return at(c, shape, i) != 0 ? at(a, shape, i) : at(b, shape, i);
          });
        })
        .Case([&](CastOp c) {
          Type to = cast<RankedTensorType>(c.getType()).getElementType();
          return unary([to](double a) {
            return to.isInteger(1) ? double(a != 0) : isa<FloatType>(to) ? a : std::trunc(a);
          });
        })
        .Case([&](AddOp) { return binary([](double a, double b) { return a + b; }); })
        .Case([&](SubOp) { return binary([](double a, double b) { return a - b; }); })
        .Case([&](MulOp) { return binary([](double a, double b) { return a * b; }); })
        .Case([&](DivOp) { return binary([](double a, double b) { return a / b; }); })
        .Case([&](ReluGradOp) { return binary([](double g, double x) { return x > 0 ? g : 0; }); })
        .Case([&](TanhGradOp) { return binary([](double g, double y) { return g * (1 - y * y); }); })
        .Case([&](GeluOp g) {
          bool tanhForm = g.getApproximate() == GeluApproximation::Tanh;
          return unary([tanhForm](double x) {
            return tanhForm ? 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)))
                            : 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
          });
        })
        .Case([&](GeluGradOp g) { // the derivative by hand, in float64
          bool tanhForm = g.getApproximate() == GeluApproximation::Tanh;
          return binary([tanhForm](double d, double x) {
            if (!tanhForm)
              return d * (0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
                          x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI));
            double k = std::sqrt(2 / M_PI), t = std::tanh(k * (x + 0.044715 * x * x * x));
            return d * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x));
          });
        })
        .Case([&](SigmoidGradOp) { return binary([](double g, double y) { return g * y * (1 - y); }); })
        .Case<SliceOp, SliceGradOp>([&](auto op) {
          // Walks the small side's coordinates; big = start + c * step.
          bool grad = isa<SliceGradOp>(op.getOperation());
          const Tensor &src = get(op->getOperand(0));
          const std::vector<int64_t> &small = grad ? src.shape : shape;
          const std::vector<int64_t> &big = grad ? shape : src.shape;
          Tensor r{shape, std::vector<double>(count(shape), 0.0)};
          for (int64_t i = 0; i < count(small); ++i) {
            int64_t rest = i, at = 0, stride = 1;
            for (int d = (int)small.size() - 1; d >= 0; --d) {
              at += (op.getStarts()[d] + rest % small[d] * op.getSteps()[d]) * stride;
              rest /= small[d];
              stride *= big[d];
            }
            if (grad)
              r.data[at] = src.data[i];
            else
              r.data[i] = src.data[at];
          }
          return r;
        })
        .Case([&](AttentionOp op) {
          // bthd: computed in [B, H, T, D] between two swaps of dims 1 and 2.
          bool sm = op.getLayout() == AttentionLayout::Bthd;
          auto in = [&](Value v) { return sm ? swap12(get(v)) : get(v); };
          Tensor q = in(op.getQuery()), k = in(op.getKey()), v = in(op.getValue());
          AttentionRef<AttentionOp> a(op, q, k, v, op.getMask() ? &get(op.getMask()) : nullptr);
          std::vector<int64_t> rows = {a.B, a.H, a.T, a.DV};
          Tensor out{rows, std::vector<double>(count(rows), 0.0)};
          Tensor stats{shapeOf(op.getStats()), std::vector<double>(a.B * a.H * a.T * 2)};
          for (int64_t row = 0; row < a.B * a.H * a.T; ++row) {
            int64_t t = row % a.T, h = row / a.T % a.H, b = row / (a.T * a.H);
            std::vector<double> x(a.end(t));
            bool masked;
            for (int64_t s = 0; s < a.end(t); ++s)
              x[s] = a.score(b, h, t, s, masked);
            double m = *std::max_element(x.begin(), x.end()), l = 0;
            for (double &e : x)
              l += e = std::exp(e - m);
            for (int64_t s = 0; s < a.end(t); ++s)
              for (int64_t c = 0; c < a.DV; ++c)
                out.data[row * a.DV + c] += x[s] / l * a.v.data[a.kv(b, h, s) * a.DV + c];
            stats.data[2 * row] = m;
            stats.data[2 * row + 1] = std::log(l);
          }
          env[op.getStats()] = stats;
          return sm ? swap12(out) : out;
        })
        .Case([&](AttentionGradOp op) {
          bool sm = op.getLayout() == AttentionLayout::Bthd;
          auto in = [&](Value v) { return sm ? swap12(get(v)) : get(v); };
          Tensor q = in(op.getQuery()), k = in(op.getKey()), v = in(op.getValue());
          AttentionRef<AttentionGradOp> a(op, q, k, v, op.getMask() ? &get(op.getMask()) : nullptr);
          const Tensor g = in(op.getGrad()), o = in(op.getOutput()), &st = get(op.getStats());
          Tensor dq{a.q.shape, std::vector<double>(a.q.data.size(), 0.0)};
          Tensor dk{a.k.shape, std::vector<double>(a.k.data.size(), 0.0)};
          Tensor dv{a.v.shape, std::vector<double>(a.v.data.size(), 0.0)};
          double scale = op.getScale().convertToDouble();
          for (int64_t row = 0; row < a.B * a.H * a.T; ++row) {
            int64_t t = row % a.T, h = row / a.T % a.H, b = row / (a.T * a.H);
            double delta = 0;
            for (int64_t c = 0; c < a.DV; ++c)
              delta += g.data[row * a.DV + c] * o.data[row * a.DV + c];
            for (int64_t s = 0; s < a.end(t); ++s) {
              bool masked;
              double p = std::exp(a.score(b, h, t, s, masked) - st.data[2 * row] - st.data[2 * row + 1]);
              double dp = 0;
              for (int64_t c = 0; c < a.DV; ++c) {
                dp += g.data[row * a.DV + c] * a.v.data[a.kv(b, h, s) * a.DV + c];
                dv.data[a.kv(b, h, s) * a.DV + c] += p * g.data[row * a.DV + c];
              }
              double ds = masked ? 0 : p * (dp - delta);
              for (int64_t d = 0; d < a.D; ++d) {
                dq.data[row * a.D + d] += scale * ds * a.k.data[a.kv(b, h, s) * a.D + d];
                dk.data[a.kv(b, h, s) * a.D + d] += scale * ds * a.q.data[row * a.D + d];
              }
            }
          }
          env[op.getKeyGrad()] = sm ? swap12(dk) : dk;
          env[op.getValueGrad()] = sm ? swap12(dv) : dv;
          return sm ? swap12(dq) : dq;
        })
        .Case([&](LstmOp op) {
          const Tensor &x = get(op.getInput()), &r = get(op.getRecurrence());
          const Tensor &h0 = get(op.getInitialH()), &c0 = get(op.getInitialC());
          RecurrenceRef rr{x.shape[0], x.shape[1], r.shape[1], op.getReverse(),
                           op.getLens() ? &get(op.getLens()) : nullptr};
          int64_t T = rr.T, B = rr.B, H = rr.H;
          Tensor hs{{T, B, H}, std::vector<double>(T * B * H)}, cs = hs;
          Tensor gates{{T, B, 4 * H}, std::vector<double>(T * B * 4 * H)};
          for (int64_t s = 0; s < T; ++s)
            for (int64_t b = 0; b < B; ++b)
              for (int64_t j = 0; j < H; ++j) {
                int64_t t = rr.t(s), k = (t * B + b) * H + j;
                if (rr.held(s, b)) { // gates stay 0
                  cs.data[k] = rr.before(cs, c0, s, b, j);
                  hs.data[k] = rr.before(hs, h0, s, b, j);
                  continue;
                }
                double a[4];
                for (int64_t g = 0; g < 4; ++g) {
                  a[g] = x.data[(t * B + b) * 4 * H + g * H + j] + rr.product(hs, h0, s, r, g, b, j);
                  a[g] = g == 3 ? std::tanh(a[g]) : sigmoid(a[g]);
                  gates.data[(t * B + b) * 4 * H + g * H + j] = a[g];
                }
                cs.data[k] = a[2] * rr.before(cs, c0, s, b, j) + a[0] * a[3];
                hs.data[k] = a[1] * std::tanh(cs.data[k]);
              }
          env[op.getCell()] = cs;
          env[op.getGates()] = gates;
          return hs;
        })
        .Case([&](LstmGradOp op) {
          const Tensor &dhs = get(op.getHiddenGrad()), &r = get(op.getRecurrence());
          const Tensor &cs = get(op.getCell()), &gates = get(op.getGates());
          const Tensor &c0 = get(op.getInitialC());
          const Tensor *dcs = op.getCellGrad() ? &get(op.getCellGrad()) : nullptr;
          RecurrenceRef rr{dhs.shape[0], dhs.shape[1], dhs.shape[2], op.getReverse(),
                           op.getLens() ? &get(op.getLens()) : nullptr};
          int64_t T = rr.T, B = rr.B, H = rr.H;
          Tensor dx{{T, B, 4 * H}, std::vector<double>(T * B * 4 * H)};
          std::vector<double> dh(B * H, 0.0), dc(B * H, 0.0);
          for (int64_t s = T - 1; s >= 0; --s) {
            int64_t t = rr.t(s);
            std::vector<double> through(B * H, 0.0); // a held row's gradient, passed on
            for (int64_t b = 0; b < B; ++b)
              for (int64_t j = 0; j < H; ++j) {
                int64_t k = (t * B + b) * H + j, row = (t * B + b) * 4 * H;
                if (rr.held(s, b)) {
                  through[b * H + j] = dhs.data[k] + dh[b * H + j];
                  dc[b * H + j] += dcs ? dcs->data[k] : 0;
                  continue;
                }
                double i = gates.data[row + j], o = gates.data[row + H + j];
                double f = gates.data[row + 2 * H + j], c = gates.data[row + 3 * H + j];
                double g = dhs.data[k] + dh[b * H + j], tc = std::tanh(cs.data[k]);
                double gc = dc[b * H + j] + (dcs ? dcs->data[k] : 0) + g * o * (1 - tc * tc);
                dx.data[row + j] = gc * c * i * (1 - i);
                dx.data[row + H + j] = g * tc * o * (1 - o);
                dx.data[row + 2 * H + j] = gc * rr.before(cs, c0, s, b, j) * f * (1 - f);
                dx.data[row + 3 * H + j] = gc * i * (1 - c * c);
                dc[b * H + j] = gc * f;
              }
            for (int64_t b = 0; b < B; ++b) // dh_prev = dgates R
              for (int64_t q = 0; q < H; ++q) {
                double sum = through[b * H + q];
                for (int64_t g = 0; g < 4 * H; ++g)
                  sum += dx.data[(t * B + b) * 4 * H + g] * r.data[g * H + q];
                dh[b * H + q] = sum;
              }
          }
          env[op.getInitialHGrad()] = Tensor{{B, H}, dh};
          env[op.getInitialCGrad()] = Tensor{{B, H}, dc};
          return dx;
        })
        .Case([&](GruOp op) {
          const Tensor &x = get(op.getInput()), &r = get(op.getRecurrence());
          const Tensor &h0 = get(op.getInitialH());
          const Tensor *rb = op.getRbias() ? &get(op.getRbias()) : nullptr;
          bool lbr = op.getLinearBeforeReset();
          RecurrenceRef rr{x.shape[0], x.shape[1], r.shape[1], op.getReverse(),
                           op.getLens() ? &get(op.getLens()) : nullptr};
          int64_t T = rr.T, B = rr.B, H = rr.H;
          Tensor hs{{T, B, H}, std::vector<double>(T * B * H)};
          Tensor gates{{T, B, 4 * H}, std::vector<double>(T * B * 4 * H)};
          for (int64_t s = 0; s < T; ++s) {
            int64_t t = rr.t(s);
            std::vector<double> rh(B * H); // r ⊙ h_prev
            for (int64_t b = 0; b < B; ++b)
              for (int64_t j = 0; j < H; ++j) {
                int64_t row = (t * B + b) * 4 * H, xrow = (t * B + b) * 3 * H;
                if (rr.held(s, b)) // gates stay 0, the state is held
                  continue;
                double z = sigmoid(x.data[xrow + j] + rr.product(hs, h0, s, r, 0, b, j));
                double rg = sigmoid(x.data[xrow + H + j] + rr.product(hs, h0, s, r, 1, b, j));
                gates.data[row + j] = z;
                gates.data[row + H + j] = rg;
                rh[b * H + j] = rg * rr.before(hs, h0, s, b, j);
              }
            for (int64_t b = 0; b < B; ++b)
              for (int64_t j = 0; j < H; ++j) {
                int64_t row = (t * B + b) * 4 * H, xrow = (t * B + b) * 3 * H;
                if (rr.held(s, b)) {
                  hs.data[(t * B + b) * H + j] = rr.before(hs, h0, s, b, j);
                  continue;
                }
                double z = gates.data[row + j], rg = gates.data[row + H + j], q, pre;
                if (lbr) {
                  q = rr.product(hs, h0, s, r, 2, b, j) + (rb ? rb->data[j] : 0);
                  pre = rg * q;
                } else {
                  q = rh[b * H + j];
                  pre = 0;
                  for (int64_t c = 0; c < H; ++c)
                    pre += rh[b * H + c] * r.data[(2 * H + j) * H + c];
                }
                double n = std::tanh(x.data[xrow + 2 * H + j] + pre), hp = rr.before(hs, h0, s, b, j);
                gates.data[row + 2 * H + j] = n;
                gates.data[row + 3 * H + j] = q;
                hs.data[(t * B + b) * H + j] = n + z * (hp - n);
              }
          }
          env[op.getGates()] = gates;
          return hs;
        })
        .Case([&](GruGradOp op) {
          const Tensor &dhs = get(op.getHiddenGrad()), &r = get(op.getRecurrence());
          const Tensor &hs = get(op.getHidden()), &gates = get(op.getGates());
          const Tensor &h0 = get(op.getInitialH());
          bool lbr = op.getLinearBeforeReset();
          RecurrenceRef rr{dhs.shape[0], dhs.shape[1], dhs.shape[2], op.getReverse(),
                           op.getLens() ? &get(op.getLens()) : nullptr};
          int64_t T = rr.T, B = rr.B, H = rr.H;
          Tensor dx{{T, B, 3 * H}, std::vector<double>(T * B * 3 * H)};
          std::vector<double> dh(B * H, 0.0);
          for (int64_t s = T - 1; s >= 0; --s) {
            int64_t t = rr.t(s);
            std::vector<double> next(B * H, 0.0), drec(B * 3 * H, 0.0);
            for (int64_t b = 0; b < B; ++b) {
              if (rr.held(s, b)) { // passed through; dx and drec stay 0
                for (int64_t j = 0; j < H; ++j)
                  next[b * H + j] = dh[b * H + j] + dhs.data[(t * B + b) * H + j];
                continue;
              }
              std::vector<double> dn(H), m(H, 0.0);
              for (int64_t j = 0; j < H; ++j) {
                int64_t row = (t * B + b) * 4 * H;
                double z = gates.data[row + j], n = gates.data[row + 2 * H + j];
                dh[b * H + j] += dhs.data[(t * B + b) * H + j];
                dn[j] = dh[b * H + j] * (1 - z) * (1 - n * n);
              }
              for (int64_t c = 0; c < H; ++c) // m = dn R_n
                for (int64_t j = 0; j < H; ++j)
                  m[c] += dn[j] * r.data[(2 * H + j) * H + c];
              for (int64_t j = 0; j < H; ++j) {
                int64_t row = (t * B + b) * 4 * H, xrow = (t * B + b) * 3 * H;
                double z = gates.data[row + j], rg = gates.data[row + H + j];
                double n = gates.data[row + 2 * H + j], q = gates.data[row + 3 * H + j];
                double g = dh[b * H + j], hp = rr.before(hs, h0, s, b, j);
                double dr = (lbr ? dn[j] * q : m[j] * hp) * rg * (1 - rg);
                double dz = g * (hp - n) * z * (1 - z);
                dx.data[xrow + j] = dz;
                dx.data[xrow + H + j] = dr;
                dx.data[xrow + 2 * H + j] = dn[j];
                drec[b * 3 * H + j] = dz;
                drec[b * 3 * H + H + j] = dr;
                drec[b * 3 * H + 2 * H + j] = lbr ? dn[j] * rg : 0;
                next[b * H + j] = g * z + (lbr ? 0 : m[j] * rg);
              }
            }
            for (int64_t b = 0; b < B; ++b) // dh_prev += drec R
              for (int64_t q = 0; q < H; ++q)
                for (int64_t g = 0; g < 3 * H; ++g)
                  next[b * H + q] += drec[b * 3 * H + g] * r.data[g * H + q];
            dh = next;
          }
          env[op.getInitialHGrad()] = Tensor{{B, H}, dh};
          return dx;
        })
        .Case([&](RnnOp op) {
          const Tensor &x = get(op.getInput()), &r = get(op.getRecurrence());
          const Tensor &h0 = get(op.getInitialH());
          bool relu = op.getActivation() == RnnActivation::Relu;
          RecurrenceRef rr{x.shape[0], x.shape[1], r.shape[1], op.getReverse(),
                           op.getLens() ? &get(op.getLens()) : nullptr};
          int64_t T = rr.T, B = rr.B, H = rr.H;
          Tensor hs{{T, B, H}, std::vector<double>(T * B * H)};
          for (int64_t s = 0; s < T; ++s)
            for (int64_t b = 0; b < B; ++b)
              for (int64_t j = 0; j < H; ++j) {
                int64_t k = (rr.t(s) * B + b) * H + j;
                if (rr.held(s, b)) {
                  hs.data[k] = rr.before(hs, h0, s, b, j);
                  continue;
                }
                double a = x.data[k] + rr.product(hs, h0, s, r, 0, b, j);
                hs.data[k] = relu ? std::max(a, 0.0) : std::tanh(a);
              }
          env[op.getStates()] = hs;
          return hs;
        })
        .Case([&](RnnGradOp op) {
          const Tensor &dhs = get(op.getHiddenGrad()), &r = get(op.getRecurrence());
          const Tensor &hs = get(op.getStates());
          bool relu = op.getActivation() == RnnActivation::Relu;
          RecurrenceRef rr{dhs.shape[0], dhs.shape[1], dhs.shape[2], op.getReverse(),
                           op.getLens() ? &get(op.getLens()) : nullptr};
          int64_t T = rr.T, B = rr.B, H = rr.H;
          Tensor dx{{T, B, H}, std::vector<double>(T * B * H)};
          std::vector<double> dh(B * H, 0.0);
          for (int64_t s = T - 1; s >= 0; --s) {
            int64_t t = rr.t(s);
            std::vector<double> through(B * H, 0.0); // a held row's gradient, passed on
            for (int64_t k = 0; k < B * H; ++k) {
              double h = hs.data[t * B * H + k], g = dhs.data[t * B * H + k] + dh[k];
              if (rr.held(s, k / H))
                through[k] = g;
              else
                dx.data[t * B * H + k] = relu ? (h > 0 ? g : 0.0) : g * (1 - h * h);
            }
            for (int64_t b = 0; b < B; ++b) // dh_prev = d R
              for (int64_t q = 0; q < H; ++q) {
                double sum = through[b * H + q];
                for (int64_t i = 0; i < H; ++i)
                  sum += dx.data[(t * B + b) * H + i] * r.data[i * H + q];
                dh[b * H + q] = sum;
              }
          }
          env[op.getInitialHGrad()] = Tensor{{B, H}, dh};
          return dx;
        })
        .Case([&](RotaryOp r) {
          // y[c] = x[c] cos[c] + s(c) x[c ± h] sin[c] (transposed: -sin[c ± h]).
          const Tensor &x = get(r.getInput()), &c = get(r.getCos()), &sn = get(r.getSin());
          int64_t n = shape.back(), h = n / 2;
          bool t = r.getTransposed();
          return map(shape, [&](int64_t i) {
            int64_t k = i % n, partner = k < h ? i + h : i - h;
            double sign = k < h ? -1.0 : 1.0, sine = t ? -at(sn, shape, partner) : at(sn, shape, i);
            return x.data[i] * at(c, shape, i) + sign * x.data[partner] * sine;
          });
        })
        .Case([&](ConcatOp c) {
          // Rows of the result before the axis: each input adds its chunk.
          int64_t outer = 1;
          for (int64_t d = 0; d < c.getAxis(); ++d)
            outer *= shape[d];
          Tensor r{shape, {}};
          for (int64_t o = 0; o < outer; ++o)
            for (Value v : c.getInputs()) {
              const Tensor &t = get(v);
              int64_t chunk = count(t.shape) / outer;
              r.data.insert(r.data.end(), t.data.begin() + o * chunk, t.data.begin() + (o + 1) * chunk);
            }
          return r;
        })
        .Case<GatherOp, GatherGradOp>([&](auto op) {
          // data [outer, n, inner] and indices [m]: out [outer, m, inner].
          bool grad = isa<GatherGradOp>(op.getOperation());
          const Tensor &idx = get(op->getOperand(1));
          const std::vector<int64_t> &big = grad ? shape : get(op->getOperand(0)).shape;
          int64_t axis = op.getAxis(), n = big[axis], m = count(idx.shape), outer = 1, inner = 1;
          for (int64_t d = 0; d < axis; ++d)
            outer *= big[d];
          for (size_t d = axis + 1; d < big.size(); ++d)
            inner *= big[d];
          const Tensor &src = get(op->getOperand(0));
          Tensor r{shape, std::vector<double>(count(shape), 0.0)};
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < m; ++j) {
              int64_t k = int64_t(idx.data[j]);
              k += k < 0 ? n : 0;
              for (int64_t i = 0; i < inner; ++i) {
                if (grad)
                  r.data[(o * n + k) * inner + i] += src.data[(o * m + j) * inner + i];
                else
                  r.data[(o * m + j) * inner + i] = src.data[(o * n + k) * inner + i];
              }
            }
          return r;
        })
        .Case<Im2ColOp, Col2ImOp>([&](auto op) {
          // Columns [C, KH, KW, N, OH, OW]; the gradient scatters them back.
          bool grad = isa<Col2ImOp>(op.getOperation());
          const Tensor &src = get(op->getOperand(0));
          const std::vector<int64_t> &cols = grad ? src.shape : shape;
          const std::vector<int64_t> &image = grad ? shape : src.shape;
          Tensor r{shape, std::vector<double>(count(shape), 0.0)};
          forTaps(op, image, cols[4], cols[5], [&](int64_t n, int64_t c, int64_t y, int64_t x,
                                                   int64_t i, int64_t j, int64_t ih, int64_t iw) {
            if (ih < 0 || ih >= image[2] || iw < 0 || iw >= image[3])
              return;
            int64_t col = ((((c * cols[1] + i) * cols[2] + j) * cols[3] + n) * cols[4] + y) * cols[5] + x;
            int64_t px = ((n * image[1] + c) * image[2] + ih) * image[3] + iw;
            if (grad)
              r.data[px] += src.data[col];
            else
              r.data[col] = src.data[px];
          });
          return r;
        })
        .Case([&](MaxPoolOp op) {
          const Tensor &x = get(op.getInput());
          Tensor y{shape, std::vector<double>(count(shape), -INFINITY)};
          Tensor idx{shape, std::vector<double>(count(shape), -1.0)};
          forTaps(op, x.shape, shape[2], shape[3], [&](int64_t n, int64_t c, int64_t oy, int64_t ox,
                                                       int64_t, int64_t, int64_t ih, int64_t iw) {
            if (ih < 0 || ih >= x.shape[2] || iw < 0 || iw >= x.shape[3])
              return;
            int64_t o = ((n * shape[1] + c) * shape[2] + oy) * shape[3] + ox;
            double v = x.data[((n * x.shape[1] + c) * x.shape[2] + ih) * x.shape[3] + iw];
            if (v > y.data[o]) {
              y.data[o] = v;
              idx.data[o] = double(ih * x.shape[3] + iw);
            }
          });
          env[op.getIndices()] = idx;
          return y;
        })
        .Case([&](MaxPoolGradOp op) {
          const Tensor &g = get(op.getGrad()), &idx = get(op.getIndices());
          Tensor r{shape, std::vector<double>(count(shape), 0.0)};
          int64_t plane = shape[2] * shape[3], outPlane = g.shape[2] * g.shape[3];
          for (int64_t o = 0; o < count(g.shape); ++o)
            r.data[o / outPlane * plane + int64_t(idx.data[o])] += g.data[o];
          return r;
        })
        .Case<AvgPoolOp, AvgPoolGradOp>([&](auto op) {
          bool grad = isa<AvgPoolGradOp>(op.getOperation());
          const Tensor &src = get(op->getOperand(0));
          const std::vector<int64_t> &out = grad ? src.shape : shape;
          const std::vector<int64_t> &image = grad ? shape : src.shape;
          Tensor div = avgDivisors(op, image, out);
          Tensor r{shape, std::vector<double>(count(shape), 0.0)};
          forTaps(op, image, out[2], out[3], [&](int64_t n, int64_t c, int64_t y, int64_t x,
                                                 int64_t, int64_t, int64_t ih, int64_t iw) {
            if (ih < 0 || ih >= image[2] || iw < 0 || iw >= image[3])
              return;
            int64_t o = ((n * out[1] + c) * out[2] + y) * out[3] + x;
            int64_t px = ((n * image[1] + c) * image[2] + ih) * image[3] + iw;
            if (grad)
              r.data[px] += src.data[o] / div.data[o];
            else
              r.data[o] += src.data[px] / div.data[o];
          });
          return r;
        })
        .Case<NormalizeOp, NormalizeGradOp, LayerNormOp>([&](auto op) {
          // Rows are the dims before `axis`; each row holds n elements.
          bool grad = isa<NormalizeGradOp>(op.getOperation());
          const Tensor &x = get(grad ? op->getOperand(1) : op->getOperand(0));
          int64_t n = 1;
          for (size_t d = op.getAxis(); d < shape.size(); ++d)
            n *= shape[d];
          double eps = op.getEpsilon().convertToDouble();
          Tensor r{shape, x.data};
          Tensor stats[2]; // layer_norm's mean and rstd, added to env at the end
          for (int64_t row = 0; row < count(shape) / n; ++row) {
            const double *xr = &x.data[row * n];
            double mean = 0, var = 0;
            for (int64_t k = 0; k < n && op.getCenter(); ++k)
              mean += xr[k] / n;
            for (int64_t k = 0; k < n; ++k)
              var += (xr[k] - mean) * (xr[k] - mean) / n;
            double rstd = 1 / std::sqrt(var + eps);
            std::vector<double> y(n);
            for (int64_t k = 0; k < n; ++k)
              y[k] = (xr[k] - mean) * rstd;
            if (auto ln = dyn_cast<LayerNormOp>(op.getOperation())) { // the affine, the statistics
              for (int64_t k = 0; k < n; ++k)
                y[k] = y[k] * get(ln.getScale()).data[k] +
                       (ln.getBias() ? get(ln.getBias()).data[k] : 0.0);
              stats[0].data.push_back(mean);
              stats[1].data.push_back(rstd);
            }
            if (!grad) {
              std::copy(y.begin(), y.end(), r.data.begin() + row * n);
              continue;
            }
            const double *g = &get(op->getOperand(0)).data[row * n];
            double sg = 0, sgy = 0;
            for (int64_t k = 0; k < n; ++k) {
              sg += op.getCenter() ? g[k] / n : 0.0;
              sgy += g[k] * y[k] / n;
            }
            for (int64_t k = 0; k < n; ++k)
              r.data[row * n + k] = rstd * (g[k] - sg - y[k] * sgy);
          }
          if (auto ln = dyn_cast<LayerNormOp>(op.getOperation())) {
            stats[0].shape = stats[1].shape = shapeOf(ln.getMean());
            env[ln.getMean()] = stats[0];
            env[ln.getRstd()] = stats[1];
          }
          return r;
        })
        .Case<BatchNormOp, BatchNormGradOp>([&](auto op) {
          // Per channel c (dim 1): every other dim's elements, in float64.
          bool grad = isa<BatchNormGradOp>(op.getOperation());
          const Tensor &x = get(grad ? op->getOperand(1) : op->getOperand(0));
          int64_t c = shape[1], inner = 1;
          for (size_t d = 2; d < shape.size(); ++d)
            inner *= shape[d];
          int64_t n = count(shape) / c;
          auto at = [&](int64_t ch, int64_t k) { // k-th element of channel ch
            return (k / inner * c + ch) * inner + k % inner;
          };
          double eps = op.getEpsilon().convertToDouble();
          Tensor r{shape, x.data}, mean{{1, c}, {}}, var{{1, c}, {}};
          for (int64_t ch = 0; ch < c; ++ch) {
            double m = 0, v = 0;
            if (grad) {
              m = get(op->getOperand(2)).data[ch];
              v = get(op->getOperand(3)).data[ch];
            } else {
              for (int64_t k = 0; k < n; ++k)
                m += x.data[at(ch, k)] / n;
              for (int64_t k = 0; k < n; ++k)
                v += (x.data[at(ch, k)] - m) * (x.data[at(ch, k)] - m) / n;
            }
            mean.data.push_back(m);
            var.data.push_back(v);
            double rstd = 1 / std::sqrt(v + eps);
            if (!grad) {
              auto bn = cast<BatchNormOp>(op.getOperation());
              for (int64_t k = 0; k < n; ++k)
                r.data[at(ch, k)] = (x.data[at(ch, k)] - m) * rstd * get(bn.getScale()).data[ch] +
                                    get(bn.getBias()).data[ch];
              continue;
            }
            const Tensor &g = get(op->getOperand(0));
            double sg = 0, sgy = 0;
            for (int64_t k = 0; k < n; ++k) {
              sg += g.data[at(ch, k)] / n;
              sgy += g.data[at(ch, k)] * (x.data[at(ch, k)] - m) * rstd / n;
            }
            for (int64_t k = 0; k < n; ++k)
              r.data[at(ch, k)] = rstd * (g.data[at(ch, k)] - sg - (x.data[at(ch, k)] - m) * rstd * sgy);
          }
          if (auto bn = dyn_cast<BatchNormOp>(op.getOperation())) {
            mean.shape = var.shape = shapeOf(bn.getMean());
            env[bn.getMean()] = mean;
            env[bn.getVar()] = var;
          }
          return r;
        })
        .Case<SoftmaxOp, LogSoftmaxOp>([&](auto op) {
          const Tensor &a = get(op.getInput());
          bool log = isa<LogSoftmaxOp>(op.getOperation());
          int64_t axis = op.getAxis(), n = shape[axis], inner = 1;
          for (size_t d = axis + 1; d < shape.size(); ++d)
            inner *= shape[d];
          Tensor r{shape, a.data};
          for (int64_t o = 0; o < count(shape) / (n * inner); ++o)
            for (int64_t i = 0; i < inner; ++i) {
              auto at = [&](int64_t k) -> double & { return r.data[(o * n + k) * inner + i]; };
              double m = -INFINITY, s = 0;
              for (int64_t k = 0; k < n; ++k)
                m = std::max(m, at(k));
              for (int64_t k = 0; k < n; ++k)
                s += std::exp(at(k) - m);
              for (int64_t k = 0; k < n; ++k)
                at(k) = log ? at(k) - m - std::log(s) : std::exp(at(k) - m) / s;
            }
          return r;
        })
        .Case([&](PowOp p) {
          double c = p.getExponent().convertToDouble();
          return unary([c](double a) { return std::pow(a, c); });
        })
        .Case([&](ReciprocalOp) { return unary([](double a) { return 1.0 / a; }); })
        .Case([&](IdentityOp) { return get(op.getOperand(0)); })
        .Case([&](ReshapeOp) { return Tensor{shape, get(op.getOperand(0)).data}; })
        .Case([&](BroadcastToOp) {
          const Tensor &a = get(op.getOperand(0));
          return map(shape, [&](int64_t i) { return at(a, shape, i); });
        })
        .Case([&](TransposeOp t) {
          const Tensor &a = get(t.getInput());
          return map(shape, [&](int64_t i) {
            std::vector<int64_t> c(shape.size());
            for (int d = (int)shape.size() - 1; d >= 0; --d) {
              c[d] = i % shape[d];
              i /= shape[d];
            }
            int64_t idx = 0;
            std::vector<int64_t> inC(shape.size());
            for (size_t d = 0; d < shape.size(); ++d)
              inC[t.getPerm()[d]] = c[d];
            for (size_t d = 0; d < shape.size(); ++d)
              idx = idx * a.shape[d] + inC[d];
            return a.data[idx];
          });
        })
        .Case([&](GemmOp g) {
          Tensor r = matmul2d(get(g.getA()), get(g.getB()), g.getTransA(), g.getTransB(),
                              g.getAlpha().convertToDouble());
          if (Value c = g.getC()) {
            const Tensor &ct = get(c);
            for (int64_t i = 0; i < (int64_t)r.data.size(); ++i)
              r.data[i] += g.getBeta().convertToDouble() * at(ct, shape, i);
          }
          return r;
        })
        .Case([&](MatMulOp m) {
          const Tensor &a = get(m.getLhs()), &b = get(m.getRhs());
          int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
          int64_t batch = count(a.shape) / (M * K);
          Tensor r{shape, {}};
          for (int64_t i = 0; i < batch; ++i) {
            Tensor bi = b.shape.size() == 2 ? b : slice(b, i, {K, N});
            Tensor p = matmul2d(slice(a, i, {M, K}), bi, false, false, 1.0);
            r.data.insert(r.data.end(), p.data.begin(), p.data.end());
          }
          return r;
        })
        .Case([&](ReduceSumOp r) { return reduce(get(r.getInput()), r.getAxes(), shape, false); })
        .Case([&](ReduceMeanOp r) { return reduce(get(r.getInput()), r.getAxes(), shape, true); })
        .Case([&](SoftmaxCrossEntropyOp s) {
          const Tensor &x = get(s.getLogits()), &y = get(s.getLabels());
          std::vector<double> lse;
          softmaxRows(x, lse);
          double total = 0;
          int64_t n = 0, c = x.shape[1];
          for (size_t i = 0; i < lse.size(); ++i) {
            if (s.getIgnoreIndex() && y.data[i] == s.getIgnoreIndexAttr().getInt())
              continue;
            total += lse[i] - x.data[i * c + int64_t(y.data[i])];
            ++n;
          }
          return Tensor{{}, {total / n}};
        })
        .Case([&](SoftmaxCrossEntropyGradOp s) {
          const Tensor &x = get(s.getLogits()), &y = get(s.getLabels());
          std::vector<double> lse;
          softmaxRows(x, lse);
          int64_t c = x.shape[1], n = 0;
          auto ignored = [&](size_t i) {
            return s.getIgnoreIndex() && y.data[i] == s.getIgnoreIndexAttr().getInt();
          };
          for (size_t i = 0; i < lse.size(); ++i)
            n += !ignored(i);
          double scale = get(s.getGrad()).data[0] / n;
          return map(shape, [&](int64_t k) {
            int64_t i = k / c, j = k % c;
            if (ignored(i))
              return 0.0;
            return scale * (std::exp(x.data[k] - lse[i]) - (j == int64_t(y.data[i]) ? 1 : 0));
          });
        })
        .Default([&](Operation *o) -> Tensor {
          throw std::runtime_error("interpreter: unsupported op " +
                                   o->getName().getStringRef().str());
        });
  }
  return {};
}

} // namespace otc::test
