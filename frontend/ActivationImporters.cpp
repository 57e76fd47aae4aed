// Activations composed from primitives (tinygrad style): their gradients
// come from compare and where, and fusion makes each one kernel.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <optional>
#include <cmath>

using namespace mlir;

namespace otc {
namespace {

using Imp = GraphImporter;

/// A float scalar constant of `like`'s element type.
Value scalarLike(Imp &imp, Value like, double v) {
  return scalarConstant(imp.builder(), imp.loc(),
                        cast<RankedTensorType>(like.getType()).getElementType(), v);
}

/// max(a, b) as where(a >= b, a, b), and min with <=: the gradient goes to
/// a on ties (PyTorch's clamp does the same at its bounds).
Value pick(Imp &imp, Value a, Value b, ComparePredicate predicate) {
  OpBuilder &bld = imp.builder();
  Value c = CompareOp::create(bld, imp.loc(), a, b, predicate);
  return WhereOp::create(bld, imp.loc(), c, a, b);
}

/// Max and Min (variadic): on the host when all inputs are constant.
LogicalResult importMaxMin(Imp &imp, bool isMax) {
  if (imp.allInputsConstant() && imp.numInputs() == 2) {
    auto f = [isMax](double a, double b) { return isMax ? std::max(a, b) : std::min(a, b); };
    if (foldBinary(imp, f) == FoldResult::Folded)
      return success();
    return failure();
  }
  auto xs = imp.inputs();
  if (failed(xs))
    return failure();
  // Inputs of mixed types or shapes that do not broadcast fail here,
  // named (the builders' own inference would abort).
  Value v = xs->front();
  for (Value next : ArrayRef<Value>(*xs).drop_front()) {
    auto c = imp.create<CompareOp>(v, next, isMax ? ComparePredicate::ge : ComparePredicate::le);
    if (failed(c))
      return failure();
    auto w = imp.create<WhereOp>(*c, v, next);
    if (failed(w))
      return failure();
    v = *w;
  }
  return imp.defineResult(v);
}

/// max(0, min(1, alpha x + beta)): the gradient is alpha strictly inside.
Value hardSigmoid(Imp &imp, Value x, double alpha, double beta) {
  OpBuilder &b = imp.builder();
  Value y = MulOp::create(b, imp.loc(), x, scalarLike(imp, x, alpha));
  y = AddOp::create(b, imp.loc(), y, scalarLike(imp, x, beta));
  y = pick(imp, y, scalarLike(imp, x, 1.0), ComparePredicate::le);
  return pick(imp, y, scalarLike(imp, x, 0.0), ComparePredicate::ge);
}

/// The exponential linear family: x above 0, else
/// alpha (e^(min(x, 0) / c) - 1). The min keeps e^x finite where x is
/// taken, so the unused side's gradient there is 0, never 0 * inf.
Value expLinear(Imp &imp, Value x, double alpha, double c) {
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value zero = scalarLike(imp, x, 0.0);
  Value neg = pick(imp, x, zero, ComparePredicate::le);
  if (c != 1.0)
    neg = DivOp::create(b, loc, neg, scalarLike(imp, x, c));
  Value em1 = SubOp::create(b, loc, ExpOp::create(b, loc, neg), scalarLike(imp, x, 1.0));
  Value scaled = MulOp::create(b, loc, em1, scalarLike(imp, x, alpha));
  Value positive = CompareOp::create(b, loc, x, zero, ComparePredicate::gt);
  return WhereOp::create(b, loc, positive, x, scaled);
}

} // namespace

LogicalResult importMax(Imp &imp) { return importMaxMin(imp, true); }
LogicalResult importMin(Imp &imp) { return importMaxMin(imp, false); }

/// Clip: bounds from inputs (opset 11) or attributes (before).
LogicalResult importClip(Imp &imp) {
  bool fromInputs = imp.form() >= 11;
  // Each bound: absent, a compile-time number, or a run-time input.
  std::optional<double> number[2];
  bool atRunTime[2] = {false, false};
  for (int k = 0; k < 2; ++k) {
    if (fromInputs && imp.numInputs() > size_t(k + 1) && !imp.node().input(k + 1).empty()) {
      const HostTensor *t = imp.constantInput(k + 1);
      if (t && t->numElements() == 1)
        number[k] = t->values[0];
      else
        atRunTime[k] = true;
    } else if (!fromInputs && imp.attr(k ? "max" : "min")) {
      number[k] = imp.floatAttr(k ? "max" : "min", 0);
    }
  }
  // On the host when everything is constant: timm's "same" padding clips
  // shape arithmetic at 0 before Pad reads it.
  if (const HostTensor *c = imp.constantInput(0); c && !atRunTime[0] && !atRunTime[1]) {
    HostTensor t = *c;
    for (double &v : t.values) { // NaN stays NaN, as in PyTorch's clamp
      if (number[0] && v < *number[0])
        v = *number[0];
      if (number[1] && v > *number[1])
        v = *number[1];
    }
    return imp.define(0, std::move(t));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  Value v = *x;
  for (int k = 0; k < 2; ++k) {
    Value bound;
    if (number[k]) {
      bound = scalarLike(imp, v, *number[k]);
    } else if (atRunTime[k]) { // a run-time scalar, which gets a gradient
      auto b = imp.input(k + 1);
      if (failed(b))
        return failure();
      if (cast<RankedTensorType>(b->getType()).getNumElements() != 1)
        return imp.fail("Clip bounds must be scalars");
      bound = reshaped(imp, *b, {});
    }
    // The bound where x passes it, else x: a NaN stays NaN, as in clamp.
    if (bound)
      v = pick(imp, bound, v, k ? ComparePredicate::lt : ComparePredicate::gt);
  }
  return imp.defineResult(v);
}

/// The inputs added left to right, with numpy broadcasting.
static FailureOr<Value> sumOfInputs(Imp &imp) {
  auto xs = imp.inputs();
  if (failed(xs))
    return failure();
  FailureOr<Value> sum = xs->front();
  for (Value next : ArrayRef<Value>(*xs).drop_front())
    if (failed(sum = imp.create<AddOp>(*sum, next)))
      return failure();
  return sum;
}

/// Sum (variadic).
LogicalResult importSum(Imp &imp) { return imp.defineResult(sumOfInputs(imp)); }

/// Mean (variadic): the Sum divided by the count.
LogicalResult importMean(Imp &imp) {
  auto sum = sumOfInputs(imp);
  if (failed(sum))
    return failure();
  if (!isa<FloatType>(getElementTypeOrSelf(sum->getType())))
    return imp.fail("Mean of integers is not supported");
  return imp.defineResult(imp.create<DivOp>(*sum, scalarLike(imp, *sum, double(imp.numInputs()))));
}

/// Dropout (opset 12): ratio and training_mode are optional constant
/// inputs. In inference mode, or with ratio 0, it is the identity (and the
/// mask all true); in training mode an otc.dropout whose random stream is
/// a hash of the node's output name, stable from one compile to the next.
LogicalResult importDropout(Imp &imp) {
  auto scalarInput = [&](size_t i, double fallback, double &out) -> LogicalResult {
    out = fallback;
    if (imp.numInputs() <= i || imp.node().input(i).empty())
      return success();
    const HostTensor *t = imp.constantInput(i);
    if (!t || t->numElements() != 1)
      return imp.fail("Dropout's ratio and training_mode must be compile-time scalars");
    out = t->values[0];
    return success();
  };
  double ratio, training;
  if (failed(scalarInput(1, 0.5, ratio)) || failed(scalarInput(2, 0.0, training)))
    return failure();
  if (!(ratio >= 0 && ratio < 1))
    return imp.fail("the ratio " + std::to_string(ratio) + " is outside [0, 1)");
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  bool wantMask = imp.node().output_size() > 1 && !imp.node().output(1).empty();
  if (training == 0 || ratio == 0 || imp.evaluating()) {
    imp.define(0, *x);
    if (!wantMask)
      return success();
    HostTensor all{false, onnx::TensorProto::BOOL, type.getShape().vec(), {}};
    all.values.assign(type.getNumElements(), 1.0);
    return imp.define(1, std::move(all));
  }
  auto op = createDropout(imp.builder(), imp.loc(), *x, ratio, imp.node().output(0));
  imp.define(0, op.getOutput());
  if (wantMask)
    imp.define(1, op.getMask());
  return success();
}

LogicalResult importActivationWith(Imp &imp, BuildActivation build) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  return imp.defineResult(build(imp, *x));
}

FailureOr<Value> leakyRelu(Imp &imp, Value x) {
  OpBuilder &b = imp.builder();
  Value positive =
      CompareOp::create(b, imp.loc(), x, scalarLike(imp, x, 0.0), ComparePredicate::gt);
  Value scaled = MulOp::create(b, imp.loc(), x, scalarLike(imp, x, imp.floatAttr("alpha", 0.01)));
  return WhereOp::create(b, imp.loc(), positive, x, scaled).getResult();
}

/// PRelu: where(x > 0, x, slope x), the slope broadcast to x. The slope is
/// a parameter; its gradient sums x dy where x <= 0, as PyTorch's does.
LogicalResult importPRelu(Imp &imp) {
  auto fold = [](double x, double slope) { return x > 0 ? x : slope * x; };
  auto build = [](Imp &i, Value x, Value slope) -> FailureOr<Value> {
    // The slope broadcasts to x one way (the output is x's shape).
    auto xs = cast<RankedTensorType>(x.getType()).getShape();
    if (!broadcastsTo(cast<RankedTensorType>(slope.getType()).getShape(), xs))
      return i.fail("the slope does not broadcast to the input's shape");
    OpBuilder &b = i.builder();
    Value positive =
        CompareOp::create(b, i.loc(), x, scalarLike(i, x, 0.0), ComparePredicate::gt);
    Value scaled = MulOp::create(b, i.loc(), x, slope);
    return WhereOp::create(b, i.loc(), positive, x, scaled).getResult();
  };
  return importBinaryWith(imp, build, HostFold(fold));
}

/// Softsign: x / (1 + |x|).
FailureOr<Value> softsign(Imp &imp, Value x) {
  OpBuilder &b = imp.builder();
  Value d = AddOp::create(b, imp.loc(), AbsOp::create(b, imp.loc(), x), scalarLike(imp, x, 1.0));
  return DivOp::create(b, imp.loc(), x, d).getResult();
}

// The hyperbolic and inverse trigonometric functions, composed so their
// gradients follow: sinh and cosh from e^x and e^-x; asinh = sign(x)
// log(|x| + sqrt(x^2 + 1)) (no cancellation for negative x); acosh =
// log(x + sqrt(x^2 - 1)); atanh = log((1 + x) / (1 - x)) / 2;
// asin = atan(x / sqrt(1 - x^2)); acos = pi/2 - asin.
static Value expPair(Imp &imp, Value x, double sign) {
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value up = ExpOp::create(b, loc, x), down = ExpOp::create(b, loc, NegOp::create(b, loc, x));
  Value pair = sign > 0 ? AddOp::create(b, loc, up, down).getResult()
                        : SubOp::create(b, loc, up, down).getResult();
  return MulOp::create(b, loc, pair, scalarLike(imp, x, 0.5));
}
FailureOr<Value> sinh(Imp &imp, Value x) { return expPair(imp, x, -1); }
FailureOr<Value> cosh(Imp &imp, Value x) { return expPair(imp, x, 1); }

/// sqrt(x^2 + c).
static Value hypot(Imp &imp, Value x, double c) {
  OpBuilder &b = imp.builder();
  Value sq = MulOp::create(b, imp.loc(), x, x);
  return SqrtOp::create(b, imp.loc(), AddOp::create(b, imp.loc(), sq, scalarLike(imp, x, c)));
}
FailureOr<Value> asinh(Imp &imp, Value x) {
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value a = AbsOp::create(b, loc, x);
  Value l = LogOp::create(b, loc, AddOp::create(b, loc, a, hypot(imp, x, 1.0)));
  return MulOp::create(b, loc, SignOp::create(b, loc, x), l).getResult();
}
FailureOr<Value> acosh(Imp &imp, Value x) {
  OpBuilder &b = imp.builder();
  return LogOp::create(b, imp.loc(), AddOp::create(b, imp.loc(), x, hypot(imp, x, -1.0))).getResult();
}
FailureOr<Value> atanh(Imp &imp, Value x) {
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value one = scalarLike(imp, x, 1.0);
  Value ratio = DivOp::create(b, loc, AddOp::create(b, loc, one, x), SubOp::create(b, loc, one, x));
  return MulOp::create(b, loc, LogOp::create(b, loc, ratio), scalarLike(imp, x, 0.5)).getResult();
}
FailureOr<Value> asin(Imp &imp, Value x) {
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value sq = MulOp::create(b, loc, x, x);
  Value c = SqrtOp::create(b, loc, SubOp::create(b, loc, scalarLike(imp, x, 1.0), sq));
  return AtanOp::create(b, loc, DivOp::create(b, loc, x, c)).getResult();
}
FailureOr<Value> acos(Imp &imp, Value x) {
  auto s = asin(imp, x);
  if (failed(s))
    return failure();
  return SubOp::create(imp.builder(), imp.loc(), scalarLike(imp, x, M_PI / 2), *s).getResult();
}

/// ThresholdedRelu: x where x > alpha, else 0.
FailureOr<Value> thresholdedRelu(Imp &imp, Value x) {
  OpBuilder &b = imp.builder();
  Value above = CompareOp::create(b, imp.loc(), x, scalarLike(imp, x, imp.floatAttr("alpha", 1.0)),
                                  ComparePredicate::gt);
  return WhereOp::create(b, imp.loc(), above, x, scalarLike(imp, x, 0.0)).getResult();
}

/// Shrink: x + bias below -lambd, x - bias above lambd, else 0 (hardshrink
/// with bias 0, softshrink with bias lambd).
FailureOr<Value> shrink(Imp &imp, Value x) {
  if (!isa<FloatType>(getElementTypeOrSelf(x.getType())))
    return imp.fail("the input must be a float tensor");
  double lambd = imp.floatAttr("lambd", 0.5), bias = imp.floatAttr("bias", 0.0);
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  auto below = imp.create<CompareOp>(x, scalarLike(imp, x, -lambd), ComparePredicate::lt);
  auto above = imp.create<CompareOp>(x, scalarLike(imp, x, lambd), ComparePredicate::gt);
  auto up = imp.create<AddOp>(x, scalarLike(imp, x, bias));
  auto down = imp.create<SubOp>(x, scalarLike(imp, x, bias));
  if (failed(below) || failed(above) || failed(up) || failed(down))
    return failure();
  Value outer = WhereOp::create(b, loc, *above, *down, scalarLike(imp, x, 0.0)).getResult();
  return WhereOp::create(b, loc, *below, *up, outer).getResult();
}

FailureOr<Value> hardSigmoidOf(Imp &imp, Value x) {
  return hardSigmoid(imp, x, imp.floatAttr("alpha", 0.2), imp.floatAttr("beta", 0.5));
}

/// HardSwish (opset 14): x hardsigmoid(x) with alpha 1/6 and beta 1/2.
FailureOr<Value> hardSwish(Imp &imp, Value x) {
  Value h = hardSigmoid(imp, x, 1.0 / 6.0, 0.5);
  return MulOp::create(imp.builder(), imp.loc(), x, h).getResult();
}

FailureOr<Value> elu(Imp &imp, Value x) {
  return expLinear(imp, x, imp.floatAttr("alpha", 1.0), 1.0);
}

/// Selu: gamma elu(x, alpha), with ONNX's (and PyTorch's) constants.
FailureOr<Value> selu(Imp &imp, Value x) {
  Value e = expLinear(imp, x, imp.floatAttr("alpha", 1.67326319217681884765625), 1.0);
  Value gamma = scalarLike(imp, x, imp.floatAttr("gamma", 1.05070102214813232421875));
  return MulOp::create(imp.builder(), imp.loc(), e, gamma).getResult();
}

/// Celu (opset 12): max(0, x) + min(0, alpha (e^(x / alpha) - 1)).
FailureOr<Value> celu(Imp &imp, Value x) {
  double alpha = imp.floatAttr("alpha", 1.0);
  if (alpha == 0)
    return imp.fail("alpha must not be 0");
  return expLinear(imp, x, alpha, alpha);
}

/// Gelu (opset 20): x/2 (1 + erf(x/√2)), or with approximate = "tanh"
/// x/2 (1 + tanh(√(2/π) (x + 0.044715 x³))), the forms PyTorch's GELU has.
FailureOr<Value> gelu(Imp &imp, Value x) {
  std::string approx = imp.attr("approximate") ? imp.attr("approximate")->s() : "none";
  if (approx != "none" && approx != "tanh")
    return imp.fail("unknown approximate " + quoted(approx));
  auto form = approx == "tanh" ? GeluApproximation::Tanh : GeluApproximation::None;
  return GeluOp::create(imp.builder(), imp.loc(), x, form).getResult();
}

} // namespace otc
