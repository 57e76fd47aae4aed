// Reductions, softmax, layer normalization and global average pooling.
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

/// Reductions: from the opset-13 form (ReduceSum; 18 for the others) the
/// axes are an optional second input instead of an attribute.
LogicalResult importReduceWith(Imp &imp, BuildReduce build) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto given = intsFromInputOrAttr(imp, imp.form() >= 13, 1, "axes", "the reduction axes");
  if (failed(given))
    return failure();
  std::vector<int64_t> axes = *given;
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  if (axes.empty()) {
    if (imp.intAttr("noop_with_empty_axes", 0)) {
      return imp.defineResult(*x);
    }
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  auto norm = normaliseAxes(imp, axes, rank);
  if (failed(norm))
    return failure();
  return imp.defineResult(build(imp, *x, *norm, imp.intAttr("keepdims", 1) != 0));
}

/// A reduction of compile-time `x` on the host: `combine` folds each
/// element into its slot, which starts at `init`. The axes come from an
/// input from opset `axesInputFrom` (13 for ReduceSum, 18 for the others).
static LogicalResult hostReduce(Imp &imp, const HostTensor &x, int axesInputFrom, double init,
                                double (*combine)(double, double)) {
  auto given = intsFromInputOrAttr(imp, imp.form() >= axesInputFrom, 1, "axes",
                                   "the reduction axes");
  if (failed(given))
    return failure();
  int64_t rank = int64_t(x.shape.size());
  std::vector<int64_t> axes = *given;
  if (axes.empty()) {
    if (imp.intAttr("noop_with_empty_axes", 0))
      return imp.define(0, x);
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  auto norm = normaliseAxes(imp, axes, rank);
  if (failed(norm))
    return failure();
  bool keep = imp.intAttr("keepdims", 1) != 0;
  HostTensor out = x;
  out.shape.clear();
  std::vector<int64_t> outDims; // the result's index space, reduced dims 1
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(*norm, d);
    outDims.push_back(reduced ? 1 : x.shape[d]);
    if (!reduced || keep)
      out.shape.push_back(reduced ? 1 : x.shape[d]);
  }
  out.values.assign(size_t(product(outDims)), init);
  std::vector<int64_t> in = stridesOf(x.shape), res = stridesOf(outDims);
  for (int64_t i = 0; i < int64_t(x.values.size()); ++i) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (outDims[d] != 1)
        at += (i / in[d] % x.shape[d]) * res[d];
    out.values[size_t(at)] = combine(out.values[size_t(at)], x.values[size_t(i)]);
  }
  return imp.define(0, std::move(out));
}

/// ReduceProd, on a compile-time input (the exporter's element counts,
/// ReduceProd of a Shape); a run-time product is refused by name.
LogicalResult importReduceProd(Imp &imp) {
  const HostTensor *x = imp.constantInput(0);
  if (!x)
    return imp.fail("ReduceProd is supported on compile-time inputs only");
  return hostReduce(imp, *x, 18, 1.0, [](double a, double b) { return a * b; });
}

namespace {

FailureOr<Value> sumOf(Imp &imp, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  OpBuilder &b = imp.builder();
  return imp.create<ReduceSumOp>(x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepDims));
}

FailureOr<Value> maxOf(Imp &imp, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  OpBuilder &b = imp.builder();
  return imp.create<ReduceMaxOp>(x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepDims));
}

/// Op applied to `r` when `r` succeeded.
template <typename Op>
FailureOr<Value> then(Imp &imp, FailureOr<Value> r) {
  if (failed(r))
    return failure();
  return Op::create(imp.builder(), imp.loc(), *r).getResult();
}

} // namespace

// The reductions ONNX adds, composed from sum and max.
FailureOr<Value> reduceMin(Imp &imp, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  return then<NegOp>(imp, maxOf(imp, NegOp::create(imp.builder(), imp.loc(), x), axes, keepDims));
}

FailureOr<Value> reduceSumSquare(Imp &imp, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  return sumOf(imp, MulOp::create(imp.builder(), imp.loc(), x, x), axes, keepDims);
}

FailureOr<Value> reduceL1(Imp &imp, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  return sumOf(imp, AbsOp::create(imp.builder(), imp.loc(), x), axes, keepDims);
}

FailureOr<Value> reduceL2(Imp &imp, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  return then<SqrtOp>(imp, reduceSumSquare(imp, x, axes, keepDims));
}

