// Steps moved to where their inputs are ready, after the program's steps
// are made: a small elementwise step that reads a Reduce step's results
// joins that step's epilogue (one launch fewer: BatchNorm's running
// statistics), and an accumulate into a gradient buffer runs right after
// the step that computed its addend, not where the accumulation pass left
// it (the end of the backward: a convolution's filter gradient, from
// cuDNN in 16 bits). Its temporary is freed there, and the gradient is
// final there, so a data-parallel bucket can start its all-reduce.
#include "Lowering.h"
#include "ReduceSteps.h"

#include "llvm/ADT/STLExtras.h"

#include <cstdlib>
#include <string>

namespace otc {
namespace {

bool meets(const std::vector<int> &a, const std::vector<int> &b) {
  return llvm::any_of(a, [&](int x) { return llvm::is_contained(b, x); });
}

/// The last step before `j` that writes what step j reads or writes, or -1.
int lastWriterBefore(const std::deque<Step> &steps, size_t j) {
  std::vector<int> touched = stepBuffers(steps[j]);
  for (size_t i = j; i-- > 0;)
    if (meets(stepWrites(steps[i]), touched))
      return int(i);
  return -1;
}

/// Whether no step strictly between i and j touches what step j writes.
bool clearBetween(const std::deque<Step> &steps, size_t i, size_t j) {
  std::vector<int> writes = stepWrites(steps[j]);
  for (size_t k = i + 1; k < j; ++k)
    if (meets(stepBuffers(steps[k]), writes))
      return false;
  return true;
}

/// OTC_MOVE_STEPS=0 leaves every step where lowering put it: the test that
/// moving them changes no bits.
bool moving() {
  const char *env = std::getenv("OTC_MOVE_STEPS");
  return !env || std::string(env) != "0";
}

} // namespace

void Lowering::foldEpilogues() {
  if (!moving())
    return;
  auto &steps = prog->steps;
  for (size_t j = 0; j < steps.size(); ++j) {
    if (steps[j].kind != Step::Elementwise)
      continue;
    int w = lastWriterBefore(steps, j);
    if (w < 0 || !foldsIntoReduce(*prog, steps[size_t(w)], steps[j]) ||
        !clearBetween(steps, size_t(w), j))
      continue;
    size_t i = size_t(w);
    // j's buffers now live from i's position (what j wrote, from there).
    spanBuffers(stepBuffers(steps[j]), stepAt[i], stepAt[j]);
    foldIntoReduce(steps[i], steps[j]);
    steps.erase(steps.begin() + long(j));
    stepAt.erase(stepAt.begin() + long(j));
    --j;
  }
}

void Lowering::hoistAccumulates() {
  if (!moving())
    return;
  auto &steps = prog->steps;
  auto arena = [&](int b) { return prog->buffers[size_t(b)].place == Buffer::Place::Arena; };
  for (size_t j = 0; j < steps.size(); ++j) {
    const Step &s = steps[j];
    if (s.kind != Step::Elementwise || s.origin != "otc.accumulate" ||
        llvm::any_of(stepWrites(s), arena))
      continue;
    int w = lastWriterBefore(steps, j);
    if (w < 0 || size_t(w) + 1 == j || !clearBetween(steps, size_t(w), j))
      continue;
    int64_t was = stepAt[j], at = stepAt[size_t(w)];
    Step moved = std::move(steps[j]);
    steps.erase(steps.begin() + long(j));
    stepAt.erase(stepAt.begin() + long(j));
    steps.insert(steps.begin() + w + 1, std::move(moved));
    stepAt.insert(stepAt.begin() + w + 1, at);
    // A temporary it was the last to read now dies at its new place.
    for (int b : stepBuffers(steps[size_t(w) + 1])) {
      auto it = llvm::find(intervalBuffer, b);
      if (it == intervalBuffer.end())
        continue;
      Interval &iv = intervals[size_t(it - intervalBuffer.begin())];
      int64_t end = at;
      for (size_t k = size_t(w) + 2; k < steps.size(); ++k)
        if (llvm::is_contained(stepBuffers(steps[k]), b))
          end = std::max(end, stepAt[k]);
      if (iv.end == was && end < was)
        iv.end = std::max(end, iv.begin);
    }
  }
}

} // namespace otc
