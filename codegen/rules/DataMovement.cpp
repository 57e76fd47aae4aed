// Gather: an elementwise step whose load along the gathered dim takes its
// index from the indices (a Gather node). Its gradient is a LibraryCall of
// the kernel library's deterministic scatter-add, which accumulates straight
// into the gradient buffer on later micro-batches, as a GEMM does.
#include "../Rules.h"

#include "otc/Dialect/OtcDialect.h"

using namespace mlir;

namespace otc {
namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

bool lowerGather(Operation *op, Lowering &l) {
  auto g = cast<GatherOp>(op);
  auto data = shapeOf(g.getData()), out = shapeOf(g.getResult());
  int64_t axis = g.getAxis(), m = shapeOf(g.getIndices()).size();
  int buf = l.buffer(g.getData(), op);
  if (buf < 0)
    return false;
  Step &s = l.newStep(Step::Elementwise, op, out.vec());
  NodeBuilder b(s);
  DimMap indexMap;
  for (int64_t j = 0; j < m; ++j)
    indexMap.push_back(int(axis + j));
  int index = l.expr(b, g.getIndices(), indexMap);
  if (index < 0)
    return false;
  // Data's other dims come from the result's dims around the index dims.
  std::vector<int64_t> ds = stridesOf(data), strides(out.size(), 0);
  for (int64_t d = 0; d < axis; ++d)
    strides[d] = ds[d];
  for (size_t d = axis + 1; d < data.size(); ++d)
    strides[d - 1 + m] = ds[d];
  int v = b.gather(buf, l.program().buffers[buf].type, strides, index, ds[axis], data[axis]);
  l.store(b, g.getResult(), v, identityMap(out.size()));
  return true;
}

bool lowerGatherGrad(Operation *op, Lowering &l) {
  auto g = cast<GatherGradOp>(op);
  auto out = shapeOf(g.getResult());
  int64_t axis = g.getAxis();
  int dy = l.buffer(g.getGrad(), op), idx = l.buffer(g.getIndices(), op);
  if (dy < 0 || idx < 0)
    return false;
  if (l.program().buffers[dy].type != ElemType::F32)
    return l.fail(op, "the gather gradient is implemented for float32 only");
  LibraryCall call;
  call.kernel = LibraryCall::Kernel::GatherBackward;
  call.constants = {product(out.take_front(axis)), out[axis],
                    product(shapeOf(g.getIndices())), product(out.drop_front(axis + 1))};
  int target = l.accumulatorOf(op);
  if (target >= 0) {
    call.scalars.push_back({LibraryCall::Scalar::First, 0});
  } else {
    target = l.ownResult(g.getResult(), op);
    if (target < 0)
      return false;
    call.scalars.push_back({LibraryCall::Scalar::Int, 1});
  }
  call.buffers = {dy, idx, target};
  l.newStep(Step::LibraryCall, op).call = call;
  return true;
}

/// The element offset of `starts` and the strides of stepping by `steps`
/// through a row-major tensor of shape `big`.
std::pair<int64_t, std::vector<int64_t>> sliceAccess(ArrayRef<int64_t> big,
                                                     ArrayRef<int64_t> starts,
                                                     ArrayRef<int64_t> steps) {
  std::vector<int64_t> strides = stridesOf(big);
  int64_t offset = 0;
  for (size_t d = 0; d < big.size(); ++d) {
    offset += starts[d] * strides[d];
    strides[d] *= steps[d];
  }
  return {offset, strides};
}

// A slice reads its input's buffer at an offset, with stepped strides.
bool lowerSlice(Operation *op, Lowering &l) {
  auto s = cast<SliceOp>(op);
  auto out = shapeOf(s.getResult());
  int in = l.buffer(s.getInput(), op);
  if (in < 0)
    return false;
  auto [offset, strides] = sliceAccess(shapeOf(s.getInput()), s.getStarts(), s.getSteps());
  Step &step = l.newStep(Step::Elementwise, op, out.vec());
  NodeBuilder b(step);
  int v = b.load(in, l.program().buffers[in].type, strides, offset);
  l.store(b, s.getResult(), v, identityMap(out.size()));
  return true;
}

// A slice's gradient: zeros, then the gradient stored at the slice.
bool lowerSliceGrad(Operation *op, Lowering &l) {
  auto s = cast<SliceGradOp>(op);
  auto big = shapeOf(s.getResult()), small = shapeOf(s.getGrad());
  int out = l.ownResult(s.getResult(), op);
  if (out < 0)
    return false;
  Step &zero = l.newStep(Step::Elementwise, op, big.vec());
  NodeBuilder zb(zero);
  zb.store(out, stridesOf(big), zb.constant(0.0));
  auto [offset, strides] = sliceAccess(big, s.getStarts(), s.getSteps());
  Step &place = l.newStep(Step::Elementwise, op, small.vec());
  NodeBuilder b(place);
  int g = l.expr(b, s.getGrad(), identityMap(small.size()));
  if (g < 0)
    return false;
  b.store(out, strides, g, offset);
  return true;
}

// Concat: each input copied (its producer fused in) to its place, but for
// those their producer wrote there (Lowering::rowView).
bool lowerConcat(Operation *op, Lowering &l) {
  auto c = cast<ConcatOp>(op);
  auto big = shapeOf(c.getResult());
  int out = l.ownResult(c.getResult(), op);
  if (out < 0)
    return false;
  std::vector<int64_t> strides = stridesOf(big);
  int64_t at = 0;
  for (Value v : c.getInputs()) {
    auto shape = shapeOf(v);
    if (const RowView *view = l.rowView(v); view && view->base == c.getResult()) {
      at += shape[c.getAxis()];
      continue;
    }
    Step &s = l.newStep(Step::Elementwise, op, shape.vec());
    NodeBuilder b(s);
    int x = l.expr(b, v, identityMap(shape.size()));
    if (x < 0)
      return false;
    b.store(out, strides, x, at * strides[c.getAxis()]);
    at += shape[c.getAxis()];
  }
  return true;
}

bool readsIndices(Operation *, unsigned k) { return k == 1; }
bool readsAll(Operation *, unsigned) { return true; }

} // namespace

void registerDataMovementRules(RuleRegistry &r) {
  r.steps[GatherOp::getOperationName()] = {lowerGather, readsIndices};
  auto own = StepRule::Output::Own;
  r.steps[GatherGradOp::getOperationName()] = {lowerGatherGrad, nullptr, own, always};
  r.steps[SliceOp::getOperationName()] = {lowerSlice, nullptr};
  r.steps[SliceGradOp::getOperationName()] = {lowerSliceGrad, readsAll, own};
  r.steps[ConcatOp::getOperationName()] = {lowerConcat, readsAll, own};
}

} // namespace otc
