// train --profile FILE: how long each step of the generated program takes
// (per micro-batch, on the device's clock), and the optimizer update, set
// against the bytes each must move and the FLOPs it does. The first
// micro-batch and update are warm-up (library plans, caches) and are left
// out when there are more. Rank 0 writes the JSON and prints a summary.
#ifndef OTC_RUNTIME_PROFILE_H
#define OTC_RUNTIME_PROFILE_H

#include "otc/runtime/abi.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace otc {

class Profile {
public:
  explicit Profile(const otc_program &prog) : prog(prog) {}
  /// One micro-batch: marks[k] the seconds at which step k began (since
  /// step 0 did), marks[num_steps] when the last ended.
  void addMicroBatch(const std::vector<double> &marks);
  /// One optimizer update of `seconds`, which must move `bytes` at least
  /// (0: not known).
  void addUpdate(double seconds, int64_t bytes);
  int64_t microBatches() const { return int64_t(steps.size()); }
  /// Writes the JSON through replaceFile; false with `error`.
  bool write(const std::string &path, const std::string &device, double copyBytesPerSecond,
             std::string &error) const;
  /// The time by op, largest first, against the copy bandwidth.
  void print(FILE *out, double copyBytesPerSecond) const;

private:
  /// Per step of the program, its median seconds over the timed
  /// micro-batches; and the median micro-batch.
  std::vector<double> medians(double &microBatch) const;
  double medianUpdate() const;
  const otc_program &prog;
  std::vector<std::vector<double>> steps; // per micro-batch, per step: seconds
  std::vector<double> totals;             // per micro-batch: seconds
  std::vector<double> updates;
  int64_t updateBytes = 0;
};

} // namespace otc

#endif
