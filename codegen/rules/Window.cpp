// Convolution's im2col and pooling: calls to the kernel library's window
// kernels (kernels/window.h), instantiated with the geometry. Gradients
// accumulate into a gradient buffer themselves, as gather's does.
#include "../Rules.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using Kernel = otc::LibraryCall::Kernel;

namespace otc {
namespace {

/// The geometry of window op `op` whose image is `image` and whose output
/// (pooled values or columns) is `out`; the verifier has checked it.
template <class OpTy>
std::vector<int64_t> geometry(OpTy op, Value image, Value out) {
  auto y = tensorType(out).getShape();
  WindowGeometry g;
  windowGeometry(tensorType(image).getShape(), op.getKernel(), op.getStrides(), op.getPads(),
                 op.getDilations(), y[y.size() - 2], y[y.size() - 1], g);
  auto c = g.constants();
  return std::vector<int64_t>(c.begin(), c.end());
}

/// Appends a call of `kernel` reading `inputs` and writing `outputs`
/// (results of `op`), all float32 but index buffers.
bool call(Operation *op, Lowering &l, Kernel kernel, std::vector<int64_t> constants,
          ArrayRef<Value> inputs, ArrayRef<Value> outputs, bool gradient) {
  LibraryCall c;
  c.kernel = kernel;
  c.constants = std::move(constants);
  for (Value v : inputs) {
    int b = l.buffer(v, op);
    if (b < 0)
      return false;
    if (isa<FloatType>(tensorType(v).getElementType()) &&
        l.program().buffers[b].type != ElemType::F32)
      return l.fail(op, "window kernels are implemented for float32 only");
    c.buffers.push_back(b);
  }
  int target = gradient ? l.accumulatorOf(op) : -1;
  if (target >= 0) {
    c.buffers.push_back(target);
    c.scalars.push_back({LibraryCall::Scalar::First, 0});
  } else {
    for (Value v : outputs) {
      int b = l.ownResult(v, op);
      if (b < 0)
        return false;
      c.buffers.push_back(b);
    }
    if (gradient)
      c.scalars.push_back({LibraryCall::Scalar::Int, 1});
    c.outputs = (int)outputs.size();
  }
  l.newStep(Step::LibraryCall, op).call = c;
  return true;
}

bool lowerIm2Col(Operation *op, Lowering &l) {
  auto o = cast<Im2ColOp>(op);
  return call(op, l, Kernel::Im2Col, geometry(o, o.getInput(), o.getResult()), {o.getInput()},
              {o.getResult()}, false);
}

bool lowerCol2Im(Operation *op, Lowering &l) {
  auto o = cast<Col2ImOp>(op);
  return call(op, l, Kernel::Col2Im, geometry(o, o.getResult(), o.getGrad()), {o.getGrad()},
              {o.getResult()}, true);
}

bool lowerMaxPool(Operation *op, Lowering &l) {
  auto o = cast<MaxPoolOp>(op);
  return call(op, l, Kernel::MaxPool, geometry(o, o.getInput(), o.getResult()), {o.getInput()},
              {o.getResult(), o.getIndices()}, false);
}

bool lowerMaxPoolGrad(Operation *op, Lowering &l) {
  auto o = cast<MaxPoolGradOp>(op);
  return call(op, l, Kernel::MaxPoolGrad, geometry(o, o.getResult(), o.getGrad()),
              {o.getGrad(), o.getIndices()}, {o.getResult()}, true);
}

bool lowerAvgPool(Operation *op, Lowering &l) {
  auto o = cast<AvgPoolOp>(op);
  auto k = geometry(o, o.getInput(), o.getResult());
  k.push_back(o.getCountIncludePad());
  return call(op, l, Kernel::AvgPool, k, {o.getInput()}, {o.getResult()}, false);
}

bool lowerAvgPoolGrad(Operation *op, Lowering &l) {
  auto o = cast<AvgPoolGradOp>(op);
  auto k = geometry(o, o.getResult(), o.getGrad());
  k.push_back(o.getCountIncludePad());
  return call(op, l, Kernel::AvgPoolGrad, k, {o.getGrad()}, {o.getResult()}, true);
}

} // namespace

void registerWindowRules(RuleRegistry &r) {
  auto own = StepRule::Output::Own;
  r.steps[Im2ColOp::getOperationName()] = {lowerIm2Col, nullptr, own};
  r.steps[Col2ImOp::getOperationName()] = {lowerCol2Im, nullptr, own, always};
  r.steps[MaxPoolOp::getOperationName()] = {lowerMaxPool, nullptr, own};
  r.steps[MaxPoolGradOp::getOperationName()] = {lowerMaxPoolGrad, nullptr, own, always};
  r.steps[AvgPoolOp::getOperationName()] = {lowerAvgPool, nullptr, own};
  r.steps[AvgPoolGradOp::getOperationName()] = {lowerAvgPoolGrad, nullptr, own, always};
}

} // namespace otc
