// Conv, MaxPool, AveragePool and GlobalMaxPool on the window ops. A 1-D
// window is imported as a 2-D one with H = 1, a 3-D one composed of 2-D
// ones (conv3d, importPool). Conv is im2col and one
// batched matmul over the groups:
//   cols [C, KH, KW, N, OH, OW] -> [G, C/G * KH * KW, N * OH * OW]
//   W [M, C/G, KH, KW] -> [G, M/G, C/G * KH * KW]
//   y = W x cols -> [M, N, OH * OW] -> transposed to [N, M, OH, OW]
// so the weight gradient is one GEMM per group over all N * OH * OW columns.
// ConvTranspose runs the same pieces backward: a GEMM, then col2im.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

using namespace mlir;

namespace otc {
namespace {

using Imp = GraphImporter;

/// A window in its 2-D form, and the shapes around it.
struct Window {
  std::vector<int64_t> kernel, strides, pads, dilations;
  std::vector<int64_t> image; // the input as N x C x H x W
  std::vector<int64_t> out;   // the output's spatial dims, as the model has them
  int64_t oh = 0, ow = 0;
};

std::vector<int64_t> orDefault(std::vector<int64_t> v, size_t n, int64_t fallback) {
  return v.empty() ? std::vector<int64_t>(n, fallback) : v;
}

/// The pads of auto_pad SAME_UPPER / SAME_LOWER: the output is ceil(in / s).
void samePads(const std::vector<int64_t> &in, const Window &w, bool upper,
              std::vector<int64_t> &pads) {
  size_t n = in.size();
  for (size_t d = 0; d < n; ++d) {
    int64_t out = (in[d] + w.strides[d] - 1) / w.strides[d];
    int64_t need = (out - 1) * w.strides[d] + (w.kernel[d] - 1) * w.dilations[d] + 1 - in[d];
    int64_t total = std::max<int64_t>(need, 0);
    pads[d] = upper ? total / 2 : total - total / 2;
    pads[d + n] = total - pads[d];
  }
}

/// `y` viewed [n, m, spatial...] plus the optional bias (input 2, one per
/// output channel), as output 0: Conv's and ConvTranspose's ending.
LogicalResult defineWithBias(Imp &imp, Value y, int64_t n, int64_t m,
                             const std::vector<int64_t> &spatial) {
  std::vector<int64_t> outShape = {n, m};
  outShape.insert(outShape.end(), spatial.begin(), spatial.end());
  Value out = reshaped(imp, y, outShape);
  if (imp.numInputs() < 3 || imp.node().input(2).empty())
    return imp.defineResult(out);
  auto bias = imp.input(2);
  if (failed(bias))
    return failure();
  if (cast<RankedTensorType>(bias->getType()).getShape() != ArrayRef<int64_t>{m})
    return imp.fail("the bias must have shape [" + std::to_string(m) + "]");
  std::vector<int64_t> biasShape(outShape.size() - 1, 1);
  biasShape[0] = m;
  return imp.defineResult(imp.create<AddOp>(out, reshaped(imp, *bias, biasShape)));
}

/// A 1-D window's attributes as a 2-D one's with H = 1.
void asTwoD(Window &w) {
  w.kernel.insert(w.kernel.begin(), 1);
  w.strides.insert(w.strides.begin(), 1);
  w.dilations.insert(w.dilations.begin(), 1);
  w.pads = {0, w.pads[0], 0, w.pads[1]};
}

/// Checks a 2-D window (image, oh and ow set) as the window ops will.
LogicalResult checkGeometry(Imp &imp, const Window &w) {
  WindowGeometry g;
  std::string why = windowGeometry(w.image, w.kernel, w.strides, w.pads, w.dilations, w.oh,
                                   w.ow, g);
  return why.empty() ? success() : imp.fail(why);
}

/// Reads the current node's window attributes for input shape `x` and a
/// kernel of spatial size `kernel`. 1-D and 2-D windows come in their 2-D
/// form; a 3-D one (D, H, W) as read, its `image` and oh, ow unset: the
/// importers compose it of 2-D windows.
FailureOr<Window> readWindow(Imp &imp, ArrayRef<int64_t> x, std::vector<int64_t> kernel,
                             bool pooling) {
  if (x.size() < 3)
    return imp.fail("the input needs spatial dims after N and C");
  size_t n = x.size() - 2;
  if (n > 3)
    return imp.fail(std::to_string(n) + "-D windows are not supported (only 1-D to 3-D)");
  Window w;
  std::vector<int64_t> declared = imp.intsAttr("kernel_shape");
  if (!declared.empty() && declared != kernel)
    return imp.fail("kernel_shape does not match the weight's spatial dims");
  w.kernel = kernel;
  w.strides = orDefault(imp.intsAttr("strides"), n, 1);
  w.dilations = orDefault(imp.intsAttr("dilations"), n, 1);
  w.pads = orDefault(imp.intsAttr("pads"), 2 * n, 0);
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n ||
      w.pads.size() != 2 * n)
    return imp.fail("kernel_shape, strides and dilations need " + std::to_string(n) +
                    " entries and pads " + std::to_string(2 * n));
  for (size_t d = 0; d < n; ++d)
    if (w.kernel[d] < 1 || w.strides[d] < 1 || w.dilations[d] < 1)
      return imp.fail("kernel sizes, strides and dilations must be positive");
  const auto *autoPad = imp.attr("auto_pad");
  std::string mode = autoPad ? autoPad->s() : "NOTSET";
  std::vector<int64_t> spatial(x.begin() + 2, x.end());
  if (mode == "VALID")
    w.pads.assign(2 * n, 0);
  else if (mode == "SAME_UPPER" || mode == "SAME_LOWER")
    samePads(spatial, w, mode == "SAME_UPPER", w.pads);
  else if (mode != "NOTSET")
    return imp.fail("auto_pad " + quoted(mode.substr(0, 40)) + " is not supported");
  int64_t ceil = pooling ? imp.intAttr("ceil_mode", 0) : 0;
  for (size_t d = 0; d < n; ++d) {
    if (w.pads[d] < 0 || w.pads[d + n] < 0)
      return imp.fail("pads must not be negative");
    if (w.pads[d] > OTC_MAX_ELEMENTS || w.pads[d + n] > OTC_MAX_ELEMENTS ||
        w.kernel[d] > OTC_MAX_ELEMENTS || w.strides[d] > OTC_MAX_ELEMENTS ||
        w.dilations[d] > OTC_MAX_ELEMENTS / w.kernel[d])
      return imp.fail("window attributes exceed the tensor size limit");
    int64_t o = windowOutputSize(spatial[d], w.kernel[d], w.strides[d], w.pads[d],
                                 w.pads[d + n], w.dilations[d], ceil != 0);
    if (o < 1)
      return imp.fail("the kernel does not fit in the padded input");
    w.out.push_back(o);
  }
  if (n == 3)
    return w;
  if (n == 1) { // as 2-D with H = 1
    asTwoD(w);
    w.image = {x[0], x[1], 1, x[2]};
  } else {
    w.image = x.vec();
  }
  w.oh = n == 1 ? 1 : w.out[0];
  w.ow = w.out.back();
  if (failed(checkGeometry(imp, w)))
    return failure();
  return w;
}

/// A 3-D window's (H, W) part as a 2-D window over `image`.
Window planeOf(const Window &w, std::vector<int64_t> image) {
  Window p{{w.kernel[1], w.kernel[2]},
           {w.strides[1], w.strides[2]},
           {w.pads[1], w.pads[2], w.pads[4], w.pads[5]},
           {w.dilations[1], w.dilations[2]},
           std::move(image),
           {w.out[1], w.out[2]},
           w.out[1],
           w.out[2]};
  return p;
}

/// A 3-D window's D part as a 2-D window of width 1 over `image`
/// [N, C, D, L].
Window depthOf(const Window &w, std::vector<int64_t> image) {
  int64_t l = image[3];
  return Window{{w.kernel[0], 1}, {w.strides[0], 1}, {w.pads[0], 0, w.pads[3], 0},
                {w.dilations[0], 1}, std::move(image), {w.out[0], l}, w.out[0], l};
}

struct WindowAttrs {
  DenseI64ArrayAttr kernel, strides, pads, dilations;
};
WindowAttrs attrsOf(Imp &imp, const Window &w) {
  OpBuilder &b = imp.builder();
  return {b.getDenseI64ArrayAttr(w.kernel), b.getDenseI64ArrayAttr(w.strides),
          b.getDenseI64ArrayAttr(w.pads), b.getDenseI64ArrayAttr(w.dilations)};
}

/// The output shape [N, C, out...] of a pooling window.
std::vector<int64_t> pooledShape(ArrayRef<int64_t> x, const Window &w) {
  std::vector<int64_t> s = {x[0], x[1]};
  s.insert(s.end(), w.out.begin(), w.out.end());
  return s;
}

LogicalResult checkFloat32(Imp &imp, Value v) {
  if (!cast<RankedTensorType>(v.getType()).getElementType().isF32())
    return imp.fail("the input must be float32");
  return success();
}

} // namespace

