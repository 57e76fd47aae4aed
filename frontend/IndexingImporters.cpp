// Scatters and element gathers, composed from primitives (tinygrad style)
// so their gradients come from where, gather and reduce_sum:
// - a scatter with compile-time indices is where(scattered, gather(updates,
//   source), data) over flat views, with a constant mask and source index
//   per element (label shifts and cache writes, whose indices depend only on
//   shapes);
// - GatherElements with run-time indices is a one-hot selection along the
//   axis: sum over k of (index == k) * data[..., k, ...].
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

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

/// What both scatters start with: no reduction (or "none"), constant
/// indices, and the data's and the updates' shapes. The indices, or null
/// after failing.
const HostTensor *scatterOperands(Imp &imp, std::vector<int64_t> &data,
                                  std::vector<int64_t> &updates) {
  const onnx::AttributeProto *r = imp.attr("reduction");
  if (r && r->s() != "none") {
    (void)imp.fail("reduction " + quoted(r->s().substr(0, 20)) + " is not supported (only none)");
    return nullptr;
  }
  const HostTensor *indices = imp.constantInput(1);
  if (!indices) {
    (void)imp.fail("the indices must be compile-time constants");
    return nullptr;
  }
  if (failed(shapeOfInput(imp, 0, data)) || failed(shapeOfInput(imp, 2, updates)))
    return nullptr;
  return indices;
}

} // namespace

