// Kernel library: Adafactor (Shazeer & Stern 2018) as Hugging Face's
// transformers.optimization.Adafactor implements it, with its optional
// first moment (beta1; off by default, as HF's beta1=None). A tensor of rank >= 2 keeps, per index
// of its leading dims, a row vector and a column vector of the second
// moments of its last two dims; a lower-rank one keeps a full second
// moment. The CPU update lives here; CudaBackend.cu has the same steps as
// kernels.
#ifndef OTC_KERNELS_ADAFACTOR_H
#define OTC_KERNELS_ADAFACTOR_H

#include "otc/runtime/abi.h"
#include "otc/kernels/optimizer.h"
#include "otc/runtime/kernel_support.h"

#include <math.h>
#include <stdint.h>

namespace otc {

/// Bytes of optimizer state for one trained parameter of `shape`: none for
/// SGD; float32 m for momentum, m and v for Adam and AdamW; Adafactor's
/// float32 factors (AdafactorShape); 8-bit AdamW's two uint8 codes per
/// element and two float32 scales per block of 2048 (float32 m and v under
/// `min8bit` elements). The memory plan and the runtime's allocation both
/// count with it.
inline int64_t optimizerStateBytes(otc_optimizer o, const int64_t *shape, int rank,
                                   int64_t min8bit) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    n *= shape[i];
  switch (o) {
  case OTC_SGD: return 0;
  case OTC_MOMENTUM: return 4 * n;
  case OTC_ADAM:
  case OTC_ADAMW: return 8 * n;
  case OTC_ADAFACTOR: {
    if (rank < 2)
      return 4 * n;
    int64_t lead = 1;
    for (int i = 0; i < rank - 2; ++i)
      lead *= shape[i];
    return 4 * lead * (shape[rank - 2] + shape[rank - 1]);
  }
  case OTC_ADAMW8BIT: return n < min8bit ? 8 * n : 2 * n + 8 * ((n + 2047) / 2048);
  }
  return 0;
}

/// A parameter seen as [lead, rows, cols] (rank >= 2: factored over its
/// last two dims, as HF's exp_avg_sq_row/col), or as n elements.
struct AdafactorShape {
  bool factored;
  int64_t lead, rows, cols, n;
  static AdafactorShape of(const int64_t *shape, int rank) {
    AdafactorShape s{rank >= 2, 1, 1, 1, 1};
    for (int i = 0; i < rank; ++i)
      s.n *= shape[i];
    if (s.factored) {
      for (int i = 0; i < rank - 2; ++i)
        s.lead *= shape[i];
      s.rows = shape[rank - 2], s.cols = shape[rank - 1];
    }
    return s;
  }
};

/// One step's scalars, from the host in double as HF computes them in
/// Python: the relative step size (--lr, or HF's relative_step), beta2t =
/// 1 - t^decay_rate, and the gradient scale (1 / loss scale, times the
/// clip_grad_norm_ coefficient).
struct AdafactorStep {
  float relStep;      // lr before scale_parameter
  bool scaleParameter;
  float eps1, eps2;   // HF's eps = (1e-30, 1e-3)
  float beta2t, oneMinusBeta2t;
  float clipThreshold;
  float weightDecay;
  float gradScale;
  float beta1; // the first moment's decay, when the update keeps one
};

} // namespace otc

