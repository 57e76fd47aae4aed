// Resize (and Upsample, its opset 7-9 form) as separable resampling: along
// each resized axis, every output position reads a few input positions
// (taps) with constant weights, so the axis is sum over taps t of
// gather(x, index_t) * weight_t. Nearest is one tap, linear two, cubic
// four; the gradient is gather's scatter-add. Indices and weights follow
// ONNX's reference: the coordinate transformation maps an output position
// to an input coordinate, and taps past the edge read the edge.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace otc {

using Imp = GraphImporter;

namespace {

std::string stringAttr(Imp &imp, llvm::StringRef name, std::string fallback) {
  const onnx::AttributeProto *a = imp.attr(name);
  return a ? a->s().substr(0, 40) : fallback;
}

/// What maps an output position of one axis to taps of the input.
struct AxisResize {
  int64_t in, out;
  double scale;
  double length; // in * scale, not rounded (ONNX's length_resized)
  double roiStart = 0, roiEnd = 1;
};

struct Options {
  std::string mode, transform, nearest;
  double cubicA;
  bool excludeOutside;
};

/// The input coordinate of output position `o` (ONNX's
/// coordinate_transformation_mode).
double originalCoordinate(const Options &opt, const AxisResize &a, int64_t o) {
  double x = double(o), in = double(a.in), out = a.length;
  const std::string &t = opt.transform;
  if (t == "half_pixel")
    return (x + 0.5) / a.scale - 0.5;
  if (t == "pytorch_half_pixel")
    return a.out > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
  if (t == "align_corners")
    return out == 1 ? 0.0 : x * (in - 1) / (out - 1);
  if (t == "asymmetric")
    return x / a.scale;
  if (t == "tf_half_pixel_for_nn")
    return (x + 0.5) / a.scale;
  if (t == "half_pixel_symmetric") {
    double adjustment = double(a.out) / out, offset = in / 2 * (1 - adjustment);
    return offset + (x + 0.5) / a.scale - 0.5;
  }
  // tf_crop_and_resize
  return a.out > 1 ? a.roiStart * (in - 1) + x * (a.roiEnd - a.roiStart) * (in - 1) / (out - 1)
                   : 0.5 * (a.roiStart + a.roiEnd) * (in - 1);
}

int64_t nearestIndex(const std::string &mode, double x) {
  double f = std::floor(x);
  if (mode == "floor")
    return int64_t(f);
  if (mode == "ceil")
    return int64_t(std::ceil(x));
  if (x - f == 0.5)
    return int64_t(mode == "round_prefer_ceil" ? f + 1 : f);
  return int64_t(std::round(x));
}

/// Per tap, the input index and weight of every output position, and
/// whether a position lies outside the input (tf_crop_and_resize's
/// extrapolation).
struct Taps {
  std::vector<std::vector<int64_t>> index;
  std::vector<std::vector<double>> weight;
  std::vector<bool> outside;
};

Taps tapsOf(const Options &opt, const AxisResize &a) {
  int taps = opt.mode == "nearest" ? 1 : opt.mode == "linear" ? 2 : 4;
  Taps t{std::vector<std::vector<int64_t>>(taps), std::vector<std::vector<double>>(taps), {}};
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, a.in - 1); };
  for (int64_t o = 0; o < a.out; ++o) {
    double x = originalCoordinate(opt, a, o);
    t.outside.push_back(opt.transform == "tf_crop_and_resize" && (x < 0 || x > double(a.in - 1)));
    // Every tap past the input's ends reads the edge, so a coordinate far
    // outside (hostile scales or roi) reads as one a few positions out,
    // whose floor an int64 holds; NaN reads position 0.
    x = std::isnan(x) ? 0.0 : std::clamp(x, -4.0, double(a.in) + 4.0);
    if (taps == 1) {
      t.index[0].push_back(clamp(nearestIndex(opt.nearest, x)));
      t.weight[0].push_back(1.0);
      continue;
    }
    int64_t base = int64_t(std::floor(x));
    double r = x - double(base);
    std::vector<double> w;
    if (taps == 2) {
      w = {1 - r, r};
    } else {
      double A = opt.cubicA, s = 1 - r;
      w = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
           ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * s - (A + 3)) * s * s + 1,
           ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
      base -= 1;
    }
    if (opt.excludeOutside) {
      double kept = 0;
      for (int k = 0; k < taps; ++k) {
        if (base + k < 0 || base + k >= a.in)
          w[k] = 0;
        kept += w[k];
      }
      for (double &v : w)
        v = kept != 0 ? v / kept : 0;
    }
    for (int k = 0; k < taps; ++k) {
      t.index[k].push_back(clamp(base + k));
      t.weight[k].push_back(w[k]);
    }
  }
  return t;
}

