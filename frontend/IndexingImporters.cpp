// Element and tuple gathers, composed from primitives (tinygrad style):
// each is one otc.gather along axis 0 of the data's flat view, at the flat
// position of every index, so its gradient is gather's deterministic
// scatter-add. Negative indices count from the end; on the host (constant
// indices) they are range-checked, at run time an index out of range reads
// 0 (gather's rule).
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace otc {

using Imp = GraphImporter;

namespace {

/// Index `i` of an axis of `n`, counted from the end when negative; fails
/// naming it when out of range.
FailureOr<int64_t> wrapIndex(Imp &imp, int64_t i, int64_t n) {
  if (i < -n || i >= n) {
    (void)imp.fail("index " + std::to_string(i) + " is out of range for an axis of size " +
                   std::to_string(n));
    return failure();
  }
  return i < 0 ? i + n : i;
}

/// The gather of `positions` (flat, into `data`'s elements) as output 0,
/// shaped `shape`: on the host when the data is constant too, else
/// otc.gather of the flat data.
LogicalResult gatherFlat(Imp &imp, const std::vector<int64_t> &positions,
                         const std::vector<int64_t> &shape) {
  if (const HostTensor *d = imp.constantInput(0)) {
    HostTensor t = *d;
    t.shape = shape;
    t.values.clear();
    for (int64_t p : positions)
      t.values.push_back(d->values[p]);
    return imp.define(0, std::move(t));
  }
  HostTensor at{false, onnx::TensorProto::INT64, shape, {}};
  for (int64_t p : positions)
    at.values.push_back(double(p));
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  OpBuilder &b = imp.builder();
  Value flat = reshaped(imp, *x, {cast<RankedTensorType>(x->getType()).getNumElements()});
  return imp.defineResult(imp.create<GatherOp>(
      flat, ConstantOp::create(b, imp.loc(), toAttr(b, at)).getResult(), b.getI64IntegerAttr(0)));
}

/// otc.gather of the data's view [rows, trailing...] at run-time positions
/// `flat`, as output 0.
LogicalResult gatherRows(Imp &imp, const std::vector<int64_t> &data, int64_t lead, Value flat) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  std::vector<int64_t> view{product(ArrayRef<int64_t>(data).take_front(lead))};
  view.insert(view.end(), data.begin() + lead, data.end());
  return imp.defineResult(
      imp.create<GatherOp>(reshaped(imp, *x, view), flat, imp.builder().getI64IntegerAttr(0)));
}

} // namespace

/// GatherElements: out[c] = data[c with c[axis] = indices[c]].
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
  if (failed(checkFoldSize(imp, product(ids))))
    return failure();
  std::vector<int64_t> strides = stridesOf(data);
  if (const HostTensor *ci = imp.constantInput(1)) {
    std::vector<int64_t> positions, idx = ci->asInts();
    for (int64_t j = 0; j < int64_t(idx.size()); ++j) {
      int64_t rest = j, at = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        int64_t c = rest % ids[d];
        rest /= ids[d];
        if (d == a) {
          auto w = wrapIndex(imp, idx[j], n);
          if (failed(w))
            return failure();
          c = *w;
        }
        at += c * strides[d];
      }
      positions.push_back(at);
    }
    return gatherFlat(imp, positions, ids);
  }
  auto idx = imp.input(1);
  if (failed(idx))
    return failure();
  auto flat = elementPositions(imp, *idx, a, n, strides);
  if (failed(flat))
    return failure();
  return gatherRows(imp, data, rank, *flat);
}

