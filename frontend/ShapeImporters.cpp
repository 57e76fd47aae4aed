// Views and copies: transpose, reshape, slices, splits, broadcasts, pads,
// tiles, concatenation, squeezes; on the host when the input is constant.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <cmath>

#include <variant>

using namespace mlir;

namespace otc {

using Imp = GraphImporter;

/// Transpose, on the host when constant (a pads list reshaped to pairs).
LogicalResult importTranspose(Imp &imp) {
  std::vector<int64_t> in;
  if (failed(shapeOfInput(imp, 0, in)))
    return failure();
  int64_t rank = in.size();
  std::vector<int64_t> perm = imp.intsAttr("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (const HostTensor *c = imp.constantInput(0)) {
    std::vector<int64_t> sorted = perm;
    llvm::sort(sorted);
    for (int64_t d = 0; d < rank; ++d)
      if (int64_t(sorted.size()) != rank || sorted[d] != d)
        return imp.fail("perm is not a permutation of the input's dims");
    HostTensor t = *c;
    std::vector<int64_t> strides = stridesOf(in);
    for (int64_t d = 0; d < rank; ++d)
      t.shape[d] = in[perm[d]];
    for (int64_t i = 0; i < t.numElements(); ++i) {
      int64_t rest = i, at = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        at += rest % t.shape[d] * strides[perm[d]];
        rest /= t.shape[d];
      }
      t.values[i] = c->values[at];
    }
    return imp.define(0, std::move(t));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  return imp.defineResult(
      imp.create<TransposeOp>(*x, imp.builder().getDenseI64ArrayAttr(perm)));
}

LogicalResult importReshape(Imp &imp) {
  const HostTensor *shapeT = imp.constantInput(1);
  if (!shapeT)
    return imp.fail("the target shape must be a compile-time constant");
  std::vector<int64_t> in, shape = shapeT->asInts();
  if (failed(shapeOfInput(imp, 0, in)))
    return failure();
  bool allowZero = imp.intAttr("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (i >= in.size())
        return imp.fail("shape entry 0 copies a dimension the input lacks");
      shape[i] = in[i];
    }
    if (shape[i] < -1)
      return imp.fail("the target shape has a negative entry " + std::to_string(shape[i]));
    if (shape[i] == -1) {
      if (inferred >= 0)
        return imp.fail("the target shape has more than one -1");
      inferred = i;
    } else if (!otc_mul_count(known, shape[i], &known)) {
      return imp.fail("the target shape's element count overflows");
    }
  }
  if (inferred >= 0) {
    if (known == 0 || product(in) % known)
      return imp.fail("cannot infer the -1 dimension");
    shape[inferred] = product(in) / known;
  }
  if (product(shape) != product(in))
    return imp.fail("cannot reshape " + std::to_string(product(in)) +
                    " elements to " + std::to_string(product(shape)));
  return defineReshaped(imp, 0, shape);
}

LogicalResult importFlatten(Imp &imp) {
  std::vector<int64_t> in;
  if (failed(shapeOfInput(imp, 0, in)))
    return failure();
  int64_t axis = imp.intAttr("axis", 1);
  if (axis < 0)
    axis += in.size();
  if (axis < 0 || axis > (int64_t)in.size())
    return imp.fail("axis is out of range");
  int64_t outer = product(ArrayRef<int64_t>(in).take_front(axis));
  return defineReshaped(imp, 0, {outer, product(in) / std::max<int64_t>(outer, 1)});
}

