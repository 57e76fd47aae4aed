// otc-fuse-attention: the exported scaled dot-product attention,
// matmul(softmax(mask(scale * matmul(q, kᵀ))), v), becomes one
// `otc.attention`, whose kernel keeps nothing T x S and whose gradient
// recomputes the probabilities from the row statistics.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

namespace otc {
#define GEN_PASS_DEF_FUSEATTENTION
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

/// Where a masked score ends up below any score a model computes, so that
/// its probability is exactly 0 in float32 once a real score sets the max.
constexpr double kMaskedBelow = -1e30;

/// The value of a scalar computed from float constants alone (the exporter
/// writes the scale as sqrt(d) built from constants), if `v` is one.
std::optional<double> scalarValue(Value v, int depth = 0) {
  Operation *d = v.getDefiningOp();
  if (!d || depth > 8 || !isa<FloatType>(tensorType(v).getElementType()))
    return std::nullopt;
  if (auto c = dyn_cast<ConstantOp>(d)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense || !dense.isSplat())
      return std::nullopt;
    return dense.getSplatValue<APFloat>().convertToDouble();
  }
  auto operand = [&](unsigned i) { return scalarValue(d->getOperand(i), depth + 1); };
  if (isa<AddOp, SubOp, MulOp, DivOp>(d)) {
    auto a = operand(0), b = operand(1);
    if (!a || !b)
      return std::nullopt;
    if (isa<AddOp>(d))
      return *a + *b;
    if (isa<SubOp>(d))
      return *a - *b;
    return isa<MulOp>(d) ? *a * *b : *a / *b;
  }
  if (isa<SqrtOp, ReciprocalOp, NegOp, CastOp>(d)) {
    auto a = operand(0);
    if (!a)
      return std::nullopt;
    if (isa<SqrtOp>(d))
      return std::sqrt(*a);
    if (isa<ReciprocalOp>(d))
      return 1.0 / *a;
    return isa<NegOp>(d) ? -*a : *a;
  }
  if (auto p = dyn_cast<PowOp>(d)) {
    auto a = operand(0);
    return a ? std::optional<double>(std::pow(*a, p.getExponent().convertToDouble())) : std::nullopt;
  }
  return std::nullopt;
}

/// Whether a gradient could flow from `v` to a trained parameter: such a
/// mask would need one, which the fused op does not give. Gradients flow
/// only through float values and differentiable ops (a mask buffer read
/// through a comparison has none).
bool trained(Value v) {
  SmallVector<Value> work = {v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!isa<FloatType>(tensorType(x).getElementType()))
      continue;
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      auto f = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (f && f.getArgAttr(arg.getArgNumber(), attr::kTrainable))
        return true;
      continue;
    }
    Operation *d = x.getDefiningOp();
    if (d && !d->hasTrait<trait::NotDifferentiable>() && seen.insert(d).second)
      work.append(d->operand_begin(), d->operand_end());
  }
  return false;
}

/// Whether the constant `v` is, at every leading index, the causal pattern
/// over its last two dims (T = S): `inside` where s <= t, else `outside`
/// (for an i1 `v`, true inside, or false inside when `inverted`).
bool causalConstant(Value v, int64_t t, function_ref<bool(const APFloat &)> insideF,
                    function_ref<bool(const APFloat &)> outsideF, bool boolean,
                    bool inverted = false) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  auto shape = tensorType(v).getShape();
  if (!dense || shape.size() < 2 || shape[shape.size() - 2] != t || shape.back() != t)
    return false;
  int64_t i = 0;
  auto ok = [&](bool inside, auto x) { return inside ? x : !x; };
  if (boolean) {
    for (bool x : dense.getValues<bool>()) {
      int64_t s = i % t, row = (i / t) % t;
      if (!ok(s <= row, x != inverted))
        return false;
      ++i;
    }
    return true;
  }
  for (APFloat x : dense.getValues<APFloat>()) {
    int64_t s = i % t, row = (i / t) % t;
    if (s <= row ? !insideF(x) : !outsideF(x))
      return false;
    ++i;
  }
  return true;
}

/// transpose(v, perm) with its last two dims swapped: one transpose of v,
/// or v itself.
Value swapLastTwo(PatternRewriter &rewriter, Location loc, Value v, ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  SmallVector<int64_t> swapped = llvm::to_vector(llvm::seq<int64_t>(0, rank)), composed;
  std::swap(swapped[rank - 1], swapped[rank - 2]);
  for (int64_t p : swapped)
    composed.push_back(perm[p]);
  if (llvm::equal(composed, llvm::seq<int64_t>(0, rank)))
    return v;
  return TransposeOp::create(rewriter, loc, v, rewriter.getDenseI64ArrayAttr(composed));
}

