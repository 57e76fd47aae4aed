// Convolution's im2col and pooling: geometry checks and gradients.
#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {

int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin,
                         int64_t padEnd, int64_t dilation, bool ceil) {
  int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0 || stride <= 0)
    return 0;
  int64_t out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

std::string windowGeometry(ArrayRef<int64_t> input, ArrayRef<int64_t> kernel,
                           ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                           ArrayRef<int64_t> dilations, int64_t oh, int64_t ow,
                           WindowGeometry &g) {
  if (input.size() != 4)
    return "the input must be N x C x H x W";
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    return "kernel, strides and dilations need 2 entries and pads 4";
  for (int d = 0; d < 2; ++d)
    if (kernel[d] < 1 || strides[d] < 1 || dilations[d] < 1)
      return "kernel sizes, strides and dilations must be positive";
  for (int64_t p : pads)
    if (p < 0)
      return "pads must not be negative";
  g = {input[0], input[1], input[2], input[3], kernel[0], kernel[1], oh, ow,
       strides[0], strides[1], pads[0], pads[1], pads[2], pads[3], dilations[0], dilations[1]};
  int64_t sizes[2] = {oh, ow};
  for (int d = 0; d < 2; ++d) {
    int64_t in = input[2 + d];
    int64_t lo = windowOutputSize(in, kernel[d], strides[d], pads[d], pads[d + 2], dilations[d], false);
    int64_t hi = windowOutputSize(in, kernel[d], strides[d], pads[d], pads[d + 2], dilations[d], true);
    if (lo < 1)
      return "the kernel does not fit in the padded input";
    if (sizes[d] != lo && sizes[d] != hi)
      return "output size " + std::to_string(sizes[d]) + " does not follow from the geometry (" +
             std::to_string(lo) + (hi != lo ? " or " + std::to_string(hi) : "") + ")";
  }
  return "";
}

namespace {

/// Verifies a window op whose input (or result, for gradients) is `image`
/// and whose output is `out`: [N, C, OH, OW], or im2col's columns.
template <class OpTy>
LogicalResult verifyWindow(OpTy op, RankedTensorType image, RankedTensorType out, bool columns) {
  if (image.getRank() != 4)
    return op.emitOpError("needs an N x C x H x W image, not ") << image;
  ArrayRef<int64_t> x = image.getShape(), y = out.getShape();
  size_t rank = columns ? 6 : 4;
  if (y.size() != rank)
    return op.emitOpError("output ") << out << " needs rank " << rank;
  int64_t oh = y[rank - 2], ow = y[rank - 1];
  WindowGeometry g;
  std::string why = windowGeometry(x, op.getKernel(), op.getStrides(), op.getPads(),
                                   op.getDilations(), oh, ow, g);
  if (!why.empty())
    return op.emitOpError(why);
  SmallVector<int64_t> want = columns ? SmallVector<int64_t>{g.c, g.kh, g.kw, g.n, oh, ow}
                                      : SmallVector<int64_t>{g.n, g.c, oh, ow};
  if (y != ArrayRef<int64_t>(want))
    return op.emitOpError("output ") << out << " does not match the input " << image;
  if (image.getElementType() != out.getElementType())
    return op.emitOpError("input and output element types differ");
  return success();
}

/// Verifies a convolution (or one of its gradients) of `image` [N, C, H, W]
/// by `weight` [M, C/G, KH, KW] into `out` [N, M, OH, OW].
template <class OpTy>
LogicalResult verifyConv(OpTy op, RankedTensorType image, RankedTensorType weight,
                         RankedTensorType out) {
  if (image.getRank() != 4 || weight.getRank() != 4 || out.getRank() != 4)
    return op.emitOpError("needs an N x C x H x W image, an M x C/G x KH x KW weight and an "
                          "N x M x OH x OW output");
  ArrayRef<int64_t> x = image.getShape(), w = weight.getShape(), y = out.getShape();
  int64_t groups = op.getGroups();
  if (groups < 1 || x[1] % groups != 0 || w[0] % groups != 0 || w[1] * groups != x[1])
    return op.emitOpError("groups ") << groups << " do not split " << x[1]
                                     << " input channels and " << w[0]
                                     << " filters of " << w[1] << " channels";
  if (op.getKernel() != w.drop_front(2))
    return op.emitOpError("kernel does not match the weight's KH x KW");
  WindowGeometry g;
  std::string why = windowGeometry(x, op.getKernel(), op.getStrides(), op.getPads(),
                                   op.getDilations(), y[2], y[3], g);
  if (!why.empty())
    return op.emitOpError(why);
  if (y[0] != x[0] || y[1] != w[0])
    return op.emitOpError("output ") << out << " does not match the input " << image
                                     << " and weight " << weight;
  if (image.getElementType() != out.getElementType() ||
      weight.getElementType() != out.getElementType())
    return op.emitOpError("input, weight and output element types differ");
  return success();
}

template <class OpTy>
LogicalResult verifyAvg(OpTy op) {
  if (llvm::any_of(op.getDilations(), [](int64_t d) { return d != 1; }))
    return op.emitOpError("average pooling has no dilations");
  return success();
}

} // namespace

