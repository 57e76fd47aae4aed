// otc.lstm, otc.gru, otc.rnn and their gradients: shapes, verification, FLOP counts
// and the gradient rules. The kernels walk time; the recurrent weight's
// gradient is one GEMM over every step, built here from primitives so that
// gradient accumulation and the other passes see it.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using namespace otc;

namespace {

RankedTensorType tensor(ArrayRef<int64_t> shape, Type elem) {
  return RankedTensorType::get(shape, elem);
}

/// The sizes T, B and H of a recurrence whose input is [T, B, gates H] and
/// whose recurrent weight is [gates H, H], checked.
LogicalResult checkRecurrence(std::optional<Location> loc, Value input, Value recurrence,
                              int64_t gates, int64_t &T, int64_t &B, int64_t &H) {
  RankedTensorType x = tensorType(input), r = tensorType(recurrence);
  std::string gh = gates == 1 ? "H" : std::to_string(gates) + "H";
  if (x.getRank() != 3 || r.getRank() != 2)
    return emitOptionalError(loc, "the input must be [T, B, ", gh, "] and the recurrence [", gh,
                             ", H], not ", x, " and ", r);
  H = r.getDimSize(1);
  T = x.getDimSize(0);
  B = x.getDimSize(1);
  if (H < 1 || r.getDimSize(0) != gates * H || x.getDimSize(2) != gates * H)
    return emitOptionalError(loc, "the input ", x, " and the recurrence ", r, " must be [T, B, ",
                             gh, "] and [", gh, ", H]");
  if (x.getElementType() != r.getElementType())
    return emitOptionalError(loc, "the input ", x, " and the recurrence ", r,
                             " must share an element type");
  return success();
}

/// Checks that `v` (when present) has type `want`.
LogicalResult expect(Operation *op, Value v, const char *what, RankedTensorType want) {
  if (v && v.getType() != want)
    return op->emitOpError(what) << " must be " << want << ", not " << v.getType();
  return success();
}

/// The sequence lengths, when given, are [B] (the batch of `hidden`).
LogicalResult checkLens(Operation *op, Value lens, RankedTensorType hidden) {
  if (lens && tensorType(lens).getShape() != ArrayRef<int64_t>{hidden.getDimSize(1)})
    return op->emitOpError("the sequence lengths must be [") << hidden.getDimSize(1)
                                                              << "], not " << lens.getType();
  return success();
}

/// Each step's previous hidden state: h0 then the states in the order the
/// op walks them ([T, B, H]).
Value previousStates(OpBuilder &b, Location loc, Value hidden, Value h0, bool reverse) {
  RankedTensorType h = tensorType(hidden);
  int64_t T = h.getDimSize(0), B = h.getDimSize(1), H = h.getDimSize(2);
  Type elem = h.getElementType();
  Value first = ReshapeOp::create(b, loc, tensor({1, B, H}, elem), h0);
  if (T == 1)
    return first;
  Value rest = SliceOp::create(b, loc, tensor({T - 1, B, H}, elem), hidden,
                               b.getDenseI64ArrayAttr({reverse ? 1 : 0, 0, 0}),
                               b.getDenseI64ArrayAttr({1, 1, 1}));
  SmallVector<Value> parts = reverse ? SmallVector<Value>{rest, first}
                                     : SmallVector<Value>{first, rest};
  return ConcatOp::create(b, loc, h, parts, 0);
}

/// Columns [from, from + n) of a [T, B, C] tensor, as [T B, n] rows.
Value columns(OpBuilder &b, Location loc, Value v, int64_t from, int64_t n) {
  RankedTensorType t = tensorType(v);
  int64_t T = t.getDimSize(0), B = t.getDimSize(1);
  Value s = v;
  if (from != 0 || n != t.getDimSize(2))
    s = SliceOp::create(b, loc, tensor({T, B, n}, t.getElementType()), v,
                        b.getDenseI64ArrayAttr({0, 0, from}), b.getDenseI64ArrayAttr({1, 1, 1}));
  return ReshapeOp::create(b, loc, tensor({T * B, n}, t.getElementType()), s);
}

/// aᵀ b over the rows of both: a [N, M], b [N, K] -> [M, K].
Value sumOfOuter(OpBuilder &b, Location loc, Value a, Value rows) {
  return GemmOp::create(b, loc, a, rows, Value(), /*trans_a=*/true, /*trans_b=*/false,
                        llvm::APFloat(1.0), llvm::APFloat(1.0));
}

Value zerosLike(OpBuilder &b, Location loc, Value v) {
  auto t = tensorType(v);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
}

} // namespace

