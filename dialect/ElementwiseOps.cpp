// Elementwise operations: broadcast shape inference and gradient rules.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using namespace otc;

static LogicalResult inferBroadcast(std::optional<Location> loc, Value lhs,
                                    Value rhs, SmallVectorImpl<Type> &types) {
  auto lt = tensorType(lhs), rt = tensorType(rhs);
  auto shape = broadcastShapes(lt.getShape(), rt.getShape());
  if (!shape)
    return emitOptionalError(loc, "operands of shapes ", lt, " and ", rt,
                             " do not broadcast");
  types.push_back(RankedTensorType::get(*shape, lt.getElementType()));
  return success();
}

#define OTC_BINARY_INFER(Op)                                                   \
  LogicalResult Op::inferReturnTypes(MLIRContext *, std::optional<Location> l, \
                                     Op::Adaptor a,                            \
                                     SmallVectorImpl<Type> &types) {           \
    return inferBroadcast(l, a.getLhs(), a.getRhs(), types);                   \
  }
OTC_BINARY_INFER(AddOp)
OTC_BINARY_INFER(SubOp)
OTC_BINARY_INFER(MulOp)
OTC_BINARY_INFER(DivOp)
#undef OTC_BINARY_INFER

// Each binary rule computes the full-shape gradient of each operand; the
// broadcast operand's gradient is then summed back to its own shape.
template <typename Op>
static void finishBinary(OpBuilder &b, Op op, Value dl, Value dr,
                         SmallVectorImpl<Value> &grads) {
  grads.push_back(sumToShape(b, op.getLoc(), dl, tensorType(op.getLhs())));
  grads.push_back(sumToShape(b, op.getLoc(), dr, tensorType(op.getRhs())));
}

LogicalResult AddOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  finishBinary(b, *this, dy[0], dy[0], grads);
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  finishBinary(b, *this, dy[0], NegOp::create(b, getLoc(), dy[0]), grads);
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  // Separate statements: argument evaluation order would make the IR differ
  // between compilers.
  Value da = MulOp::create(b, loc, dy[0], getRhs());
  Value db = MulOp::create(b, loc, dy[0], getLhs());
  finishBinary(b, *this, da, db, grads);
  return success();
}

// d(a/b)/da = 1/b and d(a/b)/db = -(a/b)/b, so db = -da * y, reusing the
// forward result y = a/b.
LogicalResult DivOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value da = DivOp::create(b, loc, dy[0], getRhs());
  Value db = NegOp::create(b, loc, MulOp::create(b, loc, da, getResult()));
  finishBinary(b, *this, da, db, grads);
  return success();
}

LogicalResult NegOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(NegOp::create(b, getLoc(), dy[0]));
  return success();
}

LogicalResult IdentityOp::buildGradients(OpBuilder &, ValueRange dy,
                                         SmallVectorImpl<Value> &grads) {
  grads.push_back(dy[0]);
  return success();
}

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

// Relu, tanh and sigmoid: one fused op each (Otc_UnaryOpWithGradOp).

// The math functions' rules compose primitives, reusing the forward result
// where it is the derivative's natural input.
LogicalResult ExpOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(MulOp::create(b, getLoc(), dy[0], getResult())); // dy * e^x
  return success();
}

LogicalResult LogOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(DivOp::create(b, getLoc(), dy[0], getInput())); // dy / x
  return success();
}

LogicalResult SqrtOp::buildGradients(OpBuilder &b, ValueRange dy,
                                     SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value two = scalarConstant(b, loc, tensorType(getResult()).getElementType(), 2.0);
  Value twoY = MulOp::create(b, loc, getResult(), two);
  grads.push_back(DivOp::create(b, loc, dy[0], twoY)); // dy / (2 sqrt(x))
  return success();
}

LogicalResult ReciprocalOp::buildGradients(OpBuilder &b, ValueRange dy,
                                           SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value yy = MulOp::create(b, loc, getResult(), getResult());
  grads.push_back(NegOp::create(b, loc, MulOp::create(b, loc, dy[0], yy))); // -dy / x^2
  return success();
}

LogicalResult AbsOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value sign = SignOp::create(b, loc, getInput()); // 0 at 0, as PyTorch
  grads.push_back(MulOp::create(b, loc, dy[0], sign));
  return success();
}

// d x^c / dx = c x^(c-1); for c = 1 that is 1 (pow(x, 0) is 1 at x = 0 too).
LogicalResult PowOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  double c = getExponent().convertToDouble();
  Type elem = tensorType(getInput()).getElementType();
  Value lower = PowOp::create(b, loc, getInput(), b.getF64FloatAttr(c - 1));
  Value scaled = MulOp::create(b, loc, lower, scalarConstant(b, loc, elem, c));
  grads.push_back(MulOp::create(b, loc, dy[0], scaled));
  return success();
}

// d erf(x)/dx = 2/sqrt(pi) * exp(-x^2).
LogicalResult ErfOp::buildGradients(OpBuilder &b, ValueRange dy,
                                    SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value xx = MulOp::create(b, loc, getInput(), getInput());
  Value gauss = ExpOp::create(b, loc, NegOp::create(b, loc, xx));
  Value k = scalarConstant(b, loc, tensorType(getInput()).getElementType(),
                           1.1283791670955126); // 2 / sqrt(pi)
  Value scaled = MulOp::create(b, loc, gauss, k);
  grads.push_back(MulOp::create(b, loc, dy[0], scaled));
  return success();
}

// The trigonometric and softplus rules, one line each.
LogicalResult SinOp::buildGradients(OpBuilder &b, ValueRange dy, SmallVectorImpl<Value> &grads) {
  RuleBuilder o{b, getLoc()}; // dy cos(x)
  return o.grad(grads, o.mul(dy[0], CosOp::create(b, getLoc(), getInput())));
}

LogicalResult CosOp::buildGradients(OpBuilder &b, ValueRange dy, SmallVectorImpl<Value> &grads) {
  RuleBuilder o{b, getLoc()}; // -dy sin(x)
  return o.grad(grads, o.neg(o.mul(dy[0], SinOp::create(b, getLoc(), getInput()))));
}

LogicalResult TanOp::buildGradients(OpBuilder &b, ValueRange dy, SmallVectorImpl<Value> &grads) {
  RuleBuilder o{b, getLoc()}; // dy (1 + y^2), from the result y = tan(x)
  Value y = getResult();
  return o.grad(grads, o.mul(dy[0], o.add(o.mul(y, y), o.scalar(y, 1.0))));
}

LogicalResult AtanOp::buildGradients(OpBuilder &b, ValueRange dy, SmallVectorImpl<Value> &grads) {
  RuleBuilder o{b, getLoc()}; // dy / (1 + x^2)
  Value x = getInput();
  return o.grad(grads, o.div(dy[0], o.add(o.mul(x, x), o.scalar(x, 1.0))));
}

LogicalResult SoftplusOp::buildGradients(OpBuilder &b, ValueRange dy,
                                         SmallVectorImpl<Value> &grads) {
  RuleBuilder o{b, getLoc()}; // dy sigmoid(x): 1 above 20 in float32, as PyTorch's
  return o.grad(grads, o.mul(dy[0], SigmoidOp::create(b, getLoc(), getInput())));
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ValueRange dy, SmallVectorImpl<Value> &grads) {
  // The float32 output stands in for a second erf or tanh (GeluGradOp).
  Value y = tensorType(getResult()).getElementType().isF32() ? getResult() : Value();
  grads.push_back(GeluGradOp::create(b, getLoc(), dy[0], getInput(), y, getApproximate()));
  return success();
}
