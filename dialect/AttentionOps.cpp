// otc.attention and its gradient: shapes, verification and the gradient rule.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using namespace otc;

namespace {

/// Checks query [B, H, T, D], key [B, H/G, S, D], value [B, H/G, S, DV]
/// (dims 1 and 2 swapped in the bthd layout) and the mask; on success
/// `scores` is [B, H, T, S].
LogicalResult checkOperands(std::optional<Location> loc, Value q, Value k, Value v, Value mask,
                            bool causal, std::optional<APFloat> fill, AttentionLayout layout,
                            SmallVectorImpl<int64_t> &scores) {
  RankedTensorType qt = tensorType(q), kt = tensorType(k), vt = tensorType(v);
  if (qt.getRank() != 4 || kt.getRank() != 4 || vt.getRank() != 4)
    return emitOptionalError(loc, "attention takes [B, ",
                             layout == AttentionLayout::Bthd ? "T, H" : "H, T",
                             ", D] query, key and value, not ", qt, ", ", kt, ", ", vt);
  SmallVector<int64_t> qs = attentionRows(qt.getShape(), layout),
                       ks = attentionRows(kt.getShape(), layout),
                       vs = attentionRows(vt.getShape(), layout);
  if (qt.getElementType() != kt.getElementType() || qt.getElementType() != vt.getElementType())
    return emitOptionalError(loc, "query, key and value must share an element type: ", qt, ", ",
                             kt, ", ", vt);
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != vs[1] || ks[2] != vs[2] || ks[3] != qs[3])
    return emitOptionalError(loc, "key ", kt, " and value ", vt, " do not fit query ", qt);
  if (ks[1] < 1 || qs[1] % ks[1] != 0)
    return emitOptionalError(loc, "the query's ", qs[1], " heads are not a multiple of the key's ",
                             ks[1]);
  if (causal && qs[2] != ks[2])
    return emitOptionalError(loc, "causal attention needs as many queries as keys, not ", qs[2],
                             " and ", ks[2]);
  scores.assign({qs[0], qs[1], qs[2], ks[2]});
  bool keep = false;
  if (mask) {
    RankedTensorType mt = tensorType(mask);
    keep = mt.getElementType().isInteger(1);
    if (!keep && !isa<FloatType>(mt.getElementType()))
      return emitOptionalError(loc, "the mask must be i1 (kept where true) or float (added), not ",
                               mt);
    if (!broadcastsTo(mt.getShape(), scores))
      return emitOptionalError(loc, "the mask ", mt, " does not broadcast to the scores [",
                               scores[0], ", ", scores[1], ", ", scores[2], ", ", scores[3], "]");
  }
  if (keep != fill.has_value())
    return emitOptionalError(loc, keep ? "an i1 mask needs a fill value"
                                       : "a fill value needs an i1 mask");
  return success();
}

/// The layout an adaptor holds: absent while the op is being built.
AttentionLayout layoutOf(AttentionLayoutAttr a) {
  return a ? a.getValue() : AttentionLayout::Bhtd;
}

} // namespace

SmallVector<int64_t> otc::attentionRows(ArrayRef<int64_t> shape, AttentionLayout layout) {
  SmallVector<int64_t> s(shape);
  if (layout == AttentionLayout::Bthd && s.size() == 4)
    std::swap(s[1], s[2]);
  return s;
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                            Adaptor a, SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> s;
  if (failed(checkOperands(loc, a.getQuery(), a.getKey(), a.getValue(), a.getMask(),
                           a.getCausal(), a.getFill(), layoutOf(a.getLayoutAttr()), s)))
    return failure();
  types.push_back(RankedTensorType::get(
      attentionRows({s[0], s[1], s[2], tensorType(a.getValue()).getShape()[3]},
                    layoutOf(a.getLayoutAttr())),
      tensorType(a.getQuery()).getElementType()));
  types.push_back(RankedTensorType::get({s[0], s[1], s[2], 2}, Float32Type::get(ctx)));
  return success();
}

LogicalResult AttentionOp::verify() {
  if (!std::isfinite(getScale().convertToDouble()))
    return emitOpError("the scale must be finite");
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor a, SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> s;
  if (failed(checkOperands(loc, a.getQuery(), a.getKey(), a.getValue(), a.getMask(),
                           a.getCausal(), a.getFill(), layoutOf(a.getLayoutAttr()), s)))
    return failure();
  for (Value v : {a.getQuery(), a.getKey(), a.getValue()})
    types.push_back(v.getType());
  return success();
}

LogicalResult AttentionGradOp::verify() {
  RankedTensorType q = tensorType(getQuery()), v = tensorType(getValue());
  auto out = RankedTensorType::get({q.getShape()[0], q.getShape()[1], q.getShape()[2],
                                    v.getShape()[3]},
                                   q.getElementType());
  if (getGrad().getType() != out || getOutput().getType() != out)
    return emitOpError("the output and its gradient must be ") << out;
  SmallVector<int64_t> rows = attentionRows(out.getShape(), getLayout());
  auto stats = RankedTensorType::get({rows[0], rows[1], rows[2], 2},
                                     Float32Type::get(getContext()));
  if (getStats().getType() != stats)
    return emitOpError("the row statistics must be ") << stats;
  return success();
}

// Nothing flows to the mask: otc-fuse-attention fuses only masks that no
// trained parameter reaches.
LogicalResult AttentionOp::buildGradients(OpBuilder &b, ValueRange dy,
                                          SmallVectorImpl<Value> &grads) {
  if (dy[1])
    return emitOpError("has no gradient rule for its row statistics");
  if (!dy[0]) {
    grads.append(getNumOperands(), Value());
    return success();
  }
  auto g = AttentionGradOp::create(b, getLoc(), dy[0], getQuery(), getKey(), getValue(),
                                   getResult(), getStats(), getMask(), getScaleAttr(),
                                   getCausalAttr(), getFillAttr(), getLayoutAttr());
  grads.append({g.getQueryGrad(), g.getKeyGrad(), g.getValueGrad()});
  if (getMask())
    grads.push_back(Value());
  return success();
}