Type otc::recurrentStateType(Type elem) {
  return elem.isF16() || elem.isBF16() ? Float32Type::get(elem.getContext()) : elem;
}

LogicalResult LstmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor a,
                                       SmallVectorImpl<Type> &types) {
  int64_t T, B, H;
  if (failed(checkRecurrence(loc, a.getInput(), a.getRecurrence(), 4, T, B, H)))
    return failure();
  Type elem = tensorType(a.getInput()).getElementType(), state = recurrentStateType(elem);
  types.append({tensor({T, B, H}, elem), tensor({T, B, H}, state), tensor({T, B, 4 * H}, state)});
  return success();
}

LogicalResult LstmOp::verify() {
  auto h = tensorType(getHidden()), c = tensorType(getCell());
  auto h0 = tensor({h.getDimSize(1), h.getDimSize(2)}, h.getElementType());
  auto c0 = tensor(h0.getShape(), c.getElementType());
  if (failed(expect(*this, getInitialH(), "the initial hidden state", h0)) ||
      failed(expect(*this, getInitialC(), "the initial cell state", c0)) ||
      failed(checkLens(*this, getLens(), h)))
    return failure();
  return success();
}

LogicalResult LstmGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor a, SmallVectorImpl<Type> &types) {
  auto dh = tensorType(a.getHiddenGrad());
  if (dh.getRank() != 3)
    return emitOptionalError(loc, "the hidden states' gradient must be [T, B, H], not ", dh);
  int64_t T = dh.getDimSize(0), B = dh.getDimSize(1), H = dh.getDimSize(2);
  Type elem = dh.getElementType();
  types.append({tensor({T, B, 4 * H}, elem), tensor({B, H}, elem),
                tensor({B, H}, recurrentStateType(elem))});
  return success();
}

LogicalResult LstmGradOp::verify() {
  auto dx = tensorType(getInputGrad()), dc0 = tensorType(getInitialCGrad());
  int64_t T = dx.getDimSize(0), B = dx.getDimSize(1), H = dx.getDimSize(2) / 4;
  Type elem = dx.getElementType(), state = dc0.getElementType();
  if (failed(expect(*this, getRecurrence(), "the recurrence", tensor({4 * H, H}, elem))) ||
      failed(expect(*this, getCellGrad(), "the cell states' gradient", tensor({T, B, H}, state))) ||
      failed(expect(*this, getCell(), "the cell states", tensor({T, B, H}, state))) ||
      failed(expect(*this, getGates(), "the gates", tensor({T, B, 4 * H}, state))) ||
      failed(expect(*this, getInitialC(), "the initial cell state", dc0)) ||
      failed(checkLens(*this, getLens(), tensorType(getCell()))))
    return failure();
  return success();
}

LogicalResult GruOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor a,
                                      SmallVectorImpl<Type> &types) {
  int64_t T, B, H;
  if (failed(checkRecurrence(loc, a.getInput(), a.getRecurrence(), 3, T, B, H)))
    return failure();
  Type elem = tensorType(a.getInput()).getElementType();
  types.append({tensor({T, B, H}, elem), tensor({T, B, 4 * H}, recurrentStateType(elem))});
  return success();
}

LogicalResult GruOp::verify() {
  auto h = tensorType(getHidden());
  int64_t B = h.getDimSize(1), H = h.getDimSize(2);
  if (failed(expect(*this, getInitialH(), "the initial hidden state",
                    tensor({B, H}, h.getElementType()))) ||
      failed(expect(*this, getRbias(), "rbias", tensor({H}, h.getElementType()))) ||
      failed(checkLens(*this, getLens(), h)))
    return failure();
  if (getRbias() && !getLinearBeforeReset())
    return emitOpError("takes rbias only with linear_before_reset; without, it adds to the input");
  return success();
}

LogicalResult GruGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor a,
                                          SmallVectorImpl<Type> &types) {
  auto dh = tensorType(a.getHiddenGrad());
  if (dh.getRank() != 3)
    return emitOptionalError(loc, "the hidden states' gradient must be [T, B, H], not ", dh);
  int64_t T = dh.getDimSize(0), B = dh.getDimSize(1), H = dh.getDimSize(2);
  types.append({tensor({T, B, 3 * H}, dh.getElementType()), tensor({B, H}, dh.getElementType())});
  return success();
}

