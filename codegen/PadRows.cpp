// Padded rows: a row-major matrix whose rows are not a multiple of 16 bytes
// (GPT-2's 16-bit logits, [tokens, 50257]) has rows that start misaligned,
// and cuBLAS then runs its products with narrow loads: slower kernels for
// the three largest GEMMs of the step. llm.c and nanoGPT pad the vocabulary
// to 50304 in the model; torch.compile pads the matrices. otc pads the
// buffer instead: each row starts `pitch` elements after the last, the
// GEMMs take the pitch as their leading dimension, and the elementwise and
// row steps load and store through it (Lowering::leaf, Lowering::store).
// The padding is never read or written, and no value changes.
#include "Lowering.h"
#include "Rules.h"

#include "otc/Dialect/OtcDialect.h"

#include <cstdlib>
#include <string>

using namespace mlir;

namespace otc {
namespace {

/// Whether the GEMM `op` reads (operand < 2) or writes (operand < 0) a
/// value as a matrix with a leading dimension: A, B and C of a product with
/// a bias or a bias gradient as its epilogue, or none (the GELU epilogues
/// keep their preactivation dense beside C).
bool gemmMatrix(Operation *op, int operand) {
  return isa<GemmOp, GemmBiasGradOp>(op) && operand < 2;
}

} // namespace

void Lowering::padRows() {
  // OTC_PAD_ROWS=0 keeps every buffer dense: the test that padding changes
  // no value compares the two programs' runs.
  if (const char *env = std::getenv("OTC_PAD_ROWS"); env && std::string(env) == "0")
    return;
  const RuleRegistry &rules = RuleRegistry::get();
  llvm::DenseMap<int, SmallVector<Value>> valuesOf;
  for (auto [v, id] : buffers)
    valuesOf[id].push_back(v);

  // Every reader of v, through views that keep the last dim, can read rows
  // at a pitch; sets `gemm` where one is a GEMM.
  auto readersTakePitch = [&](Value v, bool &gemm) {
    SmallVector<Value> work = {v};
    while (!work.empty()) {
      Value cur = work.pop_back_val();
      if (rowViews.count(cur) || transposedViews.count(cur))
        return false;
      for (OpOperand &use : cur.getUses()) {
        Operation *user = use.getOwner();
        unsigned k = use.getOperandNumber();
        if (auto r = dyn_cast<ReshapeOp>(user)) {
          if (shapeOf(r.getResult()).back() != shapeOf(cur).back())
            return false;
          work.push_back(r.getResult());
          continue;
        }
        const StepRule *step = rules.stepRule(user);
        // A slice read in place by a library call, or a transpose read by
        // a GEMM's flag, reads the buffer dense.
        if (user->getNumResults() == 1 && (rowViews.count(user->getResult(0)) ||
                                           transposedViews.count(user->getResult(0))))
          return false;
        if (gemmMatrix(user, int(k))) {
          gemm = true;
        } else if (isa<func::ReturnOp, AccumulateOp, AssignOp>(user) ||
                   (!rules.elementwiseRule(user) &&
                    !(step && step->readsInLoop && step->readsInLoop(user, k)))) {
          return false;
        }
      }
    }
    return true;
  };

  for (auto &[id, values] : valuesOf) {
    Buffer &buf = prog->buffers[size_t(id)];
    if (buf.place != Buffer::Place::Arena || buf.lowCopy || !isFloat(buf.type) ||
        buf.shape.size() < 2)
      continue;
    // Rows narrower than 64 elements are left dense: their padding would
    // add up to a tenth of the matrix to products too small to gain.
    int64_t width = buf.shape.back(), align = 16 / byteSize(buf.type);
    if (width < 64 || width % align == 0)
      continue;
    bool ok = true, gemm = false;
    for (Value v : values) {
      // Library calls' results written into its rows (a concat's pieces).
      if (rowsWrittenFrom.count(v)) {
        ok = false;
        break;
      }
      // Written by a GEMM (its C) or by Lowering::store.
      Operation *def = v.getDefiningOp();
      const StepRule *step = def ? rules.stepRule(def) : nullptr;
      if (def && gemmMatrix(def, -1))
        gemm = true;
      else if (!def || (step && step->output != StepRule::Output::Store) ||
               (!step && !rules.elementwiseRule(def)) || shapeOf(v).back() != width)
        ok = false;
      if (!ok || !readersTakePitch(v, gemm)) {
        ok = false;
        break;
      }
    }
    if (!ok || !gemm)
      continue;
    buf.pitch = (width + align - 1) / align * align;
    auto slot = llvm::find(intervalBuffer, id);
    if (slot != intervalBuffer.end())
      intervals[size_t(slot - intervalBuffer.begin())].bytes = buf.bytes();
  }
}

} // namespace otc
