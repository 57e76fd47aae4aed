// Turns gradient results into in-place accumulation into persistent buffers.
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace otc {
#define GEN_PASS_DEF_GRADACCUMULATION
#include "otc/Passes/Passes.h.inc"
} // namespace otc

using namespace mlir;
using namespace otc;

namespace {

LogicalResult accumulate(func::FuncOp func) {
  SmallVector<unsigned> gradResults;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, attr::kGradOf))
      gradResults.push_back(i);
  if (gradResults.empty())
    return success();

  MLIRContext *ctx = func.getContext();
  Builder b(ctx);
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());

  // Buffers first, then the flag, all appended after the existing arguments.
  unsigned firstBuffer = func.getNumArguments();
  SmallVector<unsigned> indices;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Location> locs;
  for (unsigned r : gradResults) {
    indices.push_back(firstBuffer);
    types.push_back(func.getResultTypes()[r]);
    attrs.push_back(DictionaryAttr::get(
        ctx, {b.getNamedAttr(attr::kGradBuffer, func.getResultAttr(r, attr::kGradOf))}));
    locs.push_back(func.getLoc());
  }
  indices.push_back(firstBuffer);
  types.push_back(b.getI1Type());
  attrs.push_back(DictionaryAttr::get(
      ctx, {b.getNamedAttr(attr::kFirstMicroBatch, b.getUnitAttr())}));
  locs.push_back(func.getLoc());
  if (failed(func.insertArguments(indices, types, attrs, locs)))
    return failure();

  Value first = func.getArgument(func.getNumArguments() - 1);
  OpBuilder ob(ret);
  for (auto [k, r] : llvm::enumerate(gradResults)) {
    unsigned bufferIndex = firstBuffer + k;
    Value sum = AccumulateOp::create(ob, ret.getLoc(),
                                     func.getArgument(bufferIndex),
                                     ret.getOperand(r), first);
    ret.setOperand(r, sum);
    func.setResultAttr(r, attr::kTiedArg, b.getI64IntegerAttr(bufferIndex));
  }
  return success();
}

struct GradAccumulationPass
    : otc::impl::GradAccumulationBase<GradAccumulationPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(accumulate(func)))
        return signalPassFailure();
  }
};

} // namespace
