// GridSample (opset 16; F.grid_sample: spatial transformers, deformable
// and flow models): X [N, C, H, W] sampled at the normalised positions of
// grid [N, Ho, Wo, 2], bilinear or nearest, with zeros, border or
// reflection padding. Composed of elementwise ops and row gathers so that
// autodiff gives both gradients: X's is the scatter-add of the corner
// weights, the grid's comes through the weights' fractional parts (floor
// and the index arithmetic carry none), as PyTorch's kernel computes them.
// The arithmetic follows PyTorch's grid_sampler_2d in order, so float32
// rounds alike.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

using namespace mlir;

namespace otc {
namespace {

using Imp = GraphImporter;

/// Builds the sampling arithmetic on [N, P] float32 coordinates; any op
/// whose type inference fails marks the whole import failed.
struct Sampler {
  Imp &imp;
  OpBuilder &b;
  Location loc;
  bool broken = false;

  Value c(double v) { return scalarConstant(b, loc, b.getF32Type(), v); }
  template <typename Op> Value op(Value x, Value y) {
    auto r = imp.create<Op>(x, y);
    broken |= failed(r);
    return succeeded(r) ? *r : x;
  }
  Value add(Value x, Value y) { return op<AddOp>(x, y); }
  Value sub(Value x, Value y) { return op<SubOp>(x, y); }
  Value mul(Value x, Value y) { return op<MulOp>(x, y); }
  Value div(Value x, Value y) { return op<DivOp>(x, y); }
  Value cmp(Value x, Value y, ComparePredicate p) {
    auto r = imp.create<CompareOp>(x, y, p);
    broken |= failed(r);
    return succeeded(r) ? *r : x;
  }
  Value where(Value m, Value x, Value y) {
    auto r = imp.create<WhereOp>(m, x, y);
    broken |= failed(r);
    return succeeded(r) ? *r : x;
  }
  Value floor(Value x) { return FloorOp::create(b, loc, x); }

