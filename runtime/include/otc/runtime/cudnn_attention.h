/* cuDNN's flash attention, compiled once into the CUDA runtime
 * (runtime/CudnnAttention.cpp): kernels/attention.h calls it for 16-bit
 * attention without a mask when otc was built with cuDNN (OTC_HAVE_CUDNN).
 * Each returns 1 when cuDNN ran, 0 when the caller runs its own kernels (a
 * shape cuDNN does not support, or OTC_ATTENTION=kernel). A shape runs both
 * directions on one side, so the statistics keep one layout: cuDNN's
 * log-sum-exp per query row, packed, in the first half of the buffer. */
#ifndef OTC_RUNTIME_CUDNN_ATTENTION_H
#define OTC_RUNTIME_CUDNN_ATTENTION_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { OTC_ATTENTION_F16 = 0, OTC_ATTENTION_BF16 = 1 };

/* q [b, h, t, d], k and v [b, hk, s, d], contiguous; with layout 1 the
 * sequence dim comes before the heads: q [b, t, h, d], k and v [b, s, hk, d],
 * and the (b, t) positions of q, k, v, dq, dk, dv lie pitch[0..5] elements
 * apart (0: dense), as in slices of one packed projection. */
typedef struct otc_attention_shape {
  long long b, h, hk, t, s, d;
  int causal, dtype;
  float scale;
  int layout;
  long long pitch[6];
} otc_attention_shape;

int otc_cudnn_attention_forward(const otc_attention_shape *a, const void *q, const void *k,
                                const void *v, void *out, float *stats, cudaStream_t stream);
int otc_cudnn_attention_backward(const otc_attention_shape *a, const void *dout, const void *q,
                                 const void *k, const void *v, const void *out,
                                 const float *stats, void *dq, void *dk, void *dv,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
