// The training executable's command line.
#ifndef OTC_RUNTIME_OPTIONS_H
#define OTC_RUNTIME_OPTIONS_H

#include "otc/kernels/optimizer.h"

#include <cstdint>
#include <string>

namespace otc {

struct TrainOptions {
  std::string data, save, log;
  int64_t steps = 0, epochs = 0, accumSteps = 1;
  int64_t threads = 0; // 0: OMP_NUM_THREADS, else all cores
  uint64_t seed = 0;   // dropout's generator
  double lr = 1e-3, weightDecay = -1, momentum = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

enum class ParseResult { Ok, Help, Error };

/// Parses and range-checks argv. On Error, `error` holds one line naming the
/// flag; on Help, `error` holds the usage text. `defaultAccumSteps` is the
/// K that otc compile's auto-fit embedded.
ParseResult parseTrainOptions(int argc, const char *const *argv, otc_optimizer kind,
                              TrainOptions &out, std::string &error,
                              int64_t defaultAccumSteps = 1);

} // namespace otc

#endif
