// The versioned import table: one function per ONNX operator (and opset
// range), turning a node into otc operations or into a host-folded constant.
#include "GraphImporter.h"
#include "ImportHelpers.h"

#include "ModelChecks.h"
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/limits.h"

#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace otc {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (!otc_mul_count(n, d, &n))
      return -1;
  return n;
}

RankedTensorType withShape(Value v, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, cast<RankedTensorType>(v.getType()).getElementType());
}

FailureOr<SmallVector<int64_t>> normaliseAxes(GraphImporter &imp, std::vector<int64_t> axes,
                                              int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank)
      return imp.fail("axis " + std::to_string(a) + " is out of range for rank " +
                      std::to_string(rank));
    out.push_back(n);
  }
  llvm::sort(out);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Value reshaped(GraphImporter &imp, Value v, ArrayRef<int64_t> shape) {
  if (cast<RankedTensorType>(v.getType()).getShape() == shape)
    return v;
  return ReshapeOp::create(imp.builder(), imp.loc(), withShape(v, shape), v);
}

namespace {

using Imp = GraphImporter;

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// Fails unless a folded result of `count` elements fits the host limit;
/// checked before the fold allocates or loops.
LogicalResult checkFoldSize(Imp &imp, int64_t count) {
  if (count >= 0 && count <= OTC_MAX_HOST_ELEMENTS)
    return success();
  return imp.fail("the folded result has more than " +
                  std::to_string(OTC_MAX_HOST_ELEMENTS) + " elements");
}

/// Input `i` reshaped (on the host when constant) to `shape`.
LogicalResult defineReshaped(Imp &imp, size_t i, std::vector<int64_t> shape) {
  if (const HostTensor *c = imp.constantInput(i)) {
    if (product(shape) != c->numElements())
      return imp.fail("cannot reshape " + std::to_string(c->numElements()) +
                      " elements to " + std::to_string(product(shape)));
    HostTensor t = *c;
    t.shape = shape;
    return imp.define(0, std::move(t));
  }
  auto v = imp.input(i);
  if (failed(v))
    return failure();
  auto type = withShape(*v, shape);
  if (product(shape) != type.getNumElements() ||
      product(cast<RankedTensorType>(v->getType()).getShape()) != product(shape))
    return imp.fail("cannot reshape " + std::to_string(product(
        cast<RankedTensorType>(v->getType()).getShape())) + " elements to " +
        std::to_string(product(shape)));
  imp.define(0, ReshapeOp::create(imp.builder(), imp.loc(), type, *v).getResult());
  return success();
}

FailureOr<std::vector<int64_t>> shapeOfInput(Imp &imp, size_t i) {
  if (const HostTensor *c = imp.constantInput(i))
    return c->shape;
  auto v = imp.input(i);
  if (failed(v))
    return failure();
  auto s = cast<RankedTensorType>(v->getType()).getShape();
  return std::vector<int64_t>(s.begin(), s.end());
}

//===----------------------------------------------------------------------===//
// Runtime operations
//===----------------------------------------------------------------------===//

LogicalResult importGemm(Imp &imp) {
  auto a = imp.input(0), b = imp.input(1);
  if (failed(a) || failed(b))
    return failure();
  Value c;
  if (imp.numInputs() > 2) {
    auto cv = imp.input(2);
    if (failed(cv))
      return failure();
    c = *cv;
  }
  double alpha = imp.floatAttr("alpha", 1.0), beta = imp.floatAttr("beta", 1.0);
  if (!std::isfinite(alpha) || !std::isfinite(beta))
    return imp.fail("alpha and beta must be finite");
  return imp.defineResult(imp.create<GemmOp>(
      *a, *b, c, imp.intAttr("transA", 0) != 0, imp.intAttr("transB", 0) != 0,
      llvm::APFloat(alpha), llvm::APFloat(beta)));
}

/// An op built from inputs 0 and 1 alone.
template <typename Op>
LogicalResult importTwoInputs(Imp &imp) {
  auto a = imp.input(0), b = imp.input(1);
  if (failed(a) || failed(b))
    return failure();
  return imp.defineResult(imp.create<Op>(*a, *b));
}

enum class FoldResult { NotConstant, Folded, Failed };

/// Folds a binary op on two host constants with numpy broadcasting. The
/// result has the lhs's type, or `resultType` (a comparison's BOOL).
template <typename F>
FoldResult foldBinary(Imp &imp, F f, int resultType = -1) {
  const HostTensor *l = imp.constantInput(0), *r = imp.constantInput(1);
  if (!l || !r)
    return FoldResult::NotConstant;
  size_t rank = std::max(l->shape.size(), r->shape.size());
  auto pad = [&](const HostTensor *t) {
    std::vector<int64_t> s(rank - t->shape.size(), 1);
    s.insert(s.end(), t->shape.begin(), t->shape.end());
    return s;
  };
  std::vector<int64_t> ls = pad(l), rs = pad(r), out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (ls[d] != rs[d] && ls[d] != 1 && rs[d] != 1) {
      (void)imp.fail("operand shapes do not broadcast");
      return FoldResult::Failed;
    }
    out[d] = ls[d] == 1 ? rs[d] : ls[d];
  }
  int64_t n = product(out);
  if (failed(checkFoldSize(imp, n)))
    return FoldResult::Failed;
  if (n == 0) { // nothing to compute; strides of zero-sized shapes may overflow
    HostTensor t{l->isFloat, l->elemType, out, {}};
    if (resultType >= 0)
      t = HostTensor{false, resultType, out, {}};
    return succeeded(imp.define(0, std::move(t))) ? FoldResult::Folded : FoldResult::Failed;
  }
  std::vector<int64_t> lst = stridesOf(ls), rst = stridesOf(rs), ost = stridesOf(out);
  HostTensor t;
  t.isFloat = resultType < 0 && l->isFloat;
  t.elemType = resultType < 0 ? l->elemType : resultType;
  t.shape = out;
  t.values.resize(n);
  for (int64_t i = 0; i < (int64_t)t.values.size(); ++i) {
    int64_t li = 0, ri = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t idx = (i / ost[d]) % out[d];
      li += (ls[d] == 1 ? 0 : idx) * lst[d];
      ri += (rs[d] == 1 ? 0 : idx) * rst[d];
    }
    t.values[i] = f(l->values[li], r->values[ri]);
    if (!t.isFloat)
      t.values[i] = std::trunc(t.values[i]);
  }
  return succeeded(imp.define(0, std::move(t))) ? FoldResult::Folded : FoldResult::Failed;
}

