// otc-mixed-precision: rewrites the forward graph's element types with an
// autocast-like policy (one table, below), before autodiff, so the backward
// follows the types. Parameters stay float32 (master weights); the casts to
// the low type sit in the graph, so their gradients cast back.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

namespace otc {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

using Policy = PrecisionClass;

/// Each op's autocast class is declared on it (OpFacts.td): GEMMs run on
/// low-precision operands (accumulating in float32); statistics,
/// reductions, exp/log/pow, the losses and the window kernels in float32;
/// everything else in the widest type of its float operands.
Policy policyOf(Operation *op) { return cast<OpFactsInterface>(op).getPrecisionClass(); }

/// The ops of class `p`, by name without the `otc.` prefix, for the table
/// --emit mlir prints.
SmallVector<StringRef> opsOfClass(MLIRContext *ctx, Policy p) {
  SmallVector<StringRef> names;
  for (RegisteredOperationName name : ctx->getRegisteredOperations()) {
    auto *facts = name.getInterface<OpFactsInterface>();
    if (facts && facts->getPrecisionClass() == p)
      names.push_back(name.getStringRef().drop_front(strlen("otc.")));
  }
  llvm::sort(names);
  return names;
}

bool isFloatTensor(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && isa<FloatType>(r.getElementType());
}

Type withElement(Type t, Type elem) {
  auto r = cast<RankedTensorType>(t);
  return RankedTensorType::get(r.getShape(), elem);
}

/// A float constant whose elements are all equal: PyTorch's exporter writes
/// Python scalars (`x * 0.5`, `att / sqrt(d)`) as float32 constants, which
/// autocast treats as weak types, so they do not widen the op.
DenseElementsAttr splatConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return {};
  return dense;
}

