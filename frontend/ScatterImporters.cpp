// Scatters with compile-time indices, composed from primitives (tinygrad
// style): the result is where(scattered, gather(updates, source), data)
// over flat views, with a constant mask and a constant source index per
// element, so gradients to the data and the updates come from where and
// gather. Exports use them for label shifts and cache writes, whose indices
// depend only on shapes.
#include "Importers.h"

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

/// Fails unless the node's reduction attribute is absent or "none".
LogicalResult noReduction(Imp &imp) {
  const onnx::AttributeProto *r = imp.attr("reduction");
  if (r && r->s() != "none")
    return imp.fail("reduction " + quoted(r->s().substr(0, 20)) + " is not supported (only none)");
  return success();
}

} // namespace

/// ScatterND: updates[j, ...] lands at data[indices[j], ...], where each
/// index tuple addresses the first k dims and the rest is copied whole.
LogicalResult importScatterND(Imp &imp) {
  if (failed(noReduction(imp)))
    return failure();
  const HostTensor *indices = imp.constantInput(1);
  if (!indices)
    return imp.fail("the indices must be compile-time constants");
  std::vector<int64_t> data, updates;
  if (failed(shapeOfInput(imp, 0, data)) || failed(shapeOfInput(imp, 2, updates)))
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

} // namespace otc