/// A constant of `values` laid along dim `d` of a rank-`rank` tensor.
Value alongDim(Imp &imp, int type, const std::vector<double> &values, int64_t rank, int64_t d) {
  HostTensor t{type == onnx::TensorProto::FLOAT, type, std::vector<int64_t>(rank, 1), values};
  t.shape[d] = int64_t(values.size());
  return ConstantOp::create(imp.builder(), imp.loc(), toAttr(imp.builder(), t));
}

/// `v` resampled along dim `d` by `taps`.
FailureOr<Value> resampled(Imp &imp, Value v, int64_t d, const Taps &taps, double extrapolation) {
  OpBuilder &b = imp.builder();
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  Type elem = getElementTypeOrSelf(v.getType());
  FailureOr<Value> sum = failure();
  for (size_t k = 0; k < taps.index.size(); ++k) {
    if (llvm::all_of(taps.weight[k], [](double w) { return w == 0; }))
      continue;
    auto g = gatherAt(imp, v, d, taps.index[k]);
    if (succeeded(g) && llvm::any_of(taps.weight[k], [](double w) { return w != 1; }))
      g = imp.create<MulOp>(*g, castElements(b, imp.loc(), alongDim(imp, onnx::TensorProto::FLOAT,
                                                                    taps.weight[k], rank, d),
                                             elem));
    if (failed(g))
      return failure();
    sum = failed(sum) ? g : imp.create<AddOp>(*sum, *g);
    if (failed(sum))
      return failure();
  }
  if (failed(sum)) // every weight 0 (an excluded cubic of one input)
    sum = imp.create<MulOp>(v, scalarConstant(b, imp.loc(), elem, 0.0));
  if (succeeded(sum) && llvm::is_contained(taps.outside, true)) {
    std::vector<double> mask(taps.outside.begin(), taps.outside.end());
    Value fill = scalarConstant(b, imp.loc(), elem, extrapolation);
    sum = imp.create<WhereOp>(alongDim(imp, onnx::TensorProto::BOOL, mask, rank, d), fill, *sum);
  }
  return sum;
}

/// A float or int list from compile-time input `i`; empty when omitted.
FailureOr<std::vector<double>> listInput(Imp &imp, size_t i, llvm::StringRef what) {
  if (imp.numInputs() <= i || imp.node().input(i).empty())
    return std::vector<double>{};
  const HostTensor *t = imp.constantInput(i);
  if (!t) {
    (void)imp.fail(("the " + what + " must be compile-time constants").str());
    return failure();
  }
  return t->values;
}

} // namespace