namespace {

/// A normalised slice: per dim, a start, a positive step and a count.
struct SliceSpec {
  std::vector<int64_t> starts, steps, counts;
};

/// `data` sliced by `spec` on the host.
HostTensor sliceHost(const HostTensor &data, const SliceSpec &spec) {
  HostTensor t = data;
  t.shape = spec.counts;
  t.values.clear();
  int64_t n = product(spec.counts);
  std::vector<int64_t> strides = stridesOf(data.shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, at = 0;
    for (int d = (int)spec.counts.size() - 1; d >= 0; --d) {
      at += (spec.starts[d] + rest % spec.counts[d] * spec.steps[d]) * strides[d];
      rest /= spec.counts[d];
    }
    t.values.push_back(data.values[at]);
  }
  return t;
}

/// Defines output `k` as `spec` of input 0: on the host when constant, else
/// an otc.slice (or the input itself when the slice is all of it).
LogicalResult defineSlice(Imp &imp, size_t k, const SliceSpec &spec) {
  if (const HostTensor *c = imp.constantInput(0)) {
    if (failed(checkFoldSize(imp, product(spec.counts))))
      return failure();
    return imp.define(k, sliceHost(*c, spec));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  // An empty slice (a partial rotary's pass-through part when the rotary
  // dims are all of the head) is known: no elements. A Concat drops it.
  if (llvm::is_contained(spec.counts, 0)) {
    Type e = type.getElementType();
    HostTensor t;
    t.isFloat = isa<FloatType>(e);
    t.elemType = t.isFloat ? onnx::TensorProto::FLOAT
                 : e.isInteger(1) ? onnx::TensorProto::BOOL
                                  : onnx::TensorProto::INT64;
    t.shape = spec.counts;
    return imp.define(k, std::move(t));
  }
  if (ArrayRef<int64_t>(spec.counts) == type.getShape()) {
    imp.define(k, *x);
    return success();
  }
  OpBuilder &b = imp.builder();
  auto result = RankedTensorType::get(spec.counts, type.getElementType());
  imp.define(k, SliceOp::create(b, imp.loc(), result, *x, b.getDenseI64ArrayAttr(spec.starts),
                                b.getDenseI64ArrayAttr(spec.steps))
                    .getResult());
  return success();
}

} // namespace

/// ONNX Slice: starts, ends (clamped, negative from the end, INT64_MAX as
/// "to the end"), axes and steps (negative ones walk backwards), from
/// attributes (opset 1) or constant inputs (opset 10).
LogicalResult importSlice(Imp &imp) {
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  int64_t rank = shape.size();
  std::vector<int64_t> lists[4];
  static const char *const names[] = {"starts", "ends", "axes", "steps"};
  for (int k = 0; k < 4; ++k) {
    auto l = intsFromInputOrAttr(imp, imp.form() >= 10, k + 1, names[k], std::string("Slice ") + names[k]);
    if (failed(l))
      return failure();
    lists[k] = *l;
  }
  auto &[starts, ends, axes, steps] = lists;
  if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size()))
    return imp.fail("starts, ends, axes and steps differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  auto norm = normaliseAxes(imp, axes, rank);
  if (failed(norm))
    return failure();
  SliceSpec spec{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1), shape};
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t d = (*norm)[i], n = shape[d], step = steps.empty() ? 1 : steps[i];
    if (step == 0)
      return imp.fail("Slice steps must not be 0");
    // ONNX's clamping: both into [0, n] going forwards; backwards, the
    // start into [0, n - 1] and the end into [-1, n - 1].
    int64_t hi = step > 0 ? n : n - 1;
    auto clamp = [&](int64_t v, int64_t lo) {
      if (v < 0)
        v = v < -n ? lo : v + n;
      return std::max(lo, std::min(v, hi));
    };
    int64_t s = clamp(starts[i], 0), e = clamp(ends[i], step > 0 ? 0 : -1);
    spec.starts[d] = s;
    spec.steps[d] = step;
    // No overflow near INT64_MAX: both ends are clamped.
    if (step > 0)
      spec.counts[d] = e > s ? 1 + (e - s - 1) / step : 0;
    else
      spec.counts[d] = s > e ? 1 + (s - e - 1) / -step : 0;
  }
  if (imp.constantInput(0) || llvm::none_of(spec.steps, [](int64_t k) { return k < 0; }))
    return defineSlice(imp, 0, spec);
  // At run time a backward axis (torch.flip) is a gather at its constant
  // positions, whose gradient scatters back; the rest is a plain slice.
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  OpBuilder &b = imp.builder();
  Value v = *x;
  for (int64_t d = 0; d < rank; ++d) {
    if (spec.steps[d] > 0)
      continue;
    std::vector<int64_t> at;
    for (int64_t k = 0; k < spec.counts[d]; ++k)
      at.push_back(spec.starts[d] + k * spec.steps[d]);
    auto g = gatherAt(imp, v, d, at);
    if (failed(g))
      return failure();
    v = *g;
    spec.starts[d] = 0;
    spec.steps[d] = 1;
  }
  if (cast<RankedTensorType>(v.getType()).getShape() == ArrayRef<int64_t>(spec.counts))
    return imp.defineResult(v);
  auto result = RankedTensorType::get(spec.counts, getElementTypeOrSelf(v.getType()));
  return imp.defineResult(SliceOp::create(b, imp.loc(), result, v, b.getDenseI64ArrayAttr(spec.starts),
                                          b.getDenseI64ArrayAttr(spec.steps))
                              .getResult());
}