FailureOr<Value> reduceLogSum(Imp &imp, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  return then<LogOp>(imp, sumOf(imp, x, axes, keepDims));
}

/// log(sum(e^(x - m))) + m with m the maximum, so e^ never overflows. The
/// gradient through m cancels, as it does mathematically.
FailureOr<Value> reduceLogSumExp(Imp &imp, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  auto m = maxOf(imp, x, axes, true);
  if (failed(m))
    return failure();
  auto shifted = imp.create<SubOp>(x, *m);
  if (failed(shifted))
    return failure();
  auto s = then<LogOp>(imp, sumOf(imp, ExpOp::create(b, loc, *shifted), axes, true));
  if (failed(s))
    return failure();
  auto y = imp.create<AddOp>(*s, *m);
  if (failed(y) || keepDims)
    return y;
  SmallVector<int64_t> shape;
  auto in = cast<RankedTensorType>(x.getType());
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!llvm::is_contained(axes, d))
      shape.push_back(in.getDimSize(d));
  return reshaped(imp, *y, shape);
}

/// Whether int64 `v` holds only 0 and 1: a Cast of a boolean (a OneHot of
/// [0, 1] is one), a product of such, or one reshaped, transposed or
/// broadcast.
static bool isIndicator(Value v, int depth = 0) {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 16)
    return false;
  if (auto c = dyn_cast<CastOp>(def))
    return getElementTypeOrSelf(c.getInput().getType()).isInteger(1);
  if (auto m = dyn_cast<MulOp>(def))
    return isIndicator(m.getLhs(), depth + 1) && isIndicator(m.getRhs(), depth + 1);
  if (isa<ReshapeOp, TransposeOp, BroadcastToOp>(def))
    return isIndicator(def->getOperand(0), depth + 1);
  return false;
}

/// ReduceSum. Steps accumulate in float, so an int64 sum at run time is
/// taken where float32 holds it exactly: a count of 0s and 1s (a Cast of a
/// mask, as mBART's shift_tokens_right counts its tokens; NLLB-MoE's
/// tokens per expert, a one-hot times a mask), at most 2^24 terms a sum,
/// summed as float32 and cast back.
FailureOr<Value> reduceSum(Imp &imp, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  auto in = cast<RankedTensorType>(x.getType());
  if (!in.getElementType().isInteger(64))
    return sumOf(imp, x, axes, keepDims);
  if (!isIndicator(x))
    return imp.fail("an int64 ReduceSum at run time is supported for counts of 0s and 1s (a "
                    "Cast of a mask to int64, a OneHot, their products) alone: otc's steps sum "
                    "in float");
  int64_t terms = 1;
  for (int64_t a : axes)
    terms *= in.getDimSize(a);
  if (terms > (int64_t(1) << 24))
    return imp.fail("an int64 count of " + std::to_string(terms) +
                    " booleans may not be exact in float32 (at most 2^24 a sum)");
  OpBuilder &b = imp.builder();
  auto fromMask = x.getDefiningOp<CastOp>();
  Value ones = CastOp::create(b, imp.loc(), in.clone(b.getF32Type()),
                              fromMask ? fromMask.getInput() : x);
  auto sum = sumOf(imp, ones, axes, keepDims);
  if (failed(sum))
    return failure();
  auto out = cast<RankedTensorType>(sum->getType());
  return CastOp::create(b, imp.loc(), out.clone(b.getI64Type()), *sum).getResult();
}

/// ReduceSum: of integer constants on the host (a count the exporter
/// computes from a full() of a batch-sized shape, as GIT's), else reduceSum.
LogicalResult importReduceSum(Imp &imp) {
  if (const HostTensor *x = imp.constantInput(0); x && !x->isFloat)
    return hostReduce(imp, *x, 13, 0.0, [](double a, double b) { return a + b; });
  return importReduceWith(imp, reduceSum);
}