LogicalResult Im2ColOp::verify() {
  return verifyWindow(*this, tensorType(getInput()), tensorType(getResult()), true);
}

LogicalResult Col2ImOp::verify() {
  return verifyWindow(*this, tensorType(getResult()), tensorType(getGrad()), true);
}

LogicalResult Im2ColOp::buildGradients(OpBuilder &b, ValueRange dy,
                                       SmallVectorImpl<Value> &grads) {
  grads.push_back(Col2ImOp::create(b, getLoc(), getInput().getType(), dy[0], getKernelAttr(),
                                   getStridesAttr(), getPadsAttr(), getDilationsAttr()));
  return success();
}

LogicalResult Col2ImOp::buildGradients(OpBuilder &b, ValueRange dy,
                                       SmallVectorImpl<Value> &grads) {
  grads.push_back(Im2ColOp::create(b, getLoc(), getGrad().getType(), dy[0], getKernelAttr(),
                                   getStridesAttr(), getPadsAttr(), getDilationsAttr()));
  return success();
}

LogicalResult ConvOp::verify() {
  return verifyConv(*this, tensorType(getInput()), tensorType(getWeight()),
                    tensorType(getResult()));
}

LogicalResult ConvDataGradOp::verify() {
  return verifyConv(*this, tensorType(getResult()), tensorType(getWeight()),
                    tensorType(getGrad()));
}

LogicalResult ConvFilterGradOp::verify() {
  return verifyConv(*this, tensorType(getInput()), tensorType(getResult()),
                    tensorType(getGrad()));
}

LogicalResult ConvOp::buildGradients(OpBuilder &b, ValueRange dy, SmallVectorImpl<Value> &grads) {
  auto k = getKernelAttr(), s = getStridesAttr(), p = getPadsAttr(), d = getDilationsAttr();
  auto g = getGroupsAttr();
  grads.push_back(ConvDataGradOp::create(b, getLoc(), getInput().getType(), dy[0], getWeight(),
                                         k, s, p, d, g));
  grads.push_back(ConvFilterGradOp::create(b, getLoc(), getWeight().getType(), dy[0], getInput(),
                                           k, s, p, d, g));
  return success();
}

LogicalResult MaxPoolOp::verify() {
  if (getIndices().getType().getShape() != tensorType(getResult()).getShape())
    return emitOpError("indices and result shapes differ");
  return verifyWindow(*this, tensorType(getInput()), tensorType(getResult()), false);
}

LogicalResult MaxPoolGradOp::verify() {
  if (getIndices().getType().getShape() != tensorType(getGrad()).getShape())
    return emitOpError("indices and gradient shapes differ");
  return verifyWindow(*this, tensorType(getResult()), tensorType(getGrad()), false);
}

LogicalResult MaxPoolOp::buildGradients(OpBuilder &b, ValueRange dy,
                                        SmallVectorImpl<Value> &grads) {
  if (!dy[0]) { // only the indices were used: no gradient flows
    grads.push_back(nullptr);
    return success();
  }
  grads.push_back(MaxPoolGradOp::create(b, getLoc(), getInput().getType(), dy[0], getIndices(),
                                        getKernelAttr(), getStridesAttr(), getPadsAttr(),
                                        getDilationsAttr()));
  return success();
}

LogicalResult AvgPoolOp::verify() {
  if (failed(verifyAvg(*this)))
    return failure();
  return verifyWindow(*this, tensorType(getInput()), tensorType(getResult()), false);
}

LogicalResult AvgPoolGradOp::verify() {
  if (failed(verifyAvg(*this)))
    return failure();
  return verifyWindow(*this, tensorType(getResult()), tensorType(getGrad()), false);
}

LogicalResult AvgPoolOp::buildGradients(OpBuilder &b, ValueRange dy,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(AvgPoolGradOp::create(b, getLoc(), getInput().getType(), dy[0],
                                        getKernelAttr(), getStridesAttr(), getPadsAttr(),
                                        getDilationsAttr(), getCountIncludePadAttr()));
  return success();
}

} // namespace otc
