// LSTM, GRU and RNN: the input projection of every step is one GEMM over
// the whole sequence, and each direction's recurrence is one otc.lstm,
// otc.gru or otc.rnn, whose kernel walks time (so the program's size does not grow
// with the sequence). Their gradient rules give backpropagation through time.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

#include <cctype>

using namespace mlir;

namespace otc {
namespace {

enum class Cell { Lstm, Gru, Rnn };

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
  /// x · wᵀ (+ bias): x [rows, k], w [n, k].
  Value linear(Value x, Value w, Value bias) {
    int64_t rows = cast<RankedTensorType>(x.getType()).getDimSize(0);
    int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
    auto type = RankedTensorType::get({rows, n}, elem);
    return GemmOp::create(b(), loc(), type, x, w, bias, false, true, llvm::APFloat(1.0),
                          llvm::APFloat(1.0));
  }
  /// Direction d of a [dirs, ...] tensor, without its leading dim.
  Value direction(Value v, int64_t d) {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    SmallVector<int64_t> starts(shape.size(), 0), counts(shape);
    starts[0] = d;
    counts[0] = 1;
    return reshaped(imp, slice(v, starts, counts), shape.drop_front());
  }
};

std::string lower(std::string s) {
  for (char &c : s)
    c = char(std::tolower((unsigned char)c));
  return s;
}

/// The activations attribute may only spell out the defaults (for the
/// Elman cell, tanh or relu, the same in both directions).
LogicalResult checkDefaults(GraphImporter &imp, ArrayRef<const char *> defaults, int64_t dirs,
                            RnnActivation &rnnActivation) {
  rnnActivation = RnnActivation::Tanh;
  if (const auto *a = imp.attr("activations")) {
    bool ok = a->strings_size() == int(defaults.size() * dirs);
    if (ok && defaults.size() == 1 && lower(a->strings(0)) == "relu")
      rnnActivation = RnnActivation::Relu;
    for (int i = 0; ok && i < a->strings_size(); ++i) {
      std::string want = rnnActivation == RnnActivation::Relu ? "relu" : defaults[i % defaults.size()];
      ok = lower(a->strings(i)) == want;
    }
    if (!ok)
      return imp.fail(defaults.size() == 1
                          ? "only the activations Tanh and Relu (the same in both directions) are "
                            "supported"
                          : "only the default activations are supported");
  }
  if (imp.attr("clip"))
    return imp.fail("cell clipping (clip) is not supported");
  if (imp.attr("activation_alpha") || imp.attr("activation_beta"))
    return imp.fail("activation_alpha and activation_beta are not supported");
  return success();
}

/// An LSTM, GRU or RNN node's attributes and inputs, checked.
struct RecurrentNode {
  std::string dir = "forward";
  int64_t dirs = 1, layout = 0;
  bool linearBeforeReset = false;
  RnnActivation activation = RnnActivation::Tanh;
  Value x, w, r, bias, initH, initC; // bias and the initial states may be null
  Value lens; // [B] int64, null when every sequence runs to the full length
};

template <Cell Kind>
FailureOr<RecurrentNode> readNode(GraphImporter &imp) {
  constexpr bool IsLstm = Kind == Cell::Lstm;
  RecurrentNode n;
  if (const auto *a = imp.attr("direction"))
    n.dir = a->s();
  if (n.dir != "forward" && n.dir != "reverse" && n.dir != "bidirectional")
    return imp.fail("unknown direction '" + n.dir + "'");
  n.dirs = n.dir == "bidirectional" ? 2 : 1;
  const char *lstmDefaults[] = {"sigmoid", "tanh", "tanh"};
  const char *gruDefaults[] = {"sigmoid", "tanh"};
  const char *rnnDefaults[] = {"tanh"};
  ArrayRef<const char *> defaults = IsLstm                ? ArrayRef<const char *>(lstmDefaults)
                                    : Kind == Cell::Gru ? ArrayRef<const char *>(gruDefaults)
                                                        : ArrayRef<const char *>(rnnDefaults);
  if (failed(checkDefaults(imp, defaults, n.dirs, n.activation)))
    return failure();
  if (IsLstm && imp.intAttr("input_forget", 0) != 0)
    return imp.fail("input_forget is not supported");
  if (IsLstm && imp.numInputs() > 7 && !imp.node().input(7).empty())
    return imp.fail("peephole weights (input P) are not supported");
  n.layout = imp.opset() >= 14 ? imp.intAttr("layout", 0) : 0;
  if (n.layout != 0 && n.layout != 1)
    return imp.fail("layout must be 0 or 1");
  n.linearBeforeReset = Kind == Cell::Gru && imp.intAttr("linear_before_reset", 0) != 0;
  auto x = imp.input(0), w = imp.input(1), r = imp.input(2);
  auto bias = imp.optionalInput(3), initH = imp.optionalInput(5);
  auto initC = IsLstm ? imp.optionalInput(6) : FailureOr<Value>(Value());
  if (failed(x) || failed(w) || failed(r) || failed(bias) || failed(initH) || failed(initC))
    return failure();
  n.x = *x, n.w = *w, n.r = *r, n.bias = *bias, n.initH = *initH, n.initC = *initC;
  auto xShape = cast<RankedTensorType>(n.x.getType()).getShape();
  if (xShape.size() != 3)
    return imp.fail("X must have rank 3");
  // Sequence lengths (PyTorch's packed sequences): dropped when constant
  // and every one runs to the full length.
  if (imp.numInputs() > 4 && !imp.node().input(4).empty()) {
    int64_t T = xShape[n.layout == 0 ? 0 : 1], B = xShape[n.layout == 0 ? 1 : 0];
    const HostTensor *constant = imp.constantInput(4);
    bool full = constant && llvm::all_of(constant->asInts(), [&](int64_t l) { return l >= T; });
    if (!full) {
      auto lens = imp.input(4);
      if (failed(lens))
        return failure();
      auto t = cast<RankedTensorType>(lens->getType());
      if (t.getShape() != ArrayRef<int64_t>{B} || !t.getElementType().isInteger(64))
        return imp.fail("sequence_lens must be an integer tensor of shape [" + std::to_string(B) +
                        "]");
      n.lens = *lens;
    }
  }
  if (cast<RankedTensorType>(n.r.getType()).getRank() != 3)
    return imp.fail("R must have rank 3");
  return n;
}

/// One direction's recurrence: its hidden states [T, N, H] and, for an
/// LSTM, its cell states (in the input's type).
template <Cell Kind>
Value recur(Recurrence &rec, const RecurrentNode &n, int64_t d, Value flatX, Value h0, Value c0,
            Value &cells) {
  GraphImporter &imp = rec.imp;
  OpBuilder &b = rec.b();
  const int64_t H = rec.hidden, N = rec.batch, T = rec.seq, gates = rec.gates;
  Value wd = rec.direction(n.w, d), rd = rec.direction(n.r, d);
  // Both biases add to the projection, except GRU's candidate recurrent
  // bias after the reset (linear_before_reset), which the op adds itself.
  Value bias, rbias;
  if (n.bias) {
    Value bd = rec.direction(n.bias, d);
    Value wb = rec.slice(bd, {0}, {gates * H}), rb = rec.slice(bd, {gates * H}, {gates * H});
    if (n.linearBeforeReset) {
      rbias = rec.slice(rb, {2 * H}, {H});
      rb = ConcatOp::create(b, rec.loc(), RankedTensorType::get({3 * H}, rec.elem),
                            ValueRange{rec.slice(rb, {0}, {2 * H}), rec.zeros({H})}, 0);
    }
    bias = rec.add(wb, rb);
  }
  Value x = reshaped(imp, rec.linear(flatX, wd, bias), {T, N, gates * H});
  Value h = h0 ? rec.direction(h0, d) : rec.zeros({N, H});
  bool reverse = n.dir == "reverse" || d == 1;
  if (Kind == Cell::Gru)
    return GruOp::create(b, rec.loc(), x, rd, h, rbias, n.lens, reverse, n.linearBeforeReset)
        .getHidden();
  if (Kind == Cell::Rnn)
    return RnnOp::create(b, rec.loc(), x, rd, h, n.lens, n.activation, reverse).getHidden();
  // The cell state is kept in the op's state type.
  Value c = c0 ? rec.direction(c0, d) : rec.zeros({N, H});
  auto op = LstmOp::create(b, rec.loc(), x, rd, h,
                           castElements(b, rec.loc(), c, recurrentStateType(rec.elem)), n.lens,
                           reverse);
  cells = castElements(b, rec.loc(), op.getCell(), rec.elem);
  return op.getHidden();
}

/// LSTM (gates i, o, f, c), GRU (gates z, r, h) and RNN (tanh or relu),
/// forward, reverse or bidirectional, with optional bias and initial states.
template <Cell Kind>
LogicalResult importRecurrent(GraphImporter &imp) {
  constexpr bool IsLstm = Kind == Cell::Lstm;
  auto node = readNode<Kind>(imp);
  if (failed(node))
    return failure();
  const RecurrentNode &n = *node;
  const int64_t gates = IsLstm ? 4 : Kind == Cell::Gru ? 3 : 1, dirs = n.dirs, layout = n.layout;
  auto xType = cast<RankedTensorType>(n.x.getType());
  // hidden_size is optional: R is [dirs, gates·H, H].
  auto rShape = cast<RankedTensorType>(n.r.getType()).getShape();
  Recurrence rec{imp, 0, 0, xType.getDimSize(2), imp.intAttr("hidden_size", rShape[2]), dirs,
                 gates, xType.getElementType()};
  rec.seq = xType.getDimSize(layout == 0 ? 0 : 1);
  rec.batch = xType.getDimSize(layout == 0 ? 1 : 0);
  const int64_t H = rec.hidden, N = rec.batch, T = rec.seq;
  auto hasShape = [](Value v, ArrayRef<int64_t> s) {
    return !v || cast<RankedTensorType>(v.getType()).getShape() == s;
  };
  if (H < 1 || !hasShape(n.w, {dirs, gates * H, rec.inputSize}) ||
      !hasShape(n.r, {dirs, gates * H, H}) || !hasShape(n.bias, {dirs, 2 * gates * H}))
    return imp.fail("W, R and B must have shapes [" + std::to_string(dirs) + ", " +
                    std::to_string(gates) + "·hidden_size, input], [.., hidden_size] and [" +
                    std::to_string(dirs) + ", " + std::to_string(2 * gates) + "·hidden_size]");
  SmallVector<int64_t> stateShape = layout == 0 ? SmallVector<int64_t>{dirs, N, H}
                                                : SmallVector<int64_t>{N, dirs, H};
  if (!hasShape(n.initH, stateShape) || !hasShape(n.initC, stateShape))
    return imp.fail("initial_h and initial_c must have the shape of Y_h");

  // Layout 1 keeps the batch first: [N, T, I] and states [N, D, H].
  auto toSeqFirst = [&](Value v) { return rec.transpose(v, {1, 0, 2}); };
  Value xs = layout == 0 ? n.x : toSeqFirst(n.x);
  Value h0 = n.initH && layout == 1 ? toSeqFirst(n.initH) : n.initH;
  Value c0 = n.initC && layout == 1 ? toSeqFirst(n.initC) : n.initC;
  Value flatX = reshaped(imp, xs, {T * N, rec.inputSize});
  // Steps at or past a row's length output zeros (the kernel holds the
  // state there): keep[t, b, 0] = t < lens[b].
  Value keep;
  if (n.lens) {
    OpBuilder &b = imp.builder();
    HostTensor steps{false, onnx::TensorProto::INT64, {T, 1}, {}};
    for (int64_t t = 0; t < T; ++t)
      steps.values.push_back(double(t));
    Value iota = ConstantOp::create(b, imp.loc(), toAttr(b, steps));
    Value before = CompareOp::create(b, imp.loc(), iota, reshaped(imp, n.lens, {1, N}),
                                     ComparePredicate::lt);
    keep = reshaped(imp, before, {T, N, 1});
  }
  SmallVector<Value> ys, lastH, lastC;
  for (int64_t d = 0; d < dirs; ++d) {
    Value cells;
    Value hs = recur<Kind>(rec, n, d, flatX, h0, c0, cells);
    Value y = keep ? WhereOp::create(imp.builder(), imp.loc(), keep, hs, rec.zeros({T, N, H}))
                         .getResult()
                   : hs;
    ys.push_back(reshaped(imp, y, {T, 1, N, H}));
    // The last state is the one the walk ends on.
    int64_t last = n.dir == "reverse" || d == 1 ? 0 : T - 1;
    lastH.push_back(rec.slice(hs, {last, 0, 0}, {1, N, H}));
    if (IsLstm)
      lastC.push_back(rec.slice(cells, {last, 0, 0}, {1, N, H}));
  }

  auto concat = [&](ArrayRef<Value> parts, int64_t axis) -> Value {
    if (parts.size() == 1)
      return parts[0];
    auto shape = llvm::to_vector(cast<RankedTensorType>(parts[0].getType()).getShape());
    shape[axis] *= int64_t(parts.size());
    return ConcatOp::create(imp.builder(), imp.loc(), RankedTensorType::get(shape, rec.elem),
                            parts, axis);
  };
  Value y = concat(ys, 1);      // [T, D, N, H]
  Value yh = concat(lastH, 0);  // [D, N, H]
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

LogicalResult importLstm(GraphImporter &imp) { return importRecurrent<Cell::Lstm>(imp); }
LogicalResult importGru(GraphImporter &imp) { return importRecurrent<Cell::Gru>(imp); }
LogicalResult importRnn(GraphImporter &imp) { return importRecurrent<Cell::Rnn>(imp); }

} // namespace otc