/// ArgMax and ArgMin along `axis`: the first extreme (or the last, with
/// select_last_index), as int64. On the host when constant; at run time
/// the index of the best among the positions equal to the extreme, found
/// as the maximum of a float score over where(hit, score, -1): exact for
/// axes under 2^24 elements (integers: see below). No gradient, as
/// PyTorch's.
LogicalResult importArgExtreme(Imp &imp, bool isMax) {
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  int64_t rank = shape.size();
  auto axis = axisAttr(imp, 0, rank);
  if (failed(axis))
    return failure();
  int64_t a = *axis, n = shape[a];
  bool keep = imp.intAttr("keepdims", 1) != 0, last = imp.intAttr("select_last_index", 0) != 0;
  if (n > (int64_t(1) << 24))
    return imp.fail("the axis has more than 2^24 elements");
  if (const HostTensor *c = imp.constantInput(0)) {
    int64_t inner = product(ArrayRef<int64_t>(shape).drop_front(a + 1));
    int64_t outer = n == 0 ? 0 : c->numElements() / (n * std::max<int64_t>(inner, 1));
    HostTensor t{false, onnx::TensorProto::INT64, shape, {}};
    t.shape[a] = 1;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best = 0;
        for (int64_t k = 1; k < n; ++k) {
          double v = c->values[(o * n + k) * inner + i], w = c->values[(o * n + best) * inner + i];
          if (isMax ? (v > w || (last && v == w)) : (v < w || (last && v == w)))
            best = k;
        }
        t.values.push_back(double(best));
      }
    if (!keep)
      t.shape.erase(t.shape.begin() + a);
    return imp.define(0, std::move(t));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<Value> hit;
  if (isa<FloatType>(type.getElementType())) {
    Value v = isMax ? *x : NegOp::create(b, loc, *x).getResult();
    auto extreme = maxOf(imp, v, {a}, true);
    if (failed(extreme))
      return failure();
    hit = imp.create<CompareOp>(v, *extreme, ComparePredicate::eq);
  } else {
    // Integers (CLIP pools at input_ids.argmax(-1)) have no reduction of
    // their own, and a float copy would merge values past 2^24: position k
    // is an extreme when no position j beats it, every pair compared
    // exactly, so the axis is bounded.
    if (type.getNumElements() > (int64_t(1) << 26) / std::max<int64_t>(n, 1))
      return imp.fail("ArgMax and ArgMin of run-time integer data compare every pair along "
                      "the axis: at most 2^26 pairs, and this input has " +
                      std::to_string(type.getNumElements()) + " elements of axis " +
                      std::to_string(n));
    std::vector<int64_t> k(shape), j(shape);
    k.insert(k.begin() + a + 1, 1);
    j.insert(j.begin() + a, 1);
    auto beaten = imp.create<CompareOp>(reshaped(imp, *x, k), reshaped(imp, *x, j),
                                        isMax ? ComparePredicate::lt : ComparePredicate::gt);
    if (failed(beaten))
      return failure();
    std::vector<int64_t> pairs(k);
    pairs[a + 1] = n;
    auto any = maxOf(imp, CastOp::create(b, loc, RankedTensorType::get(pairs, b.getF32Type()),
                                         *beaten).getResult(),
                     {a + 1}, false);
    if (failed(any))
      return failure();
    hit = imp.create<CompareOp>(*any, scalarConstant(b, loc, b.getF32Type(), 0.0),
                                ComparePredicate::eq);
  }
  if (failed(hit))
    return failure();
  // Score k (the last index wins) or n - 1 - k (the first).
  HostTensor score{true, onnx::TensorProto::FLOAT, std::vector<int64_t>(rank, 1), {}};
  score.shape[a] = n;
  for (int64_t k = 0; k < n; ++k)
    score.values.push_back(double(last ? k : n - 1 - k));
  Value s = ConstantOp::create(b, loc, toAttr(b, score));
  auto picked = imp.create<WhereOp>(*hit, s, scalarConstant(b, loc, b.getF32Type(), -1.0));
  if (failed(picked))
    return failure();
  auto best = maxOf(imp, *picked, {a}, keep);
  if (failed(best))
    return failure();
  Value index = *best;
  if (!last)
    index = SubOp::create(b, loc, scalarConstant(b, loc, b.getF32Type(), double(n - 1)), index);
  auto out = cast<RankedTensorType>(index.getType());
  return imp.defineResult(
      CastOp::create(b, loc, out.clone(b.getI64Type()), index).getResult());
}