struct MixedPrecisionPass : otc::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using MixedPrecisionBase::MixedPrecisionBase;

  /// `v` as `elem`: a cast, or a splat constant converted here.
  static Value castTo(OpBuilder &b, Value v, Type elem, Location loc) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() == elem)
      return v;
    if (DenseElementsAttr splat = splatConstant(v)) {
      // Rounded once here, to nearest even, rather than by a cast kernel.
      APFloat x = splat.getSplatValue<APFloat>();
      bool lost;
      x.convert(cast<FloatType>(elem).getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      auto type = cast<ShapedType>(withElement(t, elem));
      return ConstantOp::create(b, loc, DenseElementsAttr::get(type, x));
    }
    return castElements(b, loc, v, elem);
  }

  /// `op` rebuilt before itself with result types `results`; the caller
  /// moves its uses and erases it.
  static Operation *withResults(OpBuilder &b, Operation *op, TypeRange results) {
    OperationState state(op->getLoc(), op->getName(), op->getOperands(), results,
                         op->getAttrs());
    return b.create(state);
  }

  /// Whether --keep-fp32 names the op's type (e.g. matmul) or its node.
  bool keptInF32(Operation *op) {
    StringRef name = op->getName().getStringRef();
    name.consume_front("otc.");
    std::string node;
    if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
      node = loc.getName().str();
    for (const std::string &k : keepFp32)
      if (k == name || k == node)
        return true;
    return false;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (precision == Precision::Fp32)
      return;
    Builder builder(module.getContext());
    Type low = precision == Precision::Fp16 ? Type(builder.getF16Type())
                                            : Type(builder.getBF16Type());
    Type f32 = builder.getF32Type();
    for (auto func : module.getOps<func::FuncOp>())
      rewrite(func, low, f32);
    // The table, for --emit mlir.
    NamedAttrList table;
    table.append("precision", PrecisionAttr::get(module.getContext(), precision));
    table.append("low", builder.getStrArrayAttr(opsOfClass(module.getContext(), Policy::Low)));
    table.append("f32", builder.getStrArrayAttr(opsOfClass(module.getContext(), Policy::F32)));
    table.append("other", builder.getStringAttr(
        "the widest type of the float operands, splat constants excluded"));
    table.append("low_users", builder.getStringAttr(
        "an op whose every use casts it to the low type runs in it"));
    SmallVector<Attribute> kept;
    for (const std::string &k : keepFp32)
      kept.push_back(builder.getStringAttr(k));
    table.append("keep_fp32", builder.getArrayAttr(kept));
    module->setAttr(attr::kPrecisionPolicy, table.getDictionary(module.getContext()));
  }

  /// An add of a low-precision GEMM result and a parameter (a bias), either
  /// perhaps reshaped.
  static bool isBiasAdd(Operation *op, Type low) {
    auto throughReshapes = [](Value v) {
      while (auto r = v.getDefiningOp<ReshapeOp>())
        v = r.getInput();
      return v;
    };
    auto isParam = [&](Value v) {
      v = throughReshapes(v);
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && cast<func::FuncOp>(arg.getOwner()->getParentOp())
                        .getArgAttr(arg.getArgNumber(), attr::kParam);
    };
    // A convolution's product reaches its bias through reshapes and the
    // transpose that puts channels second.
    auto isLowGemm = [&](Value v) {
      while (Operation *d = v.getDefiningOp()) {
        if (!isa<ReshapeOp, TransposeOp>(d))
          break;
        v = d->getOperand(0);
      }
      return isa_and_nonnull<MatMulOp, GemmOp>(v.getDefiningOp()) &&
             cast<RankedTensorType>(v.getType()).getElementType() == low;
    };
    Value a = op->getOperand(0), b = op->getOperand(1);
    return (isLowGemm(a) && isParam(b)) || (isLowGemm(b) && isParam(a));
  }

  /// An op whose every use rounds its float32 result to the low type runs
  /// in the low type: the LayerNorm affine before a low GEMM, attention's
  /// softmax before its product with V. Walked backwards, so chains follow.
  /// A float32-policy op (softmax, log-softmax) qualifies only when its
  /// operands were low already, so its statistics see the same values; its
  /// kernel still computes them in float32.
  void demoteRoundedResults(func::FuncOp func, Type low) {
    OpBuilder b(func.getContext());
    auto lowCast = [&](Operation *u) {
      auto c = dyn_cast<CastOp>(u);
      return c && cast<RankedTensorType>(c.getType()).getElementType() == low;
    };
    auto fromLow = [&](Value v) -> Value {
      auto c = v.getDefiningOp<CastOp>();
      if (c && cast<RankedTensorType>(c.getInput().getType()).getElementType() == low)
        return c.getInput();
      return {};
    };
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      if (isa<ConstantOp, CastOp, func::ReturnOp>(op) || op->getNumResults() != 1 ||
          keptInF32(op) || !isFloatTensor(op->getResult(0).getType()) ||
          op->getResult(0).use_empty() || !llvm::all_of(op->getUsers(), lowCast))
        continue;
      bool rowStatistics = isa<SoftmaxOp, LogSoftmaxOp>(op);
      Policy p = policyOf(op);
      if (p == Policy::Low || (p == Policy::F32 && !rowStatistics))
        continue;
      if (p == Policy::F32 && !llvm::all_of(op->getOperands(), [&](Value v) {
            return !isFloatTensor(v.getType()) || fromLow(v);
          }))
        continue;
      b.setInsertionPoint(op);
      for (OpOperand &o : op->getOpOperands()) {
        if (!isFloatTensor(o.get().getType()))
          continue;
        if (Value v = fromLow(o.get()))
          o.set(v);
        else
          o.set(castTo(b, o.get(), low, op->getLoc()));
      }
      Operation *fresh =
          withResults(b, op, TypeRange{withElement(op->getResult(0).getType(), low)});
      fresh->setAttr("otc.precision", b.getStringAttr("low_users"));
      for (Operation *u : llvm::make_early_inc_range(op->getUsers())) {
        u->getResult(0).replaceAllUsesWith(fresh->getResult(0));
        u->erase();
      }
      op->erase();
    }
  }

  void rewrite(func::FuncOp func, Type low, Type f32) {
    OpBuilder b(func.getContext());
    for (Operation &opRef : llvm::make_early_inc_range(func.getBody().front())) {
      Operation *op = &opRef;
      if (isa<ConstantOp, CastOp, func::ReturnOp>(op))
        continue;
      SmallVector<unsigned> floats;
      bool anyF64 = false, allLow = true, anyStrong = false;
      auto facts = dyn_cast<OpFactsInterface>(op);
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        if (isFloatTensor(v.getType()) && (!facts || facts.followsAutocast(i))) {
          Type e = cast<RankedTensorType>(v.getType()).getElementType();
          anyF64 |= e.isF64();
          if (!splatConstant(v)) {
            allLow &= e == low;
            anyStrong = true;
          }
          floats.push_back(i);
        }
      allLow &= anyStrong;
      if (floats.empty() || anyF64)
        continue;
      Policy p = keptInF32(op) ? Policy::F32 : policyOf(op);
      Type target = p == Policy::Low ? low : p == Policy::F32 ? f32 : (allLow ? low : f32);
      // A GEMM's bias added after it (PyTorch exports Linear on 3-D inputs
      // as MatMul + Add) runs in the low type, as autocast's linear does.
      if (p == Policy::Widest && isa<AddOp>(op) && isBiasAdd(op, low))
        target = low;
      b.setInsertionPoint(op);
      for (unsigned i : floats)
        op->setOperand(i, castTo(b, op->getOperand(i), target, op->getLoc()));
      op->setAttr("otc.precision", b.getStringAttr(stringifyPrecisionClass(p)));
      // Float results take the target type, or what the op infers from its
      // new operands (attention's log-sum-exp stays float32): the op is
      // rebuilt when that changes them.
      SmallVector<Type> results, inferred;
      auto infer = dyn_cast<InferTypeOpInterface>(op);
      if (infer && failed(infer.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                                 op->getAttrDictionary(),
                                                 op->getPropertiesStorage(), op->getRegions(),
                                                 inferred)))
        return signalPassFailure();
      bool changed = false;
      for (auto [i, t] : llvm::enumerate(op->getResultTypes())) {
        Type r = infer ? inferred[i]
                       : isFloatTensor(t) ? withElement(t, target) : t;
        results.push_back(r);
        changed |= r != t;
      }
      if (!changed)
        continue;
      Operation *fresh = withResults(b, op, results);
      op->replaceAllUsesWith(fresh->getResults());
      op->erase();
    }
    demoteRoundedResults(func, low);
    // The function's results keep their types (the loss stays float32).
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    b.setInsertionPoint(ret);
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (v.getType() != func.getResultTypes()[i])
        ret.setOperand(i, castTo(b, v, cast<RankedTensorType>(func.getResultTypes()[i]).getElementType(),
                                 ret.getLoc()));
  }
};

} // namespace
