// A training run's checkpoint: one file, DIR/checkpoint.otc, replaced
// atomically, holding everything the run needs to continue bit for bit.
#ifndef OTC_RUNTIME_CHECKPOINT_H
#define OTC_RUNTIME_CHECKPOINT_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace otc {

struct Checkpoint {
  /// What the run must agree on to continue it: the model's fingerprint and
  /// every option that shapes the trajectory, as text ("lr" -> "0.001").
  std::map<std::string, std::string> config;
  /// Where the run is: the next window, optimizer steps taken and skipped,
  /// the loss scaler, the first window's loss (for the final report).
  int64_t nextStep = 0, updates = 0, skipped = 0;
  float scale = 1;
  int64_t goodSteps = 0, hysteresisLeft = 0;
  double firstLoss = 0;
  /// Float32 tensors by name: "value/P", "m/P", "v/P".
  std::map<std::string, std::vector<float>> tensors;
};

/// The checkpoint file in `dir`.
std::string checkpointFile(const std::string &dir);

/// Writes `c` to checkpointFile(dir) through replaceFile (creating `dir` if
/// needed); throws Fatal on failure.
void saveCheckpoint(const std::string &dir, const Checkpoint &c);

/// Reads checkpointFile(dir); throws Fatal naming the file on a missing,
/// truncated or foreign file.
Checkpoint loadCheckpoint(const std::string &dir);

} // namespace otc

#endif