/// Hardmax: 1 at the first maximum along the axis, else 0, in the input's
/// type; before opset 13 along the dims from `axis` on, flattened (a 2-D
/// view). The first maximum is the best of the score n - 1 - k over the
/// positions equal to the maximum, as ArgMax finds it. No gradient.
LogicalResult importHardmax(Imp &imp) {
  auto x = floatInput(imp, 0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  int64_t rank = shape.size();
  if (rank == 0)
    return imp.fail("the input must have at least one dimension");
  bool flat = imp.form() < 13;
  auto axis = axisAttr(imp, flat ? 1 : -1, rank);
  if (failed(axis))
    return failure();
  int64_t a = *axis;
  std::vector<int64_t> view = shape;
  if (flat) {
    view = {product(ArrayRef<int64_t>(shape).take_front(a)),
            product(ArrayRef<int64_t>(shape).drop_front(a))};
    a = 1;
  }
  int64_t n = view[a];
  if (n > (int64_t(1) << 24))
    return imp.fail("the axis has more than 2^24 elements");
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value v = reshaped(imp, *x, view);
  auto top = maxOf(imp, v, {a}, true);
  if (failed(top))
    return failure();
  auto hit = imp.create<CompareOp>(v, *top, ComparePredicate::eq);
  HostTensor score{true, onnx::TensorProto::FLOAT, std::vector<int64_t>(view.size(), 1), {}};
  score.shape[a] = n;
  for (int64_t k = 0; k < n; ++k)
    score.values.push_back(double(n - 1 - k));
  Value s = ConstantOp::create(b, loc, toAttr(b, score));
  if (failed(hit))
    return failure();
  auto picked = imp.create<WhereOp>(*hit, s, scalarConstant(b, loc, b.getF32Type(), -1.0));
  if (failed(picked))
    return failure();
  auto best = maxOf(imp, *picked, {a}, true);
  if (failed(best))
    return failure();
  auto first = imp.create<CompareOp>(s, *best, ComparePredicate::eq);
  if (failed(first))
    return failure();
  Value y = CastOp::create(b, loc, withShape(v, view), *first).getResult();
  return imp.defineResult(reshaped(imp, y, shape));
}

/// MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)
/// over `axes` (N, H and W by default), as ONNX's function body.
LogicalResult importMeanVarianceNormalization(Imp &imp) {
  auto x = floatInput(imp, 0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  std::vector<int64_t> axes = imp.intsAttr("axes");
  if (!imp.attr("axes"))
    axes = {0, 2, 3};
  auto norm = normaliseAxes(imp, axes, type.getRank());
  if (failed(norm))
    return failure();
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  auto mean = [&](Value v) {
    return imp.create<ReduceMeanOp>(v, b.getDenseI64ArrayAttr(*norm), b.getBoolAttr(true));
  };
  auto mu = mean(*x);
  auto square = imp.create<MulOp>(*x, *x);
  if (failed(mu) || failed(square))
    return failure();
  auto meanSquare = mean(*square);
  auto squaredMean = imp.create<MulOp>(*mu, *mu);
  if (failed(meanSquare) || failed(squaredMean))
    return failure();
  auto variance = imp.create<SubOp>(*meanSquare, *squaredMean);
  auto centred = imp.create<SubOp>(*x, *mu);
  if (failed(variance) || failed(centred))
    return failure();
  // A constant slice has variance 0 (or, rounded, a little below): its
  // deviation is 0, with no infinite gradient from sqrt at 0 (which would
  // make the slice's gradient NaN).
  Value zero = scalarConstant(b, loc, type.getElementType(), 0.0);
  auto positive = imp.create<CompareOp>(*variance, zero, ComparePredicate::gt);
  if (failed(positive))
    return failure();
  auto kept = imp.create<WhereOp>(*positive, *variance,
                                  scalarConstant(b, loc, type.getElementType(), 1.0));
  if (failed(kept))
    return failure();
  auto root = imp.create<WhereOp>(*positive, SqrtOp::create(b, loc, *kept).getResult(), zero);
  if (failed(root))
    return failure();
  Value deviation = *root;
  auto denominator = imp.create<AddOp>(deviation, scalarConstant(b, loc, type.getElementType(), 1e-9));
  if (failed(denominator))
    return failure();
  return imp.defineResult(imp.create<DivOp>(*centred, *denominator));
}

/// LRN (AlexNet and GoogLeNet as converted from Caffe): x / (bias + alpha /
/// size * the sum of x^2 over the `size` channels around each) ^ beta, the
/// window floor((size - 1) / 2) channels before and ceil after, zeros past
/// the ends: a sum of shifted slices of the squares padded along C.
LogicalResult importLrn(Imp &imp) {
  auto x = floatInput(imp, 0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() < 3)
    return imp.fail("the input must be [N, C, ...]");
  int64_t size = imp.intAttr("size", 0), c = type.getDimSize(1);
  if (size < 1 || size > 1024)
    return imp.fail("size must be from 1 to 1024");
  double alpha = imp.floatAttr("alpha", 1e-4), beta = imp.floatAttr("beta", 0.75);
  double bias = imp.floatAttr("bias", 1.0);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  if (product({type.getNumElements() / std::max<int64_t>(c, 1), c + size - 1}) >
      OTC_MAX_ELEMENTS)
    return imp.fail("the padded squares exceed the tensor size limit");
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  auto square = imp.create<MulOp>(*x, *x);
  if (failed(square))
    return failure();
  auto padded = zeroPadded(imp, *square, 1, before, after);
  if (failed(padded))
    return failure();
  FailureOr<Value> sum = failure();
  for (int64_t k = 0; k < size; ++k) {
    SmallVector<int64_t> starts(type.getRank(), 0);
    starts[1] = k;
    Value shifted = SliceOp::create(b, loc, type, *padded, b.getDenseI64ArrayAttr(starts),
                                    b.getDenseI64ArrayAttr(SmallVector<int64_t>(type.getRank(), 1)));
    sum = k == 0 ? FailureOr<Value>(shifted) : imp.create<AddOp>(*sum, shifted);
    if (failed(sum))
      return failure();
  }
  auto scaled = imp.create<MulOp>(*sum, scalarConstant(b, loc, type.getElementType(), alpha / double(size)));
  if (failed(scaled))
    return failure();
  auto base = imp.create<AddOp>(*scaled, scalarConstant(b, loc, type.getElementType(), bias));
  if (failed(base))
    return failure();
  Value denominator = PowOp::create(b, loc, *base, b.getF64FloatAttr(beta));
  return imp.defineResult(imp.create<DivOp>(*x, denominator));
}

/// TopK of run-time integers (PyTorch's pack_padded_sequence sorts the
/// lengths): compared exactly, pair by pair, as ArgMax compares them. An
/// element's rank is how many beat it (greater, or equal at a lower
/// index: the first of tied values comes first); output r is the element
/// of rank r, gathered. Bounded as ArgMax's pairs are. No gradient.
LogicalResult topKOfIntegers(Imp &imp, Value x, const std::vector<int64_t> &shape, int64_t a,
                             int64_t k, bool largest) {
  int64_t n = shape[a], rank = shape.size();
  int64_t elements = product(shape);
  if (elements > (int64_t(1) << 26) / std::max<int64_t>(n, 1))
    return imp.fail("TopK of run-time integer data compares every pair along the axis: at "
                    "most 2^26 pairs, and this input has " + std::to_string(elements) +
                    " elements of axis " + std::to_string(n));
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  std::vector<int64_t> iView(shape), jView(shape), pairs(shape);
  iView.insert(iView.begin() + a + 1, 1); // element i along a, j along a + 1
  jView.insert(jView.begin() + a, 1);
  pairs.insert(pairs.begin() + a + 1, n);
  Value xi = reshaped(imp, x, iView), xj = reshaped(imp, x, jView);
  auto better = imp.create<CompareOp>(xj, xi, largest ? ComparePredicate::gt : ComparePredicate::lt);
  auto tied = imp.create<CompareOp>(xj, xi, ComparePredicate::eq);
  if (failed(better) || failed(tied))
    return failure();
  std::vector<int64_t> square(rank + 1, 1);
  square[a] = square[a + 1] = n;
  HostTensor before{false, onnx::TensorProto::BOOL, square, {}}; // j < i
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      before.values.push_back(double(j < i));
  auto earlier = imp.create<AndOp>(*tied, ConstantOp::create(b, loc, toAttr(b, before)).getResult());
  if (failed(earlier))
    return failure();
  auto beats = imp.create<OrOp>(*better, *earlier);
  if (failed(beats))
    return failure();
  auto f32 = [&](ArrayRef<int64_t> s) { return RankedTensorType::get(s, b.getF32Type()); };
  auto ranks = sumOf(imp, CastOp::create(b, loc, f32(pairs), *beats).getResult(), {a + 1}, true);
  if (failed(ranks))
    return failure();
  // hit[.., i, r, ..] = rank_i == r, then the index of rank r is the sum of
  // i over its one hit.
  std::vector<int64_t> rs(rank + 1, 1), is(rank + 1, 1);
  rs[a + 1] = k;
  is[a] = n;
  HostTensor r{true, onnx::TensorProto::FLOAT, rs, {}}, positions{true, onnx::TensorProto::FLOAT, is, {}};
  for (int64_t q = 0; q < k; ++q)
    r.values.push_back(double(q));
  for (int64_t i = 0; i < n; ++i)
    positions.values.push_back(double(i));
  auto hit = imp.create<CompareOp>(*ranks, ConstantOp::create(b, loc, toAttr(b, r)).getResult(),
                                   ComparePredicate::eq);
  if (failed(hit))
    return failure();
  auto at = imp.create<WhereOp>(*hit, ConstantOp::create(b, loc, toAttr(b, positions)).getResult(),
                                scalarConstant(b, loc, b.getF32Type(), 0.0));
  if (failed(at))
    return failure();
  auto index = sumOf(imp, *at, {a}, false); // shape with k along a
  if (failed(index))
    return failure();
  std::vector<int64_t> out(shape);
  out[a] = k;
  Value idx = CastOp::create(b, loc, RankedTensorType::get(out, b.getI64Type()), *index);
  auto flat = elementPositions(imp, idx, a, n, stridesOf(shape));
  if (failed(flat))
    return failure();
  Value all = reshaped(imp, x, {product(shape)});
  auto values = imp.create<GatherOp>(all, *flat, b.getI64IntegerAttr(0));
  if (failed(values))
    return failure();
  imp.define(0, reshaped(imp, *values, out));
  imp.define(1, idx);
  return success();
}

/// TopK with a compile-time K along `axis`, the largest (or smallest)
/// first, a tie to the lower index (ONNX's order). At run time, of floats:
/// K rounds, each taking the best of the positions not yet taken (its
/// value a sum over that one position, so the gradient reaches it alone,
/// as PyTorch's topk scatters it; NaN ranks first, as PyTorch's) and its
/// index as ArgMax does. A router's top 2 of 8 experts is 2 cheap
/// rounds; K is bounded. Integers: topKOfIntegers.
LogicalResult importTopK(Imp &imp) {
  constexpr int64_t kMaxK = 64;
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  int64_t rank = shape.size();
  if (rank == 0)
    return imp.fail("the input must have at least one dimension");
  auto axis = axisAttr(imp, -1, rank);
  if (failed(axis))
    return failure();
  int64_t a = *axis, n = shape[a];
  int64_t k = imp.intAttr("k", -1);
  if (imp.form() >= 10) {
    const HostTensor *kt = imp.constantInput(1);
    if (!kt || kt->numElements() != 1)
      return imp.fail("K must be a compile-time constant of one element");
    k = int64_t(kt->values[0]);
  }
  if (k < 1 || k > n)
    return imp.fail("K = " + std::to_string(k) + " is outside [1, " + std::to_string(n) + "]");
  if (k > kMaxK)
    return imp.fail("K = " + std::to_string(k) + ": otc takes the top " +
                    std::to_string(kMaxK) + " at most, one round each");
  if (n > (int64_t(1) << 24))
    return imp.fail("the axis has more than 2^24 elements");
  bool largest = imp.intAttr("largest", 1) != 0;
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  Type elem = type.getElementType();
  if (!isa<FloatType>(elem))
    return topKOfIntegers(imp, *x, shape, a, k, largest);
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value v = largest ? *x : NegOp::create(b, loc, *x).getResult();
  // The order the rounds rank by: NaN above everything for the largest (as
  // PyTorch sorts it), below for the smallest; max reductions skip NaN.
  auto isNan = imp.create<CompareOp>(v, v, ComparePredicate::ne);
  if (failed(isNan))
    return failure();
  auto key = imp.create<WhereOp>(*isNan, scalarConstant(b, loc, elem, largest ? INFINITY : -INFINITY), v);
  if (failed(key))
    return failure();
  // Positions along the axis, as float32, and n - 1 - position (the first
  // of tied positions scores highest).
  HostTensor pos{true, onnx::TensorProto::FLOAT, std::vector<int64_t>(rank, 1), {}},
      first = pos;
  pos.shape[a] = first.shape[a] = n;
  for (int64_t i = 0; i < n; ++i) {
    pos.values.push_back(double(i));
    first.values.push_back(double(n - 1 - i));
  }
  Value position = ConstantOp::create(b, loc, toAttr(b, pos));
  Value firstScore = ConstantOp::create(b, loc, toAttr(b, first));
  Value lowest = scalarConstant(b, loc, elem, -INFINITY);
  Value none = scalarConstant(b, loc, b.getF32Type(), -1.0);
  auto boolType = RankedTensorType::get(shape, b.getI1Type());
  Value taken = ConstantOp::create(
      b, loc, DenseElementsAttr::get(boolType, false));
  SmallVector<Value> values, indices;
  for (int64_t round = 0; round < k; ++round) {
    auto open = imp.create<WhereOp>(taken, lowest, *key);
    if (failed(open))
      return failure();
    auto best = maxOf(imp, *open, {a}, true);
    if (failed(best))
      return failure();
    auto equal = imp.create<CompareOp>(*open, *best, ComparePredicate::eq);
    Value free = NotOp::create(b, loc, taken.getType(), taken);
    if (failed(equal))
      return failure();
    auto hit = imp.create<AndOp>(*equal, free);
    if (failed(hit))
      return failure();
    auto scored = imp.create<WhereOp>(*hit, firstScore, none);
    if (failed(scored))
      return failure();
    auto top = maxOf(imp, *scored, {a}, true); // n - 1 - index
    if (failed(top))
      return failure();
    auto index = imp.create<SubOp>(scalarConstant(b, loc, b.getF32Type(), double(n - 1)), *top);
    if (failed(index))
      return failure();
    auto chosen = imp.create<CompareOp>(position, *index, ComparePredicate::eq);
    if (failed(chosen))
      return failure();
    // The chosen value itself (NaN and -inf included): a sum of it and
    // zeros, whose gradient reaches it alone.
    auto only = imp.create<WhereOp>(*chosen, v, scalarConstant(b, loc, elem, 0.0));
    if (failed(only))
      return failure();
    auto value = sumOf(imp, *only, {a}, true);
    if (failed(value))
      return failure();
    values.push_back(largest ? *value : NegOp::create(b, loc, *value).getResult());
    auto index64 = cast<RankedTensorType>(index->getType()).clone(b.getI64Type());
    indices.push_back(CastOp::create(b, loc, index64, *index));
    auto nowTaken = imp.create<OrOp>(taken, *chosen);
    if (failed(nowTaken))
      return failure();
    taken = *nowTaken;
  }
  auto join = [&](SmallVector<Value> &parts) -> FailureOr<Value> {
    if (parts.size() == 1)
      return parts[0];
    return imp.create<ConcatOp>(ValueRange(parts), b.getI64IntegerAttr(a));
  };
  auto vs = join(values), is = join(indices);
  if (failed(vs) || failed(is))
    return failure();
  imp.define(0, *vs);
  imp.define(1, *is);
  return success();
}

LogicalResult importArgMax(Imp &imp) { return importArgExtreme(imp, true); }
LogicalResult importArgMin(Imp &imp) { return importArgExtreme(imp, false); }

/// Softmax and LogSoftmax. From opset 13 along `axis` (default -1); before,
/// over the input flattened to 2-D at `axis` (default 1), which is a reshape
/// around the same op along the last dim.
LogicalResult importSoftmaxWith(Imp &imp, BuildSoftmax build) {
  bool before13 = imp.form() < 13;
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  auto axis = axisAttr(imp, before13 ? 1 : -1, rank);
  if (failed(axis))
    return failure();
  int64_t a = *axis;
  OpBuilder &b = imp.builder();
  if (!before13 || a == rank - 1) {
    return imp.defineResult(build(imp, *x, a));
  }
  int64_t outer = product(type.getShape().take_front(a));
  auto flat = withShape(*x, {outer, type.getNumElements() / outer});
  Value v = ReshapeOp::create(b, imp.loc(), flat, *x);
  Value y = build(imp, v, 1);
  imp.define(0, ReshapeOp::create(b, imp.loc(), type, y).getResult());
  return success();
}

/// LayerNormalization's optional outputs 1 and 2, Mean and InvStdDev over
/// the dims from `axis` on (kept as 1s), composed where the graph reads
/// them; the normalize op keeps its own.
LogicalResult layerNormStatistics(Imp &imp, Value x, int64_t axis, double eps) {
  auto wanted = [&](int i) { return imp.node().output_size() > i && !imp.node().output(i).empty(); };
  if (!wanted(1) && !wanted(2))
    return success();
  OpBuilder &b = imp.builder();
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < cast<RankedTensorType>(x.getType()).getRank(); ++d)
    axes.push_back(d);
  auto mean = imp.create<ReduceMeanOp>(x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true));
  if (failed(mean))
    return failure();
  if (wanted(1))
    imp.define(1, *mean);
  if (!wanted(2))
    return success();
  auto centred = imp.create<SubOp>(x, *mean);
  if (failed(centred))
    return failure();
  auto squares = imp.create<MulOp>(*centred, *centred);
  if (failed(squares))
    return failure();
  auto var = imp.create<ReduceMeanOp>(*squares, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true));
  if (failed(var))
    return failure();
  Type elem = cast<RankedTensorType>(x.getType()).getElementType();
  auto shifted = imp.create<AddOp>(*var, scalarConstant(b, imp.loc(), elem, eps));
  if (failed(shifted))
    return failure();
  Value std = SqrtOp::create(b, imp.loc(), *shifted);
  auto inv = imp.create<DivOp>(scalarConstant(b, imp.loc(), elem, 1.0), std);
  if (failed(inv))
    return failure();
  imp.define(2, *inv);
  return success();
}

