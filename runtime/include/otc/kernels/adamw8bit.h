// Kernel library: 8-bit AdamW with bitsandbytes' semantics (AdamW8bit,
// block-wise): both moments stored as uint8 codes of the dynamic-tree maps
// (dynamic_map.h; signed for m, unsigned for v) times one float32 absmax
// per block of 2048 elements. A step dequantises a block, updates m, v and
// the parameter in float32 (the new moments, before rounding, drive the
// parameter), and requantises with the block's new absmax, each value to
// its nearest code. Tensors under the compile's min_8bit_size (4096, as
// bitsandbytes) keep float32 moments and take the plain AdamW update.
#ifndef OTC_KERNELS_ADAMW8BIT_H
#define OTC_KERNELS_ADAMW8BIT_H

#include "otc/kernels/dynamic_map.h"
#include "otc/kernels/optimizer.h"

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define OTC_Q8_HD __host__ __device__
#else
#define OTC_Q8_HD
#endif

namespace otc {

constexpr int64_t kQuantBlock = 2048;

inline int64_t quantBlocks(int64_t n) { return (n + kQuantBlock - 1) / kQuantBlock; }

/// The code of `code` (256 ascending values) nearest to `x`; a tie goes to
/// the lower code.
OTC_Q8_HD inline uint8_t nearestCode(const float *code, float x) {
  int lo = 0, hi = 255; // the first code >= x, by bisection
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (code[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo > 0 && x - code[lo - 1] <= code[lo] - x)
    --lo;
  return uint8_t(lo);
}

/// Quantises `n` values of one block to codes, scaled by their absmax
/// (returned; a block of zeros keeps absmax 0 and the code of 0).
OTC_Q8_HD inline float quantizeBlock(const float *code, const float *x, int64_t n, uint8_t *q) {
  float absmax = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    absmax = fabsf(x[i]) > absmax ? fabsf(x[i]) : absmax;
  float inv = absmax > 0.0f ? 1.0f / absmax : 0.0f;
  for (int64_t i = 0; i < n; ++i)
    q[i] = nearestCode(code, x[i] * inv);
  return absmax;
}

} // namespace otc

namespace otc_kernels {

/// One 8-bit AdamW step of `n` elements (CPU). `q1`, `q2` are the codes of
/// m and v, `absmax1`, `absmax2` one scale per block. `s` is the float32
/// AdamW step (decoupled decay, bias corrections, gradient scale).
inline void adamw8bit_update(const otc::OptimizerStep &s, float *param, const float *grad,
                             uint8_t *q1, uint8_t *q2, float *absmax1, float *absmax2,
                             void *low, int low_dtype, int64_t n) {
  float m[otc::kQuantBlock], v[otc::kQuantBlock];
  for (int64_t b = 0; b * otc::kQuantBlock < n; ++b) {
    int64_t at = b * otc::kQuantBlock;
    int64_t len = n - at < otc::kQuantBlock ? n - at : otc::kQuantBlock;
    for (int64_t i = 0; i < len; ++i) {
      m[i] = kDynamicMapSigned[q1[at + i]] * absmax1[b];
      v[i] = kDynamicMapUnsigned[q2[at + i]] * absmax2[b];
      otc::updateElementOf<OTC_ADAMW>(s, param[at + i], grad[at + i], m[i], v[i]);
    }
    absmax1[b] = otc::quantizeBlock(kDynamicMapSigned, m, len, q1 + at);
    absmax2[b] = otc::quantizeBlock(kDynamicMapUnsigned, v, len, q2 + at);
  }
  if (low)
    store_low_copy(param, low, low_dtype, n);
}

} // namespace otc_kernels

#endif