/// ONNX Split into equal parts or given sizes (attribute before opset 13,
/// input from 13, or num_outputs from 18).
LogicalResult importSplit(Imp &imp) {
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  auto axis = axisAttr(imp, 0, shape.size());
  if (failed(axis))
    return failure();
  int64_t a = *axis, outputs = imp.node().output_size();
  if (outputs < 1)
    return imp.fail("Split needs at least one output");
  auto given = intsFromInputOrAttr(imp, imp.form() >= 13, 1, "split", "the split sizes");
  if (failed(given))
    return failure();
  std::vector<int64_t> sizes = *given;
  if (imp.attr("num_outputs") && imp.intAttr("num_outputs", 0) != outputs)
    return imp.fail("num_outputs is " + std::to_string(imp.intAttr("num_outputs", 0)) +
                    ", but the node has " + std::to_string(outputs) + " outputs");
  if (sizes.empty()) { // equal parts; the last may be smaller (opset 18)
    int64_t part = (shape[a] + outputs - 1) / outputs;
    for (int64_t k = 0; k < outputs; ++k)
      sizes.push_back(std::min(part, shape[a] - k * part));
  }
  int64_t total = 0;
  bool bad = (int64_t)sizes.size() != outputs;
  for (int64_t s : sizes)
    bad = bad || s < 1 || __builtin_add_overflow(total, s, &total);
  if (bad || total != shape[a])
    return imp.fail("the split sizes do not add up to the axis's " + std::to_string(shape[a]));
  int64_t at = 0;
  for (int64_t k = 0; k < outputs; ++k) {
    SliceSpec spec{std::vector<int64_t>(shape.size(), 0), std::vector<int64_t>(shape.size(), 1),
                   shape};
    spec.starts[a] = at;
    spec.counts[a] = sizes[k];
    at += sizes[k];
    if (failed(defineSlice(imp, k, spec)))
      return failure();
  }
  return success();
}

/// `t` broadcast (numpy style) to `shape`, on the host.
HostTensor broadcastHost(const HostTensor &t, const std::vector<int64_t> &shape) {
  HostTensor r = t;
  r.shape = shape;
  r.values.clear();
  size_t lead = shape.size() - t.shape.size();
  std::vector<int64_t> in = stridesOf(t.shape);
  for (int64_t i = 0, n = product(shape); i < n; ++i) {
    int64_t rest = i, at = 0;
    for (int d = (int)shape.size() - 1; d >= (int)lead; --d) {
      int64_t c = rest % shape[d];
      rest /= shape[d];
      if (t.shape[d - lead] != 1)
        at += c * in[d - lead];
    }
    r.values.push_back(t.values[at]);
  }
  return r;
}