/// LayerNormalization (opset 17): normalize over the dims from `axis` on,
/// then scale and bias as elementwise ops, whose gradients come from the
/// primitives.
LogicalResult importLayerNormalization(Imp &imp) {
  if (imp.intAttr("stash_type", 1) != 1)
    return imp.fail("stash_type " + std::to_string(imp.intAttr("stash_type", 1)) +
                    " is not supported (statistics are computed in float32)");
  auto x = imp.input(0);
  auto scale = imp.input(1);
  if (failed(x) || failed(scale))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  auto axis = axisAttr(imp, -1, rank);
  if (failed(axis))
    return failure();
  double eps = imp.floatAttr("epsilon", 1e-5);
  if (!(eps >= 0) || !std::isfinite(eps))
    return imp.fail("epsilon must be a finite number, at least 0");
  OpBuilder &b = imp.builder();
  Value n = NormalizeOp::create(b, imp.loc(), *x, b.getI64IntegerAttr(*axis),
                                b.getF64FloatAttr(eps));
  if (failed(layerNormStatistics(imp, *x, *axis, eps)))
    return failure();
  auto y = imp.create<MulOp>(n, *scale);
  if (failed(y) || imp.numInputs() < 3)
    return imp.defineResult(y);
  auto bias = imp.input(2);
  if (failed(bias))
    return failure();
  return imp.defineResult(imp.create<AddOp>(*y, *bias));
}