/// For a [B, H, S, D] key or value repeated from [B, H / G, S, D] (Hugging
/// Face's repeat_kv: unsqueeze, expand, reshape), the unrepeated one and G.
std::pair<Value, int64_t> unrepeated(Value v) {
  auto merge = v.getDefiningOp<ReshapeOp>();
  auto expand = merge ? merge.getInput().getDefiningOp<BroadcastToOp>() : BroadcastToOp();
  auto split = expand ? expand.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!split)
    return {v, 1};
  auto out = tensorType(v).getShape(), wide = tensorType(expand).getShape();
  auto in = tensorType(split.getInput()).getShape(), narrow = tensorType(split).getShape();
  // [B, K, S, D] -> [B, K, 1, S, D] -> [B, K, G, S, D] -> [B, K G, S, D]
  if (out.size() != 4 || in.size() != 4 || narrow.size() != 5 || wide.size() != 5 ||
      out[0] != in[0] || out.drop_front(2) != in.drop_front(2) || narrow[0] != in[0] || narrow[1] != in[1] || narrow[2] != 1 ||
      narrow.drop_front(3) != in.drop_front(2) || wide[0] != in[0] || wide[1] != in[1] ||
      wide.drop_front(3) != in.drop_front(2) || out[1] != in[1] * wide[2])
    return {v, 1};
  return {split.getInput(), wide[2]};
}

/// The scalar that `v`, a product or quotient by a constant, scales its
/// other operand by, and that operand.
std::optional<std::pair<double, Value>> scaledBy(Value v) {
  Operation *d = v.getDefiningOp();
  if (!isa_and_nonnull<MulOp, DivOp>(d))
    return std::nullopt;
  for (unsigned side : {0u, 1u}) {
    if (isa<DivOp>(d) && side == 1)
      break;
    Value other = d->getOperand(1 - side);
    std::optional<double> k = scalarValue(other);
    if (k && tensorType(other).getNumElements() == 1 &&
        d->getOperand(side).getType() == v.getType())
      return std::pair(isa<DivOp>(d) ? 1.0 / *k : *k, d->getOperand(side));
  }
  return std::nullopt;
}

/// The scores' chain from the softmax back to q kᵀ.
struct Chain {
  Value q, kT;
  Value kBase; // kT is transpose(kBase, kPerm), up to a scale folded in
  SmallVector<int64_t> kPerm;
  double scale = 1;
  Value bias, keep; // an added float mask, an i1 mask with `fill`
  bool invertKeep = false; // where(mask, fill, scores): kept where false
  double fill = 0;
  bool causal = false;
  /// The [B, H, T, S] view the masks apply to (the exporter may reshape the
  /// scores between [B H, T, S] and [B, H, T, S] around them).
  SmallVector<int64_t> view;

  /// Records that a mask of shape `mask` applies to scores of shape `at`.
  bool maskAt(ArrayRef<int64_t> mask, ArrayRef<int64_t> at) {
    if (!broadcastsTo(mask, at))
      return false;
    SmallVector<int64_t> v(at);
    if (v.size() == 3)
      v.insert(v.begin(), 1);
    if (!view.empty() && view != v)
      return false;
    view = v;
    return true;
  }
};

/// Matches `x` (the softmax's input) down to the product.
bool matchChain(Value x, Chain &c) {
  while (true) {
    if (!x.hasOneUse())
      return false;
    Operation *d = x.getDefiningOp();
    auto shape = tensorType(x).getShape();
    if (auto mm = dyn_cast_or_null<MatMulOp>(d)) {
      c.q = mm.getLhs();
      c.kT = mm.getRhs();
      if (tensorType(c.kT).getRank() != tensorType(c.q).getRank())
        return false;
      // A scale on q or k before the product (Whisper scales both), k's
      // perhaps under its transpose.
      if (auto s = scaledBy(c.q); s && c.q.hasOneUse()) {
        c.scale *= s->first;
        c.q = s->second;
      }
      c.kBase = c.kT;
      c.kPerm = llvm::to_vector(llvm::seq<int64_t>(0, tensorType(c.kT).getRank()));
      if (auto t = c.kT.getDefiningOp<TransposeOp>()) {
        c.kBase = t.getInput();
        c.kPerm.assign(t.getPerm().begin(), t.getPerm().end());
      }
      if (auto s = scaledBy(c.kBase); s && c.kT.hasOneUse() && c.kBase.hasOneUse()) {
        c.scale *= s->first;
        c.kBase = s->second;
      }
      return true;
    }
    if (auto r = dyn_cast_or_null<ReshapeOp>(d)) {
      // [B H, T, S] <-> [B, H, T, S]
      auto in = tensorType(r.getInput()).getShape();
      if ((in.size() != 3 && in.size() != 4) || in.take_back(2) != shape.take_back(2))
        return false;
      x = r.getInput();
      continue;
    }
    if (auto s = scaledBy(x)) {
      // A scale, next to the product.
      if (!s->second.getDefiningOp<MatMulOp>())
        return false;
      c.scale *= s->first;
      x = s->second;
      continue;
    }
    if (auto w = dyn_cast_or_null<WhereOp>(d)) {
      // where(keep, scores, fill), or where(masked, fill, scores).
      Value scores = w.getLhs(), fillValue = w.getRhs();
      c.invertKeep = fillValue.getType() == x.getType();
      if (c.invertKeep)
        std::swap(scores, fillValue);
      std::optional<double> fill = scalarValue(fillValue);
      if (c.keep || !fill || tensorType(fillValue).getNumElements() != 1 ||
          scores.getType() != x.getType() ||
          !c.maskAt(tensorType(w.getCondition()).getShape(), shape))
        return false;
      c.keep = w.getCondition();
      c.fill = *fill;
      x = scores;
      continue;
    }
    if (auto a = dyn_cast_or_null<AddOp>(d)) {
      if (c.bias)
        return false;
      // The chain continues on the side with the scores' type.
      Value chain = a.getLhs(), bias = a.getRhs();
      if (chain.getType() != x.getType() ||
          !isa_and_nonnull<MatMulOp, MulOp, DivOp, WhereOp, AddOp, ReshapeOp>(chain.getDefiningOp()))
        std::swap(chain, bias);
      if (chain.getType() != x.getType() || !c.maskAt(tensorType(bias).getShape(), shape) ||
          tensorType(bias).getElementType() != tensorType(x).getElementType())
        return false;
      c.bias = bias;
      x = chain;
      continue;
    }
    return false;
  }
}