/// Expand: broadcast both ways between the input and a constant shape.
LogicalResult importExpand(Imp &imp) {
  const HostTensor *s = imp.constantInput(1);
  if (!s)
    return imp.fail("the expanded shape must be a compile-time constant");
  std::vector<int64_t> in;
  const HostTensor *c = imp.constantInput(0);
  FailureOr<Value> x = failure();
  if (c) {
    in = c->shape;
  } else {
    x = imp.input(0);
    if (failed(x))
      return failure();
    in = cast<RankedTensorType>(x->getType()).getShape().vec();
  }
  auto out = broadcastShapes(in, s->asInts());
  if (!out)
    return imp.fail("the input does not broadcast to the expanded shape");
  std::vector<int64_t> shape(out->begin(), out->end());
  if (c) {
    if (failed(checkFoldSize(imp, product(shape))))
      return failure();
    return imp.define(0, broadcastHost(*c, shape));
  }
  if (ArrayRef<int64_t>(shape) == ArrayRef<int64_t>(in)) {
    return imp.defineResult(*x);
  }
  imp.define(0, BroadcastToOp::create(imp.builder(), imp.loc(), withShape(*x, shape), *x)
                    .getResult());
  return success();
}

namespace {

/// Sets `v` to `parts` joined along `axis` (to the part itself when there
/// is one).
LogicalResult concatInto(Imp &imp, Value &v, ArrayRef<Value> parts, int64_t axis) {
  auto joined = parts.size() == 1 ? FailureOr<Value>(parts[0])
                                  : imp.create<ConcatOp>(ValueRange(parts),
                                                         imp.builder().getI64IntegerAttr(axis));
  if (failed(joined))
    return failure();
  v = *joined;
  return success();
}

} // namespace

namespace {

/// Constant-mode Pad's value: a compile-time number, or a run-time scalar
/// of the data's type.
FailureOr<std::variant<double, Value>> padValue(Imp &imp) {
  if (imp.form() < 11)
    return std::variant<double, Value>(imp.floatAttr("value", 0.0));
  if (imp.numInputs() < 3 || imp.node().input(2).empty())
    return std::variant<double, Value>(0.0);
  if (const HostTensor *v = imp.constantInput(2)) {
    if (v->numElements() != 1)
      return imp.fail("the constant value must be a scalar");
    return std::variant<double, Value>(v->values[0]);
  }
  auto v = imp.input(2);
  if (failed(v))
    return failure();
  if (cast<RankedTensorType>(v->getType()).getNumElements() != 1)
    return imp.fail("the constant value must be a scalar");
  return std::variant<double, Value>(*v);
}

/// Pad's pads for every dim, [begin..., end...]: from the attribute before
/// opset 11, else input 1, which from opset 18 names only the axes of
/// input 3 (in their order).
FailureOr<std::vector<int64_t>> padsOf(Imp &imp, int64_t rank) {
  std::vector<int64_t> pads;
  if (imp.form() < 11) {
    pads = imp.intsAttr("pads");
  } else {
    const HostTensor *p = imp.constantInput(1);
    if (!p)
      return imp.fail("the pads must be compile-time constants");
    pads = p->asInts();
  }
  std::vector<int64_t> axes;
  bool named = imp.form() >= 18 && imp.numInputs() > 3 && !imp.node().input(3).empty();
  if (named) {
    const HostTensor *a = imp.constantInput(3);
    if (!a)
      return imp.fail("the axes must be compile-time constants");
    for (int64_t d : a->asInts()) {
      if (d < -rank || d >= rank)
        return imp.fail("axis " + std::to_string(d) + " is out of range for rank " +
                        std::to_string(rank));
      d = d < 0 ? d + rank : d;
      if (llvm::is_contained(axes, d))
        return imp.fail("axis " + std::to_string(d) + " is named twice");
      axes.push_back(d);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  int64_t n = axes.size();
  if (int64_t(pads.size()) != 2 * n)
    return imp.fail("pads has " + std::to_string(pads.size()) + " entries for " +
                    std::to_string(n) + (named ? " axes" : " dims"));
  std::vector<int64_t> full(2 * rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p : {pads[i], pads[i + n]})
      if (p > OTC_MAX_ELEMENTS || p < -OTC_MAX_ELEMENTS)
        return imp.fail("a pad of " + std::to_string(p) + " exceeds 2^36");
    full[axes[i]] = pads[i];
    full[axes[i] + rank] = pads[i + n];
  }
  return full;
}

/// The index along an axis of `n` that position `i` (from -before) of an
/// edge, reflect or wrap pad reads.
int64_t padSource(const std::string &mode, int64_t i, int64_t n) {
  if (mode == "edge")
    return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == "wrap")
    return (i % n + n) % n;
  if (n == 1) // reflect
    return 0;
  int64_t period = 2 * (n - 1), j = (i % period + period) % period;
  return j < n ? j : period - j;
}

} // namespace