namespace {

/// A 2-D convolution of `image` [N, C, H, W] by `filter` [M, C/G, KH, KW]
/// over window `w`: [N, M, OH, OW]. im2col and one batched GEMM over the
/// groups, or one otc.conv (--conv-op).
FailureOr<Value> conv2d(Imp &imp, Value image, Value filter, const Window &w, int64_t groups) {
  auto xs = cast<RankedTensorType>(image.getType()).getShape();
  int64_t n = xs[0], c = xs[1], m = cast<RankedTensorType>(filter.getType()).getDimSize(0);
  int64_t kh = w.kernel[0], kw = w.kernel[1], cg = c / groups;
  int64_t taps = product({cg, kh, kw}), cols = product({n, w.oh, w.ow});
  int64_t columns = product({c, kh, kw, n, w.oh, w.ow});
  int64_t outputs = product({n, m, w.oh, w.ow});
  if (outputs < 0 || outputs > OTC_MAX_ELEMENTS)
    return imp.fail("the output exceeds the tensor size limit");
  if (!imp.convAsOneOp() &&
      (taps < 0 || cols < 0 || columns < 0 || columns > OTC_MAX_ELEMENTS))
    return imp.fail("the im2col columns exceed the tensor size limit");
  OpBuilder &b = imp.builder();
  WindowAttrs a = attrsOf(imp, w);
  if (imp.convAsOneOp())
    return ConvOp::create(b, imp.loc(), withShape(image, {n, m, w.oh, w.ow}), image, filter,
                          a.kernel, a.strides, a.pads, a.dilations, b.getI64IntegerAttr(groups))
        .getResult();
  Value col = Im2ColOp::create(b, imp.loc(), withShape(image, {c, kh, kw, n, w.oh, w.ow}),
                               image, a.kernel, a.strides, a.pads, a.dilations);
  col = reshaped(imp, col, {groups, taps, cols});
  Value weight = reshaped(imp, filter, {groups, m / groups, taps});
  auto y = imp.create<MatMulOp>(weight, col);
  if (failed(y))
    return failure();
  Value flat = reshaped(imp, *y, {m, n, w.oh * w.ow});
  auto t = imp.create<TransposeOp>(flat, b.getDenseI64ArrayAttr({1, 0, 2}));
  if (failed(t))
    return failure();
  return reshaped(imp, *t, {n, m, w.oh, w.ow});
}

/// A 3-D convolution as a 2-D one over depth-unfolded channels: x padded
/// along D and its KD taps gathered for each output plane, [N, C, KD, OD,
/// H, W], then moved into the channels as [N * OD, G, KD, C/G] (a group's
/// channels together); the filter's taps beside its channels, [M, KD *
/// C/G, KH, KW]. The gather's gradient is the scatter-add of the taps.
LogicalResult conv3d(Imp &imp, Value x, Value wt, const Window &w, int64_t groups) {
  auto xs = cast<RankedTensorType>(x.getType()).getShape();
  auto ws = cast<RankedTensorType>(wt.getType()).getShape();
  int64_t n = xs[0], c = xs[1], h = xs[3], wd = xs[4], m = ws[0], cg = c / groups;
  int64_t kd = w.kernel[0], od = w.out[0];
  int64_t unfolded = product({n, c, kd, od, h, wd});
  int64_t paddedCount = product({n, c, xs[2] + w.pads[0] + w.pads[3], h, wd});
  if (unfolded < 0 || unfolded > OTC_MAX_ELEMENTS || paddedCount < 0 ||
      paddedCount > OTC_MAX_ELEMENTS)
    return imp.fail("the input unfolded along its depth exceeds the tensor size limit");
  Window plane = planeOf(w, {n * od, kd * c, h, wd});
  if (failed(checkGeometry(imp, plane)))
    return failure();
  if (failed(checkFoldSize(imp, kd * od))) // the taps' positions are a constant
    return failure();
  auto padded = zeroPadded(imp, x, 2, w.pads[0], w.pads[3]);
  if (failed(padded))
    return failure();
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < kd; ++i)
    for (int64_t o = 0; o < od; ++o)
      positions.push_back(o * w.strides[0] + i * w.dilations[0]);
  auto taps = gatherAt(imp, *padded, 2, positions);
  if (failed(taps))
    return failure();
  OpBuilder &b = imp.builder();
  auto moved = imp.create<TransposeOp>(reshaped(imp, *taps, {n, groups, cg, kd, od, h, wd}),
                                       b.getDenseI64ArrayAttr({0, 4, 1, 3, 2, 5, 6}));
  auto filter = imp.create<TransposeOp>(wt, b.getDenseI64ArrayAttr({0, 2, 1, 3, 4}));
  if (failed(moved) || failed(filter))
    return failure();
  auto y = conv2d(imp, reshaped(imp, *moved, plane.image),
                  reshaped(imp, *filter, {m, kd * cg, w.kernel[1], w.kernel[2]}), plane, groups);
  if (failed(y))
    return failure();
  auto back = imp.create<TransposeOp>(reshaped(imp, *y, {n, od, m, plane.oh * plane.ow}),
                                      b.getDenseI64ArrayAttr({0, 2, 1, 3}));
  if (failed(back))
    return failure();
  return defineWithBias(imp, *back, n, m, w.out);
}

} // namespace

