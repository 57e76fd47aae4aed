// Compile-time constants and shape computations: Constant, Shape, Range,
// ConstantOfShape, EyeLike, NonZero, and Gather (folded on constants, else
// an embedding lookup).
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

LogicalResult importConstant(Imp &imp) {
  HostTensor t;
  std::string error;
  if (const auto *a = imp.attr("value")) {
    if (!decodeTensor(a->t(), t, error))
      return imp.fail(error);
  } else if (const auto *a = imp.attr("value_float")) {
    t = HostTensor{true, onnx::TensorProto::FLOAT, {}, {a->f()}};
  } else if (const auto *a = imp.attr("value_int")) {
    t = HostTensor{false, onnx::TensorProto::INT64, {}, {double(a->i())}};
  } else if (const auto *a = imp.attr("value_ints")) {
    t = HostTensor{false, onnx::TensorProto::INT64, {a->ints_size()}, {}};
    t.values.assign(a->ints().begin(), a->ints().end());
  } else if (const auto *a = imp.attr("value_floats")) {
    t = HostTensor{true, onnx::TensorProto::FLOAT, {a->floats_size()}, {}};
    t.values.assign(a->floats().begin(), a->floats().end());
  } else {
    return imp.fail("unsupported constant form");
  }
  return imp.define(0, std::move(t));
}

/// Size: the input's element count, known at compile time.
LogicalResult importSize(Imp &imp) {
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  return imp.define(0, HostTensor{false, onnx::TensorProto::INT64, {}, {double(product(shape))}});
}