template <typename Op, typename F>
LogicalResult importBinary(Imp &imp) {
  switch (foldBinary(imp, F())) {
  case FoldResult::Folded: return success();
  case FoldResult::Failed: return failure();
  case FoldResult::NotConstant: return importTwoInputs<Op>(imp);
  }
  return failure();
}

template <typename Op>
LogicalResult importUnary(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  imp.define(0, Op::create(imp.builder(), imp.loc(), *x).getResult());
  return success();
}

LogicalResult importIdentity(Imp &imp) {
  if (const HostTensor *c = imp.constantInput(0)) {
    return imp.define(0, *c);
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  imp.define(0, *x);
  return success();
}

// Comparisons and logic: folded on the host when constant (shape
// subgraphs use them), else otc.compare / not / and / or.
struct CompareF {
  StringRef p;
  double operator()(double a, double b) const {
    bool r = p == "eq" ? a == b : p == "lt" ? a < b : p == "le" ? a <= b
           : p == "gt" ? a > b : a >= b;
    return double(r);
  }
};
struct AndF { double operator()(double a, double b) const { return double(a != 0 && b != 0); } };
struct OrF { double operator()(double a, double b) const { return double(a != 0 || b != 0); } };

template <const char *Predicate>
LogicalResult importCompare(Imp &imp) {
  switch (foldBinary(imp, CompareF{Predicate}, onnx::TensorProto::BOOL)) {
  case FoldResult::Folded: return success();
  case FoldResult::Failed: return failure();
  case FoldResult::NotConstant: break;
  }
  auto a = imp.input(0), b = imp.input(1);
  if (failed(a) || failed(b))
    return failure();
  return imp.defineResult(imp.create<CompareOp>(*a, *b, imp.builder().getStringAttr(Predicate)));
}

template <typename Op, typename F>
LogicalResult importLogic(Imp &imp) {
  switch (foldBinary(imp, F(), onnx::TensorProto::BOOL)) {
  case FoldResult::Folded: return success();
  case FoldResult::Failed: return failure();
  case FoldResult::NotConstant: return importTwoInputs<Op>(imp);
  }
  return failure();
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
  if (!isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
    return imp.fail("Where of integer tensors is supported on constants only");
  return imp.defineResult(imp.create<WhereOp>(*cond, *x, *y));
}

/// Trilu: keeps (i, j) of the last two dims where j - i >= k (upper) or
/// j - i <= k (lower). Folded on constants; otherwise a Where against a
/// constant mask.
LogicalResult importTrilu(Imp &imp) {
  auto shape = shapeOfInput(imp, 0);
  if (failed(shape))
    return failure();
  if (shape->size() < 2)
    return imp.fail("the input needs rank 2 or more");
  int64_t k = 0;
  if (imp.numInputs() > 1) {
    const HostTensor *kt = imp.constantInput(1);
    if (!kt || kt->numElements() != 1)
      return imp.fail("k must be a compile-time scalar");
    k = kt->asInts()[0];
  }
  bool upper = imp.intAttr("upper", 1) != 0;
  int64_t rows = (*shape)[shape->size() - 2], cols = shape->back();
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
  if (!isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
    return imp.fail("Trilu of a run-time integer or bool tensor is not supported");
  HostTensor mask{false, onnx::TensorProto::BOOL, {rows, cols}, {}};
  for (int64_t i = 0; i < rows * cols; ++i)
    mask.values.push_back(keep(i));
  OpBuilder &b = imp.builder();
  Value m = ConstantOp::create(b, imp.loc(), toAttr(b, mask));
  Value zero = scalarConstant(b, imp.loc(), cast<RankedTensorType>(x->getType()).getElementType(), 0.0);
  return imp.defineResult(imp.create<WhereOp>(m, *x, zero));
}

LogicalResult importPow(Imp &imp) {
  const HostTensor *e = imp.constantInput(1);
  if (!e || e->numElements() != 1)
    return imp.fail("the exponent must be a compile-time scalar");
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

// Activations composed from primitives (tinygrad style): their gradients
// come from compare and where, and fusion makes each one kernel.

/// A float scalar constant of `like`'s element type.
Value scalarLike(Imp &imp, Value like, double v) {
  return scalarConstant(imp.builder(), imp.loc(),
                        cast<RankedTensorType>(like.getType()).getElementType(), v);
}

/// max(a, b) as where(a >= b, a, b), and min with <=: the gradient goes to
/// a on ties (PyTorch's clamp does the same at its bounds).
Value pick(Imp &imp, Value a, Value b, const char *predicate) {
  OpBuilder &bld = imp.builder();
  Value c = CompareOp::create(bld, imp.loc(), a, b, bld.getStringAttr(predicate));
  return WhereOp::create(bld, imp.loc(), c, a, b);
}

/// Max and Min (variadic): on the host when all inputs are constant.
template <bool IsMax>
LogicalResult importMaxMin(Imp &imp) {
  bool constant = true;
  for (size_t i = 0; i < imp.numInputs(); ++i)
    constant = constant && imp.constantInput(i);
  if (constant && imp.numInputs() == 2) {
    auto f = [](double a, double b) { return IsMax ? std::max(a, b) : std::min(a, b); };
    if (foldBinary(imp, f) == FoldResult::Folded)
      return success();
    return failure();
  }
  auto acc = imp.input(0);
  if (failed(acc))
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(acc->getType()).getElementType()))
    return imp.fail("Max and Min of integer tensors are supported on constants only");
  Value v = *acc;
  for (size_t i = 1; i < imp.numInputs(); ++i) {
    auto next = imp.input(i);
    if (failed(next))
      return failure();
    v = pick(imp, v, *next, IsMax ? "ge" : "le");
  }
  imp.define(0, v);
  return success();
}

/// Clip: bounds from inputs (opset 11) or attributes (before).
template <bool FromInputs>
LogicalResult importClip(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  Value v = *x;
  for (int k = 0; k < 2; ++k) {
    std::optional<double> bound;
    if (FromInputs && imp.numInputs() > size_t(k + 1) && !imp.node().input(k + 1).empty()) {
      const HostTensor *t = imp.constantInput(k + 1);
      if (!t || t->numElements() != 1)
        return imp.fail("Clip bounds must be compile-time scalars");
      bound = t->values[0];
    } else if (!FromInputs && imp.attr(k ? "max" : "min")) {
      bound = imp.floatAttr(k ? "max" : "min", 0);
    }
    if (bound)
      v = pick(imp, v, scalarLike(imp, v, *bound), k ? "le" : "ge");
  }
  imp.define(0, v);
  return success();
}

/// Sum (variadic): adds left to right, with numpy broadcasting.
LogicalResult importSum(Imp &imp) {
  auto acc = imp.input(0);
  if (failed(acc))
    return failure();
  Value v = *acc;
  for (size_t i = 1; i < imp.numInputs(); ++i) {
    auto next = imp.input(i);
    if (failed(next))
      return failure();
    auto sum = imp.create<AddOp>(v, *next);
    if (failed(sum))
      return failure();
    v = *sum;
  }
  imp.define(0, v);
  return success();
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
  if (training == 0 || ratio == 0) {
    imp.define(0, *x);
    if (!wantMask)
      return success();
    HostTensor all{false, onnx::TensorProto::BOOL, type.getShape().vec(), {}};
    all.values.assign(type.getNumElements(), 1.0);
    return imp.define(1, std::move(all));
  }
  OpBuilder &b = imp.builder();
  uint32_t stream = 2166136261u; // FNV-1a of the output's name
  for (unsigned char ch : imp.node().output(0))
    stream = (stream ^ ch) * 16777619u;
  auto maskType = RankedTensorType::get(type.getShape(), b.getI1Type());
  auto op = DropoutOp::create(b, imp.loc(), type, maskType, *x, b.getF64FloatAttr(ratio),
                              b.getI64IntegerAttr(stream & 0x7fffffff));
  imp.define(0, op.getOutput());
  if (wantMask)
    imp.define(1, op.getMask());
  return success();
}

LogicalResult importLeakyRelu(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  OpBuilder &b = imp.builder();
  Value positive = CompareOp::create(b, imp.loc(), *x, scalarLike(imp, *x, 0.0),
                                     b.getStringAttr("gt"));
  Value scaled = MulOp::create(b, imp.loc(), *x, scalarLike(imp, *x, imp.floatAttr("alpha", 0.01)));
  imp.define(0, WhereOp::create(b, imp.loc(), positive, *x, scaled).getResult());
  return success();
}

/// Gelu (opset 20): x/2 (1 + erf(x/√2)), or with approximate = "tanh"
/// x/2 (1 + tanh(√(2/π) (x + 0.044715 x³))), the forms PyTorch's GELU has.
LogicalResult importGelu(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  std::string approx = imp.attr("approximate") ? imp.attr("approximate")->s() : "none";
  if (approx != "none" && approx != "tanh")
    return imp.fail("unknown approximate " + quoted(approx));
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  auto c = [&](double v) { return scalarLike(imp, *x, v); };
  Value inner;
  if (approx == "none") {
    inner = ErfOp::create(b, loc, MulOp::create(b, loc, *x, c(M_SQRT1_2)));
  } else {
    Value cube = MulOp::create(b, loc, MulOp::create(b, loc, *x, *x), *x);
    Value arg = AddOp::create(b, loc, *x, MulOp::create(b, loc, cube, c(0.044715)));
    inner = TanhOp::create(b, loc, MulOp::create(b, loc, arg, c(std::sqrt(2.0 / M_PI))));
  }
  Value half = MulOp::create(b, loc, *x, c(0.5));
  imp.define(0, MulOp::create(b, loc, half, AddOp::create(b, loc, inner, c(1.0))).getResult());
  return success();
}

LogicalResult importTranspose(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  std::vector<int64_t> perm = imp.intsAttr("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  return imp.defineResult(
      imp.create<TransposeOp>(*x, imp.builder().getDenseI64ArrayAttr(perm)));
}

LogicalResult importReshape(Imp &imp) {
  const HostTensor *shapeT = imp.constantInput(1);
  if (!shapeT)
    return imp.fail("the target shape must be a compile-time constant");
  auto inShape = shapeOfInput(imp, 0);
  if (failed(inShape))
    return failure();
  std::vector<int64_t> in = *inShape, shape = shapeT->asInts();
  bool allowZero = imp.intAttr("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (i >= in.size())
        return imp.fail("shape entry 0 copies a dimension the input lacks");
      shape[i] = in[i];
    }
    if (shape[i] < -1)
      return imp.fail("the target shape has a negative entry " + std::to_string(shape[i]));
    if (shape[i] == -1) {
      if (inferred >= 0)
        return imp.fail("the target shape has more than one -1");
      inferred = i;
    } else if (!otc_mul_count(known, shape[i], &known)) {
      return imp.fail("the target shape's element count overflows");
    }
  }
  if (inferred >= 0) {
    if (known == 0 || product(in) % known)
      return imp.fail("cannot infer the -1 dimension");
    shape[inferred] = product(in) / known;
  }
  if (product(shape) != product(in))
    return imp.fail("cannot reshape " + std::to_string(product(in)) +
                    " elements to " + std::to_string(product(shape)));
  return defineReshaped(imp, 0, shape);
}

LogicalResult importFlatten(Imp &imp) {
  auto inShape = shapeOfInput(imp, 0);
  if (failed(inShape))
    return failure();
  std::vector<int64_t> in = *inShape;
  int64_t axis = imp.intAttr("axis", 1);
  if (axis < 0)
    axis += in.size();
  if (axis < 0 || axis > (int64_t)in.size())
    return imp.fail("axis is out of range");
  int64_t outer = product(ArrayRef<int64_t>(in).take_front(axis));
  return defineReshaped(imp, 0, {outer, product(in) / std::max<int64_t>(outer, 1)});
}

/// Reductions: `axesFromInput` selects the opset-13/18 form with axes as an
/// optional second input instead of an attribute.
template <typename Op, bool axesFromInput>
LogicalResult importReduce(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  std::vector<int64_t> axes;
  if (axesFromInput) {
    if (imp.numInputs() > 1) {
      const HostTensor *a = imp.constantInput(1);
      if (!a)
        return imp.fail("the reduction axes must be a compile-time constant");
      axes = a->asInts();
    }
  } else {
    axes = imp.intsAttr("axes");
  }
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  if (axes.empty()) {
    if (imp.intAttr("noop_with_empty_axes", 0)) {
      imp.define(0, *x);
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  auto norm = normaliseAxes(imp, axes, rank);
  if (failed(norm))
    return failure();
  return imp.defineResult(
      imp.create<Op>(*x, imp.builder().getDenseI64ArrayAttr(*norm),
                     imp.builder().getBoolAttr(imp.intAttr("keepdims", 1) != 0)));
}

/// Softmax and LogSoftmax. From opset 13 along `axis` (default -1); before,
/// over the input flattened to 2-D at `axis` (default 1), which is a reshape
/// around the same op along the last dim.
template <typename Op, bool before13>
LogicalResult importSoftmax(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  auto axis = normaliseAxes(imp, {imp.intAttr("axis", before13 ? 1 : -1)}, rank);
  if (failed(axis))
    return failure();
  int64_t a = (*axis)[0];
  OpBuilder &b = imp.builder();
  if (!before13 || a == rank - 1) {
    imp.define(0, Op::create(b, imp.loc(), *x, b.getI64IntegerAttr(a)).getResult());
    return success();
  }
  int64_t outer = product(type.getShape().take_front(a));
  auto flat = withShape(*x, {outer, type.getNumElements() / outer});
  Value v = ReshapeOp::create(b, imp.loc(), flat, *x);
  Value y = Op::create(b, imp.loc(), v, b.getI64IntegerAttr(1));
  imp.define(0, ReshapeOp::create(b, imp.loc(), type, y).getResult());
  return success();
}

/// LayerNormalization (opset 17): normalize over the dims from `axis` on,
/// then scale and bias as elementwise ops, whose gradients come from the
/// primitives.
LogicalResult importLayerNormalization(Imp &imp) {
  for (int i = 1; i < imp.node().output_size(); ++i)
    if (!imp.node().output(i).empty())
      return imp.fail("the Mean and InvStdDev outputs are not supported");
  if (imp.intAttr("stash_type", 1) != 1)
    return imp.fail("stash_type " + std::to_string(imp.intAttr("stash_type", 1)) +
                    " is not supported (statistics are computed in float32)");
  auto x = imp.input(0);
  auto scale = imp.input(1);
  if (failed(x) || failed(scale))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  auto axis = normaliseAxes(imp, {imp.intAttr("axis", -1)}, rank);
  if (failed(axis))
    return failure();
  double eps = imp.floatAttr("epsilon", 1e-5);
  if (!(eps >= 0) || !std::isfinite(eps))
    return imp.fail("epsilon must be a finite number, at least 0");
  OpBuilder &b = imp.builder();
  Value n = NormalizeOp::create(b, imp.loc(), *x, b.getI64IntegerAttr((*axis)[0]),
                                b.getF64FloatAttr(eps));
  auto y = imp.create<MulOp>(n, *scale);
  if (failed(y) || imp.numInputs() < 3)
    return imp.defineResult(y);
  auto bias = imp.input(2);
  if (failed(bias))
    return failure();
  return imp.defineResult(imp.create<AddOp>(*y, *bias));
}

//===----------------------------------------------------------------------===//
// Compile-time constants and shape computations
//===----------------------------------------------------------------------===//

LogicalResult importConstant(Imp &imp) {
  HostTensor t;
  std::string error;
  if (const auto *a = imp.attr("value")) {
    if (!decodeTensor(a->t(), t, error))
      return imp.fail(error);
  } else if (const auto *a = imp.attr("value_float")) {
    t = HostTensor{true, onnx::TensorProto::FLOAT, {}, {a->f()}};
  } else if (const auto *a = imp.attr("value_int")) {
    t = HostTensor{false, onnx::TensorProto::INT64, {}, {double(a->i())}};
  } else if (const auto *a = imp.attr("value_ints")) {
    t = HostTensor{false, onnx::TensorProto::INT64, {a->ints_size()}, {}};
    t.values.assign(a->ints().begin(), a->ints().end());
  } else if (const auto *a = imp.attr("value_floats")) {
    t = HostTensor{true, onnx::TensorProto::FLOAT, {a->floats_size()}, {}};
    t.values.assign(a->floats().begin(), a->floats().end());
  } else {
    return imp.fail("unsupported constant form");
  }
  return imp.define(0, std::move(t));
}

LogicalResult importShape(Imp &imp) {
  auto inShape = shapeOfInput(imp, 0);
  if (failed(inShape))
    return failure();
  std::vector<int64_t> shape = *inShape;
  int64_t rank = shape.size();
  int64_t start = imp.intAttr("start", 0), end = imp.intAttr("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  HostTensor t{false, onnx::TensorProto::INT64, {std::max<int64_t>(end - start, 0)}, {}};
  for (int64_t i = start; i < end; ++i)
    t.values.push_back(shape[i]);
  return imp.define(0, std::move(t));
}

LogicalResult needConstants(Imp &imp, size_t minInputs) {
  if (imp.numInputs() < minInputs)
    return imp.fail("needs at least " + std::to_string(minInputs) + " inputs");
  for (size_t i = 0; i < imp.numInputs(); ++i)
    if (!imp.constantInput(i))
      return imp.fail("supported only on compile-time constant inputs");
  return success();
}

LogicalResult foldGather(Imp &imp);

/// Range on compile-time scalars: start, start + delta, ... before limit.
LogicalResult importRange(Imp &imp) {
  if (failed(needConstants(imp, 3)))
    return failure();
  const HostTensor *in[3] = {imp.constantInput(0), imp.constantInput(1), imp.constantInput(2)};
  for (const HostTensor *t : in)
    if (t->numElements() != 1)
      return imp.fail("start, limit and delta must be scalars");
  double start = in[0]->values[0], limit = in[1]->values[0], delta = in[2]->values[0];
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    return imp.fail("start, limit and delta must be finite and delta non-zero");
  double n = std::max(std::ceil((limit - start) / delta), 0.0);
  if (failed(checkFoldSize(imp, n > double(INT64_MAX) ? -1 : int64_t(n))))
    return failure();
  HostTensor t{in[0]->isFloat, in[0]->elemType, {int64_t(n)}, {}};
  for (int64_t i = 0; i < int64_t(n); ++i)
    t.values.push_back(start + double(i) * delta);
  return imp.define(0, std::move(t));
}

/// ConstantOfShape on a compile-time shape: a splat of `value` (0.0 float).
LogicalResult importConstantOfShape(Imp &imp) {
  if (failed(needConstants(imp, 1)))
    return failure();
  HostTensor value{true, onnx::TensorProto::FLOAT, {}, {0.0}};
  std::string error;
  if (const auto *a = imp.attr("value"); a && !decodeTensor(a->t(), value, error))
    return imp.fail(error);
  if (value.numElements() != 1)
    return imp.fail("value must hold one element");
  std::vector<int64_t> shape = imp.constantInput(0)->asInts();
  for (int64_t d : shape)
    if (d < 0)
      return imp.fail("the shape has a negative dimension");
  int64_t n = product(shape);
  if (failed(checkFoldSize(imp, n)))
    return failure();
  HostTensor t{value.isFloat, value.elemType, shape, std::vector<double>(n, value.values[0])};
  return imp.define(0, std::move(t));
}

/// Gather: folded on the host when data and indices are constants (shape
/// arithmetic), else an otc.gather (an embedding lookup).
LogicalResult importGather(Imp &imp) {
  if (imp.constantInput(0) && imp.constantInput(1))
    return foldGather(imp);
  auto data = imp.input(0);
  auto indices = imp.input(1);
  if (failed(data) || failed(indices))
    return failure();
  if (!cast<RankedTensorType>(indices->getType()).getElementType().isInteger(64))
    return imp.fail("indices must be int64");
  int64_t rank = cast<RankedTensorType>(data->getType()).getRank();
  auto axis = normaliseAxes(imp, {imp.intAttr("axis", 0)}, rank);
  if (failed(axis))
    return failure();
  return imp.defineResult(
      imp.create<GatherOp>(*data, *indices, imp.builder().getI64IntegerAttr((*axis)[0])));
}

LogicalResult foldGather(Imp &imp) {
  const HostTensor &data = *imp.constantInput(0), &idx = *imp.constantInput(1);
  int64_t rank = data.shape.size();
  int64_t axis = imp.intAttr("axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return imp.fail("axis is out of range");
  int64_t outer = product(ArrayRef<int64_t>(data.shape).take_front(axis));
  int64_t inner = product(ArrayRef<int64_t>(data.shape).drop_front(axis + 1));
  int64_t n = data.shape[axis];
  int64_t count = product({outer, int64_t(idx.values.size()), inner});
  if (failed(checkFoldSize(imp, count)))
    return failure();
  HostTensor t = data;
  t.shape.assign(data.shape.begin(), data.shape.begin() + axis);
  t.shape.insert(t.shape.end(), idx.shape.begin(), idx.shape.end());
  t.shape.insert(t.shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  t.values.clear();
  if (count == 0) // outer may still be huge: do not loop over it
    return imp.define(0, std::move(t));
  for (int64_t o = 0; o < outer; ++o)
    for (double iv : idx.values) {
      int64_t i = toInt64(iv);
      if (i < -n || i >= n)
        return imp.fail("index " + std::to_string(i) + " is out of range");
      if (i < 0)
        i += n;
      for (int64_t k = 0; k < inner; ++k)
        t.values.push_back(data.values[(o * n + i) * inner + k]);
    }
  return imp.define(0, std::move(t));
}

/// A normalised slice: per dim, a start, a positive step and a count.
struct SliceSpec {
  std::vector<int64_t> starts, steps, counts;
};

/// `data` sliced by `spec` on the host.
HostTensor sliceHost(const HostTensor &data, const SliceSpec &spec) {
  HostTensor t = data;
  t.shape = spec.counts;
  t.values.clear();
  int64_t n = product(spec.counts);
  std::vector<int64_t> strides = stridesOf(data.shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, at = 0;
    for (int d = (int)spec.counts.size() - 1; d >= 0; --d) {
      at += (spec.starts[d] + rest % spec.counts[d] * spec.steps[d]) * strides[d];
      rest /= spec.counts[d];
    }
    t.values.push_back(data.values[at]);
  }
  return t;
}

/// Defines output `k` as `spec` of input 0: on the host when constant, else
/// an otc.slice (or the input itself when the slice is all of it).
LogicalResult defineSlice(Imp &imp, size_t k, const SliceSpec &spec) {
  if (const HostTensor *c = imp.constantInput(0)) {
    if (failed(checkFoldSize(imp, product(spec.counts))))
      return failure();
    return imp.define(k, sliceHost(*c, spec));
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  for (int64_t n : spec.counts)
    if (n == 0)
      return imp.fail("the slice is empty, which otc does not support");
  if (ArrayRef<int64_t>(spec.counts) == type.getShape()) {
    imp.define(k, *x);
    return success();
  }
  OpBuilder &b = imp.builder();
  auto result = RankedTensorType::get(spec.counts, type.getElementType());
  imp.define(k, SliceOp::create(b, imp.loc(), result, *x, b.getDenseI64ArrayAttr(spec.starts),
                                b.getDenseI64ArrayAttr(spec.steps))
                    .getResult());
  return success();
}

/// ONNX Slice: starts, ends (clamped, negative from the end, INT64_MAX as
/// "to the end"), axes and positive steps, from attributes (opset 1) or
/// constant inputs (opset 10).
template <bool FromInputs>
LogicalResult importSlice(Imp &imp) {
  auto input = shapeOfInput(imp, 0);
  if (failed(input))
    return failure();
  std::vector<int64_t> shape = *input;
  int64_t rank = shape.size();
  auto list = [&](size_t input, const char *attr, std::vector<int64_t> &out) -> LogicalResult {
    if (!FromInputs) {
      out = imp.intsAttr(attr);
      return success();
    }
    if (imp.numInputs() <= input || imp.node().input(input).empty())
      return success();
    const HostTensor *t = imp.constantInput(input);
    if (!t)
      return imp.fail(std::string("Slice ") + attr + " must be compile-time constants");
    out = t->asInts();
    return success();
  };
  std::vector<int64_t> starts, ends, axes, steps;
  if (failed(list(1, "starts", starts)) || failed(list(2, "ends", ends)) ||
      failed(list(3, "axes", axes)) || failed(list(4, "steps", steps)))
    return failure();
  if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size()))
    return imp.fail("starts, ends, axes and steps differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  auto norm = normaliseAxes(imp, axes, rank);
  if (failed(norm))
    return failure();
  SliceSpec spec{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1), shape};
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t d = (*norm)[i], n = shape[d], step = steps.empty() ? 1 : steps[i];
    if (step < 1)
      return imp.fail("Slice steps must be positive, got " + std::to_string(step));
    auto clamp = [n](int64_t v) {
      if (v < 0)
        v = v < -n ? 0 : v + n;
      return std::min(v, n);
    };
    int64_t s = clamp(starts[i]), e = clamp(ends[i]);
    spec.starts[d] = s;
    spec.steps[d] = step;
    spec.counts[d] = e > s ? 1 + (e - s - 1) / step : 0; // no overflow near INT64_MAX
  }
  return defineSlice(imp, 0, spec);
}

/// ONNX Split into equal parts or given sizes (attribute before opset 13,
/// input from 13, or num_outputs from 18).
template <bool FromInput>
LogicalResult importSplit(Imp &imp) {
  auto input = shapeOfInput(imp, 0);
  if (failed(input))
    return failure();
  std::vector<int64_t> shape = *input;
  auto axis = normaliseAxes(imp, {imp.intAttr("axis", 0)}, shape.size());
  if (failed(axis))
    return failure();
  int64_t a = (*axis)[0], outputs = imp.node().output_size();
  if (outputs < 1)
    return imp.fail("Split needs at least one output");
  std::vector<int64_t> sizes;
  if (FromInput && imp.numInputs() > 1) {
    const HostTensor *t = imp.constantInput(1);
    if (!t)
      return imp.fail("the split sizes must be compile-time constants");
    sizes = t->asInts();
  } else if (!FromInput) {
    sizes = imp.intsAttr("split");
  }
  if (sizes.empty()) { // equal parts; the last may be smaller (opset 18)
    int64_t part = (shape[a] + outputs - 1) / outputs;
    for (int64_t k = 0; k < outputs; ++k)
      sizes.push_back(std::min(part, shape[a] - k * part));
  }
  int64_t total = 0;
  bool bad = (int64_t)sizes.size() != outputs;
  for (int64_t s : sizes)
    bad = bad || s < 1 || __builtin_add_overflow(total, s, &total);
  if (bad || total != shape[a])
    return imp.fail("the split sizes do not add up to the axis's " + std::to_string(shape[a]));
  int64_t at = 0;
  for (int64_t k = 0; k < outputs; ++k) {
    SliceSpec spec{std::vector<int64_t>(shape.size(), 0), std::vector<int64_t>(shape.size(), 1),
                   shape};
    spec.starts[a] = at;
    spec.counts[a] = sizes[k];
    at += sizes[k];
    if (failed(defineSlice(imp, k, spec)))
      return failure();
  }
  return success();
}

/// `t` broadcast (numpy style) to `shape`, on the host.
HostTensor broadcastHost(const HostTensor &t, const std::vector<int64_t> &shape) {
  HostTensor r = t;
  r.shape = shape;
  r.values.clear();
  size_t lead = shape.size() - t.shape.size();
  std::vector<int64_t> in = stridesOf(t.shape);
  for (int64_t i = 0, n = product(shape); i < n; ++i) {
    int64_t rest = i, at = 0;
    for (int d = (int)shape.size() - 1; d >= (int)lead; --d) {
      int64_t c = rest % shape[d];
      rest /= shape[d];
      if (t.shape[d - lead] != 1)
        at += c * in[d - lead];
    }
    r.values.push_back(t.values[at]);
  }
  return r;
}

/// Expand: broadcast both ways between the input and a constant shape.
LogicalResult importExpand(Imp &imp) {
  const HostTensor *s = imp.constantInput(1);
  if (!s)
    return imp.fail("the expanded shape must be a compile-time constant");
  std::vector<int64_t> in;
  const HostTensor *c = imp.constantInput(0);
  FailureOr<Value> x = failure();
  if (c) {
    in = c->shape;
  } else {
    x = imp.input(0);
    if (failed(x))
      return failure();
    in = cast<RankedTensorType>(x->getType()).getShape().vec();
  }
  auto out = broadcastShapes(in, s->asInts());
  if (!out)
    return imp.fail("the input does not broadcast to the expanded shape");
  std::vector<int64_t> shape(out->begin(), out->end());
  if (c) {
    if (failed(checkFoldSize(imp, product(shape))))
      return failure();
    return imp.define(0, broadcastHost(*c, shape));
  }
  if (ArrayRef<int64_t>(shape) == ArrayRef<int64_t>(in)) {
    imp.define(0, *x);
    return success();
  }
  imp.define(0, BroadcastToOp::create(imp.builder(), imp.loc(), withShape(*x, shape), *x)
                    .getResult());
  return success();
}

/// GlobalAveragePool: the mean over every dim after N and C, kept.
LogicalResult importGlobalAveragePool(Imp &imp) {
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  if (rank < 3)
    return imp.fail("the input needs spatial dims after N and C");
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  OpBuilder &b = imp.builder();
  return imp.defineResult(
      imp.create<ReduceMeanOp>(*x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true)));
}

/// Pad, constant mode: per dim, a negative pad crops (a slice) and a
/// positive one concatenates a splat constant, so the gradient is concat's.
template <bool FromInputs>
LogicalResult importPad(Imp &imp) {
  const auto *mode = imp.attr("mode");
  if (mode && mode->s() != "constant")
    return imp.fail("pad mode " + quoted(mode->s().substr(0, 40)) +
                    " is not supported (only constant)");
  std::vector<int64_t> pads;
  double value = 0;
  if (FromInputs) {
    const HostTensor *p = imp.constantInput(1);
    if (!p)
      return imp.fail("the pads must be compile-time constants");
    pads = p->asInts();
    if (imp.numInputs() > 2 && !imp.node().input(2).empty()) {
      const HostTensor *v = imp.constantInput(2);
      if (!v || v->numElements() != 1)
        return imp.fail("the constant value must be a compile-time scalar");
      value = v->values[0];
    }
    if (imp.numInputs() > 3)
      return imp.fail("Pad's axes input is not supported");
  } else {
    pads = imp.intsAttr("pads");
    value = imp.floatAttr("value", 0.0);
  }
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  if ((int64_t)pads.size() != 2 * rank)
    return imp.fail("pads has " + std::to_string(pads.size()) + " entries for rank " +
                    std::to_string(rank));
  if (!isa<FloatType>(type.getElementType()))
    return imp.fail("Pad of integer tensors is supported on constants only");
  OpBuilder &b = imp.builder();
  Value v = *x;
  for (int64_t p : pads)
    if (p > OTC_MAX_ELEMENTS || p < -OTC_MAX_ELEMENTS)
      return imp.fail("a pad of " + std::to_string(p) + " exceeds 2^36");
  for (int64_t d = 0; d < rank; ++d) {
    int64_t before = pads[d], after = pads[d + rank];
    auto shape = cast<RankedTensorType>(v.getType()).getShape().vec();
    if (before < 0 || after < 0) { // crop first
      int64_t drop0 = std::max<int64_t>(0, -before), drop1 = std::max<int64_t>(0, -after);
      if (drop0 + drop1 >= shape[d])
        return imp.fail("the pads crop dim " + std::to_string(d) + " to nothing");
      SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
      starts[d] = drop0;
      shape[d] -= drop0 + drop1;
      v = SliceOp::create(b, imp.loc(), withShape(v, shape), v, b.getDenseI64ArrayAttr(starts),
                          b.getDenseI64ArrayAttr(steps));
    }
    SmallVector<Value> parts;
    auto fill = [&](int64_t n) {
      std::vector<int64_t> s = shape;
      s[d] = n;
      auto t = withShape(v, s);
      parts.push_back(ConstantOp::create(b, imp.loc(),
                                         DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), value)
                                                                       .getValue())));
    };
    if (before > 0)
      fill(before);
    parts.push_back(v);
    if (after > 0)
      fill(after);
    if (parts.size() > 1) {
      auto joined = imp.create<ConcatOp>(ValueRange(parts), b.getI64IntegerAttr(d));
      if (failed(joined))
        return failure();
      v = *joined;
    }
  }
  imp.define(0, v);
  return success();
}

