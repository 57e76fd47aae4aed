// Elementwise ops: each is one node (or a few) of the fused expression.
// Broadcasting and transposition are dim maps, so they cost no kernel.
#include "../Rules.h"

#include <cmath>

#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {
namespace {

template <Node::Op Op>
int binary(Operation *, NodeBuilder &b, ArrayRef<int> x) {
  return b.binary(Op, x[0], x[1]);
}
template <Node::Op Op>
int unary(Operation *, NodeBuilder &b, ArrayRef<int> x) {
  return b.unary(Op, x[0]);
}
int same(Operation *, NodeBuilder &, ArrayRef<int> x) { return x[0]; }
int reciprocal(Operation *, NodeBuilder &b, ArrayRef<int> x) {
  int one = b.constant(1.0);
  return b.binary(Node::Div, one, x[0]);
}

// Gradients of activations, from (upstream gradient, input or output).
int reluGrad(Operation *, NodeBuilder &b, ArrayRef<int> x) {
  int zero = b.constant(0.0);
  return b.select(b.binary(Node::Gt, x[1], zero), x[0], zero);
}
int tanhGrad(Operation *, NodeBuilder &b, ArrayRef<int> x) { // g (1 - y^2)
  int yy = b.binary(Node::Mul, x[1], x[1]);
  return b.binary(Node::Mul, x[0], b.binary(Node::Sub, b.constant(1.0), yy));
}
int sigmoidGrad(Operation *, NodeBuilder &b, ArrayRef<int> x) { // g y (1 - y)
  int gy = b.binary(Node::Mul, x[0], x[1]);
  return b.binary(Node::Mul, gy, b.binary(Node::Sub, b.constant(1.0), x[1]));
}

// GELU and its derivative, in float32 within the step (one rounding).
constexpr double kGeluK = 0.7978845608028654; // √(2/π)
constexpr double kGeluA = 0.044715;

/// tanh(√(2/π) (x + 0.044715 x³)).
int geluTanhInner(NodeBuilder &b, int x) {
  int cube = b.binary(Node::Mul, b.binary(Node::Mul, x, x), x);
  int arg = b.binary(Node::Add, x, b.binary(Node::Mul, b.constant(kGeluA), cube));
  return b.unary(Node::Tanh, b.binary(Node::Mul, b.constant(kGeluK), arg));
}

/// Φ(x) = (1 + erf(x/√2)) / 2.
int geluPhi(NodeBuilder &b, int x) {
  int e = b.unary(Node::Erf, b.binary(Node::Mul, x, b.constant(M_SQRT1_2)));
  return b.binary(Node::Mul, b.constant(0.5), b.binary(Node::Add, b.constant(1.0), e));
}

int gelu(Operation *op, NodeBuilder &b, ArrayRef<int> x) {
  if (cast<GeluOp>(op).getApproximate() == GeluApproximation::None)
    return b.binary(Node::Mul, x[0], geluPhi(b, x[0]));
  int half = b.binary(Node::Mul, b.constant(0.5), x[0]);
  return b.binary(Node::Mul, half, b.binary(Node::Add, b.constant(1.0), geluTanhInner(b, x[0])));
}

// none: Φ(x) + x φ(x); tanh: (1 + t)/2 + x/2 (1 - t²) √(2/π) (1 + 3 · 0.044715 x²).
// With the output y (float32), Φ(x) and (1 + t)/2 are y / x (1/2 where |x|
// is tiny), so no second erf or tanh is evaluated.
int geluGrad(Operation *op, NodeBuilder &b, ArrayRef<int> x) {
  int g = x[0], v = x[1], d;
  bool exact = cast<GeluGradOp>(op).getApproximate() == GeluApproximation::None;
  int ratio = -1; // Φ(x), or (1 + t)/2
  if (x.size() == 3) {
    int big = b.binary(Node::Gt, b.unary(Node::Abs, v), b.constant(1e-20));
    ratio = b.select(big, b.binary(Node::Div, x[2], v), b.constant(0.5));
  }
  if (exact) {
    int e = b.unary(Node::Exp, b.binary(Node::Mul, b.constant(-0.5), b.binary(Node::Mul, v, v)));
    int phi = b.binary(Node::Mul, b.constant(0.3989422804014327), e); // e / √(2π)
    d = b.binary(Node::Add, ratio >= 0 ? ratio : geluPhi(b, v), b.binary(Node::Mul, v, phi));
  } else {
    int left, t;
    if (ratio >= 0) {
      left = ratio;
      t = b.binary(Node::Sub, b.binary(Node::Mul, b.constant(2.0), ratio), b.constant(1.0));
    } else {
      t = geluTanhInner(b, v);
      left = b.binary(Node::Mul, b.constant(0.5), b.binary(Node::Add, b.constant(1.0), t));
    }
    int sech2 = b.binary(Node::Sub, b.constant(1.0), b.binary(Node::Mul, t, t));
    int inner = b.binary(Node::Add, b.constant(1.0),
                         b.binary(Node::Mul, b.constant(3 * kGeluA), b.binary(Node::Mul, v, v)));
    int right = b.binary(Node::Mul, b.binary(Node::Mul, b.constant(0.5 * kGeluK), v),
                         b.binary(Node::Mul, sech2, inner));
    d = b.binary(Node::Add, left, right);
  }
  return b.binary(Node::Mul, g, d);
}

int pow(Operation *op, NodeBuilder &b, ArrayRef<int> x) {
  return b.pow(x[0], cast<PowOp>(op).getExponent().convertToDouble());
}

int compare(Operation *op, NodeBuilder &b, ArrayRef<int> x) {
  switch (cast<CompareOp>(op).getPredicate()) {
  case ComparePredicate::eq: return b.binary(Node::Eq, x[0], x[1]);
  case ComparePredicate::ne: return b.binary(Node::Ne, x[0], x[1]);
  case ComparePredicate::lt: return b.binary(Node::Lt, x[0], x[1]);
  case ComparePredicate::le: return b.binary(Node::Le, x[0], x[1]);
  case ComparePredicate::gt: return b.binary(Node::Gt, x[0], x[1]);
  case ComparePredicate::ge: return b.binary(Node::Ge, x[0], x[1]);
  }
  return -1;
}
int where(Operation *, NodeBuilder &b, ArrayRef<int> x) { return b.select(x[0], x[1], x[2]); }

// Casts convert the arithmetic value; one to a 16-bit float rounds here, so
// a fused consumer sees what a stored result would hold.
int castTo(Operation *op, NodeBuilder &b, ArrayRef<int> x) {
  ElemType to;
  elemTypeOf(cast<CastOp>(op).getType(), to);
  int v = x[0];
  ElemType from = b.getStep().nodes[v].type; // F32, I64 or I1
  if (to == ElemType::I1) {
    int zero = from == ElemType::F32 ? b.constant(0.0) : b.integer(0, from);
    return from == ElemType::I1 ? v : b.binary(Node::Ne, v, zero);
  }
  if (to == ElemType::I64)
    return from == ElemType::I64 ? v : b.unary(Node::ToI64, v);
  if (from != ElemType::F32)
    v = b.unary(Node::ToF32, v);
  return b.roundTo(v, to);
}

// Result dim i is input dim perm[i].
} // namespace

