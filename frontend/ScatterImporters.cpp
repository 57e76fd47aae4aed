// Scatters, composed from primitives so their gradients come from where,
// gather and gather_grad:
// - with compile-time indices and no reduction (label shifts, cache writes
//   whose indices depend only on shapes): where(scattered, gather(updates,
//   source), data) over flat views, with a constant mask and source index
//   per element, or a fold on the host when everything is constant;
// - with run-time indices, or reduction "add": the updates summed into
//   zeros at their flat positions by otc.gather_grad, gather's
//   deterministic scatter-add. "add" adds that to the data; "none" takes it
//   where the same scatter of ones counts a hit. Duplicate indices then sum
//   their updates, where ONNX leaves the result undefined. Integer and bool
//   data go through float32 where that is exact.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

#include <cmath>

using namespace mlir;

namespace otc {

using Imp = GraphImporter;

namespace {

/// For each element of the data (flat), whether it is scattered to and the
/// flat index of the update that lands there (the last one, when several do).
struct ScatterMap {
  std::vector<bool> scattered;
  std::vector<int64_t> source;
};

/// The result on the host, or at run time as where + gather over flat views.
LogicalResult defineScatter(Imp &imp, const std::vector<int64_t> &dataShape,
                            const ScatterMap &map) {
  const HostTensor *d = imp.constantInput(0), *u = imp.constantInput(2);
  if (d && u) {
    HostTensor t = *d;
    for (size_t i = 0; i < t.values.size(); ++i)
      if (map.scattered[i])
        t.values[i] = u->values[map.source[i]];
    return imp.define(0, std::move(t));
  }
  auto data = imp.input(0), updates = imp.input(2);
  if (failed(data) || failed(updates))
    return failure();
  int64_t n = map.scattered.size();
  Value flatData = reshaped(imp, *data, {n});
  Value flatUpdates =
      reshaped(imp, *updates, {cast<RankedTensorType>(updates->getType()).getNumElements()});
  OpBuilder &b = imp.builder();
  HostTensor source{false, onnx::TensorProto::INT64, {n}, {}};
  HostTensor mask{false, onnx::TensorProto::BOOL, {n}, {}};
  for (int64_t i = 0; i < n; ++i) {
    source.values.push_back(double(map.source[i]));
    mask.values.push_back(map.scattered[i]);
  }
  Value src = ConstantOp::create(b, imp.loc(), toAttr(b, source));
  Value m = ConstantOp::create(b, imp.loc(), toAttr(b, mask));
  auto picked = imp.create<GatherOp>(flatUpdates, src, b.getI64IntegerAttr(0));
  if (failed(picked))
    return failure();
  auto joined = imp.create<WhereOp>(m, *picked, flatData);
  if (failed(joined))
    return failure();
  return imp.defineResult(reshaped(imp, *joined, dataShape));
}

/// The reduction attribute: false for "none", true for "add"; fails on
/// the others.
FailureOr<bool> addsUp(Imp &imp) {
  const onnx::AttributeProto *r = imp.attr("reduction");
  if (!r || r->s() == "none")
    return false;
  if (r->s() == "add")
    return true;
  (void)imp.fail("reduction " + quoted(r->s().substr(0, 20)) +
                 " is not supported (only none and add)");
  return failure();
}

/// The run-time scatter: row j of the updates, viewed [J, R], lands at row
/// flat[j] of the data, viewed [P, R]; summed there with `add`, else
/// replacing it.
LogicalResult scatterRows(Imp &imp, const std::vector<int64_t> &data, Value flat, int64_t rowLen,
                          bool add) {
  auto x = imp.input(0), u = imp.input(2);
  if (failed(x) || failed(u))
    return failure();
  Type elem = getElementTypeOrSelf(x->getType());
  // Integers go through float32, so they must be known to be exact there:
  // compile-time data and updates within 2^24 (PyTorch's unsorting of a
  // packed batch scatters an arange into zeros); booleans are 0 and 1.
  // Repeated indices, whose result ONNX leaves undefined, sum their
  // updates, which may then round.
  auto exact = [&](size_t i) {
    const HostTensor *t = imp.constantInput(i);
    return t && llvm::all_of(t->values, [](double v) { return std::abs(v) <= double(1 << 24); });
  };
  if (!isa<FloatType>(elem) && (add || !(elem.isInteger(1) || (exact(0) && exact(2)))))
    return imp.fail("a scatter into integer data at run-time indices needs compile-time data "
                    "and updates within 2^24 (exact in float32) and no reduction");
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Type f32 = b.getF32Type();
  int64_t rows = product(data) / std::max<int64_t>(rowLen, 1);
  int64_t count = cast<RankedTensorType>(flat.getType()).getNumElements();
  Value at = reshaped(imp, flat, {count});
  Value updates = castElements(b, loc, reshaped(imp, *u, {count, rowLen}), f32);
  Value base = castElements(b, loc, reshaped(imp, *x, {rows, rowLen}), f32);
  auto axis = b.getI64IntegerAttr(0);
  Value sum = GatherGradOp::create(b, loc, RankedTensorType::get({rows, rowLen}, f32), updates, at,
                                   axis);
  FailureOr<Value> joined = failure();
  if (add) {
    joined = imp.create<AddOp>(base, sum);
  } else {
    auto onesType = RankedTensorType::get({count, 1}, f32);
    Value ones = ConstantOp::create(b, loc, DenseElementsAttr::get(onesType, b.getF32FloatAttr(1)));
    Value hits = GatherGradOp::create(b, loc, RankedTensorType::get({rows, 1}, f32), ones, at, axis);
    auto hit = imp.create<CompareOp>(hits, scalarConstant(b, loc, f32, 0.0), ComparePredicate::gt);
    if (failed(hit))
      return failure();
    joined = imp.create<WhereOp>(*hit, sum, base);
  }
  if (failed(joined))
    return failure();
  return imp.defineResult(reshaped(imp, castElements(b, loc, *joined, elem), data));
}

/// The data's, the indices' and the updates' shapes.
LogicalResult scatterShapes(Imp &imp, std::vector<int64_t> &data, std::vector<int64_t> &indices,
                            std::vector<int64_t> &updates) {
  if (failed(shapeOfInput(imp, 0, data)) || failed(shapeOfInput(imp, 1, indices)))
    return failure();
  return shapeOfInput(imp, 2, updates);
}

} // namespace

/// ScatterND: updates[j, ...] lands at data[indices[j], ...], where each
/// index tuple addresses the first k dims and the rest is copied whole.
LogicalResult importScatterND(Imp &imp) {
  std::vector<int64_t> data, is, updates;
  auto add = addsUp(imp);
  if (failed(add) || failed(scatterShapes(imp, data, is, updates)))
    return failure();
  int64_t k = is.empty() ? -1 : is.back();
  if (k < 1 || k > int64_t(data.size()))
    return imp.fail("the indices' last dim must be from 1 to the data's rank");
  std::vector<int64_t> want(is.begin(), is.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (updates != want)
    return imp.fail("the updates' shape does not match the indices' and the data's");
  int64_t slice = product(ArrayRef<int64_t>(data).drop_front(k));
  const HostTensor *indices = imp.constantInput(1);
  if (*add || !indices) {
    auto idx = imp.input(1);
    if (failed(idx))
      return failure();
    auto flat = flatIndex(imp, *idx, ArrayRef<int64_t>(data).take_front(k));
    if (failed(flat))
      return failure();
    return scatterRows(imp, data, *flat, slice, *add);
  }
  int64_t n = product(data); // the constant mask and sources have one entry per element
  if (failed(checkFoldSize(imp, n)))
    return failure();
  std::vector<int64_t> strides = stridesOf(data), idx = indices->asInts();
  ScatterMap map{std::vector<bool>(n, false), std::vector<int64_t>(n, 0)};
  for (int64_t j = 0; j * k < int64_t(idx.size()); ++j) {
    int64_t base = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t i = idx[j * k + d];
      if (i < -data[d] || i >= data[d])
        return imp.fail("index " + std::to_string(i) + " is out of range for dim " +
                        std::to_string(d) + " of size " + std::to_string(data[d]));
      base += (i < 0 ? i + data[d] : i) * strides[d];
    }
    for (int64_t s = 0; s < slice; ++s) {
      map.scattered[base + s] = true;
      map.source[base + s] = j * slice + s;
    }
  }
  return defineScatter(imp, data, map);
}

/// ScatterElements: updates[c] lands at data[c with c[axis] = indices[c]].
LogicalResult importScatterElements(Imp &imp) {
  std::vector<int64_t> data, is, updates;
  auto add = addsUp(imp);
  if (failed(add) || failed(scatterShapes(imp, data, is, updates)))
    return failure();
  if (is != updates || updates.size() != data.size())
    return imp.fail("the indices and updates need one shape, of the data's rank");
  auto axis = axisAttr(imp, 0, data.size());
  if (failed(axis))
    return failure();
  int64_t a = *axis;
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != a && updates[d] > data[d])
      return imp.fail("the indices are larger than the data off the axis");
  std::vector<int64_t> strides = stridesOf(data);
  const HostTensor *indices = imp.constantInput(1);
  // The constant offsets (run time) or mask and sources (constant indices).
  if (failed(checkFoldSize(imp, std::max(product(updates), product(data)))))
    return failure();
  if (*add || !indices) {
    auto idx = imp.input(1);
    if (failed(idx))
      return failure();
    auto flat = elementPositions(imp, *idx, a, data[a], strides);
    if (failed(flat))
      return failure();
    return scatterRows(imp, data, *flat, 1, *add);
  }
  int64_t n = product(data);
  std::vector<int64_t> idx = indices->asInts();
  ScatterMap map{std::vector<bool>(n, false), std::vector<int64_t>(n, 0)};
  for (int64_t j = 0; j < int64_t(idx.size()); ++j) {
    int64_t rest = j, at = 0;
    for (int64_t d = int64_t(data.size()) - 1; d >= 0; --d) {
      int64_t c = rest % updates[d];
      rest /= updates[d];
      if (d == a) {
        c = idx[j];
        if (c < -data[d] || c >= data[d])
          return imp.fail("index " + std::to_string(c) + " is out of range for the axis of size " +
                          std::to_string(data[d]));
        c = c < 0 ? c + data[d] : c;
      }
      at += c * strides[d];
    }
    map.scattered[at] = true;
    map.source[at] = j;
  }
  return defineScatter(imp, data, map);
}

} // namespace otc