namespace otc_kernels {

/// Adafactor's update of one parameter on the CPU, in HF's order: the step
/// size (times max(eps2, RMS(p)) with scale_parameter), the factored (or
/// full) second moment of g^2 + eps1, the update g / sqrt(v-hat), clipped
/// to RMS 1 (clip_threshold), scaled by the step size; with `exp_avg`
/// (not null), the update's moving average exp_avg = beta1 exp_avg +
/// (1 - beta1) update replaces it; decoupled weight decay; then p -=
/// update. `row` and `col` are the factors (or `col` null and `row` the
/// full moment); `low`, when not null, receives the new values in
/// `low_dtype`. Sums are in double.
inline void adafactor_update(const otc::AdafactorStep &s, const otc::AdafactorShape &sh,
                             float *param, const float *grad, float *row, float *col,
                             float *exp_avg, void *low, int low_dtype) {
  // HF: exp_avg.mul_(beta1).add_(update, alpha=1 - beta1).
  auto averaged = [&](int64_t k, float u) {
    if (!exp_avg)
      return u;
    return exp_avg[k] = exp_avg[k] * s.beta1 + u * (1.0f - s.beta1);
  };
  float lr = s.relStep;
  if (s.scaleParameter) {
    double sq = 0;
    for (int64_t i = 0; i < sh.n; ++i)
      sq += double(param[i]) * param[i];
    float rms = float(sqrt(sq) / sqrt(double(sh.n)));
    lr = (rms > s.eps2 ? rms : s.eps2) * s.relStep;
  }
  auto g = [&](int64_t i) { return grad[i] * s.gradScale; };
  // The second moments, then the update's sum of squares for the clip.
  double usq = 0;
  if (sh.factored) {
    const int64_t R = sh.rows, C = sh.cols;
    for (int64_t b = 0; b < sh.lead; ++b) {
      const int64_t base = b * R * C;
      float *r = row + b * R, *c = col + b * C;
      for (int64_t i = 0; i < R; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < C; ++j) {
          float x = g(base + i * C + j);
          sum += double(x * x + s.eps1);
        }
        r[i] = r[i] * s.beta2t + float(sum / double(C)) * s.oneMinusBeta2t;
      }
      for (int64_t j = 0; j < C; ++j) {
        double sum = 0;
        for (int64_t i = 0; i < R; ++i) {
          float x = g(base + i * C + j);
          sum += double(x * x + s.eps1);
        }
        c[j] = c[j] * s.beta2t + float(sum / double(R)) * s.oneMinusBeta2t;
      }
    }
    auto update = [&](int64_t b, int64_t i, int64_t j, float rowMean) {
      float rf = 1.0f / sqrtf(row[b * R + i] / rowMean);
      float cf = 1.0f / sqrtf(col[b * C + j]);
      return rf * cf * g(b * R * C + i * C + j);
    };
    for (int pass = 0; pass < 2; ++pass) {
      float clipDiv = 1.0f;
      if (pass == 1) {
        float rms = float(sqrt(usq) / sqrt(double(sh.n)));
        clipDiv = rms / s.clipThreshold > 1.0f ? rms / s.clipThreshold : 1.0f;
      }
      for (int64_t b = 0; b < sh.lead; ++b) {
        double rsum = 0;
        for (int64_t i = 0; i < R; ++i)
          rsum += row[b * R + i];
        float rowMean = float(rsum / double(R));
        for (int64_t i = 0; i < R; ++i)
          for (int64_t j = 0; j < C; ++j) {
            float u = update(b, i, j, rowMean);
            int64_t k = b * R * C + i * C + j;
            if (pass == 0) {
              usq += double(u) * u;
            } else {
              u = averaged(k, u / clipDiv * lr);
              float p = param[k];
              if (s.weightDecay != 0.0f)
                p = p + p * (-s.weightDecay * lr);
              param[k] = p - u;
            }
          }
      }
    }
  } else {
    for (int64_t i = 0; i < sh.n; ++i) {
      float x = g(i);
      row[i] = row[i] * s.beta2t + (x * x + s.eps1) * s.oneMinusBeta2t;
      float u = (1.0f / sqrtf(row[i])) * x;
      usq += double(u) * u;
    }
    float rms = float(sqrt(usq) / sqrt(double(sh.n)));
    float clipDiv = rms / s.clipThreshold > 1.0f ? rms / s.clipThreshold : 1.0f;
    for (int64_t i = 0; i < sh.n; ++i) {
      float u = averaged(i, (1.0f / sqrtf(row[i])) * g(i) / clipDiv * lr);
      float p = param[i];
      if (s.weightDecay != 0.0f)
        p = p + p * (-s.weightDecay * lr);
      param[i] = p - u;
    }
  }
  if (low)
    store_low_copy(param, low, low_dtype, sh.n);
}

} // namespace otc_kernels

#endif
