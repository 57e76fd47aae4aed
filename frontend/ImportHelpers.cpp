// The helpers that the importers of every family share.
#include "ImportHelpers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace otc {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (!otc_mul_count(n, d, &n))
      return -1;
  return n;
}

RankedTensorType withShape(Value v, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, cast<RankedTensorType>(v.getType()).getElementType());
}

FailureOr<SmallVector<int64_t>> normaliseAxes(GraphImporter &imp, std::vector<int64_t> axes,
                                              int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank)
      return imp.fail("axis " + std::to_string(a) + " is out of range for rank " +
                      std::to_string(rank));
    out.push_back(n);
  }
  llvm::sort(out);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

FailureOr<int64_t> axisAttr(GraphImporter &imp, int64_t fallback, int64_t rank) {
  auto axes = normaliseAxes(imp, {imp.intAttr("axis", fallback)}, rank);
  if (failed(axes))
    return failure();
  return axes->front();
}

Value reshaped(GraphImporter &imp, Value v, ArrayRef<int64_t> shape) {
  if (cast<RankedTensorType>(v.getType()).getShape() == shape)
    return v;
  return ReshapeOp::create(imp.builder(), imp.loc(), withShape(v, shape), v);
}

FailureOr<Value> wrapNegative(GraphImporter &imp, Value v, int64_t extent) {
  OpBuilder &b = imp.builder();
  Type i64 = b.getI64Type();
  auto negative = imp.create<CompareOp>(v, scalarConstant(b, imp.loc(), i64, 0), ComparePredicate::lt);
  auto wrapped = imp.create<AddOp>(v, scalarConstant(b, imp.loc(), i64, double(extent)));
  if (failed(negative) || failed(wrapped))
    return failure();
  return imp.create<WhereOp>(*negative, *wrapped, v);
}

/// wrapNegative(v, extent) * stride.
static FailureOr<Value> wrappedTimes(GraphImporter &imp, Value v, int64_t extent, int64_t stride) {
  auto w = wrapNegative(imp, v, extent);
  if (failed(w) || stride == 1)
    return w;
  OpBuilder &b = imp.builder();
  return imp.create<MulOp>(*w, scalarConstant(b, imp.loc(), b.getI64Type(), double(stride)));
}

/// Whether int64 `v` lies in [-extent, extent).
static FailureOr<Value> inRange(GraphImporter &imp, Value v, int64_t extent) {
  OpBuilder &b = imp.builder();
  Type i64 = b.getI64Type();
  auto low = imp.create<CompareOp>(v, scalarConstant(b, imp.loc(), i64, double(-extent)),
                                   ComparePredicate::ge);
  auto high = imp.create<CompareOp>(v, scalarConstant(b, imp.loc(), i64, double(extent)),
                                    ComparePredicate::lt);
  if (failed(low) || failed(high))
    return failure();
  return imp.create<AndOp>(*low, *high);
}

/// `pos` where `ok`, else a position past any tensor (2^36), which gather
/// reads as 0 and gather_grad drops.
static FailureOr<Value> orNowhere(GraphImporter &imp, Value ok, Value pos) {
  OpBuilder &b = imp.builder();
  return imp.create<WhereOp>(ok, pos, scalarConstant(b, imp.loc(), b.getI64Type(),
                                                     double(OTC_MAX_ELEMENTS)));
}

FailureOr<Value> flatIndex(GraphImporter &imp, Value idx, ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(idx.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> outer(type.getShape().drop_back()), one(outer);
  one.push_back(1);
  std::vector<int64_t> strides = stridesOf(std::vector<int64_t>(dims.begin(), dims.end()));
  OpBuilder &b = imp.builder();
  FailureOr<Value> sum = failure(), ok = failure();
  for (size_t i = 0; i < dims.size(); ++i) {
    SmallVector<int64_t> starts(rank, 0);
    starts.back() = int64_t(i);
    Value part = SliceOp::create(b, imp.loc(), RankedTensorType::get(one, type.getElementType()),
                                 idx, b.getDenseI64ArrayAttr(starts),
                                 b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 1)));
    part = reshaped(imp, part, outer);
    auto term = wrappedTimes(imp, part, dims[i], strides[i]);
    auto here = inRange(imp, part, dims[i]);
    if (failed(term) || failed(here))
      return failure();
    sum = i == 0 ? term : imp.create<AddOp>(*sum, *term);
    ok = i == 0 ? here : imp.create<AndOp>(*ok, *here);
    if (failed(sum) || failed(ok))
      return failure();
  }
  return orNowhere(imp, *ok, *sum);
}