LogicalResult importConv(Imp &imp) {
  auto x = imp.input(0), wt = imp.input(1);
  if (failed(x) || failed(wt) || failed(checkFloat32(imp, *x)) || failed(checkFloat32(imp, *wt)))
    return failure();
  auto xs = cast<RankedTensorType>(x->getType()).getShape();
  auto ws = cast<RankedTensorType>(wt->getType()).getShape();
  if (ws.size() != xs.size() || xs.size() < 3)
    return imp.fail("the weight must have the input's rank, with spatial dims");
  int64_t groups = imp.intAttr("group", 1), c = xs[1], m = ws[0];
  if (groups < 1 || c % groups != 0 || m % groups != 0 || ws[1] != c / groups)
    return imp.fail("group " + std::to_string(groups) + " does not divide " +
                    std::to_string(c) + " input channels into the weight's " +
                    std::to_string(ws[1]) + " and " + std::to_string(m) + " outputs");
  auto w = readWindow(imp, xs, std::vector<int64_t>(ws.begin() + 2, ws.end()), false);
  if (failed(w))
    return failure();
  if (w->kernel.size() == 3)
    return conv3d(imp, *x, *wt, *w, groups);
  auto y = conv2d(imp, reshaped(imp, *x, w->image),
                  reshaped(imp, *wt, {m, c / groups, w->kernel[0], w->kernel[1]}), *w, groups);
  if (failed(y))
    return failure();
  return defineWithBias(imp, *y, xs[0], m, w->out);
}

