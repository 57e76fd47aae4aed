// The loss scale of a training run: static, or dynamic with PyTorch
// GradScaler's rules (and DeepSpeed's hysteresis and minimum scale).
#ifndef OTC_RUNTIME_LOSSSCALER_H
#define OTC_RUNTIME_LOSSSCALER_H

#include "otc/runtime/abi.h"

#include <cstdint>

namespace otc {

class LossScaler {
public:
  LossScaler(otc_loss_scale_mode mode, double initScale, int64_t window, int64_t hysteresis,
             double minScale)
      : mode(mode), current(mode == OTC_LOSS_SCALE_NONE ? 1.0f : float(initScale)), window(window),
        hysteresis(hysteresis), hysteresisLeft(hysteresis), minScale(float(minScale)) {}

  bool enabled() const { return mode != OTC_LOSS_SCALE_NONE; }
  /// The scale, a float32 as GradScaler keeps it.
  float scale() const { return current; }
  /// What the update multiplies gradients by: GradScaler's inv_scale, the
  /// reciprocal in double rounded to float32.
  float invScale() const { return float(1.0 / double(current)); }

  /// After a step: an overflowing one backs the scale off (×0.5, never
  /// below the minimum; with DeepSpeed's hysteresis H the first H - 1
  /// overflows since the last growth are tolerated); `window` good steps in
  /// a row grow it (×2, if that stays finite) and restore the hysteresis.
  void update(bool overflow);

  /// What a checkpoint keeps of it.
  struct State {
    float current;
    int64_t goodSteps, hysteresisLeft;
  };
  State state() const { return {current, goodSteps, hysteresisLeft}; }
  void restore(const State &s) {
    current = s.current, goodSteps = s.goodSteps, hysteresisLeft = s.hysteresisLeft;
  }

private:
  otc_loss_scale_mode mode;
  float current;
  int64_t window, hysteresis, hysteresisLeft, goodSteps = 0;
  float minScale;
};

} // namespace otc

#endif
