// LSTM and GRU, unrolled over their static sequence length into matrix
// products and elementwise gates. Autodiff then derives backpropagation
// through time from the unrolled graph, and the input projection of every
// step is one GEMM over the whole sequence.
#include "ImportHelpers.h"

#include "otc/Dialect/OtcDialect.h"

#include <cctype>

using namespace mlir;

namespace otc {
namespace {

constexpr int64_t kMaxUnrolledSteps = 4096;

struct Recurrence {
  GraphImporter &imp;
  int64_t seq, batch, inputSize, hidden, dirs, gates;
  Type elem;

  OpBuilder &b() { return imp.builder(); }
  Location loc() { return imp.loc(); }

  /// The block of `v` at `starts` with sizes `counts`.
  Value slice(Value v, ArrayRef<int64_t> starts, ArrayRef<int64_t> counts) {
    auto type = RankedTensorType::get(counts, elem);
    SmallVector<int64_t> steps(counts.size(), 1);
    return SliceOp::create(b(), loc(), type, v, b().getDenseI64ArrayAttr(starts),
                           b().getDenseI64ArrayAttr(steps));
  }
  Value zeros(ArrayRef<int64_t> shape) {
    auto type = RankedTensorType::get(shape, elem);
    return ConstantOp::create(b(), loc(), DenseElementsAttr::get(type, b().getZeroAttr(elem)));
  }
  /// `v` with its dims permuted.
  Value transpose(Value v, ArrayRef<int64_t> perm) {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    SmallVector<int64_t> out;
    for (int64_t p : perm)
      out.push_back(shape[p]);
    return TransposeOp::create(b(), loc(), RankedTensorType::get(out, elem), v,
                               b().getDenseI64ArrayAttr(perm));
  }
  Value add(Value x, Value y) { return AddOp::create(b(), loc(), x.getType(), x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b(), loc(), x.getType(), x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b(), loc(), x.getType(), x, y); }
  Value sigmoid(Value x) { return SigmoidOp::create(b(), loc(), x.getType(), x); }
  Value tanh(Value x) { return TanhOp::create(b(), loc(), x.getType(), x); }
  /// x · wᵀ (+ bias): x [rows, k], w [n, k].
  Value linear(Value x, Value w, Value bias) {
    int64_t rows = cast<RankedTensorType>(x.getType()).getDimSize(0);
    int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
    auto type = RankedTensorType::get({rows, n}, elem);
    return GemmOp::create(b(), loc(), type, x, w, bias, false, true, llvm::APFloat(1.0),
                          llvm::APFloat(1.0));
  }
  /// Gate `g` of a [batch, gates·hidden] block.
  Value gate(Value v, int64_t g) { return slice(v, {0, g * hidden}, {batch, hidden}); }
  /// Direction d of a [dirs, ...] tensor, without its leading dim.
  Value direction(Value v, int64_t d) {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    SmallVector<int64_t> starts(shape.size(), 0), counts(shape);
    starts[0] = d;
    counts[0] = 1;
    return reshaped(imp, slice(v, starts, counts), shape.drop_front());
  }
};

/// The activations attribute may only spell out the defaults.
LogicalResult checkDefaults(GraphImporter &imp, ArrayRef<const char *> defaults, int64_t dirs) {
  if (const auto *a = imp.attr("activations")) {
    bool ok = a->strings_size() == int(defaults.size() * dirs);
    for (int i = 0; ok && i < a->strings_size(); ++i) {
      std::string s = a->strings(i);
      for (char &c : s)
        c = char(std::tolower((unsigned char)c));
      std::string want = defaults[i % defaults.size()];
      ok = s == want;
    }
    if (!ok)
      return imp.fail("only the default activations are supported");
  }
  if (imp.attr("clip"))
    return imp.fail("cell clipping (clip) is not supported");
  if (imp.attr("activation_alpha") || imp.attr("activation_beta"))
    return imp.fail("activation_alpha and activation_beta are not supported");
  return success();
}

/// LSTM (gates i, o, f, c) and GRU (gates z, r, h), forward, reverse or
/// bidirectional, with optional bias and initial states.
template <bool IsLstm>
LogicalResult importRecurrent(GraphImporter &imp) {
  const auto &node = imp.node();
  const int64_t gates = IsLstm ? 4 : 3;
  std::string dir = "forward";
  if (const auto *a = imp.attr("direction"))
    dir = a->s();
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return imp.fail("unknown direction '" + dir + "'");
  int64_t dirs = dir == "bidirectional" ? 2 : 1;
  const char *lstmDefaults[] = {"sigmoid", "tanh", "tanh"};
  const char *gruDefaults[] = {"sigmoid", "tanh"};
  if (failed(checkDefaults(imp, IsLstm ? ArrayRef<const char *>(lstmDefaults)
                                       : ArrayRef<const char *>(gruDefaults), dirs)))
    return failure();
  if (IsLstm && imp.intAttr("input_forget", 0) != 0)
    return imp.fail("input_forget is not supported");
  if (IsLstm && imp.numInputs() > 7)
    return imp.fail("peephole weights (input P) are not supported");
  int64_t layout = imp.opset() >= 14 ? imp.intAttr("layout", 0) : 0;
  if (layout != 0 && layout != 1)
    return imp.fail("layout must be 0 or 1");
  bool linearBeforeReset = !IsLstm && imp.intAttr("linear_before_reset", 0) != 0;

  auto optional = [&](size_t k) -> FailureOr<Value> {
    if (k >= imp.numInputs() || node.input(k).empty())
      return Value();
    return imp.input(k);
  };
  auto x = imp.input(0), w = imp.input(1), r = imp.input(2);
  auto bias = optional(3), initH = optional(5), initC = optional(IsLstm ? 6 : 99);
  if (failed(x) || failed(w) || failed(r) || failed(bias) || failed(initH) || failed(initC))
    return failure();
  auto xType = cast<RankedTensorType>(x->getType());
  if (xType.getRank() != 3)
    return imp.fail("X must have rank 3");
  // Every sequence must run to the full length.
  if (imp.numInputs() > 4 && !node.input(4).empty()) {
    const HostTensor *lens = imp.constantInput(4);
    if (!lens)
      return imp.fail("sequence_lens must be a compile-time constant");
    auto xs = cast<RankedTensorType>(x->getType()).getShape();
    for (int64_t n : lens->asInts())
      if (n != xs[layout == 0 ? 0 : 1])
        return imp.fail("sequences shorter than the input (sequence_lens) are not supported");
  }

  // hidden_size is optional: R is [dirs, gates·H, H].
  auto rShape = cast<RankedTensorType>(r->getType()).getShape();
  if (rShape.size() != 3)
    return imp.fail("R must have rank 3");
  Recurrence rec{imp, 0, 0, xType.getDimSize(2), imp.intAttr("hidden_size", rShape[2]), dirs,
                 gates, xType.getElementType()};
  rec.seq = xType.getDimSize(layout == 0 ? 0 : 1);
  // Unrolled, each step is a dozen ops: bound the program's size.
  if (rec.seq > kMaxUnrolledSteps)
    return imp.fail("sequences of " + std::to_string(rec.seq) + " steps are longer than the " +
                    std::to_string(kMaxUnrolledSteps) + " otc unrolls");
  rec.batch = xType.getDimSize(layout == 0 ? 1 : 0);
  const int64_t H = rec.hidden, N = rec.batch, T = rec.seq;
  auto hasShape = [](Value v, ArrayRef<int64_t> s) {
    return !v || cast<RankedTensorType>(v.getType()).getShape() == s;
  };
  if (H < 1 || !hasShape(*w, {dirs, gates * H, rec.inputSize}) ||
      !hasShape(*r, {dirs, gates * H, H}) || !hasShape(*bias, {dirs, 2 * gates * H}))
    return imp.fail("W, R and B must have shapes [" + std::to_string(dirs) + ", " +
                    std::to_string(gates) + "·hidden_size, input], [.., hidden_size] and [" +
                    std::to_string(dirs) + ", " + std::to_string(2 * gates) + "·hidden_size]");
  SmallVector<int64_t> stateShape = layout == 0 ? SmallVector<int64_t>{dirs, N, H}
                                                : SmallVector<int64_t>{N, dirs, H};
  if (!hasShape(*initH, stateShape) || !hasShape(*initC, stateShape))
    return imp.fail("initial_h and initial_c must have the shape of Y_h");

  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  // Layout 1 keeps the batch first: [N, T, I] and states [N, D, H].
  auto toSeqFirst = [&](Value v) { return rec.transpose(v, {1, 0, 2}); };
  Value xs = layout == 0 ? *x : toSeqFirst(*x);
  Value h0 = *initH && layout == 1 ? toSeqFirst(*initH) : *initH;
  Value c0 = *initC && layout == 1 ? toSeqFirst(*initC) : *initC;
  Value flatX = reshaped(imp, xs, {T * N, rec.inputSize});

  SmallVector<SmallVector<Value>> outputs(T); // [t][d]: H_t of direction d
  SmallVector<Value> lastH, lastC;
  for (int64_t d = 0; d < dirs; ++d) {
    Value wd = rec.direction(*w, d), rd = rec.direction(*r, d);
    Value wb, rb;
    if (*bias) {
      Value bd = rec.direction(*bias, d);
      wb = rec.slice(bd, {0}, {gates * H});
      rb = rec.slice(bd, {gates * H}, {gates * H});
    }
    // The input projection of every step at once: [T·N, gates·H].
    Value xw = reshaped(imp, rec.linear(flatX, wd, wb), {T, N * gates * H});
    Value h = h0 ? rec.direction(h0, d) : rec.zeros({N, H});
    Value c = IsLstm ? (c0 ? rec.direction(c0, d) : rec.zeros({N, H})) : Value();
    // GRU's candidate multiplies the reset gate into (H·Rhᵀ + Rbh) or into
    // H first; the gates z and r come from the other rows of R.
    Value rzr = IsLstm ? Value() : rec.slice(rd, {0, 0}, {2 * H, H});
    Value rh = IsLstm ? Value() : rec.slice(rd, {2 * H, 0}, {H, H});
    Value rbzr = !IsLstm && rb ? rec.slice(rb, {0}, {2 * H}) : Value();
    Value rbh = !IsLstm && rb ? rec.slice(rb, {2 * H}, {H}) : Value();
    bool reverse = dir == "reverse" || d == 1;
    for (int64_t s = 0; s < T; ++s) {
      int64_t t = reverse ? T - 1 - s : s;
      Value xt = reshaped(imp, rec.slice(xw, {t, 0}, {1, N * gates * H}), {N, gates * H});
      if (IsLstm) {
        Value g = rec.add(xt, rec.linear(h, rd, rb));
        Value i = rec.sigmoid(rec.gate(g, 0)), o = rec.sigmoid(rec.gate(g, 1));
        Value f = rec.sigmoid(rec.gate(g, 2)), cand = rec.tanh(rec.gate(g, 3));
        c = rec.add(rec.mul(f, c), rec.mul(i, cand));
        h = rec.mul(o, rec.tanh(c));
      } else {
        Value hzr = rec.linear(h, rzr, rbzr);
        Value z = rec.sigmoid(rec.add(rec.gate(xt, 0), rec.slice(hzr, {0, 0}, {N, H})));
        Value rg = rec.sigmoid(rec.add(rec.gate(xt, 1), rec.slice(hzr, {0, H}, {N, H})));
        Value recur = linearBeforeReset ? rec.mul(rg, rec.linear(h, rh, rbh))
                                        : rec.linear(rec.mul(rg, h), rh, rbh);
        Value cand = rec.tanh(rec.add(rec.gate(xt, 2), recur));
        // (1 - z) ⊙ cand + z ⊙ h, as cand + z ⊙ (h - cand).
        h = rec.add(cand, rec.mul(z, rec.sub(h, cand)));
      }
      outputs[t].push_back(reshaped(imp, h, {1, 1, N, H}));
    }
    lastH.push_back(reshaped(imp, h, {1, N, H}));
    if (IsLstm)
      lastC.push_back(reshaped(imp, c, {1, N, H}));
  }

  auto concat = [&](ArrayRef<Value> parts, int64_t axis) -> Value {
    if (parts.size() == 1)
      return parts[0];
    auto shape = llvm::to_vector(cast<RankedTensorType>(parts[0].getType()).getShape());
    shape[axis] *= int64_t(parts.size());
    return ConcatOp::create(b, loc, RankedTensorType::get(shape, rec.elem), parts, axis);
  };
  SmallVector<Value> steps;
  for (auto &perDir : outputs)
    steps.push_back(concat(perDir, 1)); // [1, D, N, H]
  Value y = concat(steps, 0);            // [T, D, N, H]
  Value yh = concat(lastH, 0);           // [D, N, H]
  Value yc = IsLstm ? concat(lastC, 0) : Value();
  if (layout == 1) {
    y = rec.transpose(y, {2, 0, 1, 3}); // [N, T, D, H]
    yh = toSeqFirst(yh);
    yc = yc ? toSeqFirst(yc) : yc;
  }
  imp.define(0, y);
  imp.define(1, yh);
  if (IsLstm)
    imp.define(2, yc);
  return success();
}

} // namespace

LogicalResult importLstm(GraphImporter &imp) { return importRecurrent<true>(imp); }
LogicalResult importGru(GraphImporter &imp) { return importRecurrent<false>(imp); }

} // namespace otc
