#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  auto shape = broadcastShapes(from, to);
  return shape && ArrayRef<int64_t>(*shape) == to;
}

DropoutOp createDropout(OpBuilder &b, Location loc, Value x, double ratio, StringRef key) {
  uint32_t stream = 2166136261u;
  for (unsigned char ch : key)
    stream = (stream ^ ch) * 16777619u;
  auto type = cast<RankedTensorType>(x.getType());
  return DropoutOp::create(b, loc, type, RankedTensorType::get(type.getShape(), b.getI1Type()), x,
                           b.getF64FloatAttr(ratio), b.getI64IntegerAttr(stream & 0x7fffffff));
}

Value scalarConstant(OpBuilder &b, Location loc, Type elementType,
                     double value) {
  auto type = RankedTensorType::get({}, elementType);
  if (isa<IntegerType>(elementType))
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getIntegerAttr(elementType, int64_t(value))));
  auto attr = DenseElementsAttr::get(
      type, b.getFloatAttr(elementType, value).getValue());
  return ConstantOp::create(b, loc, attr);
}

Value castElements(OpBuilder &b, Location loc, Value v, Type elementType) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getElementType() == elementType)
    return v;
  return CastOp::create(b, loc, t.clone(elementType), v);
}

Value sumToShape(OpBuilder &b, Location loc, Value grad,
                 RankedTensorType target) {
  auto gradType = tensorType(grad);
  if (gradType.getShape() == target.getShape())
    return grad;
  ArrayRef<int64_t> from = gradType.getShape(), to = target.getShape();
  size_t lead = from.size() - to.size();
  SmallVector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  Value summed = grad;
  if (!axes.empty())
    summed = ReduceSumOp::create(b, loc, grad, b.getDenseI64ArrayAttr(axes),
                                 b.getBoolAttr(true));
  if (tensorType(summed).getShape() == to)
    return summed;
  return ReshapeOp::create(
      b, loc, RankedTensorType::get(to, gradType.getElementType()), summed);
}

} // namespace otc
