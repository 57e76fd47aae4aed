// The training data: where micro-batch i of a run comes from. Arrays of
// samples (.npy per input, memory-mapped, in file order or shuffled per
// epoch) or a token stream (random windows of one flat token file), and a
// background thread that prepares the next micro-batches.
#ifndef OTC_RUNTIME_DATA_H
#define OTC_RUNTIME_DATA_H

#include "Options.h"
#include "otc/runtime/abi.h"

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace otc {

/// One micro-batch on the host, per input in its device storage layout.
struct HostBatch {
  std::vector<std::vector<char>> inputs;
  int64_t counted = 0; // labels of otc_program.token_labels not ignored
};

class DataSource {
public:
  virtual ~DataSource() = default;
  /// Samples per epoch (a token stream: the file's tokens).
  virtual int64_t samples() const = 0;
  /// Micro-batches per epoch; 0 for a stream, which has no epochs.
  virtual int64_t microBatchesPerEpoch() const = 0;
  /// Fills micro-batch `index` of the run (counted across epochs). Called
  /// from one thread at a time; throws Fatal on bad data.
  virtual void fill(int64_t index, HostBatch &out) = 0;
  /// A one-line description for the run's header.
  virtual std::string describe() const = 0;
};

/// The inputs a set of arrays feeds, in order, and how they are checked.
struct InputSet {
  std::vector<const otc_tensor_desc *> inputs;
  int64_t microBatch = 1;
  bool requireFinite = true; // without a loss scaler nothing non-finite may train
  int tokenLabels = -1;      // the input whose counted labels HostBatch counts
  /// With tokenLabels: a last partial micro-batch is filled up with copies
  /// of sample 0 whose labels are all ignored, so every sample counts once
  /// and the padding not at all (exact, where dropping would bias).
  bool padWithIgnored = false;
};

/// The training step's inputs.
InputSet trainingInputs(const otc_program &prog);

/// --data DIR: one .npy per input, checked at start as the step needs.
std::unique_ptr<DataSource> openArrays(const std::string &dir, const InputSet &set,
                                       bool shuffle, uint64_t seed);

/// --tokens FILE feeding the inputs `input` and `labels`.
std::unique_ptr<DataSource> openTokens(const TrainOptions &o, const otc_program &prog);

/// Fills units (a step's window of micro-batches) `first`, `first + 1`,
/// ... `end - 1` ahead of their use, on a thread of its own, `depth` at a
/// time.
class Prefetcher {
public:
  using Fill = std::function<void(int64_t, std::vector<HostBatch> &)>;
  Prefetcher(Fill fill, int64_t first, int64_t end, int depth = 2);
  ~Prefetcher();
  /// Unit `index`, the next in order, valid until the next call; rethrows
  /// the filler's error.
  const std::vector<HostBatch> &get(int64_t index);

private:
  void work();
  Fill fill;
  std::vector<std::vector<HostBatch>> slots;
  std::vector<int64_t> filled; // per slot: the unit it holds, or -1
  int64_t next, end, consumed;
  std::exception_ptr failure;
  bool stop = false;
  std::mutex lock;
  std::condition_variable changed;
  std::thread thread;
};

} // namespace otc

#endif