LogicalResult GruGradOp::verify() {
  auto dh = tensorType(getHiddenGrad());
  int64_t T = dh.getDimSize(0), B = dh.getDimSize(1), H = dh.getDimSize(2);
  Type elem = dh.getElementType();
  if (failed(expect(*this, getRecurrence(), "the recurrence", tensor({3 * H, H}, elem))) ||
      failed(expect(*this, getHidden(), "the hidden states", dh)) ||
      failed(expect(*this, getGates(), "the gates", tensor({T, B, 4 * H}, recurrentStateType(elem)))) ||
      failed(expect(*this, getInitialH(), "the initial hidden state", tensor({B, H}, elem))) ||
      failed(checkLens(*this, getLens(), dh)))
    return failure();
  return success();
}

LogicalResult RnnOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor a,
                                      SmallVectorImpl<Type> &types) {
  int64_t T, B, H;
  if (failed(checkRecurrence(loc, a.getInput(), a.getRecurrence(), 1, T, B, H)))
    return failure();
  Type elem = tensorType(a.getInput()).getElementType();
  types.append({tensor({T, B, H}, elem), tensor({T, B, H}, recurrentStateType(elem))});
  return success();
}

LogicalResult RnnOp::verify() {
  auto h = tensorType(getHidden());
  if (failed(expect(*this, getInitialH(), "the initial hidden state",
                    tensor({h.getDimSize(1), h.getDimSize(2)}, h.getElementType()))) ||
      failed(checkLens(*this, getLens(), h)))
    return failure();
  return success();
}

LogicalResult RnnGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor a,
                                          SmallVectorImpl<Type> &types) {
  auto dh = tensorType(a.getHiddenGrad());
  if (dh.getRank() != 3)
    return emitOptionalError(loc, "the hidden states' gradient must be [T, B, H], not ", dh);
  int64_t B = dh.getDimSize(1), H = dh.getDimSize(2);
  types.append({dh, tensor({B, H}, dh.getElementType())});
  return success();
}

LogicalResult RnnGradOp::verify() {
  auto dh = tensorType(getHiddenGrad());
  int64_t H = dh.getDimSize(2);
  Type elem = dh.getElementType();
  if (failed(expect(*this, getRecurrence(), "the recurrence", tensor({H, H}, elem))) ||
      failed(expect(*this, getStates(), "the states",
                    tensor(dh.getShape(), recurrentStateType(elem)))) ||
      failed(checkLens(*this, getLens(), dh)))
    return failure();
  return success();
}

// A step: the recurrent GEMM (2 B H per gate row) and about 10 B H of gates.
int64_t LstmOp::getFlopCount() {
  auto h = tensorType(getHidden()).getShape();
  return h[0] * h[1] * h[2] * (8 * h[2] + 10);
}
int64_t LstmGradOp::getFlopCount() {
  auto dx = tensorType(getInputGrad()).getShape();
  return dx[0] * dx[1] * dx[2] * (2 * (dx[2] / 4) + 4);
}
int64_t GruOp::getFlopCount() {
  auto h = tensorType(getHidden()).getShape();
  return h[0] * h[1] * h[2] * (6 * h[2] + 10);
}
int64_t GruGradOp::getFlopCount() {
  auto dx = tensorType(getInputGrad()).getShape();
  return dx[0] * dx[1] * dx[2] * (2 * (dx[2] / 3) + 5);
}
int64_t RnnOp::getFlopCount() {
  auto h = tensorType(getHidden()).getShape();
  return h[0] * h[1] * h[2] * (2 * h[2] + 2);
}
int64_t RnnGradOp::getFlopCount() {
  auto dx = tensorType(getInputGrad()).getShape();
  return dx[0] * dx[1] * dx[2] * (2 * dx[2] + 3);
}

