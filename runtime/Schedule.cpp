#include "Schedule.h"

#include <algorithm>
#include <cmath>

namespace otc {

double learningRate(const TrainOptions &o, int64_t taken, int64_t total) {
  double t = double(taken), w = double(o.warmupSteps);
  if (taken < o.warmupSteps)
    return o.lr * t / std::max(1.0, w);
  if (o.schedule == LrSchedule::Constant)
    return o.lr;
  double progress = (t - w) / std::max(1.0, double(total) - w);
  double factor = o.schedule == LrSchedule::Linear
                      ? std::max(0.0, 1.0 - progress)
                      : std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * progress)));
  return o.minLr + (o.lr - o.minLr) * factor;
}

} // namespace otc