/// InstanceNormalization: each (sample, channel) plane normalised over its
/// spatial dims (one normalize from axis 2), then scale and bias per
/// channel. PyTorch exports GroupNorm through it too.
LogicalResult importInstanceNormalization(Imp &imp) {
  auto x = imp.input(0), scale = imp.input(1), bias = imp.input(2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto shape = cast<RankedTensorType>(x->getType()).getShape();
  if (shape.size() < 3)
    return imp.fail("the input needs spatial dims after N and C");
  for (Value v : {*scale, *bias})
    if (cast<RankedTensorType>(v.getType()).getShape() != ArrayRef<int64_t>{shape[1]})
      return imp.fail("scale and bias must have shape [" + std::to_string(shape[1]) + "]");
  double eps = imp.floatAttr("epsilon", 1e-5);
  if (!(eps >= 0) || !std::isfinite(eps))
    return imp.fail("epsilon must be a finite number, at least 0");
  OpBuilder &b = imp.builder();
  Value n = NormalizeOp::create(b, imp.loc(), *x, b.getI64IntegerAttr(2), b.getF64FloatAttr(eps));
  std::vector<int64_t> perChannel(shape.size() - 1, 1);
  perChannel[0] = shape[1];
  auto y = imp.create<MulOp>(n, reshaped(imp, *scale, perChannel));
  if (failed(y))
    return failure();
  return imp.defineResult(imp.create<AddOp>(*y, reshaped(imp, *bias, perChannel)));
}

/// GlobalAveragePool: the mean over every dim after N and C, kept.
LogicalResult importGlobalAveragePool(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  if (rank < 3)
    return imp.fail("the input needs spatial dims after N and C");
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  OpBuilder &b = imp.builder();
  return imp.defineResult(
      imp.create<ReduceMeanOp>(*x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true)));
}

} // namespace otc
