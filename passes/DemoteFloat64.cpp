// otc-demote-float64: the float64 tensors of a float32 model (constants an
// exporter wrote as double, and what they reach) become float32, as the
// targets have no float64 kernels. Passes.td says when and why.
#include "otc/Dialect/OtcDialect.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

namespace otc {
#define GEN_PASS_DEF_DEMOTEFLOAT64
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

bool isFloat64Tensor(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.getElementType().isF64();
}

Type demoted(Type t) {
  auto r = cast<RankedTensorType>(t);
  return r.clone(Float32Type::get(t.getContext()));
}

struct DemoteFloat64 : otc::impl::DemoteFloat64Base<DemoteFloat64> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      FunctionType type = func.getFunctionType();
      if (llvm::any_of(type.getInputs(), isFloat64Tensor) ||
          llvm::any_of(type.getResults(), isFloat64Tensor))
        continue;
      WalkResult r = func.walk([&](Operation *op) {
        if (auto c = dyn_cast<ConstantOp>(op); c && isFloat64Tensor(c.getType())) {
          auto value = dyn_cast<DenseElementsAttr>(c.getValue());
          if (!value) {
            c.emitOpError("holds float64 values otc cannot convert to float32");
            return WalkResult::interrupt();
          }
          // Round to nearest; a finite value past float32's range (a
          // -1e40 fill) becomes the largest float32, not an infinity that
          // a mask's product with 0 would turn into NaN.
          auto toSingle = [](APFloat v) {
            bool lost = false, finite = v.isFinite();
            v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
            if (finite && v.isInfinity())
              v = APFloat::getLargest(APFloat::IEEEsingle(), v.isNegative());
            return v;
          };
          auto to = cast<ShapedType>(demoted(c.getType()));
          if (value.isSplat()) {
            c.setValueAttr(DenseElementsAttr::get(to, toSingle(value.getSplatValue<APFloat>())));
          } else {
            SmallVector<APFloat> values;
            for (APFloat v : value.getValues<APFloat>())
              values.push_back(toSingle(v));
            c.setValueAttr(DenseElementsAttr::get(to, values));
          }
        }
        for (Value v : op->getResults())
          if (isFloat64Tensor(v.getType()))
            v.setType(demoted(v.getType()));
        for (Region &region : op->getRegions())
          for (Block &block : region)
            for (BlockArgument a : block.getArguments())
              if (isFloat64Tensor(a.getType()))
                a.setType(demoted(a.getType()));
        return WalkResult::advance();
      });
      // A cast to float64 is now a cast to its own type.
      SmallVector<CastOp> identities;
      func.walk([&](CastOp c) {
        if (c.getInput().getType() == c.getResult().getType())
          identities.push_back(c);
      });
      for (CastOp c : identities) {
        c.getResult().replaceAllUsesWith(c.getInput());
        c.erase();
      }
      if (r.wasInterrupted() || failed(mlir::verify(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
