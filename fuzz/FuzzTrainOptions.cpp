// argv -> the training executable's option parser. The input is split at
// NUL bytes into arguments; every optimizer kind parses them.
#include "Options.h"
#include "otc/runtime/limits.h"

#include <cmath>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> args = {"train"};
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += char(data[i]);
    }
  }
  args.push_back(cur);
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  for (int k = 0; k <= OTC_ADAMW8BIT; ++k) {
    otc::TrainOptions o;
    std::string error;
    auto r = otc::parseTrainOptions(int(argv.size()), argv.data(),
                                    static_cast<otc_optimizer>(k), o, error);
    if (r == otc::ParseResult::Ok) {
      // What the runtime relies on after a successful parse.
      bool ok = (o.data.empty() != o.tokens.empty()) && (o.steps > 0) != (o.epochs > 0) && o.accumSteps >= 1 &&
                std::isfinite(o.lr) && o.lr >= 0 && o.beta1 >= 0 && o.beta1 < 1 &&
                o.beta2 >= 0 && o.beta2 < 1 && o.eps >= 0 && o.weightDecay >= 0 &&
                o.momentum >= 0 && o.steps <= OTC_MAX_MICRO_BATCHES / o.accumSteps;
      if (!ok)
        std::abort();
    } else if (error.empty()) {
      std::abort();
    }
  }
  return 0;
}