LogicalResult importResize(Imp &imp) {
  bool upsample = imp.node().op_type() == "Upsample";
  Options opt{stringAttr(imp, "mode", "nearest"),
              stringAttr(imp, "coordinate_transformation_mode",
                         upsample || imp.form() < 11 ? "asymmetric" : "half_pixel"),
              stringAttr(imp, "nearest_mode", upsample || imp.form() < 11 ? "floor" : "round_prefer_floor"),
              imp.floatAttr("cubic_coeff_a", -0.75), imp.intAttr("exclude_outside", 0) != 0};
  if (opt.mode != "nearest" && opt.mode != "linear" && opt.mode != "cubic")
    return imp.fail("mode " + quoted(opt.mode) + " is not supported (nearest, linear or cubic)");
  static const char *kTransforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                      "asymmetric", "tf_half_pixel_for_nn", "half_pixel_symmetric",
                                      "tf_crop_and_resize"};
  if (!llvm::is_contained(kTransforms, opt.transform))
    return imp.fail("coordinate_transformation_mode " + quoted(opt.transform) + " is unknown");
  static const char *kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (!llvm::is_contained(kNearest, opt.nearest))
    return imp.fail("nearest_mode " + quoted(opt.nearest) + " is unknown");
  if (imp.intAttr("antialias", 0) != 0)
    return imp.fail("antialias is not supported");
  if (stringAttr(imp, "keep_aspect_ratio_policy", "stretch") != "stretch")
    return imp.fail("keep_aspect_ratio_policy other than stretch is not supported");
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  int64_t rank = shape.size();
  std::vector<int64_t> axes;
  for (int64_t a : imp.intsAttr("axes")) {
    if (a < -rank || a >= rank || llvm::is_contained(axes, a < 0 ? a + rank : a))
      return imp.fail("axes must be distinct and within the rank");
    axes.push_back(a < 0 ? a + rank : a);
  }
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  // Scales (Upsample's attribute, or input 1 before opset 11, else input 2)
  // or sizes (input 3).
  bool old = upsample || imp.form() < 11;
  FailureOr<std::vector<double>> scales = std::vector<double>();
  if (upsample && imp.form() < 9) {
    if (const onnx::AttributeProto *a = imp.attr("scales"))
      scales->assign(a->floats().begin(), a->floats().end());
  } else {
    scales = listInput(imp, old ? 1 : 2, "scales");
  }
  auto sizes = old ? FailureOr<std::vector<double>>(std::vector<double>()) : listInput(imp, 3, "sizes");
  auto roi = old ? FailureOr<std::vector<double>>(std::vector<double>()) : listInput(imp, 1, "roi");
  if (failed(scales) || failed(sizes) || failed(roi))
    return failure();
  if (scales->empty() == sizes->empty())
    return imp.fail("exactly one of scales and sizes must be given");
  size_t n = axes.size();
  if (!scales->empty() && scales->size() != n)
    return imp.fail("scales has " + std::to_string(scales->size()) + " entries for " +
                    std::to_string(n) + " axes");
  if (!sizes->empty() && sizes->size() != n)
    return imp.fail("sizes has " + std::to_string(sizes->size()) + " entries for " +
                    std::to_string(n) + " axes");
  if (opt.transform == "tf_crop_and_resize" && roi->size() != 2 * n)
    return imp.fail("tf_crop_and_resize needs a roi of 2 entries per axis");
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  if (opt.mode != "nearest" && !isa<FloatType>(getElementTypeOrSelf(x->getType())))
    return imp.fail("a " + opt.mode + " resize of integers is not supported");
  Value v = *x;
  for (size_t i = 0; i < n; ++i) {
    AxisResize a{shape[axes[i]], 0, 0, 0};
    double out;
    if (!sizes->empty()) {
      out = (*sizes)[i];
      a.scale = a.in ? out / double(a.in) : 1.0;
    } else {
      a.scale = (*scales)[i];
      if (!(a.scale > 0) || !std::isfinite(a.scale))
        return imp.fail("scale " + std::to_string(a.scale) + " must be positive and finite");
      out = std::floor(double(a.in) * a.scale);
    }
    // The index and weight tables hold a few entries per output position.
    if (!(out >= 1) || a.in < 1 || out > double(OTC_MAX_ELEMENTS))
      return imp.fail("axis " + std::to_string(axes[i]) + " of " + std::to_string(a.in) +
                      " would resize to less than 1 or more than 2^36");
    a.out = int64_t(out);
    if (failed(checkFoldSize(imp, 4 * a.out)))
      return failure();
    a.length = double(a.in) * a.scale;
    if (!roi->empty() && opt.transform == "tf_crop_and_resize") {
      a.roiStart = (*roi)[i];
      a.roiEnd = (*roi)[i + n];
    }
    // At scale 1 every transform but these maps a position to itself.
    if (a.out == a.in && a.scale == 1.0 && opt.transform != "tf_crop_and_resize" &&
        opt.transform != "tf_half_pixel_for_nn")
      continue;
    auto r = resampled(imp, v, axes[i], tapsOf(opt, a), imp.floatAttr("extrapolation_value", 0.0));
    if (failed(r))
      return failure();
    v = *r;
  }
  return imp.defineResult(v);
}

} // namespace otc