namespace {

/// A 2-D transposed convolution of `x` [N, C, IH, IW] by `filter` [C,
/// M/G, KH, KW] over window `w` (its image the output, [N, M, OH, OW], and
/// oh, ow the input's plane): per group one batched GEMM of the filter's
/// transpose with x gives columns [M, KH, KW, N, IH, IW], which col2im
/// scatters into the output image.
FailureOr<Value> convTranspose2d(Imp &imp, Value x, Value filter, const Window &w,
                                 int64_t groups) {
  if (failed(checkGeometry(imp, w)))
    return failure();
  int64_t batch = w.image[0], m = w.image[1], c = cast<RankedTensorType>(x.getType()).getDimSize(1), cg = c / groups;
  int64_t ih = w.oh, iw = w.ow, kh = w.kernel[0], kw = w.kernel[1];
  int64_t taps = product({m / groups, kh, kw}), columns = product({m, kh, kw, batch, ih, iw});
  if (taps < 0 || columns < 0 || columns > OTC_MAX_ELEMENTS || product(w.image) < 0 ||
      product(w.image) > OTC_MAX_ELEMENTS)
    return imp.fail("the columns exceed the tensor size limit");
  OpBuilder &b = imp.builder();
  auto xc = imp.create<TransposeOp>(reshaped(imp, x, {batch, c, ih * iw}),
                                    b.getDenseI64ArrayAttr({1, 0, 2}));
  auto weight = imp.create<TransposeOp>(reshaped(imp, filter, {groups, cg, taps}),
                                        b.getDenseI64ArrayAttr({0, 2, 1}));
  if (failed(xc) || failed(weight))
    return failure();
  auto cols = imp.create<MatMulOp>(*weight, reshaped(imp, *xc, {groups, cg, batch * ih * iw}));
  if (failed(cols))
    return failure();
  WindowAttrs a = attrsOf(imp, w);
  Value col = reshaped(imp, *cols, {m, kh, kw, batch, ih, iw});
  return Col2ImOp::create(b, imp.loc(), withShape(col, w.image), col, a.kernel, a.strides,
                          a.pads, a.dilations)
      .getResult();
}

/// A 3-D transposed convolution: a 2-D one of each input plane into M * KD
/// channels (the filter's depth taps beside its outputs), whose taps then
/// add into the output planes they reach, od = id * SD + i * DD - PD
/// (gather_grad, a scatter-add along D, into the padded length, then the
/// output's planes sliced out). Conv3d's composition, run backward.
LogicalResult convTranspose3d(Imp &imp, Value x, Value wt, const Window &w, int64_t groups) {
  auto xs = cast<RankedTensorType>(x.getType()).getShape();
  auto ws = cast<RankedTensorType>(wt.getType()).getShape();
  int64_t n = xs[0], c = xs[1], d = xs[2], h = xs[3], wd = xs[4];
  int64_t m = ws[1] * groups, kd = w.kernel[0], od = w.out[0];
  int64_t reach = (d - 1) * w.strides[0] + (kd - 1) * w.dilations[0] + 1;
  int64_t full = std::max(reach, w.pads[0] + od), plane = product({w.out[1], w.out[2]});
  int64_t spread = product({n, m, kd, d, plane}), scattered = product({n, m, full, plane});
  if (plane < 0 || spread < 0 || spread > OTC_MAX_ELEMENTS || scattered < 0 ||
      scattered > OTC_MAX_ELEMENTS)
    return imp.fail("the output's depth taps exceed the tensor size limit");
  Window p = planeOf(w, {n * d, m * kd, w.out[1], w.out[2]});
  p.oh = h, p.ow = wd; // a transposed window's columns are the input's plane
  OpBuilder &b = imp.builder();
  auto planes = imp.create<TransposeOp>(x, b.getDenseI64ArrayAttr({0, 2, 1, 3, 4}));
  if (failed(planes))
    return failure();
  auto z = convTranspose2d(imp, reshaped(imp, *planes, {n * d, c, h, wd}),
                           reshaped(imp, wt, {c, m / groups * kd, w.kernel[1], w.kernel[2]}), p,
                           groups);
  if (failed(z))
    return failure();
  auto taps = imp.create<TransposeOp>(reshaped(imp, *z, {n, d, m, kd, plane}),
                                      b.getDenseI64ArrayAttr({0, 2, 3, 1, 4}));
  if (failed(taps))
    return failure();
  if (failed(checkFoldSize(imp, kd * d))) // the taps' positions are a constant
    return failure();
  HostTensor at{false, onnx::TensorProto::INT64, {kd * d}, {}};
  for (int64_t i = 0; i < kd; ++i)
    for (int64_t k = 0; k < d; ++k)
      at.values.push_back(double(k * w.strides[0] + i * w.dilations[0]));
  Value indices = ConstantOp::create(b, imp.loc(), toAttr(b, at));
  Value summed = GatherGradOp::create(b, imp.loc(), withShape(*taps, {n, m, full, plane}),
                                      reshaped(imp, *taps, {n, m, kd * d, plane}), indices,
                                      b.getI64IntegerAttr(2));
  Value out = SliceOp::create(b, imp.loc(), withShape(summed, {n, m, od, plane}), summed,
                              b.getDenseI64ArrayAttr({0, 0, w.pads[0], 0}),
                              b.getDenseI64ArrayAttr({1, 1, 1, 1}));
  return defineWithBias(imp, out, n, m, w.out);
}

} // namespace

