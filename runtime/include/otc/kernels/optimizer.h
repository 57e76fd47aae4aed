// Kernel library: the optimizer update. One element's update is shared by
// the CPU loop and the CUDA kernel; the formulas and their order follow
// PyTorch's single-tensor SGD, Adam and AdamW, so float32 results agree to
// rounding. The CPU loop is instantiated in generated code for the one
// optimizer it was compiled for, threaded with the generated kernels.
#ifndef OTC_KERNELS_OPTIMIZER_H
#define OTC_KERNELS_OPTIMIZER_H

#include "otc/runtime/abi.h"
#include "otc/runtime/kernel_support.h"

#include <math.h>
#include <type_traits>

#ifdef __CUDACC__
#define OTC_UPDATE_HD __host__ __device__
#else
#define OTC_UPDATE_HD
#endif

namespace otc {


/// Per-step scalars, computed in double on the host as PyTorch does in Python.
struct OptimizerStep {
  otc_optimizer kind;
  float lr, weightDecay, momentum;
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps;
  float stepSize;      // lr / (1 - beta1^t)
  float biasCorr2Sqrt; // sqrt(1 - beta2^t)
  float decayFactor;   // 1 - lr * weight_decay, for AdamW
  float gradScale;     // 1 / loss scale (float32, as GradScaler's inv_scale), or 1
  bool firstStep;
};

/// One element's update for the optimizer `Kind`, known at compile time.
template <otc_optimizer Kind>
OTC_UPDATE_HD inline void updateElementOf(const OptimizerStep &s, float &p, float g,
                                          float &m, float &v) {
  g = g * s.gradScale; // unscaling, fused (exact when the scale is 1)
  if constexpr (Kind == OTC_SGD || Kind == OTC_MOMENTUM) {
    float d = s.weightDecay != 0.0f ? g + s.weightDecay * p : g;
    if constexpr (Kind == OTC_MOMENTUM) {
      m = s.firstStep ? d : m * s.momentum + d;
      d = m;
    }
    p = p + (-s.lr) * d;
  } else {
    if constexpr (Kind == OTC_ADAMW)
      p = p * s.decayFactor;
    else if (s.weightDecay != 0.0f)
      g = g + s.weightDecay * p;
    m = m * s.beta1 + s.oneMinusBeta1 * g;
    v = v * s.beta2 + s.oneMinusBeta2 * g * g;
    float denom = sqrtf(v) / s.biasCorr2Sqrt + s.eps;
    p = p + (-s.stepSize) * (m / denom);
  }
}

OTC_UPDATE_HD inline void updateElement(const OptimizerStep &s, float &p, float g,
                                        float &m, float &v) {
  switch (s.kind) {
  case OTC_SGD: return updateElementOf<OTC_SGD>(s, p, g, m, v);
  case OTC_MOMENTUM: return updateElementOf<OTC_MOMENTUM>(s, p, g, m, v);
  case OTC_ADAM: return updateElementOf<OTC_ADAM>(s, p, g, m, v);
  case OTC_ADAMW: return updateElementOf<OTC_ADAMW>(s, p, g, m, v);
  case OTC_ADAFACTOR: return; // not elementwise: kernels/adafactor.h
  case OTC_ADAMW8BIT: return updateElementOf<OTC_ADAMW>(s, p, g, m, v); // its float32 tensors
  }
}

} // namespace otc

namespace otc_kernels {

/// Writes the 16-bit copy (`low_dtype`, OTC_F16 or OTC_BF16) of `n` updated
/// parameters, rounded to nearest even: the per-tensor updates' last pass.
inline void store_low_copy(const float *param, void *low, int low_dtype, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (low_dtype == OTC_F16)
      otc_store(static_cast<otc_f16 *>(low) + i, param[i]);
    else
      otc_store(static_cast<otc_bf16 *>(low) + i, param[i]);
  }
}

/// The update of `n` elements, with the optimizer and the low-precision
/// copy's type (float: none) fixed at compile time so that the loop has no
/// branch on them and vectorises.
template <otc_optimizer Kind, typename Low>
void optimizer_update_to(const otc::OptimizerStep &s, float *__restrict__ param,
                         const float *__restrict__ grad, float *__restrict__ m,
                         float *__restrict__ v, Low *__restrict__ low, int64_t n) {
  // State the optimizer does not keep is not allocated (null): a local
  // stands in for it, never read.
  constexpr bool hasM = Kind != OTC_SGD, hasV = Kind == OTC_ADAM || Kind == OTC_ADAMW;
#pragma omp parallel for simd if (n >= (1 << 20))
  for (int64_t i = 0; i < n; ++i) {
    float m0 = 0.0f, v0 = 0.0f;
    otc::updateElementOf<Kind>(s, param[i], grad[i], hasM ? m[i] : m0, hasV ? v[i] : v0);
    if constexpr (!std::is_same_v<Low, float>)
      otc_store(&low[i], param[i]); // the step's 16-bit copy, rounded to nearest even
  }
}

template <otc_optimizer Kind>
void optimizer_update(const void *step, float *param, const float *grad, float *m, float *v,
                      void *low, int low_dtype, int64_t n) {
  const otc::OptimizerStep s = *static_cast<const otc::OptimizerStep *>(step);
  if (low && low_dtype == OTC_F16)
    return optimizer_update_to<Kind>(s, param, grad, m, v, static_cast<otc_f16 *>(low), n);
  if (low && low_dtype == OTC_BF16)
    return optimizer_update_to<Kind>(s, param, grad, m, v, static_cast<otc_bf16 *>(low), n);
  optimizer_update_to<Kind, float>(s, param, grad, m, v, nullptr, n);
}

} // namespace otc_kernels

#endif
