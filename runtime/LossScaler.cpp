#include "LossScaler.h"

#include <algorithm>
#include <cmath>

namespace otc {

void LossScaler::update(bool overflow) {
  if (mode != OTC_LOSS_SCALE_DYNAMIC)
    return;
  if (overflow) {
    goodSteps = 0;
    // DeepSpeed's hysteresis: the first H - 1 overflows since the last
    // growth are tolerated, every later one halves.
    if (hysteresisLeft > 1) {
      --hysteresisLeft;
      return;
    }
    current = std::max(current * 0.5f, minScale);
    return;
  }
  if (++goodSteps < window)
    return;
  goodSteps = 0;
  hysteresisLeft = hysteresis;
  if (std::isfinite(current * 2.0f))
    current *= 2.0f;
}

} // namespace otc