/// The element offsets of `shape`'s coordinates in a row-major tensor of
/// strides `strides`, leaving out dim `skip` (-1: none): an int64 constant
/// of shape `shape`.
Value coordinateOffsets(GraphImporter &imp, const std::vector<int64_t> &shape,
                        const std::vector<int64_t> &strides, int64_t skip) {
  HostTensor t{false, onnx::TensorProto::INT64, shape, {}};
  int64_t n = product(shape);
  t.values.reserve(n);
  for (int64_t j = 0; j < n; ++j) {
    int64_t rest = j, at = 0;
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (d != skip)
        at += rest % shape[d] * strides[d];
      rest /= shape[d];
    }
    t.values.push_back(double(at));
  }
  return ConstantOp::create(imp.builder(), imp.loc(), toAttr(imp.builder(), t));
}

FailureOr<Value> gatherAt(GraphImporter &imp, Value v, int64_t axis,
                          const std::vector<int64_t> &positions) {
  HostTensor at{false, onnx::TensorProto::INT64, {int64_t(positions.size())},
                std::vector<double>(positions.begin(), positions.end())};
  OpBuilder &b = imp.builder();
  return imp.create<GatherOp>(v, ConstantOp::create(b, imp.loc(), toAttr(b, at)).getResult(),
                              b.getI64IntegerAttr(axis));
}

FailureOr<Value> elementPositions(GraphImporter &imp, Value idx, int64_t axis, int64_t extent,
                                  const std::vector<int64_t> &strides) {
  auto along = wrappedTimes(imp, idx, extent, strides[axis]);
  if (failed(along))
    return failure();
  auto shape = cast<RankedTensorType>(idx.getType()).getShape();
  auto pos = imp.create<AddOp>(*along, coordinateOffsets(imp, {shape.begin(), shape.end()}, strides, axis));
  auto ok = inRange(imp, idx, extent);
  if (failed(pos) || failed(ok))
    return failure();
  return orNowhere(imp, *ok, *pos);
}

FailureOr<Value> zeroPadded(GraphImporter &imp, Value x, int64_t axis, int64_t before,
                            int64_t after) {
  if (before == 0 && after == 0)
    return x;
  OpBuilder &b = imp.builder();
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<Value> parts;
  auto zeros = [&](int64_t n) {
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = n;
    auto t = type.clone(shape);
    return ConstantOp::create(b, imp.loc(),
                              DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())))
        .getResult();
  };
  if (before)
    parts.push_back(zeros(before));
  parts.push_back(x);
  if (after)
    parts.push_back(zeros(after));
  return imp.create<ConcatOp>(ValueRange(parts), b.getI64IntegerAttr(axis));
}

FailureOr<Value> floatInput(GraphImporter &imp, size_t i) {
  auto x = imp.input(i);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(getElementTypeOrSelf(x->getType())))
    return imp.fail("input " + std::to_string(i) + " must be a float tensor");
  return x;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// Fails unless a folded result of `count` elements fits the host limit;
/// checked before the fold allocates or loops.
LogicalResult checkFoldSize(GraphImporter &imp, int64_t count) {
  if (count >= 0 && count <= OTC_MAX_HOST_ELEMENTS)
    return success();
  return imp.fail("the folded result has more than " +
                  std::to_string(OTC_MAX_HOST_ELEMENTS) + " elements");
}

/// Input `i` reshaped (on the host when constant) to `shape`.
LogicalResult defineReshaped(GraphImporter &imp, size_t i, std::vector<int64_t> shape) {
  if (const HostTensor *c = imp.constantInput(i)) {
    if (product(shape) != c->numElements())
      return imp.fail("cannot reshape " + std::to_string(c->numElements()) +
                      " elements to " + std::to_string(product(shape)));
    HostTensor t = *c;
    t.shape = shape;
    return imp.define(0, std::move(t));
  }
  auto v = imp.input(i);
  if (failed(v))
    return failure();
  auto type = withShape(*v, shape);
  if (product(shape) != type.getNumElements() ||
      product(cast<RankedTensorType>(v->getType()).getShape()) != product(shape))
    return imp.fail("cannot reshape " + std::to_string(product(
        cast<RankedTensorType>(v->getType()).getShape())) + " elements to " +
        std::to_string(product(shape)));
  imp.define(0, ReshapeOp::create(imp.builder(), imp.loc(), type, *v).getResult());
  return success();
}