/// Tile: at run time, a concat of copies along each repeated dim.
LogicalResult importTile(Imp &imp) {
  const HostTensor *r = imp.constantInput(1);
  if (!r)
    return imp.fail("the repeats must be compile-time constants");
  std::vector<int64_t> repeats = r->asInts();
  if (imp.constantInput(0))
    return imp.fail("Tile of a constant is not supported");
  auto x = imp.input(0);
  if (failed(x))
    return failure();
  if ((int64_t)repeats.size() != cast<RankedTensorType>(x->getType()).getRank())
    return imp.fail("repeats has " + std::to_string(repeats.size()) + " entries for rank " +
                    std::to_string(cast<RankedTensorType>(x->getType()).getRank()));
  int64_t count = cast<RankedTensorType>(x->getType()).getNumElements();
  for (int64_t r : repeats)
    if (r < 1 || __builtin_mul_overflow(count, r, &count) || count > OTC_MAX_ELEMENTS)
      return imp.fail("repeats must be at least 1 and the result at most 2^36 elements");
  Value v = *x;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] == 1)
      continue;
    SmallVector<Value> copies(repeats[d], v);
    auto joined = imp.create<ConcatOp>(ValueRange(copies), imp.builder().getI64IntegerAttr(d));
    if (failed(joined))
      return failure();
    v = *joined;
  }
  imp.define(0, v);
  return success();
}

