// Arithmetic, comparisons, logic, selection and casts: otc ops at run time,
// host folds when every input is a compile-time constant.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;

namespace otc {

using Imp = GraphImporter;

//===----------------------------------------------------------------------===//
// Runtime operations
//===----------------------------------------------------------------------===//

LogicalResult importGemm(Imp &imp) {
  auto a = imp.input(0), b = imp.input(1), c = imp.optionalInput(2);
  if (failed(a) || failed(b) || failed(c))
    return failure();
  double alpha = imp.floatAttr("alpha", 1.0), beta = imp.floatAttr("beta", 1.0);
  if (!std::isfinite(alpha) || !std::isfinite(beta))
    return imp.fail("alpha and beta must be finite");
  return imp.defineResult(imp.create<GemmOp>(
      *a, *b, *c, imp.intAttr("transA", 0) != 0, imp.intAttr("transB", 0) != 0,
      llvm::APFloat(alpha), llvm::APFloat(beta)));
}

/// MatMul as numpy's matmul: a 1-D operand gains a dim of 1 (dropped from
/// the result), and the leading (batch) dims broadcast. An operand whose
/// batch dims are all 1 is used as a shared matrix, one GEMM; otherwise
/// each operand is broadcast to the common batch dims.
LogicalResult importMatMul(Imp &imp) {
  auto a = imp.input(0), b = imp.input(1);
  if (failed(a) || failed(b))
    return failure();
  SmallVector<int64_t> l(cast<RankedTensorType>(a->getType()).getShape());
  SmallVector<int64_t> r(cast<RankedTensorType>(b->getType()).getShape());
  if (l.empty() || r.empty())
    return imp.fail("MatMul operands must have rank 1 or more");
  bool rowVector = l.size() == 1, columnVector = r.size() == 1;
  Value lhs = rowVector ? reshaped(imp, *a, {1, l[0]}) : *a;
  Value rhs = columnVector ? reshaped(imp, *b, {r[0], 1}) : *b;
  l.assign(cast<RankedTensorType>(lhs.getType()).getShape().begin(),
           cast<RankedTensorType>(lhs.getType()).getShape().end());
  r.assign(cast<RankedTensorType>(rhs.getType()).getShape().begin(),
           cast<RankedTensorType>(rhs.getType()).getShape().end());
  ArrayRef<int64_t> lLead = ArrayRef<int64_t>(l).drop_back(2), rLead = ArrayRef<int64_t>(r).drop_back(2);
  auto ones = [](ArrayRef<int64_t> d) { return llvm::all_of(d, [](int64_t v) { return v == 1; }); };
  if (ones(rLead) && rLead.size() <= lLead.size()) {
    rhs = reshaped(imp, rhs, ArrayRef<int64_t>(r).take_back(2));
  } else if (lLead != rLead) {
    auto batch = broadcastShapes(lLead, rLead);
    if (!batch)
      return imp.fail("the batch dims of the operands do not broadcast");
    auto to = [&](Value v, ArrayRef<int64_t> own) {
      SmallVector<int64_t> shape(*batch);
      shape.append(own.end() - 2, own.end());
      return ArrayRef<int64_t>(shape) == own ? v
                                             : BroadcastToOp::create(imp.builder(), imp.loc(),
                                                                     withShape(v, shape), v)
                                                   .getResult();
    };
    lhs = to(lhs, l);
    rhs = to(rhs, r);
  }
  auto y = imp.create<MatMulOp>(lhs, rhs);
  if (failed(y))
    return failure();
  SmallVector<int64_t> out(cast<RankedTensorType>(y->getType()).getShape());
  if (columnVector)
    out.pop_back();
  if (rowVector)
    out.erase(out.end() - (columnVector ? 1 : 2));
  return imp.defineResult(reshaped(imp, *y, out));
}

LogicalResult importUnaryWith(Imp &imp, BuildUnary build, double (*host)(double)) {
  if (const HostTensor *c = imp.constantInput(0); c && host) {
    HostTensor t = *c;
    for (double &v : t.values)
      v = t.isFloat ? host(v) : std::trunc(host(v));
    return imp.define(0, std::move(t));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  return imp.defineResult(build(imp, *x));
}

LogicalResult importBinaryWith(Imp &imp, BuildBinary build, std::optional<HostFold> fold,
                               int resultType) {
  if (fold) {
    FoldResult r = foldBinary(imp, *fold, resultType);
    if (r != FoldResult::NotConstant)
      return success(r == FoldResult::Folded);
  }
  auto a = imp.input(0), b = imp.input(1);
  if (failed(a) || failed(b))
    return failure();
  return imp.defineResult(build(imp, *a, *b));
}

LogicalResult importIdentity(Imp &imp) {
  if (const HostTensor *c = imp.constantInput(0)) {
    return imp.define(0, *c);
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  return imp.defineResult(*x);
}

// Comparisons: folded on the host when constant (shape subgraphs use
// them), else otc.compare.
LogicalResult importCompareWith(Imp &imp, ComparePredicate predicate) {
  auto fold = [predicate](double a, double b) { return double(holds(predicate, a, b)); };
  return importBinaryWith(
      imp,
      [predicate](Imp &i, Value a, Value b) { return i.create<CompareOp>(a, b, predicate); },
      HostFold(fold), onnx::TensorProto::BOOL);
}

/// Xor: a != b on bools, folded on constants.
LogicalResult importXor(Imp &imp) {
  for (size_t i = 0; i < 2 && i < imp.numInputs(); ++i) {
    const HostTensor *c = imp.constantInput(i);
    bool isBool = c ? c->elemType == onnx::TensorProto::BOOL : false;
    if (!c) {
      auto v = imp.input(i);
      if (failed(v))
        return failure();
      isBool = getElementTypeOrSelf(v->getType()).isInteger(1);
    }
    if (!isBool)
      return imp.fail("the inputs must be bool tensors");
  }
  return importBinaryWith(
      imp,
      [](GraphImporter &i, Value a, Value b) {
        return i.create<CompareOp>(a, b, ComparePredicate::ne);
      },
      HostFold([](double a, double b) { return double((a != 0) != (b != 0)); }),
      onnx::TensorProto::BOOL);
}

/// Fails unless input `i` holds integers (not bool, not float).
static LogicalResult integerInput(Imp &imp, size_t i) {
  if (const HostTensor *c = imp.constantInput(i)) {
    if (!c->isFloat && c->elemType != onnx::TensorProto::BOOL)
      return success();
  } else {
    auto v = imp.input(i);
    if (failed(v))
      return failure();
    if (getElementTypeOrSelf(v->getType()).isInteger(64))
      return success();
  }
  return imp.fail("input " + std::to_string(i) + " is not an integer tensor");
}

/// BitwiseAnd, BitwiseOr and BitwiseXor (opset 18): folded on constants,
/// else on the int64 every integer type computes in.
template <typename Op>
static LogicalResult importBitwise(Imp &imp, int64_t (*f)(int64_t, int64_t)) {
  if (failed(integerInput(imp, 0)) || failed(integerInput(imp, 1)))
    return failure();
  return importBinaryWith(
      imp, [](Imp &i, Value a, Value b) { return i.create<Op>(a, b); },
      HostFold([f](double a, double b) { return double(f(toInt64(a), toInt64(b))); }));
}

LogicalResult importBitwiseAnd(Imp &imp) {
  return importBitwise<BitwiseAndOp>(imp, [](int64_t a, int64_t b) { return a & b; });
}
LogicalResult importBitwiseOr(Imp &imp) {
  return importBitwise<BitwiseOrOp>(imp, [](int64_t a, int64_t b) { return a | b; });
}
LogicalResult importBitwiseXor(Imp &imp) {
  return importBitwise<BitwiseXorOp>(imp, [](int64_t a, int64_t b) { return a ^ b; });
}

/// BitwiseNot of a constant, in its type's width (a folded Cast keeps the
/// unsigned type it made). At run time an unsigned type's complement is
/// not int64's, and the importer no longer knows the type, so it is refused.
LogicalResult importBitwiseNot(Imp &imp) {
  if (failed(integerInput(imp, 0)))
    return failure();
  const HostTensor *c = imp.constantInput(0);
  if (!c)
    return imp.fail("BitwiseNot of a run-time value is not supported (of a constant it folds)");
  using P = onnx::TensorProto;
  if (c->elemType == P::UINT64)
    return imp.fail("BitwiseNot of uint64 is not supported");
  int bits = c->elemType == P::UINT8 ? 8 : c->elemType == P::UINT16 ? 16
             : c->elemType == P::UINT32 ? 32 : 0;
  HostTensor t = *c;
  for (double &v : t.values)
    v = bits ? double(~toInt64(v) & ((int64_t(1) << bits) - 1)) : double(~toInt64(v));
  return imp.define(0, std::move(t));
}

LogicalResult importNot(Imp &imp) {
  if (const HostTensor *c = imp.constantInput(0)) {
    HostTensor t = *c;
    for (double &v : t.values)
      v = double(v == 0);
    return imp.define(0, std::move(t));
  }
  return importUnary<NotOp>(imp);
}

/// IsNaN and IsInf: x != x, and x == +inf or x == -inf as asked; on the
/// host when constant.
static LogicalResult importFloatClass(Imp &imp, bool nan) {
  bool pos = nan || imp.intAttr("detect_positive", 1) != 0;
  bool neg = nan || imp.intAttr("detect_negative", 1) != 0;
  auto holds = [&](double v) {
    return nan ? std::isnan(v) : std::isinf(v) && (v > 0 ? pos : neg);
  };
  if (const HostTensor *c = imp.constantInput(0)) {
    HostTensor t = *c;
    t.isFloat = false;
    t.elemType = onnx::TensorProto::BOOL;
    for (double &v : t.values)
      v = double(holds(v));
    return imp.define(0, std::move(t));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  Type elem = getElementTypeOrSelf(x->getType());
  if (!isa<FloatType>(elem))
    return imp.fail("the input must be a float tensor");
  OpBuilder &b = imp.builder();
  if (nan)
    return imp.defineResult(imp.create<CompareOp>(*x, *x, ComparePredicate::ne));
  auto equals = [&](double v) {
    return imp.create<CompareOp>(*x, scalarConstant(b, imp.loc(), elem, v), ComparePredicate::eq);
  };
  double inf = std::numeric_limits<double>::infinity();
  if (pos != neg)
    return imp.defineResult(equals(pos ? inf : -inf));
  // Both signs: either; neither: both, which never holds.
  auto p = equals(inf), n = equals(-inf);
  if (failed(p) || failed(n))
    return failure();
  if (pos)
    return imp.defineResult(imp.create<OrOp>(*p, *n));
  return imp.defineResult(imp.create<AndOp>(*p, *n));
}

LogicalResult importIsNaN(Imp &imp) { return importFloatClass(imp, true); }
LogicalResult importIsInf(Imp &imp) { return importFloatClass(imp, false); }

/// Where: on the host when all three are constants of one shape or
/// scalars (shape subgraphs); else otc.where, whose branches are floats.
LogicalResult importWhere(Imp &imp) {
  const HostTensor *c = imp.constantInput(0), *a = imp.constantInput(1), *b = imp.constantInput(2);
  if (c && a && b) {
    int64_t n = std::max({c->numElements(), a->numElements(), b->numElements()});
    auto ok = [n](const HostTensor *t) { return t->numElements() == n || t->numElements() == 1; };
    if (!ok(c) || !ok(a) || !ok(b))
      return imp.fail("a constant Where needs operands of one size or scalars");
    const HostTensor *shaped = c->numElements() == n ? c : a->numElements() == n ? a : b;
    HostTensor t = *a;
    t.shape = shaped->shape;
    t.values.resize(n);
    auto at = [](const HostTensor *x, int64_t i) { return x->values[x->values.size() == 1 ? 0 : i]; };
    for (int64_t i = 0; i < n; ++i)
      t.values[i] = at(c, i) != 0 ? at(a, i) : at(b, i);
    return imp.define(0, std::move(t));
  }
  auto cond = imp.input(0), x = imp.input(1), y = imp.input(2);
  if (failed(cond) || failed(x) || failed(y))
    return failure();
  return imp.defineResult(imp.create<WhereOp>(*cond, *x, *y));
}

/// Trilu: keeps (i, j) of the last two dims where j - i >= k (upper) or
/// j - i <= k (lower). Folded on constants; otherwise a Where against a
/// constant mask.
LogicalResult importTrilu(Imp &imp) {
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  if (shape.size() < 2)
    return imp.fail("the input needs rank 2 or more");
  int64_t k = 0;
  if (imp.numInputs() > 1) {
    const HostTensor *kt = imp.constantInput(1);
    if (!kt || kt->numElements() != 1)
      return imp.fail("k must be a compile-time scalar");
    k = kt->asInts()[0];
  }
  bool upper = imp.intAttr("upper", 1) != 0;
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  auto keep = [&](int64_t i) {
    int64_t r = i / cols % rows, c = i % cols;
    // c - r cannot overflow: both lie within the tensor size limit.
    return upper ? c - r >= k : c - r <= k;
  };
  if (const HostTensor *x = imp.constantInput(0)) {
    HostTensor t = *x;
    for (int64_t i = 0; i < t.numElements(); ++i)
      if (!keep(i))
        t.values[i] = 0;
    return imp.define(0, std::move(t));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  HostTensor mask{false, onnx::TensorProto::BOOL, {rows, cols}, {}};
  for (int64_t i = 0; i < rows * cols; ++i)
    mask.values.push_back(keep(i));
  OpBuilder &b = imp.builder();
  Value m = ConstantOp::create(b, imp.loc(), toAttr(b, mask));
  Value zero = scalarConstant(b, imp.loc(), cast<RankedTensorType>(x->getType()).getElementType(), 0.0);
  return imp.defineResult(imp.create<WhereOp>(m, *x, zero));
}

/// x ^ y with a run-time (or tensor) exponent, as C's pow: |x|^y as
/// exp(y log |x|) (within a few ulps of |y log |x|| of powf), the sign of x
/// for an odd integral y, NaN for a negative x and a fractional y, and at
/// x = 0 its limits (0, 1 or inf) with no gradient through log's pole.
static LogicalResult importPowTensor(Imp &imp) {
  auto x = imp.input(0), y = imp.input(1);
  if (failed(x) || failed(y))
    return failure();
  Type elem = getElementTypeOrSelf(x->getType());
  if (!isa<FloatType>(elem))
    return imp.fail("the base must be a float tensor when the exponent is not a compile-time "
                    "scalar");
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Value e = *y;
  if (getElementTypeOrSelf(e.getType()) != elem) {
    if (!isa<FloatType>(getElementTypeOrSelf(e.getType())) &&
        !getElementTypeOrSelf(e.getType()).isInteger(64))
      return imp.fail("the exponent must be a float or int64 tensor");
    e = CastOp::create(b, loc, cast<RankedTensorType>(e.getType()).clone(elem), e).getResult();
  }
  bool broken = false;
  auto ok = [&](FailureOr<Value> v) {
    broken |= failed(v);
    return succeeded(v) ? *v : *x;
  };
  auto c = [&](double v) { return scalarConstant(b, loc, elem, v); };
  auto cmp = [&](Value l, Value r, ComparePredicate p) { return ok(imp.create<CompareOp>(l, r, p)); };
  Value a = AbsOp::create(b, loc, *x);
  Value zero = cmp(a, c(0), ComparePredicate::eq);
  Value safe = ok(imp.create<WhereOp>(zero, c(1), a)); // log(0)'s gradient is infinite
  Value r = ExpOp::create(b, loc, ok(imp.create<MulOp>(e, LogOp::create(b, loc, safe))));
  // At 0: 0 for y > 0 (x itself for y = 1, so that d/dx is 1 there, as
  // PyTorch's y x^(y-1)), 1 for y = 0, inf for y < 0.
  Value atZero = ok(imp.create<WhereOp>(
      cmp(e, c(0), ComparePredicate::gt),
      ok(imp.create<WhereOp>(cmp(e, c(1), ComparePredicate::eq), *x, c(0))),
      ok(imp.create<WhereOp>(cmp(e, c(0), ComparePredicate::eq), c(1),
                             c(std::numeric_limits<double>::infinity())))));
  Value magnitude = ok(imp.create<WhereOp>(zero, atZero, r));
  Value whole = cmp(FloorOp::create(b, loc, e), e, ComparePredicate::eq);
  Value half = FloorOp::create(b, loc, ok(imp.create<MulOp>(e, c(0.5))));
  Value odd = ok(imp.create<AndOp>(
      whole, cmp(ok(imp.create<SubOp>(e, ok(imp.create<MulOp>(half, c(2))))), c(1),
                 ComparePredicate::eq)));
  Value negative = cmp(*x, c(0), ComparePredicate::lt);
  Value signed_ = ok(imp.create<WhereOp>(ok(imp.create<AndOp>(negative, odd)),
                                         NegOp::create(b, loc, magnitude), magnitude));
  Value out = ok(imp.create<WhereOp>(
      ok(imp.create<AndOp>(negative, NotOp::create(b, loc, whole))),
      c(std::numeric_limits<double>::quiet_NaN()), signed_));
  // C's ones, NaN and infinities included: x^0 and 1^y.
  Value one = ok(imp.create<OrOp>(cmp(e, c(0), ComparePredicate::eq),
                                  cmp(*x, c(1), ComparePredicate::eq)));
  out = ok(imp.create<WhereOp>(one, c(1), out));
  if (broken)
    return failure();
  return imp.defineResult(out);
}

LogicalResult importPow(Imp &imp) {
  const HostTensor *e = imp.constantInput(1);
  if (!e || e->numElements() != 1)
    return importPowTensor(imp);
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  double c = e->values[0];
  if (c == 1.0)
    imp.define(0, *x);
  else if (c == 2.0) // a square stays a product: simpler IR, an exact gradient
    imp.define(0, MulOp::create(imp.builder(), imp.loc(), *x, *x).getResult());
  else
    imp.define(0, PowOp::create(imp.builder(), imp.loc(), *x, imp.builder().getF64FloatAttr(c))
                      .getResult());
  return success();
}

/// Cast's body: input 0 to the ONNX element type `to`. A float cast to an
/// integer goes toward zero and saturates at the target's range, NaN
/// giving 0 (ONNX leaves out-of-range values undefined; CUDA's conversion
/// saturates, and x86's gives the minimum, which saturation matches on the
/// negative side: the float mask lowest value that `.int()` turns into
/// INT32_MIN, as YOSO's attention does). int32 computes as int64, so its
/// range is kept by a clamp; a CastLike to a run-time int32 tensor sees
/// int64 and has none. Folded, int64 saturates at 2^63 - 1024, the
/// largest double below 2^63 (at run time INT64_MAX).
static LogicalResult castTo(Imp &imp, int64_t to) {
  if (const HostTensor *c = imp.constantInput(0)) {
    HostTensor t = *c;
    t.isFloat = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE ||
                to == onnx::TensorProto::FLOAT16 || to == onnx::TensorProto::BFLOAT16;
    t.elemType = to == onnx::TensorProto::INT32 ? int(onnx::TensorProto::INT64) : int(to);
    if (to == onnx::TensorProto::BOOL)
      for (double &v : t.values)
        v = double(v != 0);
    else if (!t.isFloat && c->isFloat) {
      // (2^63 - 1024: the largest double below 2^63, an int64.)
      double hi = to == onnx::TensorProto::INT32 ? 2147483647.0 : 9223372036854774784.0;
      double lo = to == onnx::TensorProto::INT32 ? -2147483648.0 : -9223372036854775808.0;
      for (double &v : t.values)
        v = std::isnan(v) ? 0.0 : std::clamp(std::trunc(v), lo, hi);
    }
    return imp.define(0, std::move(t));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  int target = to == onnx::TensorProto::INT32 ? int(onnx::TensorProto::INT64) : int(to);
  Type elem = elementTypeFor(imp.builder(), target);
  if (!elem)
    return imp.fail("casts to " + onnx::TensorProto::DataType_Name(
                                      static_cast<onnx::TensorProto::DataType>(to)) +
                    " are not supported");
  if (getElementTypeOrSelf(x->getType()) == elem) {
    return imp.defineResult(*x);
  }
  auto type = RankedTensorType::get(cast<RankedTensorType>(x->getType()).getShape(), elem);
  Value v = CastOp::create(imp.builder(), imp.loc(), type, *x).getResult();
  if (to == onnx::TensorProto::INT32 && isa<FloatType>(getElementTypeOrSelf(x->getType()))) {
    OpBuilder &b = imp.builder();
    Location loc = imp.loc();
    Value lo = scalarConstant(b, loc, elem, -2147483648.0);
    Value hi = scalarConstant(b, loc, elem, 2147483647.0);
    v = WhereOp::create(b, loc, CompareOp::create(b, loc, v, lo, ComparePredicate::lt), lo, v);
    v = WhereOp::create(b, loc, CompareOp::create(b, loc, v, hi, ComparePredicate::gt), hi, v);
  }
  imp.define(0, v);
  return success();
}

LogicalResult importCast(Imp &imp) { return castTo(imp, imp.intAttr("to", 0)); }

/// CastLike (opset 15): Cast to the element type of input 1, whose values
/// are not read.
LogicalResult importCastLike(Imp &imp) {
  if (const HostTensor *like = imp.constantInput(1))
    return castTo(imp, like->elemType);
  auto like = imp.input(1);
  if (failed(like))
    return failure();
  return castTo(imp, onnxTypeFor(getElementTypeOrSelf(like->getType())));
}

/// Mod: with fmod = 1 the sign of the dividend (C's fmod), else of the
/// divisor (Python's %). On host constants (window and shape arithmetic)
/// exactly; an integer divisor of 0 gives 0, which ONNX leaves undefined.
LogicalResult importMod(Imp &imp) {
  bool cStyle = imp.intAttr("fmod", 0) != 0;
  auto f = [cStyle](double a, double b) {
    if (b == 0)
      return cStyle ? std::nan("") : 0.0;
    double r = std::fmod(a, b);
    return !cStyle && r != 0 && (r < 0) != (b < 0) ? r + b : r;
  };
  switch (foldBinary(imp, f)) {
  case FoldResult::Folded: return success();
  case FoldResult::Failed: return failure();
  case FoldResult::NotConstant: break;
  }
  // At run time a - q b, q the quotient toward zero (fmod) or down: floor
  // or trunc of the float quotient, as PyTorch's remainder and fmod, whose
  // gradients (1, and -q) this has; integer division on int64, whose C
  // remainder takes the divisor's sign by adding b where the signs differ.
  auto a = imp.input(0), b = imp.input(1);
  if (failed(a) || failed(b))
    return failure();
  OpBuilder &ob = imp.builder();
  Location loc = imp.loc();
  Type elem = getElementTypeOrSelf(a->getType());
  if (elem != getElementTypeOrSelf(b->getType()))
    return imp.fail("the inputs need one element type");
  Value zero = scalarConstant(ob, loc, elem, 0.0);
  auto q = imp.create<DivOp>(*a, *b);
  if (failed(q))
    return failure();
  bool isFloat = isa<FloatType>(elem);
  if (isFloat) {
    Value down = FloorOp::create(ob, loc, *q);
    if (cStyle) {
      auto negative = imp.create<CompareOp>(*q, zero, ComparePredicate::lt);
      if (failed(negative))
        return failure();
      q = imp.create<WhereOp>(*negative, CeilOp::create(ob, loc, *q).getResult(), down);
    } else {
      q = down;
    }
  }
  auto qb = failed(q) ? q : imp.create<MulOp>(*q, *b);
  auto r = failed(qb) ? qb : imp.create<SubOp>(*a, *qb);
  if (failed(r) || isFloat || cStyle)
    return imp.defineResult(r);
  // Python's sign: r + b where r != 0 and its sign differs from b's.
  auto rNeg = imp.create<CompareOp>(*r, zero, ComparePredicate::lt);
  auto bNeg = imp.create<CompareOp>(*b, zero, ComparePredicate::lt);
  auto nonzero = imp.create<CompareOp>(*r, zero, ComparePredicate::ne);
  if (failed(rNeg) || failed(bNeg) || failed(nonzero))
    return failure();
  auto differ = imp.create<CompareOp>(*rNeg, *bNeg, ComparePredicate::ne);
  auto fix = failed(differ) ? differ : imp.create<AndOp>(*differ, *nonzero);
  auto shifted = imp.create<AddOp>(*r, *b);
  if (failed(fix) || failed(shifted))
    return failure();
  return imp.defineResult(imp.create<WhereOp>(*fix, *shifted, *r));
}

namespace {

Value zerosLike(OpBuilder &b, Location loc, RankedTensorType type) {
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
}

/// `v` moved `by` places along `axis`, toward the end (or the start when
/// `reverse`), zeros shifted in: a slice and a concat.
FailureOr<Value> shifted(Imp &imp, Value v, int64_t axis, int64_t by, bool reverse) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t n = type.getDimSize(axis);
  SmallVector<int64_t> zshape(type.getShape()), kept(type.getShape());
  zshape[axis] = std::min(by, n);
  OpBuilder &b = imp.builder();
  Value zeros = zerosLike(b, imp.loc(), RankedTensorType::get(zshape, type.getElementType()));
  if (by >= n)
    return zeros;
  kept[axis] = n - by;
  SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
  starts[axis] = reverse ? by : 0;
  Value part = SliceOp::create(b, imp.loc(), RankedTensorType::get(kept, type.getElementType()), v,
                               b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(steps));
  SmallVector<Value> parts = reverse ? SmallVector<Value>{part, zeros} : SmallVector<Value>{zeros, part};
  return imp.create<ConcatOp>(ValueRange(parts), b.getI64IntegerAttr(axis));
}

} // namespace

/// CumSum along a constant axis, `exclusive` and `reverse` as ONNX: on the
/// host when constant; at run time a Hillis-Steele scan, x plus x shifted
/// by 1, 2, 4, ..., so its gradient comes from slice, concat and add.
LogicalResult importCumSum(Imp &imp) {
  const HostTensor *at = imp.constantInput(1);
  if (!at || at->numElements() != 1)
    return imp.fail("the axis must be a compile-time scalar");
  std::vector<int64_t> shape;
  if (failed(shapeOfInput(imp, 0, shape)))
    return failure();
  auto axes = normaliseAxes(imp, {at->asInts()[0]}, shape.size());
  if (failed(axes))
    return failure();
  int64_t axis = axes->front(), n = shape[axis];
  bool exclusive = imp.intAttr("exclusive", 0) != 0, reverse = imp.intAttr("reverse", 0) != 0;
  if (const HostTensor *c = imp.constantInput(0)) {
    HostTensor t = *c;
    int64_t inner = product(ArrayRef<int64_t>(shape).drop_front(axis + 1));
    int64_t outer = n == 0 ? 0 : t.numElements() / (n * std::max<int64_t>(inner, 1));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          int64_t j = reverse ? n - 1 - k : k, at = (o * n + j) * inner + i;
          double here = c->values[at];
          t.values[at] = exclusive ? sum : sum + here;
          sum += here;
        }
      }
    return imp.define(0, std::move(t));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  FailureOr<Value> v = *x;
  for (int64_t by = 1; by < n && succeeded(v); by *= 2) {
    auto moved = shifted(imp, *v, axis, by, reverse);
    v = failed(moved) ? moved : imp.create<AddOp>(*v, *moved);
  }
  if (exclusive && succeeded(v))
    v = shifted(imp, *v, axis, 1, reverse);
  return imp.defineResult(v);
}

} // namespace otc