// Dropout: the input (its producer fused in), a draw per element, and both
// results (the output and the kept mask) stored by one elementwise step.
static bool lowerDropout(Operation *op, Lowering &l) {
  auto d = cast<DropoutOp>(op);
  auto shape = d.getInput().getType().getShape().vec();
  Step &s = l.newStep(Step::Elementwise, op, shape);
  NodeBuilder b(s);
  DimMap map = identityMap(shape.size());
  int x = l.expr(b, d.getInput(), map);
  if (x < 0)
    return false;
  double ratio = d.getRatio().convertToDouble();
  int draw = b.uniform(d.getStream(), stridesOf(shape));
  int keep = b.binary(Node::Ge, draw, b.constant(ratio));
  int scaled = b.binary(Node::Mul, x, b.constant(1.0 / (1.0 - ratio)));
  l.store(b, d.getOutput(), b.select(keep, scaled, b.constant(0.0)), map);
  if (!d.getMask().use_empty())
    l.store(b, d.getMask(), keep, map);
  return true;
}

static bool readsInput(Operation *, unsigned k) { return k == 0; }

namespace {
DimMap transposeMap(Operation *op, unsigned, const DimMap &result) {
  auto perm = cast<TransposeOp>(op).getPerm();
  DimMap m(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    m[perm[i]] = result[i];
  return m;
}

} // namespace

void registerElementwiseRules(RuleRegistry &r) {
  auto add = [&](StringRef name, ElementwiseRule rule) { r.elementwise[name] = rule; };
  add(AddOp::getOperationName(), {nullptr, binary<Node::Add>});
  add(SubOp::getOperationName(), {nullptr, binary<Node::Sub>});
  add(MulOp::getOperationName(), {nullptr, binary<Node::Mul>});
  add(DivOp::getOperationName(), {nullptr, binary<Node::Div>});
  add(AndOp::getOperationName(), {nullptr, binary<Node::And>});
  add(OrOp::getOperationName(), {nullptr, binary<Node::Or>});
  add(NotOp::getOperationName(), {nullptr, unary<Node::Not>});
  add(BitwiseAndOp::getOperationName(), {nullptr, binary<Node::BitAnd>});
  add(BitwiseOrOp::getOperationName(), {nullptr, binary<Node::BitOr>});
  add(BitwiseXorOp::getOperationName(), {nullptr, binary<Node::BitXor>});
#define OTC_UNARY_NODE(Kind, name, Op, expr, f) \
  add(Op::getOperationName(), {nullptr, unary<Node::Kind>});
#include "../Nodes.def"
  add(ReluGradOp::getOperationName(), {nullptr, reluGrad});
  add(TanhGradOp::getOperationName(), {nullptr, tanhGrad});
  add(SigmoidGradOp::getOperationName(), {nullptr, sigmoidGrad});
  add(ReciprocalOp::getOperationName(), {nullptr, reciprocal});
  add(PowOp::getOperationName(), {nullptr, pow});
  add(GeluOp::getOperationName(), {nullptr, gelu});
  add(GeluGradOp::getOperationName(), {nullptr, geluGrad});
  add(CompareOp::getOperationName(), {nullptr, compare});
  add(WhereOp::getOperationName(), {nullptr, where});
  add(CastOp::getOperationName(), {nullptr, castTo});
  add(IdentityOp::getOperationName(), {nullptr, same});
  add(BroadcastToOp::getOperationName(), {nullptr, same});
  add(TransposeOp::getOperationName(), {transposeMap, same});
  r.steps[DropoutOp::getOperationName()] = {lowerDropout, readsInput};
}

} // namespace otc