LogicalResult importConcat(Imp &imp) {
  bool constant = true;
  for (size_t i = 0; i < imp.numInputs(); ++i)
    constant = constant && imp.constantInput(i);
  if (!constant) { // at run time
    SmallVector<Value> inputs;
    for (size_t i = 0; i < imp.numInputs(); ++i) {
      auto v = imp.input(i);
      if (failed(v))
        return failure();
      inputs.push_back(*v);
    }
    int64_t rank = cast<RankedTensorType>(inputs[0].getType()).getRank();
    auto axis = normaliseAxes(imp, {imp.intAttr("axis", 0)}, rank);
    if (failed(axis))
      return failure();
    return imp.defineResult(
        imp.create<ConcatOp>(ValueRange(inputs), imp.builder().getI64IntegerAttr((*axis)[0])));
  }
  if (failed(needConstants(imp, 1)))
    return failure();
  const HostTensor &first = *imp.constantInput(0);
  int64_t rank = first.shape.size();
  int64_t axis = imp.intAttr("axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return imp.fail("axis is out of range");
  int64_t outer = product(ArrayRef<int64_t>(first.shape).take_front(axis));
  HostTensor t = first;
  t.shape[axis] = 0;
  t.values.clear();
  for (size_t i = 0; i < imp.numInputs(); ++i) {
    const std::vector<int64_t> &s = imp.constantInput(i)->shape;
    for (int64_t d = 0; d < rank; ++d)
      if (s.size() != first.shape.size() || (d != axis && s[d] != first.shape[d]))
        return imp.fail("input " + std::to_string(i) +
                        "'s shape differs from input 0's off the concatenation axis");
    if (__builtin_add_overflow(t.shape[axis], s[axis], &t.shape[axis]))
      return imp.fail("the concatenated axis overflows");
  }
  int64_t count = t.numElements();
  if (failed(checkFoldSize(imp, count)))
    return failure();
  if (count == 0) // outer may still be huge: do not loop over it
    return imp.define(0, std::move(t));
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < imp.numInputs(); ++i) {
      const HostTensor &in = *imp.constantInput(i);
      int64_t chunk = in.numElements() / std::max<int64_t>(outer, 1);
      t.values.insert(t.values.end(), in.values.begin() + o * chunk,
                      in.values.begin() + (o + 1) * chunk);
    }
  return imp.define(0, std::move(t));
}

