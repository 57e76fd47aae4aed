// Recurrent layers: one call of the kernel library's lstm_*, gru_* or rnn_*
// (kernels/recurrent.h) per op, whatever the sequence length, with the
// sizes and direction in the template and the step's carries as scratch.
#include "../Rules.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

using namespace mlir;
using Kernel = otc::LibraryCall::Kernel;

namespace otc {
namespace {

/// T, B, H of a [T, B, H] hidden sequence.
std::vector<int64_t> sizes(Value hidden) {
  auto h = shapeOf(hidden);
  return {h[0], h[1], h[2]};
}

ElemType storage(Value v) {
  ElemType t = ElemType::F32;
  elemTypeOf(v.getType(), t);
  return t;
}

bool lowerLstm(Operation *op, Lowering &l) {
  auto o = cast<LstmOp>(op);
  std::vector<int64_t> c = sizes(o.getHidden());
  c.push_back(o.getReverse());
  c.push_back(o.getLens() != nullptr);
  return lowerLibraryCall(op, l, Kernel::LstmForward, c,
                          {o.getInput(), o.getRecurrence(), o.getInitialH(), o.getInitialC(),
                           o.getLens()},
                          {}, {o.getHidden(), o.getCell(), o.getGates()});
}

bool lowerLstmGrad(Operation *op, Lowering &l) {
  auto o = cast<LstmGradOp>(op);
  std::vector<int64_t> c = sizes(o.getHiddenGrad());
  c.push_back(o.getReverse());
  c.push_back(o.getLens() != nullptr);
  // The hidden state's gradient carried to the step before (the cell's is
  // carried in its initial state's gradient).
  int carry = l.scratch(ElemType::F32, {c[1], c[2]}, "lstm_carry");
  return lowerLibraryCall(op, l, Kernel::LstmBackward, c,
                          {o.getHiddenGrad(), o.getCellGrad(), o.getRecurrence(), o.getCell(),
                           o.getGates(), o.getInitialC(), o.getLens()},
                          {carry}, {o.getInputGrad(), o.getInitialHGrad(), o.getInitialCGrad()});
}

bool lowerGru(Operation *op, Lowering &l) {
  auto o = cast<GruOp>(op);
  std::vector<int64_t> c = sizes(o.getHidden());
  c.push_back(o.getReverse());
  c.push_back(o.getLinearBeforeReset());
  c.push_back(o.getLens() != nullptr);
  // A step's recurrent products, and r h as the candidate's GEMM operand.
  int acc = l.scratch(ElemType::F32, {c[1], 3 * c[2]}, "gru_products");
  int qx = l.scratch(storage(o.getInput()), {c[1], c[2]}, "gru_reset_state");
  return lowerLibraryCall(op, l, Kernel::GruForward, c,
                          {o.getInput(), o.getRecurrence(), o.getInitialH(), o.getRbias(),
                           o.getLens()},
                          {acc, qx}, {o.getHidden(), o.getGates()});
}

bool lowerGruGrad(Operation *op, Lowering &l) {
  auto o = cast<GruGradOp>(op);
  std::vector<int64_t> c = sizes(o.getHiddenGrad());
  c.push_back(o.getReverse());
  c.push_back(o.getLinearBeforeReset());
  c.push_back(o.getLens() != nullptr);
  int carry = l.scratch(ElemType::F32, {c[1], c[2]}, "gru_carry");
  int m = l.scratch(ElemType::F32, {c[1], c[2]}, "gru_candidate_grad");
  int work = l.scratch(storage(o.getHiddenGrad()), {c[1], 3 * c[2]}, "gru_gate_grads");
  return lowerLibraryCall(op, l, Kernel::GruBackward, c,
                          {o.getHiddenGrad(), o.getRecurrence(), o.getHidden(), o.getGates(),
                           o.getInitialH(), o.getLens()},
                          {carry, m, work}, {o.getInputGrad(), o.getInitialHGrad()});
}

bool lowerRnn(Operation *op, Lowering &l) {
  auto o = cast<RnnOp>(op);
  std::vector<int64_t> c = sizes(o.getHidden());
  c.push_back(o.getReverse());
  c.push_back(int64_t(o.getActivation()));
  c.push_back(o.getLens() != nullptr);
  return lowerLibraryCall(op, l, Kernel::RnnForward, c,
                          {o.getInput(), o.getRecurrence(), o.getInitialH(), o.getLens()}, {},
                          {o.getHidden(), o.getStates()});
}

bool lowerRnnGrad(Operation *op, Lowering &l) {
  auto o = cast<RnnGradOp>(op);
  std::vector<int64_t> c = sizes(o.getHiddenGrad());
  c.push_back(o.getReverse());
  c.push_back(int64_t(o.getActivation()));
  c.push_back(o.getLens() != nullptr);
  int carry = l.scratch(ElemType::F32, {c[1], c[2]}, "rnn_carry");
  return lowerLibraryCall(op, l, Kernel::RnnBackward, c,
                          {o.getHiddenGrad(), o.getRecurrence(), o.getStates(), o.getLens()},
                          {carry},
                          {o.getInputGrad(), o.getInitialHGrad()});
}

} // namespace

void registerRecurrentRules(RuleRegistry &r) {
  auto own = StepRule::Output::Own;
  r.steps[LstmOp::getOperationName()] = {lowerLstm, nullptr, own};
  r.steps[LstmGradOp::getOperationName()] = {lowerLstmGrad, nullptr, own};
  r.steps[GruOp::getOperationName()] = {lowerGru, nullptr, own};
  r.steps[GruGradOp::getOperationName()] = {lowerGruGrad, nullptr, own};
  r.steps[RnnOp::getOperationName()] = {lowerRnn, nullptr, own};
  r.steps[RnnGradOp::getOperationName()] = {lowerRnnGrad, nullptr, own};
}

} // namespace otc