/// ConvTranspose: conv's input gradient, so the same pieces run backward.
/// With x [N, C, H, W] and the weight [C, M/G, KH, KW],
///   cols = W_gᵀ x_g -> [M, KH, KW, N, H, W], and y = col2im(cols)
/// scatters each column into the output image [N, M, OH, OW] through the
/// window that a conv of y would read, so its gradient is im2col and a GEMM.
LogicalResult importConvTranspose(Imp &imp) {
  auto x = imp.input(0), wt = imp.input(1);
  if (failed(x) || failed(wt) || failed(checkFloat32(imp, *x)) || failed(checkFloat32(imp, *wt)))
    return failure();
  auto xs = cast<RankedTensorType>(x->getType()).getShape();
  auto ws = cast<RankedTensorType>(wt->getType()).getShape();
  if (ws.size() != xs.size() || xs.size() < 3)
    return imp.fail("the weight must have the input's rank, with spatial dims");
  size_t n = xs.size() - 2;
  if (n > 3)
    return imp.fail(std::to_string(n) + "-D windows are not supported (only 1-D to 3-D)");
  int64_t groups = imp.intAttr("group", 1), c = xs[1];
  if (groups < 1 || c < 1 || groups > c || c % groups != 0 || ws[0] != c)
    return imp.fail("the weight needs the input's " + std::to_string(c) +
                    " channels first, in groups of " + std::to_string(groups));
  int64_t m = ws[1] * groups;
  Window w;
  w.kernel.assign(ws.begin() + 2, ws.end());
  std::vector<int64_t> declared = imp.intsAttr("kernel_shape");
  if (!declared.empty() && declared != w.kernel)
    return imp.fail("kernel_shape does not match the weight's spatial dims");
  w.strides = orDefault(imp.intsAttr("strides"), n, 1);
  w.dilations = orDefault(imp.intsAttr("dilations"), n, 1);
  w.pads = orDefault(imp.intsAttr("pads"), 2 * n, 0);
  std::vector<int64_t> extra = orDefault(imp.intsAttr("output_padding"), n, 0);
  std::vector<int64_t> wanted = imp.intsAttr("output_shape");
  if (w.strides.size() != n || w.dilations.size() != n || w.pads.size() != 2 * n ||
      extra.size() != n || (!wanted.empty() && wanted.size() != n))
    return imp.fail("strides, dilations, output_padding and output_shape need " +
                    std::to_string(n) + " entries and pads " + std::to_string(2 * n));
  const auto *autoPad = imp.attr("auto_pad");
  std::string mode = autoPad ? autoPad->s().substr(0, 40) : "NOTSET";
  if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER")
    return imp.fail("auto_pad " + quoted(mode) + " is not supported");
  for (int64_t v : wanted)
    if (v < 1 || v > OTC_MAX_ELEMENTS)
      return imp.fail("output_shape entries must be from 1 to 2^36");
  std::vector<int64_t> in(xs.begin() + 2, xs.end());
  for (size_t d = 0; d < n; ++d) {
    for (int64_t v : {w.kernel[d], w.strides[d], w.dilations[d], extra[d], w.pads[d], w.pads[d + n]})
      if (v < 0 || v > 1 << 20)
        return imp.fail("window attributes must be non-negative and below 2^20");
    if (w.kernel[d] < 1 || w.strides[d] < 1 || w.dilations[d] < 1)
      return imp.fail("kernel sizes, strides and dilations must be positive");
    if (extra[d] >= std::max(w.strides[d], w.dilations[d]))
      return imp.fail("output_padding must be below the stride or the dilation");
    int64_t full = w.strides[d] * (in[d] - 1) + extra[d] + (w.kernel[d] - 1) * w.dilations[d] + 1;
    if (mode == "VALID")
      w.pads[d] = w.pads[d + n] = 0;
    if (!wanted.empty() || mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      int64_t target = wanted.empty() ? in[d] * w.strides[d] : wanted[d];
      // An output past the columns' reach ends in zeros (ONNX's reference).
      int64_t total = std::max<int64_t>(full - target, 0);
      w.pads[d] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pads[d + n] = total - w.pads[d];
      full = std::max(full, target);
    }
    int64_t o = full - w.pads[d] - w.pads[d + n];
    if (o < 1)
      return imp.fail("the pads leave no output");
    // A conv of the output must read back exactly the input's positions:
    // more output_padding or output_shape than a stride's reach is refused.
    if (windowOutputSize(o, w.kernel[d], w.strides[d], w.pads[d], w.pads[d + n], w.dilations[d],
                         false) != in[d])
      return imp.fail("output_padding or output_shape reach past the last input position's "
                      "columns by a stride or more, which is not supported");
    w.out.push_back(o);
  }
  if (n == 3)
    return convTranspose3d(imp, *x, *wt, w, groups);
  if (n == 1)
    asTwoD(w);
  int64_t batch = xs[0];
  w.image = {batch, m, n == 1 ? 1 : w.out[0], w.out.back()};
  w.oh = n == 1 ? 1 : in[0];
  w.ow = in.back();
  auto y = convTranspose2d(imp, reshaped(imp, *x, {batch, c, w.oh, w.ow}),
                           reshaped(imp, *wt, {c, m / groups, w.kernel[0], w.kernel[1]}), w,
                           groups);
  if (failed(y))
    return failure();
  return defineWithBias(imp, *y, batch, m, w.out);
}

