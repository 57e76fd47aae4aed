// otc-fuse-gelu: GELU written out as arithmetic (every export before opset
// 20, Hugging Face's gelu_new and its kin) becomes one otc.gelu. Rather than
// match one spelling, the pass evaluates each candidate expression of a
// single tensor in float64 at probe points and compares it with both GELU
// forms: any order of the multiplications, pow or x·x·x, 0.5 first or last.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace otc {
#define GEN_PASS_DEF_FUSEGELU
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

constexpr size_t kMaxOps = 24; // the longest spelling has 11

std::optional<double> splat(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

bool isArithmetic(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, NegOp, TanhOp, ErfOp, ExpOp, SqrtOp, ReciprocalOp,
             PowOp>(op);
}

/// The expression `out` computes of the tensor x (its other leaves splat
/// constants): its ops in program order, or nothing.
struct Expression {
  Value x;
  SmallVector<Operation *> ops;
};

/// Arithmetic ops of `out`'s type that `out` reaches through operands,
/// stopping at `stop` (when given), at most kMaxOps of them.
llvm::SetVector<Operation *> coneOf(Operation *out, Value stop, bool &bounded) {
  llvm::SetVector<Operation *> seen;
  SmallVector<Operation *> work{out};
  bounded = true;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!seen.insert(op))
      continue;
    if (seen.size() > kMaxOps) {
      bounded = false;
      return seen;
    }
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (v != stop && !splat(v) && def && isArithmetic(def) &&
          v.getType() == out->getResult(0).getType())
        work.push_back(def);
    }
  }
  return seen;
}

std::optional<Expression> expressionOf(Operation *out, Value x) {
  bool bounded;
  llvm::SetVector<Operation *> cone = coneOf(out, x, bounded);
  if (!bounded)
    return std::nullopt;
  for (Operation *op : cone)
    for (Value v : op->getOperands())
      if (v != x && !splat(v) && !cone.contains(v.getDefiningOp()))
        return std::nullopt; // another tensor
  Expression e{x, cone.takeVector()};
  llvm::sort(e.ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return e;
}

/// The values x that `out` may be an expression of: every GELU spelling
/// reads x at least twice (outside and inside the erf or tanh).
SmallVector<Value> leavesOf(Operation *out) {
  bool bounded;
  llvm::SetVector<Operation *> cone = coneOf(out, Value(), bounded);
  llvm::MapVector<Value, int> reads;
  for (Operation *op : cone)
    for (Value v : op->getOperands())
      if (!splat(v))
        ++reads[v];
  SmallVector<Value> leaves;
  for (auto [v, n] : reads)
    if (n >= 2 && v.getType() == out->getResult(0).getType())
      leaves.push_back(v);
  return leaves;
}

/// The expression's value at x = `at`, in float64.
double evaluate(const Expression &e, double at) {
  llvm::DenseMap<Value, double> val{{e.x, at}};
  auto get = [&](Value v) { return splat(v) ? *splat(v) : val.lookup(v); };
  for (Operation *op : e.ops) {
    double a = get(op->getOperand(0));
    double b = op->getNumOperands() > 1 ? get(op->getOperand(1)) : 0.0;
    double r = llvm::TypeSwitch<Operation *, double>(op)
                   .Case([&](AddOp) { return a + b; })
                   .Case([&](SubOp) { return a - b; })
                   .Case([&](MulOp) { return a * b; })
                   .Case([&](DivOp) { return a / b; })
                   .Case([&](NegOp) { return -a; })
                   .Case([&](TanhOp) { return std::tanh(a); })
                   .Case([&](ErfOp) { return std::erf(a); })
                   .Case([&](ExpOp) { return std::exp(a); })
                   .Case([&](SqrtOp) { return std::sqrt(a); })
                   .Case([&](ReciprocalOp) { return 1 / a; })
                   .Case([&](PowOp p) { return std::pow(a, p.getExponent().convertToDouble()); })
                   .Default([](Operation *) { return NAN; });
    val[op->getResult(0)] = r;
  }
  return val.lookup(e.ops.back()->getResult(0));
}

double geluExact(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double geluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

/// Which GELU `e` is, if either: equal to it at every probe within what
/// float32 constants allow (1e-6 relative). The two forms differ by up to
/// 2e-4 relative at these points, so neither passes for the other.
std::optional<GeluApproximation> formOf(const Expression &e) {
  static const double probes[] = {-3.7, -2.2, -1.3, -0.71, -0.2, 0.05, 0.4, 0.93, 1.6, 2.9};
  bool exact = true, tanh = true;
  for (double p : probes) {
    double v = evaluate(e, p);
    auto near = [&](double w) { return std::abs(v - w) <= 1e-6 * std::abs(w) + 1e-9; };
    exact &= near(geluExact(p));
    tanh &= near(geluTanh(p));
  }
  if (exact)
    return GeluApproximation::None;
  if (tanh)
    return GeluApproximation::Tanh;
  return std::nullopt;
}

struct FuseGeluPass : otc::impl::FuseGeluBase<FuseGeluPass> {
  void runOnOperation() override {
    IRRewriter rw(&getContext());
    getOperation().walk([&](func::FuncOp f) {
      // Latest first, so the whole expression is found before its parts.
      SmallVector<Operation *> candidates;
      for (Operation &op : f.getBody().getOps())
        if (isa<MulOp, AddOp, DivOp>(op))
          candidates.push_back(&op);
      llvm::DenseSet<Operation *> erased;
      for (Operation *out : llvm::reverse(candidates)) {
        if (erased.contains(out))
          continue;
        std::optional<Expression> e;
        std::optional<GeluApproximation> form;
        for (Value x : leavesOf(out)) {
          e = expressionOf(out, x);
          if (e && e->ops.size() >= 4 &&
              llvm::any_of(e->ops, [](Operation *op) { return isa<TanhOp, ErfOp>(op); }) &&
              (form = formOf(*e)))
            break;
        }
        if (!form)
          continue;
        rw.setInsertionPoint(out);
        rw.replaceOp(out, GeluOp::create(rw, out->getLoc(), e->x, *form));
        erased.insert(out);
        // The expression's inner ops die with it unless used elsewhere.
        for (Operation *op : llvm::reverse(e->ops))
          if (op != out && op->use_empty()) {
            erased.insert(op);
            rw.eraseOp(op);
          }
      }
    });
  }
};

} // namespace
