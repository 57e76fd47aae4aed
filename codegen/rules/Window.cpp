// Convolution's im2col, convolution as one op, and pooling: calls to the
// kernel library's window kernels (kernels/window.h, kernels/conv.h),
// instantiated with the geometry. Gradients
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
/// (results of `op`). im2col and col2im take float32 alone (their GEMM's
/// columns); pooling any float type, the kernel's template deduced from
/// the buffers'.
bool call(Operation *op, Lowering &l, Kernel kernel, std::vector<int64_t> constants,
          ArrayRef<Value> inputs, ArrayRef<Value> outputs, bool gradient) {
  bool f32Only = kernel == Kernel::Im2Col || kernel == Kernel::Col2Im;
  LibraryCall c;
  c.kernel = kernel;
  c.constants = std::move(constants);
  for (Value v : inputs) {
    int b = l.buffer(v, op);
    if (b < 0)
      return false;
    if (f32Only && l.program().buffers[b].type != ElemType::F32)
      return l.fail(op, "im2col and col2im are implemented for float32 only");
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

/// A convolution's call: the window's geometry (the image `image`, the
/// output `out`), then the filters M and the groups G; any float type.
template <class OpTy>
bool convCall(OpTy o, Lowering &l, Kernel kernel, Value image, Value weight, Value out,
              ArrayRef<Value> inputs, Value result) {
  auto k = geometry(o, image, out);
  k.push_back(tensorType(weight).getShape()[0]);
  k.push_back(o.getGroups());
  return lowerLibraryCall(o, l, kernel, k, inputs, {}, {result});
}

bool lowerConv(Operation *op, Lowering &l) {
  auto o = cast<ConvOp>(op);
  return convCall(o, l, Kernel::ConvForward, o.getInput(), o.getWeight(), o.getResult(),
                  {o.getInput(), o.getWeight()}, o.getResult());
}

bool lowerConvDataGrad(Operation *op, Lowering &l) {
  auto o = cast<ConvDataGradOp>(op);
  return convCall(o, l, Kernel::ConvDataGrad, o.getResult(), o.getWeight(), o.getGrad(),
                  {o.getGrad(), o.getWeight()}, o.getResult());
}

bool lowerConvFilterGrad(Operation *op, Lowering &l) {
  auto o = cast<ConvFilterGradOp>(op);
  return convCall(o, l, Kernel::ConvFilterGrad, o.getInput(), o.getResult(), o.getGrad(),
                  {o.getGrad(), o.getInput()}, o.getResult());
}

} // namespace

void registerWindowRules(RuleRegistry &r) {
  auto own = StepRule::Output::Own;
  r.steps[Im2ColOp::getOperationName()] = {lowerIm2Col, nullptr, own};
  r.steps[Col2ImOp::getOperationName()] = {lowerCol2Im, nullptr, own, always};
  r.steps[ConvOp::getOperationName()] = {lowerConv, nullptr, own};
  r.steps[ConvDataGradOp::getOperationName()] = {lowerConvDataGrad, nullptr, own};
  r.steps[ConvFilterGradOp::getOperationName()] = {lowerConvFilterGrad, nullptr, own};
  r.steps[MaxPoolOp::getOperationName()] = {lowerMaxPool, nullptr, own};
  r.steps[MaxPoolGradOp::getOperationName()] = {lowerMaxPoolGrad, nullptr, own, always};
  r.steps[AvgPoolOp::getOperationName()] = {lowerAvgPool, nullptr, own};
  r.steps[AvgPoolGradOp::getOperationName()] = {lowerAvgPoolGrad, nullptr, own, always};
}

} // namespace otc