namespace {

/// MaxPool (`Max`) or AveragePool of `image` [N, C, H, W] over 2-D window
/// `w`: [N, C, OH, OW].
template <bool Max>
FailureOr<Value> pool2d(Imp &imp, Value image, const Window &w) {
  OpBuilder &b = imp.builder();
  WindowAttrs a = attrsOf(imp, w);
  auto xs = cast<RankedTensorType>(image.getType()).getShape();
  auto type = withShape(image, {xs[0], xs[1], w.oh, w.ow});
  if constexpr (Max) {
    auto idx = RankedTensorType::get(type.getShape(), b.getI64Type());
    return MaxPoolOp::create(b, imp.loc(), type, idx, image, a.kernel, a.strides, a.pads,
                             a.dilations)
        .getResult();
  } else {
    bool countPad = imp.intAttr("count_include_pad", 0) != 0;
    return AvgPoolOp::create(b, imp.loc(), type, image, a.kernel, a.strides, a.pads, a.dilations,
                             b.getBoolAttr(countPad))
        .getResult();
  }
}

} // namespace

/// MaxPool (`Max`) or AveragePool on a window read from the node, or the
/// global forms (`global`: the kernel is the whole flattened plane). A 3-D
/// window is separable: the (H, W) window over each depth plane, then the
/// D window (KD x 1) over the planes' results. A max of maxes keeps the
/// first maximum in (d, h, w) order, and a mean of means counts the padding
/// per axis, as one 3-D window does.
template <bool Max, bool Global>
LogicalResult importPool(Imp &imp) {
  bool indices = Max && imp.node().output_size() > 1 && !imp.node().output(1).empty();
  auto x = imp.input(0);
  if (failed(x) || failed(checkFloat32(imp, *x)))
    return failure();
  auto xs = cast<RankedTensorType>(x->getType()).getShape();
  FailureOr<Window> w;
  std::vector<int64_t> outShape;
  if (Global) {
    if (xs.size() < 3)
      return imp.fail("the input needs spatial dims after N and C");
    int64_t plane = product(xs.drop_front(2));
    w = Window{{1, plane}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {xs[0], xs[1], 1, plane}, {1}, 1, 1};
    outShape = {xs[0], xs[1]};
    outShape.resize(xs.size(), 1);
  } else {
    std::vector<int64_t> k = imp.intsAttr("kernel_shape");
    if (k.empty())
      return imp.fail("kernel_shape is required");
    w = readWindow(imp, xs, k, true);
    if (failed(w))
      return failure();
    outShape = pooledShape(xs, *w);
  }
  if (!Max && llvm::any_of(w->dilations, [](int64_t d) { return d != 1; }))
    return imp.fail("dilations are not supported for average pooling");
  if (w->kernel.size() == 3) {
    if (indices)
      return imp.fail("the Indices output of a 3-D window is not supported");
    Window plane = planeOf(*w, {xs[0], xs[1] * xs[2], xs[3], xs[4]});
    int64_t pooled = product({plane.oh, plane.ow}), between = product({xs[0], xs[1] * xs[2], pooled});
    if (pooled < 0 || between < 0 || between > OTC_MAX_ELEMENTS)
      return imp.fail("the planes pooled before the depth exceed the tensor size limit");
    Window depth = depthOf(*w, {xs[0], xs[1], xs[2], pooled});
    if (failed(checkGeometry(imp, plane)) || failed(checkGeometry(imp, depth)))
      return failure();
    auto y = pool2d<Max>(imp, reshaped(imp, *x, plane.image), plane);
    if (failed(y))
      return failure();
    y = pool2d<Max>(imp, reshaped(imp, *y, depth.image), depth);
    if (failed(y))
      return failure();
    return imp.defineResult(reshaped(imp, *y, outShape));
  }
  auto y = pool2d<Max>(imp, reshaped(imp, *x, w->image), *w);
  if (failed(y))
    return failure();
  if constexpr (Max) {
    if (!indices)
      return imp.defineResult(reshaped(imp, *y, outShape));
    // ONNX's Indices count over the whole tensor, [0, N x C x H x W): the
    // plane's ih * W + iw (padding not counted; iw * H + ih with
    // storage_order 1) plus the plane's offset.
    int64_t n = w->image[0], c = w->image[1], plane = w->image[2] * w->image[3];
    if (failed(checkFoldSize(imp, n * c)))
      return failure();
    HostTensor offsets{false, onnx::TensorProto::INT64, {n, c, 1, 1}, {}};
    for (int64_t k = 0; k < n * c; ++k)
      offsets.values.push_back(double(k * plane));
    OpBuilder &b = imp.builder();
    Value at = cast<MaxPoolOp>(y->getDefiningOp()).getIndices();
    if (imp.intAttr("storage_order", 0) != 0) { // column-major: iw * H + ih
      int64_t h = w->image[2], width = w->image[3];
      Type i64 = b.getI64Type();
      auto row = imp.create<DivOp>(at, scalarConstant(b, imp.loc(), i64, double(width)));
      if (failed(row))
        return failure();
      auto whole = imp.create<MulOp>(*row, scalarConstant(b, imp.loc(), i64, double(width)));
      if (failed(whole))
        return failure();
      auto col = imp.create<SubOp>(at, *whole);
      if (failed(col))
        return failure();
      auto moved = imp.create<MulOp>(*col, scalarConstant(b, imp.loc(), i64, double(h)));
      if (failed(moved))
        return failure();
      auto sum = imp.create<AddOp>(*moved, *row);
      if (failed(sum))
        return failure();
      at = *sum;
    }
    auto flat = imp.create<AddOp>(at, ConstantOp::create(b, imp.loc(), toAttr(b, offsets)));
    if (failed(flat))
      return failure();
    imp.define(1, reshaped(imp, *flat, outShape));
  }
  return imp.defineResult(reshaped(imp, *y, outShape));
}

LogicalResult importMaxPool(Imp &imp) { return importPool<true, false>(imp); }
LogicalResult importAveragePool(Imp &imp) { return importPool<false, false>(imp); }
LogicalResult importGlobalMaxPool(Imp &imp) { return importPool<true, true>(imp); }

} // namespace otc
