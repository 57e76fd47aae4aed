// BatchNormalization. Training mode is otc.batch_norm, whose gradient is
// composed from x and the batch statistics; it normalises with them and updates
// the running ones as PyTorch does, with the unbiased batch variance (the
// ONNX text says population variance; PyTorch-exported models expect
// PyTorch's):
//   running = running * momentum + batch * (1 - momentum)
// written back by otc.assign. Inference mode uses the running statistics,
// composed of primitives.
// Either way they are buffers, never trained.
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

#include <cmath>

using namespace mlir;

namespace otc {

LogicalResult importBatchNormalization(GraphImporter &imp) {
  const auto &node = imp.node();
  auto given = [&](int k) { return node.output_size() > k && !node.output(k).empty(); };
  // Before opset 14 training mode is told by the extra outputs.
  bool training = imp.opset() >= 14 ? imp.intAttr("training_mode", 0) != 0 : given(1);
  bool statsOut = training; // outputs 1 and 2, the updated running statistics
  training = training || imp.batchNormInTraining(); // written back all the same
  training = training && !imp.evaluating();
  if (given(3) || given(4))
    return imp.fail("the saved mean and variance outputs are not supported");
  if (imp.opset() < 9 && imp.intAttr("spatial", 1) != 1)
    return imp.fail("spatial 0 (per-activation statistics) is not supported");
  Value in[5];
  for (int k = 0; k < 5; ++k) {
    auto v = imp.input(k);
    if (failed(v))
      return failure();
    in[k] = *v;
  }
  auto type = cast<RankedTensorType>(in[0].getType());
  if (type.getRank() < 2)
    return imp.fail("the input needs a channel dim");
  int64_t c = type.getDimSize(1);
  for (int k = 1; k < 5; ++k)
    if (cast<RankedTensorType>(in[k].getType()).getShape() != ArrayRef<int64_t>{c})
      return imp.fail("scale, bias, mean and variance must have shape [" +
                      std::to_string(c) + "]");
  double eps = imp.floatAttr("epsilon", 1e-5), momentum = imp.floatAttr("momentum", 0.9);
  if (!(eps >= 0) || !std::isfinite(eps) || !(momentum >= 0 && momentum <= 1))
    return imp.fail("epsilon must be finite and at least 0, and momentum within [0, 1]");

  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  Type elem = type.getElementType();
  std::vector<int64_t> perChannel(type.getRank(), 1);
  perChannel[1] = c;
  auto channel = [&](Value v) { return reshaped(imp, v, perChannel); };
  auto constant = [&](double v) { return scalarConstant(b, loc, elem, v); };
  int64_t count = type.getNumElements() / std::max<int64_t>(c, 1);
  if (training && count < 2)
    return imp.fail("training mode needs more than one value per channel");
  Value mean, var;
  if (training) {
    // One op, whose gradient keeps x and the statistics alone; its result
    // types are inferred (statistics in float32 for 16-bit x). (Opset 15
    // lets scale and bias have a type of their own.)
    auto bn = BatchNormOp::create(b, loc, in[0], castElements(b, loc, in[1], elem),
                                  castElements(b, loc, in[2], elem), b.getF64FloatAttr(eps));
    mean = bn.getMean();
    var = bn.getVar();
    imp.define(0, bn.getResult());
  } else {
    mean = channel(in[3]);
    var = channel(in[4]);
    Value centred = SubOp::create(b, loc, type, in[0], mean);
    Value shifted = AddOp::create(b, loc, var.getType(), var, constant(eps));
    Value denom = SqrtOp::create(b, loc, var.getType(), shifted);
    Value gain = DivOp::create(b, loc, var.getType(), channel(in[1]), denom);
    Value scaled = MulOp::create(b, loc, type, centred, gain);
    imp.define(0, AddOp::create(b, loc, type, scaled, channel(in[2])).getResult());
  }
  imp.markBuffer(in[3]);
  imp.markBuffer(in[4]);
  if (!training) {
    // Evaluating a training-mode node: its statistics outputs stay as they are.
    if (statsOut && given(1))
      imp.define(1, in[3]);
    if (statsOut && given(2))
      imp.define(2, in[4]);
    return success();
  }

  // The running statistics, defined as outputs 1 and 2 and written back.
  auto statType = cast<RankedTensorType>(in[3].getType());
  auto update = [&](Value running, Value batch, double factor) -> Value {
    Value kept = MulOp::create(b, loc, statType, running, constant(momentum));
    Value flat = reshaped(imp, castElements(b, loc, batch, statType.getElementType()), {c});
    Value added = MulOp::create(b, loc, statType, flat, constant(factor * (1 - momentum)));
    Value next = AddOp::create(b, loc, statType, kept, added);
    if (imp.isParameter(running)) // statistics fed as data are not written back
      AssignOp::create(b, loc, running, next);
    return next;
  };
  imp.define(1, update(in[3], mean, 1.0));
  imp.define(2, update(in[4], var, double(count) / double(count - 1)));
  return success();
}

} // namespace otc