/// Unsqueeze and Squeeze are reshapes; `fromInput` selects the opset-13 form.
template <bool squeeze, bool fromInput>
LogicalResult importSqueezeLike(Imp &imp) {
  auto inShape = shapeOfInput(imp, 0);
  if (failed(inShape))
    return failure();
  std::vector<int64_t> in = *inShape, axes;
  if (fromInput && imp.numInputs() > 1) {
    const HostTensor *a = imp.constantInput(1);
    if (!a)
      return imp.fail("axes must be a compile-time constant");
    axes = a->asInts();
  } else if (!fromInput) {
    axes = imp.intsAttr("axes");
  }
  std::vector<int64_t> out;
  if (squeeze) {
    auto norm = normaliseAxes(imp, axes, in.size());
    if (failed(norm))
      return failure();
    for (size_t d = 0; d < in.size(); ++d) {
      bool drop = norm->empty() ? in[d] == 1 : llvm::is_contained(*norm, (int64_t)d);
      if (drop && in[d] != 1)
        return imp.fail("cannot squeeze dimension " + std::to_string(d) + " of size " +
                        std::to_string(in[d]));
      if (!drop)
        out.push_back(in[d]);
    }
  } else {
    if (in.size() + axes.size() > OTC_MAX_RANK)
      return imp.fail("the result would have rank " + std::to_string(in.size() + axes.size()) +
                      ", more than the limit of " + std::to_string(OTC_MAX_RANK));
    auto norm = normaliseAxes(imp, axes, in.size() + axes.size());
    if (failed(norm))
      return failure();
    if (norm->size() != axes.size())
      return imp.fail("the axes repeat an axis");
    size_t next = 0;
    for (size_t d = 0; d < in.size() + norm->size(); ++d)
      out.push_back(llvm::is_contained(*norm, (int64_t)d) ? 1 : in[next++]);
  }
  return defineReshaped(imp, 0, out);
}