  /// [-1, 1] to pixel positions (grid_sampler_unnormalize).
  Value unnormalize(Value g, int64_t size, bool corners) {
    return corners ? mul(div(add(g, c(1)), c(2)), c(double(size - 1)))
                   : div(sub(mul(add(g, c(1)), c(double(size))), c(1)), c(2));
  }
  /// Into [0, size - 1]; no gradient where clipped (clip_coordinates_set_grad:
  /// at 0 too), and NaN becomes 0.
  Value clip(Value x, int64_t size) {
    Value low = where(cmp(x, c(0), ComparePredicate::gt), x, c(0));
    double top = double(size - 1);
    return where(cmp(low, c(top), ComparePredicate::lt), low, c(top));
  }
  /// Reflected into [twiceLow / 2, twiceHigh / 2] (reflect_coordinates):
  /// |x - min| folded by the span, mirrored on odd folds.
  Value reflect(Value x, int64_t twiceLow, int64_t twiceHigh) {
    if (twiceLow == twiceHigh)
      return mul(x, c(0));
    double min = twiceLow / 2.0, span = (twiceHigh - twiceLow) / 2.0;
    Value in = AbsOp::create(b, loc, sub(x, c(min)));
    Value flips = floor(div(in, c(span)));
    Value extra = sub(in, mul(flips, c(span))); // fmod of a non-negative value
    Value even = cmp(sub(flips, mul(floor(div(flips, c(2))), c(2))), c(0), ComparePredicate::eq);
    return where(even, add(extra, c(min)), add(sub(c(span), extra), c(min)));
  }
  /// The pixel position along an axis of `size`, padded (compute_coordinates).
  Value coordinate(Value g, int64_t size, bool corners, StringRef padding) {
    Value x = unnormalize(g, size, corners);
    if (padding == "border")
      return clip(x, size);
    if (padding == "reflection")
      return clip(corners ? reflect(x, 0, 2 * (size - 1)) : reflect(x, -1, 2 * size - 1), size);
    return x;
  }
};

} // namespace

LogicalResult importGridSample(Imp &imp) {
  auto x = imp.input(0), grid = imp.input(1);
  if (failed(x) || failed(grid))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType()), gt = cast<RankedTensorType>(grid->getType());
  if (!xt.getElementType().isF32() || !gt.getElementType().isF32())
    return imp.fail("the input and the grid must be float32");
  auto xs = xt.getShape(), gs = gt.getShape();
  if (xs.size() != 4 || gs.size() != 4 || gs[0] != xs[0] || gs[3] != 2)
    return imp.fail("the input must be [N, C, H, W] and the grid [N, Ho, Wo, 2] (2-D sampling)");
  const auto *modeAttr = imp.attr("mode");
  const auto *padAttr = imp.attr("padding_mode");
  std::string mode = modeAttr ? modeAttr->s().substr(0, 40) : "bilinear";
  std::string padding = padAttr ? padAttr->s().substr(0, 40) : "zeros";
  if (mode != "bilinear" && mode != "nearest")
    return imp.fail("mode " + quoted(mode) + " is not supported (bilinear and nearest are)");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return imp.fail("padding_mode " + quoted(padding) + " is not supported");
  bool corners = imp.intAttr("align_corners", 0) != 0;
  int64_t n = xs[0], ch = xs[1], h = xs[2], w = xs[3], p = product({gs[1], gs[2]});
  int64_t gathered = product({n, p, ch});
  if (p < 0 || gathered < 0 || gathered > OTC_MAX_ELEMENTS || product({n, h, w}) < 0)
    return imp.fail("the sampled output exceeds the tensor size limit");

  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Sampler s{imp, b, loc};
  auto axisOf = [&](int64_t k) {
    Value part = SliceOp::create(b, loc, withShape(*grid, {n, gs[1], gs[2], 1}), *grid,
                                 b.getDenseI64ArrayAttr({0, 0, 0, k}),
                                 b.getDenseI64ArrayAttr({1, 1, 1, 1}));
    return reshaped(imp, part, {n, p});
  };
  Value ix = s.coordinate(axisOf(0), w, corners, padding);
  Value iy = s.coordinate(axisOf(1), h, corners, padding);
  // X's rows [N * H * W, C], one per pixel: a corner reads one row.
  auto rows = imp.create<TransposeOp>(reshaped(imp, *x, {n, ch, h * w}),
                                      b.getDenseI64ArrayAttr({0, 2, 1}));
  if (failed(rows))
    return failure();
  Value table = reshaped(imp, *rows, {n * h * w, ch});
  if (failed(checkFoldSize(imp, n))) // the images' row offsets are a constant
    return failure();
  HostTensor offsets{false, onnx::TensorProto::INT64, {n, 1}, {}};
  for (int64_t k = 0; k < n; ++k)
    offsets.values.push_back(double(k * h * w));
  Value offset = ConstantOp::create(b, loc, toAttr(b, offsets));
  Type i64 = b.getI64Type();
  // The pixel (xf, yf), integral floats, of each sample: [N, P, C], or 0
  // outside the image (a position past any tensor reads 0).
  auto corner = [&](Value xf, Value yf) -> Value {
    Value inside = s.op<AndOp>(s.cmp(xf, s.c(0), ComparePredicate::ge),
                               s.cmp(xf, s.c(double(w - 1)), ComparePredicate::le));
    inside = s.op<AndOp>(inside, s.cmp(yf, s.c(0), ComparePredicate::ge));
    inside = s.op<AndOp>(inside, s.cmp(yf, s.c(double(h - 1)), ComparePredicate::le));
    // Cast only in-range values (a NaN or huge one has no int64).
    auto toInt = [&](Value v) {
      Value safe = s.where(inside, v, s.c(0));
      return CastOp::create(b, loc, withShape(safe, {n, p}).clone(i64), safe).getResult();
    };
    Value pos = s.add(s.add(s.mul(toInt(yf), scalarConstant(b, loc, i64, double(w))), toInt(xf)),
                      offset);
    pos = s.where(inside, pos, scalarConstant(b, loc, i64, double(OTC_MAX_ELEMENTS)));
    auto got = imp.create<GatherOp>(table, pos, b.getI64IntegerAttr(0));
    s.broken |= failed(got);
    return succeeded(got) ? *got : table;
  };
  auto weighted = [&](Value v, Value weight) { return s.mul(v, reshaped(imp, weight, {n, p, 1})); };
  Value out;
  if (mode == "nearest") {
    out = corner(RoundOp::create(b, loc, ix), RoundOp::create(b, loc, iy));
  } else {
    Value xw = s.floor(ix), yn = s.floor(iy); // the north-west corner
    Value xe = s.add(xw, s.c(1)), ys = s.add(yn, s.c(1));
    Value nw = s.mul(s.sub(xe, ix), s.sub(ys, iy));
    Value ne = s.mul(s.sub(ix, xw), s.sub(ys, iy));
    Value sw = s.mul(s.sub(xe, ix), s.sub(iy, yn));
    Value se = s.mul(s.sub(ix, xw), s.sub(iy, yn));
    out = weighted(corner(xw, yn), nw);
    out = s.add(out, weighted(corner(xe, yn), ne));
    out = s.add(out, weighted(corner(xw, ys), sw));
    out = s.add(out, weighted(corner(xe, ys), se));
  }
  if (s.broken)
    return failure();
  auto planes = imp.create<TransposeOp>(out, b.getDenseI64ArrayAttr({0, 2, 1}));
  if (failed(planes))
    return failure();
  return imp.defineResult(reshaped(imp, *planes, {n, ch, gs[1], gs[2]}));
}

} // namespace otc