LogicalResult importShape(Imp &imp) {
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  int64_t rank = shape.size();
  int64_t start = imp.intAttr("start", 0), end = imp.intAttr("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  HostTensor t{false, onnx::TensorProto::INT64, {std::max<int64_t>(end - start, 0)}, {}};
  for (int64_t i = start; i < end; ++i)
    t.values.push_back(shape[i]);
  return imp.define(0, std::move(t));
}

static LogicalResult foldGather(Imp &imp);

/// Range on compile-time scalars: start, start + delta, ... before limit.
LogicalResult importRange(Imp &imp) {
  if (failed(needConstants(imp, 3)))
    return failure();
  const HostTensor *in[3] = {imp.constantInput(0), imp.constantInput(1), imp.constantInput(2)};
  for (const HostTensor *t : in)
    if (t->numElements() != 1)
      return imp.fail("start, limit and delta must be scalars");
  double start = in[0]->values[0], limit = in[1]->values[0], delta = in[2]->values[0];
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    return imp.fail("start, limit and delta must be finite and delta non-zero");
  double n = std::max(std::ceil((limit - start) / delta), 0.0);
  if (failed(checkFoldSize(imp, n > double(INT64_MAX) ? -1 : int64_t(n))))
    return failure();
  HostTensor t{in[0]->isFloat, in[0]->elemType, {int64_t(n)}, {}};
  for (int64_t i = 0; i < int64_t(n); ++i)
    t.values.push_back(start + double(i) * delta);
  return imp.define(0, std::move(t));
}

/// ConstantOfShape on a compile-time shape: a splat of `value` (0.0 float).
LogicalResult importConstantOfShape(Imp &imp) {
  if (failed(needConstants(imp, 1)))
    return failure();
  HostTensor value{true, onnx::TensorProto::FLOAT, {}, {0.0}};
  std::string error;
  if (const auto *a = imp.attr("value"); a && !decodeTensor(a->t(), value, error))
    return imp.fail(error);
  if (value.numElements() != 1)
    return imp.fail("value must hold one element");
  std::vector<int64_t> shape = imp.constantInput(0)->asInts();
  for (int64_t d : shape)
    if (d < 0)
      return imp.fail("the shape has a negative dimension");
  int64_t n = product(shape);
  if (failed(checkFoldSize(imp, n)))
    return failure();
  HostTensor t{value.isFloat, value.elemType, shape, std::vector<double>(n, value.values[0])};
  return imp.define(0, std::move(t));
}

/// EyeLike: a compile-time constant of the input's 2-D shape (its values
/// are not read), ones on diagonal k, of type `dtype` or the input's.
LogicalResult importEyeLike(Imp &imp) {
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  if (shape.size() != 2)
    return imp.fail("the input must be 2-D, not of rank " + std::to_string(shape.size()));
  using P = onnx::TensorProto;
  int64_t type = imp.intAttr("dtype", -1);
  if (type < 0) {
    if (const HostTensor *c = imp.constantInput(0)) {
      type = c->elemType;
    } else {
      auto x = imp.input(0);
      if (failed(x))
        return failure();
      type = onnxTypeFor(getElementTypeOrSelf(x->getType()));
    }
  }
  bool isFloat = type == P::FLOAT || type == P::DOUBLE || type == P::FLOAT16 ||
                 type == P::BFLOAT16;
  if (!isFloat && type != P::INT64 && type != P::INT32 && type != P::BOOL)
    return imp.fail("dtype " + std::to_string(type) + " is not supported");
  int64_t n = product(shape);
  if (failed(checkFoldSize(imp, n)))
    return failure();
  int64_t k = imp.intAttr("k", 0);
  HostTensor t{isFloat, type == P::INT32 ? int(P::INT64) : int(type), shape,
               std::vector<double>(n, 0.0)};
  // (A diagonal outside the matrix leaves it zero; k may be any int64.)
  for (int64_t r = 0; r < shape[0] && k < shape[1] && k > -shape[0]; ++r)
    if (int64_t c = r + k; c >= 0 && c < shape[1])
      t.values[r * shape[1] + c] = 1;
  return imp.define(0, std::move(t));
}

/// NonZero on a compile-time input (the exporter's arange idiom, NonZero of
/// ConstantOfShape(n) filled with ones; a constant mask's positions): the
/// [rank, n] coordinates of its non-zero elements in row-major order. On a run-time
/// input the result's shape depends on the values, which otc's static
/// shapes cannot hold: there it starts masked rows (MaskedRows.cpp).
LogicalResult importNonZero(Imp &imp) {
  if (imp.numInputs() != 1)
    return imp.fail("needs one input");
  const HostTensor *in = imp.constantInput(0);
  if (!in) // x[mask]: rows kept dense, the mask beside them
    return importMaskedSelection(imp);
  // A scalar counts as one element of rank 1, as numpy's nonzero does.
  std::vector<int64_t> shape = in->shape.empty() ? std::vector<int64_t>{1} : in->shape;
  std::vector<int64_t> strides = stridesOf(shape);
  int64_t rank = shape.size(), n = 0;
  for (double v : in->values)
    n += v != 0;
  if (failed(checkFoldSize(imp, rank * n)))
    return failure();
  HostTensor t{false, onnx::TensorProto::INT64, {rank, n}, std::vector<double>(rank * n)};
  for (int64_t i = 0, k = 0; i < int64_t(in->values.size()); ++i) {
    if (in->values[i] == 0)
      continue;
    for (int64_t d = 0; d < rank; ++d)
      t.values[d * n + k] = double(i / strides[d] % shape[d]);
    ++k;
  }
  return imp.define(0, std::move(t));
}

/// Gather: folded on the host when data and indices are constants (shape
/// arithmetic), else an otc.gather (an embedding lookup).
LogicalResult importGather(Imp &imp) {
  if (imp.constantInput(0) && imp.constantInput(1))
    return foldGather(imp);
  auto data = imp.input(0);
  auto indices = imp.input(1);
  if (failed(data) || failed(indices))
    return failure();
  if (!cast<RankedTensorType>(indices->getType()).getElementType().isInteger(64))
    return imp.fail("indices must be int64");
  int64_t rank = cast<RankedTensorType>(data->getType()).getRank();
  auto axis = axisAttr(imp, 0, rank);
  if (failed(axis))
    return failure();
  return imp.defineResult(
      imp.create<GatherOp>(*data, *indices, imp.builder().getI64IntegerAttr(*axis)));
}

static LogicalResult foldGather(Imp &imp) {
  const HostTensor &data = *imp.constantInput(0), &idx = *imp.constantInput(1);
  auto a = axisAttr(imp, 0, data.shape.size());
  if (failed(a))
    return failure();
  int64_t axis = *a;
  int64_t outer = product(ArrayRef<int64_t>(data.shape).take_front(axis));
  int64_t inner = product(ArrayRef<int64_t>(data.shape).drop_front(axis + 1));
  int64_t n = data.shape[axis];
  int64_t count = product({outer, int64_t(idx.values.size()), inner});
  if (failed(checkFoldSize(imp, count)))
    return failure();
  HostTensor t = data;
  t.shape.assign(data.shape.begin(), data.shape.begin() + axis);
  t.shape.insert(t.shape.end(), idx.shape.begin(), idx.shape.end());
  t.shape.insert(t.shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  t.values.clear();
  if (count == 0) // outer may still be huge: do not loop over it
    return imp.define(0, std::move(t));
  for (int64_t o = 0; o < outer; ++o)
    for (double iv : idx.values) {
      int64_t i = toInt64(iv);
      if (i < -n || i >= n)
        return imp.fail("index " + std::to_string(i) + " is out of range");
      if (i < 0)
        i += n;
      for (int64_t k = 0; k < inner; ++k)
        t.values.push_back(data.values[(o * n + i) * inner + k]);
    }
  return imp.define(0, std::move(t));
}

} // namespace otc