LogicalResult importCast(Imp &imp) {
  int64_t to = imp.intAttr("to", 0);
  if (const HostTensor *c = imp.constantInput(0)) {
    HostTensor t = *c;
    t.isFloat = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE;
    t.elemType = to == onnx::TensorProto::INT32 ? int(onnx::TensorProto::INT64) : int(to);
    if (to == onnx::TensorProto::BOOL)
      for (double &v : t.values)
        v = double(v != 0);
    else if (!t.isFloat)
      for (double &v : t.values)
        v = std::trunc(v);
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
    imp.define(0, *x);
    return success();
  }
  auto type = RankedTensorType::get(cast<RankedTensorType>(x->getType()).getShape(), elem);
  imp.define(0, CastOp::create(imp.builder(), imp.loc(), type, *x).getResult());
  return success();
}

constexpr char kEq[] = "eq", kLt[] = "lt", kLe[] = "le", kGt[] = "gt", kGe[] = "ge";

struct AddF { double operator()(double a, double b) const { return a + b; } };
struct SubF { double operator()(double a, double b) const { return a - b; } };
struct MulF { double operator()(double a, double b) const { return a * b; } };
struct DivF { double operator()(double a, double b) const { return a / b; } };

// Sorted by op type, then by the opset each form appeared in.
const OpImporter kImporters[] = {
    {"Abs", 6, importUnary<AbsOp>},
    {"Add", 7, importBinary<AddOp, AddF>},
    {"And", 7, importLogic<AndOp, AndF>},
    {"AveragePool", 7, importAveragePool},
    {"BatchNormalization", 7, importBatchNormalization},
    {"Cast", 6, importCast},
    {"Clip", 6, importClip<false>},
    {"Clip", 11, importClip<true>},
    {"Concat", 4, importConcat},
    {"Conv", 1, importConv},
    {"Constant", 1, importConstant},
    {"ConstantOfShape", 9, importConstantOfShape},
    {"Div", 7, importBinary<DivOp, DivF>},
    {"Equal", 7, importCompare<kEq>},
    {"Dropout", 12, importDropout},
    {"Erf", 9, importUnary<ErfOp>},
    {"Exp", 6, importUnary<ExpOp>},
    {"Expand", 8, importExpand},
    {"Flatten", 1, importFlatten},
    {"Gather", 1, importGather},
    {"Gelu", 20, importGelu},
    {"Gemm", 7, importGemm},
    {"GlobalAveragePool", 1, importGlobalAveragePool},
    {"GlobalMaxPool", 1, importGlobalMaxPool},
    {"GRU", 7, importGru},
    {"Greater", 7, importCompare<kGt>},
    {"GreaterOrEqual", 12, importCompare<kGe>},
    {"Identity", 1, importIdentity},
    {"LSTM", 7, importLstm},
    {"LayerNormalization", 17, importLayerNormalization},
    {"LeakyRelu", 6, importLeakyRelu},
    {"Less", 7, importCompare<kLt>},
    {"LessOrEqual", 12, importCompare<kLe>},
    {"Log", 6, importLog},
    {"LogSoftmax", 1, importSoftmax<LogSoftmaxOp, true>},
    {"LogSoftmax", 13, importSoftmax<LogSoftmaxOp, false>},
    {"MatMul", 1, importTwoInputs<MatMulOp>},
    {"Max", 8, importMaxMin<true>},
    {"MaxPool", 1, importMaxPool},
    {"Min", 8, importMaxMin<false>},
    {"Mul", 7, importBinary<MulOp, MulF>},
    {"NegativeLogLikelihoodLoss", 12, importNegativeLogLikelihoodLoss},
    {"Neg", 6, importUnary<NegOp>},
    {"Not", 1, importNot},
    {"Or", 7, importLogic<OrOp, OrF>},
    {"Pad", 2, importPad<false>},
    {"Pad", 11, importPad<true>},
    {"Pow", 7, importPow},
    {"Range", 11, importRange},
    {"Reciprocal", 6, importUnary<ReciprocalOp>},
    {"ReduceMean", 1, importReduce<ReduceMeanOp, false>},
    {"ReduceMean", 18, importReduce<ReduceMeanOp, true>},
    {"ReduceSum", 1, importReduce<ReduceSumOp, false>},
    {"ReduceSum", 13, importReduce<ReduceSumOp, true>},
    {"Relu", 6, importUnary<ReluOp>},
    {"Reshape", 5, importReshape},
    {"Shape", 1, importShape},
    {"Sigmoid", 6, importUnary<SigmoidOp>},
    {"Slice", 1, importSlice<false>},
    {"Slice", 10, importSlice<true>},
    {"Softmax", 1, importSoftmax<SoftmaxOp, true>},
    {"Softmax", 13, importSoftmax<SoftmaxOp, false>},
    {"SoftmaxCrossEntropyLoss", 12, importSoftmaxCrossEntropyLoss},
    {"Split", 2, importSplit<false>},
    {"Split", 13, importSplit<true>},
    {"Sqrt", 6, importUnary<SqrtOp>},
    {"Squeeze", 1, importSqueezeLike<true, false>},
    {"Squeeze", 13, importSqueezeLike<true, true>},
    {"Sub", 7, importBinary<SubOp, SubF>},
    {"Sum", 8, importSum},
    {"Tanh", 6, importUnary<TanhOp>},
    {"Tile", 6, importTile},
    {"Transpose", 1, importTranspose},
    {"Trilu", 14, importTrilu},
    {"Unsqueeze", 1, importSqueezeLike<false, false>},
    {"Unsqueeze", 13, importSqueezeLike<false, true>},
    {"Where", 9, importWhere},
};

} // namespace

const OpImporter *findOpImporter(llvm::StringRef opType, int opset) {
  const OpImporter *best = nullptr;
  for (const OpImporter &e : kImporters)
    if (opType == e.opType && e.sinceVersion <= opset)
      best = &e;
  return best;
}

} // namespace otc