/// matmul(softmax(chain), v) -> otc.attention.
struct FuseAttentionPattern : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp pv, PatternRewriter &rewriter) const override {
    auto softmax = pv.getLhs().getDefiningOp<SoftmaxOp>();
    if (!softmax || !softmax->hasOneUse())
      return failure();
    RankedTensorType st = tensorType(softmax.getResult());
    int64_t rank = st.getRank();
    if ((rank != 3 && rank != 4) || softmax.getAxis() != rank - 1 ||
        tensorType(pv.getRhs()).getRank() != rank)
      return failure();
    Chain c;
    if (!matchChain(softmax.getInput(), c))
      return failure();
    if (c.view.empty())
      c.maskAt({}, st.getShape());
    Type elem = st.getElementType();
    for (Value v : {c.q, c.kT, Value(pv.getRhs())})
      if (tensorType(v).getElementType() != elem)
        return failure();
    for (Value m : {c.bias, c.keep})
      if (m && trained(m))
        return failure();
    int64_t t = c.view[2];
    bool square = t == c.view[3];
    // A causal constant, the only mask, becomes the flag: its masked scores
    // sit below any real one, so they take no part either way. (Beside a
    // padding mask they would: a row padded up to t is uniform over every
    // score at the fill, those past t included.)
    auto zero = [](const APFloat &x) { return x.isZero(); };
    auto below = [](const APFloat &x) { return x.convertToDouble() <= kMaskedBelow; };
    // (Also inverted: masked_fill(tril == 0, -inf) on a constant tril.)
    if (square && c.keep && !c.bias && c.fill <= kMaskedBelow &&
        causalConstant(c.keep, t, zero, below, true, c.invertKeep)) {
      c.keep = Value();
      c.causal = true;
    }
    if (square && c.bias && !c.keep && causalConstant(c.bias, t, zero, below, false)) {
      c.bias = Value();
      c.causal = true;
    }
    // The op has one mask operand.
    if (c.keep && c.bias)
      return failure();

    // Operands in the [B, H, rows, cols] view of the scores.
    auto fits = [&](Value v) {
      auto s = tensorType(v).getShape();
      return tensorType(v).getNumElements() == c.view[0] * c.view[1] * s[s.size() - 2] * s.back();
    };
    if (!fits(c.q) || !fits(c.kT) || !fits(pv.getRhs()))
      return failure();
    Location loc = pv.getLoc();
    auto inView = [&](Value v) -> Value {
      RankedTensorType type = tensorType(v);
      auto s = type.getShape();
      SmallVector<int64_t> want = {c.view[0], c.view[1], s[s.size() - 2], s.back()};
      if (s == ArrayRef<int64_t>(want))
        return v;
      return ReshapeOp::create(rewriter, loc, RankedTensorType::get(want, type.getElementType()), v);
    };
    Value q = inView(c.q), k = inView(swapLastTwo(rewriter, loc, c.kBase, c.kPerm)), v = inView(pv.getRhs());
    auto [k0, gk] = unrepeated(k);
    auto [v0, gv] = unrepeated(v);
    if (gk == gv && gk > 1) {
      k = k0;
      v = v0;
    }
    Value mask = c.bias ? c.bias : c.keep;
    if (c.keep && c.invertKeep)
      mask = NotOp::create(rewriter, loc, mask);
    FloatAttr fill = c.keep ? rewriter.getF64FloatAttr(c.fill) : FloatAttr();
    auto op = AttentionOp::create(rewriter, loc, q, k, v, mask, rewriter.getF64FloatAttr(c.scale),
                                  rewriter.getBoolAttr(c.causal), fill,
                                  AttentionLayoutAttr::get(getContext(), AttentionLayout::Bhtd));
    Value out = op.getResult();
    if (out.getType() != pv.getType())
      out = ReshapeOp::create(rewriter, loc, pv.getType(), out);
    rewriter.replaceOp(pv, out);
    return success();
  }
};

struct FuseAttentionPass : otc::impl::FuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttentionPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