/// Pad. Constant mode: per dim, a negative pad crops (a slice) and a
/// positive one concatenates a splat of the value (a broadcast of it when
/// it is known only at run time), so the gradient is concat's. Edge,
/// reflect and wrap: per padded dim, one gather at the constant source
/// index of each position, so the gradient is gather's scatter-add.
LogicalResult importPad(Imp &imp) {
  const auto *modeAttr = imp.attr("mode");
  std::string mode = modeAttr ? modeAttr->s() : "constant";
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    return imp.fail("pad mode " + quoted(mode.substr(0, 40)) +
                    " is not supported (constant, edge, reflect or wrap)");
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  auto pads = padsOf(imp, rank);
  if (failed(pads))
    return failure();
  Type elem = type.getElementType();
  if (elem.isInteger(1) && mode == "constant")
    return imp.fail("a constant pad of a run-time bool tensor is not supported");
  OpBuilder &b = imp.builder();
  Value v = *x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t before = (*pads)[d], after = (*pads)[d + rank], n = type.getDimSize(d);
    if (n + before + after < 1)
      return imp.fail("the pads crop dim " + std::to_string(d) + " to nothing");
    if (mode != "constant" && (before > 0 || after > 0) && n == 0)
      return imp.fail("an " + mode + " pad of an empty dim");
    if (before == 0 && after == 0)
      continue;
    if (mode != "constant") {
      if (failed(checkFoldSize(imp, n + before + after)))
        return failure();
      std::vector<int64_t> at;
      for (int64_t i = -before; i < n + after; ++i)
        at.push_back(padSource(mode, i, n));
      auto gathered = gatherAt(imp, v, d, at);
      if (failed(gathered))
        return failure();
      v = *gathered;
      continue;
    }
    auto shape = cast<RankedTensorType>(v.getType()).getShape().vec();
    if (before < 0 || after < 0) { // crop first
      int64_t drop0 = std::max<int64_t>(0, -before), drop1 = std::max<int64_t>(0, -after);
      if (drop0 + drop1 >= n)
        return imp.fail("the pads crop dim " + std::to_string(d) + " to nothing");
      SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
      starts[d] = drop0;
      shape[d] -= drop0 + drop1;
      v = SliceOp::create(b, imp.loc(), withShape(v, shape), v, b.getDenseI64ArrayAttr(starts),
                          b.getDenseI64ArrayAttr(steps));
    }
    SmallVector<Value> parts;
    auto fill = [&](int64_t count) -> LogicalResult {
      std::vector<int64_t> s = shape;
      s[d] = count;
      auto t = withShape(v, s);
      auto value = padValue(imp);
      if (failed(value))
        return failure();
      if (auto c = std::get_if<double>(&*value)) {
        Attribute splat = isa<FloatType>(elem) ? Attribute(b.getFloatAttr(elem, *c))
                                               : Attribute(b.getIntegerAttr(elem, int64_t(*c)));
        parts.push_back(ConstantOp::create(b, imp.loc(), DenseElementsAttr::get(t, splat)));
        return success();
      }
      Value scalar = reshaped(imp, std::get<Value>(*value), SmallVector<int64_t>(rank, 1));
      parts.push_back(BroadcastToOp::create(b, imp.loc(), t, scalar));
      return success();
    };
    if (before > 0 && failed(fill(before)))
      return failure();
    parts.push_back(v);
    if (after > 0 && failed(fill(after)))
      return failure();
    if (failed(concatInto(imp, v, parts, d)))
      return failure();
  }
  return imp.defineResult(v);
}

