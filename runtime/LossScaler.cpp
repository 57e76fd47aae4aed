#include "LossScaler.h"

#include <algorithm>
#include <cmath>

namespace otc {

void LossScaler::update(bool overflow) {
  if (mode != Dynamic)
    return;
  if (overflow) {
    goodSteps = 0;
    if (--hysteresisLeft > 0)
      return;
    current = std::max(current * 0.5f, minScale);
    hysteresisLeft = hysteresis;
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