// d input = the kernel's gate gradients; dR = Σ_t dgatesᵀ h_prev.
LogicalResult LstmOp::buildGradients(OpBuilder &b, ValueRange dy,
                                     SmallVectorImpl<Value> &grads) {
  if (dy[2])
    return emitOpError("has no gradient rule for its kept gates");
  if (!dy[0] && !dy[1]) {
    grads.append(getNumOperands(), Value());
    return success();
  }
  Location loc = getLoc();
  Value dh = dy[0] ? dy[0] : zerosLike(b, loc, getHidden());
  auto g = LstmGradOp::create(b, loc, dh, getRecurrence(), getCell(), getGates(), getInitialC(),
                              dy[1], getLens(), getReverseAttr());
  Value dx = g.getInputGrad();
  int64_t H4 = tensorType(dx).getDimSize(2);
  Value hprev = previousStates(b, loc, getHidden(), getInitialH(), getReverse());
  Value dr = sumOfOuter(b, loc, columns(b, loc, dx, 0, H4), columns(b, loc, hprev, 0, H4 / 4));
  grads.append({dx, dr, g.getInitialHGrad(), g.getInitialCGrad()});
  if (getLens())
    grads.push_back(Value());
  return success();
}

// dR's update and reset rows pair the gate gradients with h_prev; its
// candidate rows pair them with the reset gate's other factor: r ⊙ dn with
// h_prev (and its sum is rbias's gradient) after the reset, or dn with r h.
LogicalResult GruOp::buildGradients(OpBuilder &b, ValueRange dy, SmallVectorImpl<Value> &grads) {
  if (dy[1])
    return emitOpError("has no gradient rule for its kept gates");
  if (!dy[0]) {
    grads.append(getNumOperands(), Value());
    return success();
  }
  Location loc = getLoc();
  auto g = GruGradOp::create(b, loc, dy[0], getRecurrence(), getHidden(), getGates(),
                             getInitialH(), getLens(), getReverseAttr(),
                             getLinearBeforeResetAttr());
  Value dx = g.getInputGrad();
  auto xt = tensorType(dx);
  int64_t H = xt.getDimSize(2) / 3;
  Type elem = xt.getElementType();
  Value hprev = columns(b, loc, previousStates(b, loc, getHidden(), getInitialH(), getReverse()),
                        0, H);
  Value dzr = sumOfOuter(b, loc, columns(b, loc, dx, 0, 2 * H), hprev);
  Value dn = columns(b, loc, dx, 2 * H, H);
  auto factor = [&](int64_t gate) {
    return castElements(b, loc, columns(b, loc, getGates(), gate * H, H), elem);
  };
  Value drb, dnr;
  if (getLinearBeforeReset()) {
    Value drec = MulOp::create(b, loc, dn, factor(1));
    dnr = sumOfOuter(b, loc, drec, hprev);
    if (getRbias())
      drb = ReduceSumOp::create(b, loc, drec, b.getDenseI64ArrayAttr({0}), false);
  } else {
    dnr = sumOfOuter(b, loc, dn, factor(3));
  }
  Value dr = ConcatOp::create(b, loc, tensor({3 * H, H}, elem), ValueRange{dzr, dnr}, 0);
  grads.append({dx, dr, g.getInitialHGrad()});
  if (getRbias())
    grads.push_back(drb);
  if (getLens())
    grads.push_back(Value());
  return success();
}

// d input = the kernel's pre-activation gradients; dR = Σ_t dᵀ h_prev. f' is
// taken from the kept float32 states, or from the hidden states themselves
// when they are as wide (float32: the states are then dead after the op).
LogicalResult RnnOp::buildGradients(OpBuilder &b, ValueRange dy, SmallVectorImpl<Value> &grads) {
  if (dy[1])
    return emitOpError("has no gradient rule for its kept states");
  if (!dy[0]) {
    grads.append(getNumOperands(), Value());
    return success();
  }
  Location loc = getLoc();
  Value states = getStates().getType() == getHidden().getType() ? getHidden() : getStates();
  auto g = RnnGradOp::create(b, loc, dy[0], getRecurrence(), states, getLens(),
                             getActivationAttr(), getReverseAttr());
  Value dx = g.getInputGrad();
  int64_t H = tensorType(dx).getDimSize(2);
  Value hprev = previousStates(b, loc, getHidden(), getInitialH(), getReverse());
  Value dr = sumOfOuter(b, loc, columns(b, loc, dx, 0, H), columns(b, loc, hprev, 0, H));
  grads.append({dx, dr, g.getInitialHGrad()});
  if (getLens())
    grads.push_back(Value());
  return success();
}