/// DepthToSpace (DCR or CRD) and SpaceToDepth: a reshape, a transpose and
/// a reshape, on the host when constant.
template <bool ToSpace>
LogicalResult importBlocksMove(Imp &imp) {
  std::vector<int64_t> s;
  if (failed(shapeOfInput(imp, 0, s)))
    return failure();
  int64_t b = imp.intAttr("blocksize", 0);
  if (s.size() != 4 || b < 1 || b > 1 << 16)
    return imp.fail("the input must be N x C x H x W and the blocksize positive");
  int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  std::vector<int64_t> split, out;
  SmallVector<int64_t> perm;
  if (ToSpace) {
    const auto *modeAttr = imp.attr("mode");
    std::string mode = modeAttr ? modeAttr->s().substr(0, 20) : "DCR";
    if (mode != "DCR" && mode != "CRD")
      return imp.fail("mode " + quoted(mode) + " is unknown (DCR or CRD)");
    if (c % (b * b) != 0)
      return imp.fail("the channels are not a multiple of blocksize squared");
    if (mode == "DCR") {
      split = {n, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      split = {n, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    }
    out = {n, c / (b * b), h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0)
      return imp.fail("H and W must be multiples of the blocksize");
    split = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto moved = imp.create<TransposeOp>(reshaped(imp, *x, split), imp.builder().getDenseI64ArrayAttr(perm));
  if (failed(moved))
    return failure();
  return imp.defineResult(reshaped(imp, *moved, out));
}
template LogicalResult importBlocksMove<true>(Imp &);
template LogicalResult importBlocksMove<false>(Imp &);

/// Tile: at run time, a concat of copies along each repeated dim.
namespace {

/// Tile on the host: element i of the result reads the input at each
/// coordinate modulo the input's extent.
LogicalResult foldTile(Imp &imp, const HostTensor &in, const std::vector<int64_t> &repeats) {
  if (repeats.size() != in.shape.size())
    return imp.fail("repeats has " + std::to_string(repeats.size()) + " entries for rank " +
                    std::to_string(in.shape.size()));
  HostTensor t = in;
  for (size_t d = 0; d < repeats.size(); ++d)
    if (repeats[d] < 0 || __builtin_mul_overflow(in.shape[d], repeats[d], &t.shape[d]))
      return imp.fail("repeats must not be negative, and the result must fit");
  int64_t count = t.numElements();
  if (failed(checkFoldSize(imp, count)))
    return failure();
  t.values.assign(count, 0.0);
  std::vector<int64_t> inStrides = stridesOf(in.shape);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, at = 0;
    for (int d = int(t.shape.size()) - 1; d >= 0; --d) {
      at += rest % t.shape[d] % in.shape[d] * inStrides[d];
      rest /= t.shape[d];
    }
    t.values[i] = in.values[at];
  }
  return imp.define(0, std::move(t));
}

} // namespace

LogicalResult importTile(Imp &imp) {
  const HostTensor *r = imp.constantInput(1);
  if (!r)
    return imp.fail("the repeats must be compile-time constants");
  std::vector<int64_t> repeats = r->asInts();
  if (const HostTensor *c = imp.constantInput(0))
    return foldTile(imp, *c, repeats);
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  if ((int64_t)repeats.size() != cast<RankedTensorType>(x->getType()).getRank())
    return imp.fail("repeats has " + std::to_string(repeats.size()) + " entries for rank " +
                    std::to_string(cast<RankedTensorType>(x->getType()).getRank()));
  int64_t count = cast<RankedTensorType>(x->getType()).getNumElements();
  for (int64_t r : repeats)
    if (r < 1 || __builtin_mul_overflow(count, r, &count) || count > OTC_MAX_ELEMENTS)
      return imp.fail("repeats must be at least 1 and the result at most 2^36 elements");
  Value v = *x;
  for (size_t d = 0; d < repeats.size(); ++d)
    if (failed(concatInto(imp, v, SmallVector<Value>(repeats[d], v), d)))
      return failure();
  return imp.defineResult(v);
}

LogicalResult importConcat(Imp &imp) {
  if (!imp.allInputsConstant()) { // at run time
    // Empty parts add nothing (an empty slice: see defineSlice).
    SmallVector<Value> parts;
    for (size_t i = 0; i < imp.numInputs(); ++i) {
      if (const HostTensor *c = imp.constantInput(i); c && c->numElements() == 0)
        continue;
      auto x = imp.input(i);
      if (failed(x))
        return failure();
      parts.push_back(*x);
    }
    if (parts.size() == 1)
      return imp.defineResult(parts.front());
    int64_t rank = cast<RankedTensorType>(parts.front().getType()).getRank();
    auto axis = axisAttr(imp, 0, rank);
    if (failed(axis))
      return failure();
    return imp.defineResult(
        imp.create<ConcatOp>(ValueRange(parts), imp.builder().getI64IntegerAttr(*axis)));
  }
  if (failed(needConstants(imp, 1)))
    return failure();
  const HostTensor &first = *imp.constantInput(0);
  int64_t rank = first.shape.size();
  auto a = axisAttr(imp, 0, rank);
  if (failed(a))
    return failure();
  int64_t axis = *a;
  int64_t outer = product(ArrayRef<int64_t>(first.shape).take_front(axis));
  HostTensor t = first;
  t.shape[axis] = 0;
  t.values.clear();
  for (size_t i = 0; i < imp.numInputs(); ++i) {
    const std::vector<int64_t> &s = imp.constantInput(i)->shape;
    for (int64_t d = 0; d < rank; ++d)
      if (s.size() != first.shape.size() || (d != axis && s[d] != first.shape[d]))
        return imp.fail("input " + std::to_string(i) +
                        "'s shape differs from input 0's off the concatenation axis");
    if (__builtin_add_overflow(t.shape[axis], s[axis], &t.shape[axis]))
      return imp.fail("the concatenated axis overflows");
  }
  int64_t count = t.numElements();
  if (failed(checkFoldSize(imp, count)))
    return failure();
  if (count == 0) // outer may still be huge: do not loop over it
    return imp.define(0, std::move(t));
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < imp.numInputs(); ++i) {
      const HostTensor &in = *imp.constantInput(i);
      int64_t chunk = in.numElements() / std::max<int64_t>(outer, 1);
      t.values.insert(t.values.end(), in.values.begin() + o * chunk,
                      in.values.begin() + (o + 1) * chunk);
    }
  return imp.define(0, std::move(t));
}

namespace {

/// Unsqueeze and Squeeze are reshapes; axes are an input from opset 13.
LogicalResult importSqueezeLike(Imp &imp, bool squeeze) {
  std::vector<int64_t> in;
  if (failed(shapeOfInput(imp, 0, in)))
    return failure();
  auto given = intsFromInputOrAttr(imp, imp.form() >= 13, 1, "axes", "the axes");
  if (failed(given))
    return failure();
  std::vector<int64_t> axes = *given;
  std::vector<int64_t> out;
  if (squeeze) {
    auto norm = normaliseAxes(imp, axes, in.size());
    if (failed(norm))
      return failure();
    for (size_t d = 0; d < in.size(); ++d) {
      bool drop = norm->empty() ? in[d] == 1 : llvm::is_contained(*norm, (int64_t)d);
      if (drop && in[d] != 1)
        return imp.fail("cannot squeeze dimension " + std::to_string(d) + " of size " +
                        std::to_string(in[d]));
      if (!drop)
        out.push_back(in[d]);
    }
  } else {
    if (in.size() + axes.size() > OTC_MAX_RANK)
      return imp.fail("the result would have rank " + std::to_string(in.size() + axes.size()) +
                      ", more than the limit of " + std::to_string(OTC_MAX_RANK));
    auto norm = normaliseAxes(imp, axes, in.size() + axes.size());
    if (failed(norm))
      return failure();
    if (norm->size() != axes.size())
      return imp.fail("the axes repeat an axis");
    size_t next = 0;
    for (size_t d = 0; d < in.size() + norm->size(); ++d)
      out.push_back(llvm::is_contained(*norm, (int64_t)d) ? 1 : in[next++]);
  }
  return defineReshaped(imp, 0, out);
}

} // namespace

LogicalResult importSqueeze(Imp &imp) { return importSqueezeLike(imp, true); }
LogicalResult importUnsqueeze(Imp &imp) { return importSqueezeLike(imp, false); }

} // namespace otc