/// OneHot: values[1] where the index (negative from the end) equals the
/// position along the new axis `axis` of `depth`, else values[0]. A compare
/// against a constant iota and a where, so the values get gradients.
LogicalResult importOneHot(Imp &imp) {
  std::vector<int64_t> ids;
  if (failed(shapeOfInput(imp, 0, ids)))
    return failure();
  const HostTensor *d = imp.constantInput(1);
  if (!d || d->numElements() != 1)
    return imp.fail("depth must be a compile-time scalar");
  double want = d->values[0];
  if (!(want >= 1) || want > double(OTC_MAX_ELEMENTS))
    return imp.fail("depth must be from 1 to 2^36");
  int64_t depth = int64_t(want);
  if (failed(checkFoldSize(imp, depth)))
    return failure();
  int64_t rank = int64_t(ids.size()) + 1, axis = imp.intAttr("axis", -1);
  if (axis < -rank || axis >= rank)
    return imp.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  axis = axis < 0 ? axis + rank : axis;
  auto idx = imp.input(0), values = imp.input(2);
  if (failed(idx) || failed(values))
    return failure();
  if (cast<RankedTensorType>(values->getType()).getShape() != ArrayRef<int64_t>{2})
    return imp.fail("values must be [off, on]");
  OpBuilder &b = imp.builder();
  Value i = *idx;
  if (!getElementTypeOrSelf(i.getType()).isInteger(64)) // float indices truncate
    i = CastOp::create(b, imp.loc(), withShape(i, ids).clone(b.getI64Type()), i);
  auto wrapped = wrapNegative(imp, i, depth);
  if (failed(wrapped))
    return failure();
  std::vector<int64_t> column = ids;
  column.insert(column.begin() + axis, 1);
  HostTensor iota{false, onnx::TensorProto::INT64, std::vector<int64_t>(rank, 1), {}};
  iota.shape[axis] = depth;
  for (int64_t k = 0; k < depth; ++k)
    iota.values.push_back(double(k));
  auto hit = imp.create<CompareOp>(reshaped(imp, *wrapped, column),
                                   ConstantOp::create(b, imp.loc(), toAttr(b, iota)).getResult(),
                                   ComparePredicate::eq);
  if (failed(hit))
    return failure();
  Type elem = getElementTypeOrSelf(values->getType());
  // Integer [0, 1]: the hit itself, cast (an indicator a count may sum).
  if (const HostTensor *v = imp.constantInput(2);
      v && !v->isFloat && v->values == std::vector<double>{0.0, 1.0})
    return imp.defineResult(
        CastOp::create(b, imp.loc(), cast<RankedTensorType>(hit->getType()).clone(elem), *hit)
            .getResult());
  auto pick = [&](int64_t k) {
    return reshaped(imp, SliceOp::create(b, imp.loc(), RankedTensorType::get({1}, elem), *values,
                                         b.getDenseI64ArrayAttr({k}), b.getDenseI64ArrayAttr({1})),
                    {});
  };
  return imp.defineResult(imp.create<WhereOp>(*hit, pick(1), pick(0)));
}

/// GatherND: out[b.., i.., t..] = data[b.., indices[b.., i..], t..], where
/// each index tuple of k addresses the k dims after the `batch_dims`
/// leading ones, which the indices and the data share.
LogicalResult importGatherND(Imp &imp) {
  std::vector<int64_t> data, ids;
  if (failed(shapeOfInput(imp, 0, data)) || failed(shapeOfInput(imp, 1, ids)))
    return failure();
  int64_t r = data.size(), q = ids.size(), nb = imp.intAttr("batch_dims", 0);
  if (q < 1)
    return imp.fail("the indices need rank 1 or more");
  if (nb < 0 || nb >= std::min(q, r))
    return imp.fail("batch_dims " + std::to_string(nb) + " must be below both ranks");
  int64_t k = ids.back();
  if (k < 1 || nb + k > r)
    return imp.fail("the indices' last dim must be from 1 to the data's rank less batch_dims");
  for (int64_t d = 0; d < nb; ++d)
    if (ids[d] != data[d])
      return imp.fail("the indices' and the data's batch dims differ");
  std::vector<int64_t> out(ids.begin(), ids.end() - 1);
  out.insert(out.end(), data.begin() + nb + k, data.end());
  ArrayRef<int64_t> tuple = ArrayRef<int64_t>(data).slice(nb, k);
  int64_t block = product(tuple), tuples = product(ArrayRef<int64_t>(ids).drop_back());
  int64_t perBatch = tuples / std::max<int64_t>(product(ArrayRef<int64_t>(ids).take_front(nb)), 1);
  if (const HostTensor *ci = imp.constantInput(1)) {
    if (failed(checkFoldSize(imp, product(out)))) // a position per element
      return failure();
    // Row positions in the view [batch.. tuple.., trailing], then elements.
    std::vector<int64_t> idx = ci->asInts(), tstrides = stridesOf(tuple.vec()), positions;
    int64_t trailing = product(ArrayRef<int64_t>(data).drop_front(nb + k));
    for (int64_t j = 0; j < tuples; ++j) {
      int64_t row = j / std::max<int64_t>(perBatch, 1) * block;
      for (int64_t d = 0; d < k; ++d) {
        auto c = wrapIndex(imp, idx[j * k + d], tuple[d]);
        if (failed(c))
          return failure();
        row += *c * tstrides[d];
      }
      for (int64_t t = 0; t < trailing; ++t)
        positions.push_back(row * trailing + t);
    }
    return gatherFlat(imp, positions, out);
  }
  auto idx = imp.input(1);
  if (failed(idx))
    return failure();
  auto flat = flatIndex(imp, *idx, tuple);
  if (succeeded(flat) && nb > 0) {
    // Each batch's rows start `block` apart.
    std::vector<int64_t> lead(ids.begin(), ids.end() - 1);
    std::fill(lead.begin() + nb, lead.end(), 1);
    std::vector<int64_t> strides(nb + (q - 1 - nb), 0);
    std::vector<int64_t> batchStrides = stridesOf(std::vector<int64_t>(ids.begin(), ids.begin() + nb));
    for (int64_t d = 0; d < nb; ++d)
      strides[d] = batchStrides[d] * block;
    flat = imp.create<AddOp>(*flat, coordinateOffsets(imp, lead, strides, -1));
  }
  if (failed(flat))
    return failure();
  return gatherRows(imp, data, nb + k, *flat);
}

} // namespace otc