/// ScatterND: updates[j, ...] lands at data[indices[j], ...], where each
/// index tuple addresses the first k dims and the rest is copied whole.
LogicalResult importScatterND(Imp &imp) {
  std::vector<int64_t> data, updates;
  const HostTensor *indices = scatterOperands(imp, data, updates);
  if (!indices)
    return failure();
  const std::vector<int64_t> &is = indices->shape;
  int64_t k = is.empty() ? -1 : is.back();
  if (k < 1 || k > int64_t(data.size()))
    return imp.fail("the indices' last dim must be from 1 to the data's rank");
  std::vector<int64_t> want(is.begin(), is.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (updates != want)
    return imp.fail("the updates' shape does not match the indices' and the data's");
  int64_t slice = product(ArrayRef<int64_t>(data).drop_front(k));
  int64_t n = product(data);
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
  std::vector<int64_t> data, updates;
  const HostTensor *indices = scatterOperands(imp, data, updates);
  if (!indices)
    return failure();
  if (indices->shape != updates || updates.size() != data.size())
    return imp.fail("the indices and updates need one shape, of the data's rank");
  auto axis = axisAttr(imp, 0, data.size());
  if (failed(axis))
    return failure();
  int64_t n = product(data);
  if (failed(checkFoldSize(imp, n)))
    return failure();
  std::vector<int64_t> strides = stridesOf(data), idx = indices->asInts();
  ScatterMap map{std::vector<bool>(n, false), std::vector<int64_t>(n, 0)};
  for (int64_t j = 0; j < int64_t(idx.size()); ++j) {
    int64_t rest = j, at = 0;
    for (int64_t d = int64_t(data.size()) - 1; d >= 0; --d) {
      int64_t c = rest % updates[d];
      rest /= updates[d];
      if (d == *axis) {
        c = idx[j];
        if (c < -data[d] || c >= data[d])
          return imp.fail("index " + std::to_string(c) + " is out of range for the axis of size " +
                          std::to_string(data[d]));
        c = c < 0 ? c + data[d] : c;
      } else if (c >= data[d]) {
        return imp.fail("the indices are larger than the data off the axis");
      }
      at += c * strides[d];
    }
    map.scattered[at] = true;
    map.source[at] = j;
  }
  return defineScatter(imp, data, map);
}

namespace {

/// A constant int64 [1, .., n, .., 1] of rank `rank` counting 0..n-1 along
/// dim `at`.
Value iota(Imp &imp, int64_t n, int64_t rank, int64_t at) {
  HostTensor t{false, onnx::TensorProto::INT64, std::vector<int64_t>(rank, 1), {}};
  t.shape[at] = n;
  for (int64_t k = 0; k < n; ++k)
    t.values.push_back(double(k));
  return ConstantOp::create(imp.builder(), imp.loc(), toAttr(imp.builder(), t));
}

std::vector<int64_t> withOne(std::vector<int64_t> shape, int64_t at) {
  shape.insert(shape.begin() + at, 1);
  return shape;
}

/// GatherElements on host constants.
LogicalResult foldGatherElements(Imp &imp, const HostTensor &data, const HostTensor &idx,
                                 int64_t axis) {
  HostTensor t = data;
  t.shape = idx.shape;
  t.values.assign(idx.values.size(), 0.0);
  std::vector<int64_t> strides = stridesOf(data.shape);
  int64_t n = data.shape[axis];
  for (int64_t j = 0; j < int64_t(idx.values.size()); ++j) {
    int64_t rest = j, at = 0;
    for (int64_t d = int64_t(idx.shape.size()) - 1; d >= 0; --d) {
      int64_t c = rest % idx.shape[d];
      rest /= idx.shape[d];
      if (d == axis) {
        c = toInt64(idx.values[j]);
        if (c < -n || c >= n)
          return imp.fail("index " + std::to_string(c) + " is out of range for the axis of size " +
                          std::to_string(n));
        c = c < 0 ? c + n : c;
      }
      at += c * strides[d];
    }
    t.values[j] = data.values[at];
  }
  return imp.define(0, std::move(t));
}

} // namespace

/// GatherElements: out[c] = data[c with c[axis] = indices[c]], negative
/// indices from the end. At run time a one-hot selection: where(indices ==
/// k, data[.., k, ..], 0) summed over k, whose gradient scatters into the
/// data; it costs the data's size times the indices' extent along the axis.
LogicalResult importGatherElements(Imp &imp) {
  std::vector<int64_t> data, ids;
  if (failed(shapeOfInput(imp, 0, data)) || failed(shapeOfInput(imp, 1, ids)))
    return failure();
  if (ids.size() != data.size())
    return imp.fail("the indices need the data's rank");
  int64_t rank = data.size();
  auto axis = axisAttr(imp, 0, rank);
  if (failed(axis))
    return failure();
  int64_t a = *axis, n = data[a];
  for (int64_t d = 0; d < rank; ++d)
    if (d != a && ids[d] > data[d])
      return imp.fail("the indices are larger than the data off the axis");
  const HostTensor *cd = imp.constantInput(0), *ci = imp.constantInput(1);
  if (cd && ci) {
    if (failed(checkFoldSize(imp, product(ids))))
      return failure();
    return foldGatherElements(imp, *cd, *ci, a);
  }
  auto x = imp.input(0), idx = imp.input(1);
  if (failed(x) || failed(idx))
    return failure();
  OpBuilder &b = imp.builder();
  Type elem = cast<RankedTensorType>(x->getType()).getElementType();
  if (!isa<FloatType>(elem))
    return imp.fail("GatherElements of run-time integer data is not supported");
  // The data cut to the indices' extent off the axis, then [.., 1, n, ..].
  std::vector<int64_t> cut = ids;
  cut[a] = n;
  Value v = *x;
  if (cut != data)
    v = SliceOp::create(b, imp.loc(), RankedTensorType::get(cut, elem), v,
                        b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 0)),
                        b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 1)));
  v = reshaped(imp, v, withOne(cut, a));
  // Negative indices count from the end; then [.., m, 1, ..] against iota.
  Value zero = scalarConstant(b, imp.loc(), b.getI64Type(), 0);
  Value extent = scalarConstant(b, imp.loc(), b.getI64Type(), double(n));
  auto negative = imp.create<CompareOp>(*idx, zero, ComparePredicate::lt);
  auto wrapped = imp.create<AddOp>(*idx, extent);
  if (failed(negative) || failed(wrapped))
    return failure();
  auto fixed = imp.create<WhereOp>(*negative, *wrapped, *idx);
  if (failed(fixed))
    return failure();
  Value column = reshaped(imp, *fixed, withOne(ids, a + 1));
  auto hit = imp.create<CompareOp>(column, iota(imp, n, rank + 1, a + 1), ComparePredicate::eq);
  if (failed(hit))
    return failure();
  auto picked = imp.create<WhereOp>(*hit, v, scalarConstant(b, imp.loc(), elem, 0.0));
  if (failed(picked))
    return failure();
  return imp.defineResult(imp.create<ReduceSumOp>(*picked, b.getDenseI64ArrayAttr({a + 1}),
                                                  b.getBoolAttr(false)));
}

} // namespace otc