onnx::NodeProto madeNode(const onnx::NodeProto &n, const char *opType) {
  onnx::NodeProto m;
  m.set_name(n.name());
  m.set_op_type(opType);
  return m;
}

LogicalResult bindAs(GraphImporter &imp, const std::string &name, const std::string &source) {
  onnx::NodeProto m = madeNode(imp.node(), "Identity");
  m.add_input(source);
  m.add_output(name);
  return imp.withNode(m, [&] {
    imp.defineAs(0, source);
    return success();
  });
}

LogicalResult shapeOfInput(GraphImporter &imp, size_t i, std::vector<int64_t> &shape) {
  if (const HostTensor *c = imp.constantInput(i)) {
    shape = c->shape;
    return success();
  }
  auto v = imp.input(i);
  if (failed(v))
    return failure();
  shape = cast<RankedTensorType>(v->getType()).getShape().vec();
  return success();
}

LogicalResult needConstants(GraphImporter &imp, size_t minInputs) {
  if (imp.numInputs() < minInputs)
    return imp.fail("needs at least " + std::to_string(minInputs) + " inputs");
  if (!imp.allInputsConstant())
    return imp.fail("supported only on compile-time constant inputs");
  return success();
}

FailureOr<std::vector<int64_t>> intsFromInputOrAttr(GraphImporter &imp, bool fromInput,
                                                    size_t i, StringRef attr, StringRef what) {
  if (!fromInput)
    return imp.intsAttr(attr);
  if (i >= imp.numInputs() || imp.node().input(i).empty())
    return std::vector<int64_t>();
  const HostTensor *t = imp.constantInput(i);
  if (!t)
    return imp.fail(what + " must be compile-time constants");
  return t->asInts();
}

FoldResult foldBinary(GraphImporter &imp, llvm::function_ref<double(double, double)> f,
                      int resultType) {
  const HostTensor *l = imp.constantInput(0), *r = imp.constantInput(1);
  if (!l || !r)
    return FoldResult::NotConstant;
  size_t rank = std::max(l->shape.size(), r->shape.size());
  auto pad = [&](const HostTensor *t) {
    std::vector<int64_t> s(rank - t->shape.size(), 1);
    s.insert(s.end(), t->shape.begin(), t->shape.end());
    return s;
  };
  std::vector<int64_t> ls = pad(l), rs = pad(r), out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (ls[d] != rs[d] && ls[d] != 1 && rs[d] != 1) {
      (void)imp.fail("operand shapes do not broadcast");
      return FoldResult::Failed;
    }
    out[d] = ls[d] == 1 ? rs[d] : ls[d];
  }
  int64_t n = product(out);
  if (failed(checkFoldSize(imp, n)))
    return FoldResult::Failed;
  if (n == 0) { // nothing to compute; strides of zero-sized shapes may overflow
    HostTensor t{l->isFloat, l->elemType, out, {}};
    if (resultType >= 0)
      t = HostTensor{false, resultType, out, {}};
    return succeeded(imp.define(0, std::move(t))) ? FoldResult::Folded : FoldResult::Failed;
  }
  std::vector<int64_t> lst = stridesOf(ls), rst = stridesOf(rs), ost = stridesOf(out);
  HostTensor t;
  t.isFloat = resultType < 0 && l->isFloat;
  t.elemType = resultType < 0 ? l->elemType : resultType;
  t.shape = out;
  t.values.resize(n);
  for (int64_t i = 0; i < (int64_t)t.values.size(); ++i) {
    int64_t li = 0, ri = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t idx = (i / ost[d]) % out[d];
      li += (ls[d] == 1 ? 0 : idx) * lst[d];
      ri += (rs[d] == 1 ? 0 : idx) * rst[d];
    }
    t.values[i] = f(l->values[li], r->values[ri]);
    if (!t.isFloat)
      t.values[i] = std::trunc(t.values[i]);
  }
  return succeeded(imp.define(0, std::move(t))) ? FoldResult::Folded : FoldResult::Failed;
}

} // namespace otc
