// Fused attention: one call of the kernel library's attention_forward or
// attention_backward (kernels/attention.h), with the geometry, the mask's
// broadcast strides and the element types in the template.
#include "../Rules.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

#include <type_traits>

using namespace mlir;
using Kernel = otc::LibraryCall::Kernel;

namespace otc {
namespace {

/// The row pitch of `v` (0: dense).
int64_t pitchOf(Lowering &l, Value v) {
  const RowView *view = v ? l.rowView(v) : nullptr;
  return view ? view->pitch : 0;
}

/// The template constants: B, H, G, T, S, D, DV, Causal, Mask, the mask's
/// strides over [B, H, T, S] (0 where it broadcasts), the layout (1:
/// [B, T, H, D]), and the row pitches of q, k, v, dq, dk, dv.
template <class OpTy>
std::vector<int64_t> constants(OpTy op, Lowering &l) {
  AttentionLayout layout = op.getLayout();
  auto q = attentionRows(shapeOf(op.getQuery()), layout),
       k = attentionRows(shapeOf(op.getKey()), layout),
       v = attentionRows(shapeOf(op.getValue()), layout);
  std::vector<int64_t> c = {q[0], q[1], q[1] / k[1], q[2], k[2], q[3], v[3], op.getCausal()};
  std::vector<int64_t> strides(4, 0);
  int64_t kind = 0;
  if (Value m = op.getMask()) {
    kind = tensorType(m).getElementType().isInteger(1) ? 1 : 2;
    auto own = shapeOf(m);
    std::vector<int64_t> s = stridesOf(own);
    for (size_t j = 0; j < own.size(); ++j)
      if (own[j] != 1)
        strides[j + 4 - own.size()] = s[j];
  }
  c.push_back(kind);
  c.insert(c.end(), strides.begin(), strides.end());
  c.push_back(layout == AttentionLayout::Bthd);
  for (Value v : {op.getQuery(), op.getKey(), op.getValue()})
    c.push_back(pitchOf(l, v));
  if constexpr (std::is_same_v<OpTy, AttentionGradOp>)
    for (Value g : op.getResults())
      c.push_back(pitchOf(l, g));
  else
    c.insert(c.end(), 3, 0);
  return c;
}

/// Attention in the projections' layout reads q, k and v, and writes their
/// gradients, as one row of H D (H/G D) elements per (b, t): slices of a
/// packed projection need no copies.
int64_t rowWidth(Operation *op, bool result, unsigned k) {
  Value v;
  if (auto a = dyn_cast<AttentionOp>(op); a && !result && k < 3 &&
                                          a.getLayout() == AttentionLayout::Bthd)
    v = a.getOperand(k);
  if (auto a = dyn_cast<AttentionGradOp>(op); a && a.getLayout() == AttentionLayout::Bthd) {
    if (result && k < 3)
      v = a.getResult(k);
    else if (!result && k >= 1 && k <= 3) // q, k, v after the output's gradient
      v = a.getOperand(k);
  }
  if (!v)
    return 0;
  auto shape = shapeOf(v);
  return shape[2] * shape[3];
}

/// The call with its mask appended to `inputs`, its scale and fill.
template <class OpTy>
bool call(OpTy op, Lowering &l, Kernel kernel, ArrayRef<Value> inputs, ArrayRef<int> scratch,
          ArrayRef<Value> results) {
  SmallVector<Value> reads(inputs);
  reads.push_back(op.getMask());
  LibraryCall::Scalar scale{LibraryCall::Scalar::Float}, fill{LibraryCall::Scalar::Float};
  scale.real = op.getScale().convertToDouble();
  fill.real = op.getFill() ? op.getFill()->convertToDouble() : 0.0;
  return lowerLibraryCall(op, l, kernel, constants(op, l), reads, scratch, results,
                          {scale, fill});
}

bool lowerAttention(Operation *op, Lowering &l) {
  auto a = cast<AttentionOp>(op);
  return call(a, l, Kernel::AttentionForward, {a.getQuery(), a.getKey(), a.getValue()}, {},
              {a.getResult(), a.getStats()});
}

bool lowerAttentionGrad(Operation *op, Lowering &l) {
  auto a = cast<AttentionGradOp>(op);
  auto q = attentionRows(shapeOf(a.getQuery()), a.getLayout());
  // Δ = dO · O per query row, which the dk/dv pass reads on CUDA.
  int delta = l.scratch(ElemType::F32, {q[0], q[1], q[2]}, "attention_delta");
  return call(a, l, Kernel::AttentionBackward,
              {a.getGrad(), a.getQuery(), a.getKey(), a.getValue(), a.getOutput(), a.getStats()},
              {delta}, {a.getQueryGrad(), a.getKeyGrad(), a.getValueGrad()});
}

} // namespace

void registerAttentionRules(RuleRegistry &r) {
  auto own = StepRule::Output::Own;
  StepRule forward{lowerAttention, nullptr, own}, backward{lowerAttentionGrad, nullptr, own};
  forward.rowWidth = backward.rowWidth = rowWidth;
  r.steps[AttentionOp::getOperationName()] = forward;
  r.steps[AttentionGradOp::getOperationName()] = backward;
}

} // namespace otc
