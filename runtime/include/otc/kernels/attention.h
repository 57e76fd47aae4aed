// Kernel library: fused scaled dot-product attention, forward and backward
// (otc.attention, otc.attention_grad). Nothing T x S is stored: the forward
// keeps each query row's maximum m and log-sum l, from which the backward
// recomputes the probabilities exp(x - m - l) (FlashAttention's scheme; m
// and l apart, so that a row masked everywhere by -3.4e38 stays uniform).
//
// Layouts are contiguous: q [B, H, T, D], k [B, H/G, S, D], v [B, H/G, S,
// DV], out [B, H, T, DV] (with Layout 1, [B, T, H, D], [B, S, H/G, D], ...:
// the projections' layout), stats [B, H, T, 2] (m, l), delta [B, H, T]
// whatever the layout. Rows are numbered (b H + h) T + t, keys
// (b H/G + j) S + s; query_at and key_at place them. In layout 1 the (b, t)
// positions of q, k, v, dq, dk and dv may lie QP, KP, VP, DQP, DKP, DVP
// elements apart (0: dense): slices of one packed projection, read and
// written in place. Query head h reads key
// head h / G. The mask (Mask 1: i1, scores set to `fill` where false;
// Mask 2: added to the scores) is read at b MB + h MH + t MT + s MS, so any
// broadcast costs nothing. With Causal (T = S) only keys s <= t take part.
// Sums are float32 whatever Q is, in orders the kernels fix: a run's bits
// depend neither on threads nor on the host compiler's flags.
#ifndef OTC_KERNELS_ATTENTION_H
#define OTC_KERNELS_ATTENTION_H

#include "otc/runtime/kernel_support.h"

#include <math.h>
#include <type_traits>

#if defined(__CUDACC__) && defined(OTC_HAVE_CUDNN)
#include "otc/runtime/cudnn_attention.h"
#endif

#define OTC_ATTENTION                                                                     \
  long long B, long long H, long long G, long long T, long long S, long long D,           \
      long long DV, long long Causal, long long Mask, long long MB, long long MH,         \
      long long MT, long long MS, long long Layout, long long QP, long long KP, long long VP,   \
      long long DQP, long long DKP, long long DVP
#define OTC_ATTENTION_ARGS                                                                \
  B, H, G, T, S, D, DV, Causal, Mask, MB, MH, MT, MS, Layout, QP, KP, VP, DQP, DKP, DVP

namespace otc_kernels {

/// The offset of query row `row` in a tensor of rows `w` wide (q, dq: D;
/// out, dout: DV) whose (b, t) positions lie `pitch` apart (0: H w).
template <OTC_ATTENTION>
OTC_HD long long query_at(long long row, long long w, long long pitch) {
  static_assert(Layout == 1 || QP + KP + VP + DQP + DKP + DVP == 0, "pitches need layout 1");
  if constexpr (Layout == 0)
    return row * w;
  long long t = row % T, h = (row / T) % H, b = row / (T * H);
  return (b * T + t) * (pitch ? pitch : H * w) + h * w;
}

/// The offset of key row `key` (k, dk: D wide; v, dv: DV), (b, s)
/// positions `pitch` apart (0: H/G w).
template <OTC_ATTENTION>
OTC_HD long long key_at(long long key, long long w, long long pitch) {
  if constexpr (Layout == 0)
    return key * w;
  constexpr long long HK = H / G;
  long long s = key % S, j = (key / S) % HK, b = key / (S * HK);
  return (b * S + s) * (pitch ? pitch : HK * w) + j * w;
}

/// The score of query row (b, h, t) against key s, given q · k, and
/// whether an i1 mask removed it (its gradient is then 0).
template <OTC_ATTENTION, class M>
OTC_HD float attention_score(float dot, const M *mask, long long b, long long h, long long t,
                             long long s, float scale, float fill, bool &masked) {
  float x = scale * dot;
  masked = false;
  if constexpr (Mask == 2)
    x += otc_ld(mask[b * MB + h * MH + t * MT + s * MS]);
  if constexpr (Mask == 1)
    if (!mask[b * MB + h * MH + t * MT + s * MS]) {
      masked = true;
      x = fill;
    }
  return x;
}

#ifdef __CUDACC__
// A warp per row: lanes split the dot products' D and hold DV / 32 of the
// row's accumulators. Rows are query rows (forward, dq) or key rows (dk, dv).
#define OTC_LANES(n) (((n) + 31) / 32) // accumulators per lane for n columns

template <OTC_ATTENTION, class Q>
__device__ float attention_dot(const Q *a, const Q *b, long long n, int lane) {
  float sum = 0.0f;
  for (long long i = lane; i < n; i += 32)
    sum += otc_ld(a[i]) * otc_ld(b[i]);
  return otc_warp_sum(sum);
}

/// Query row `row`'s score against key s of the head it reads.
template <OTC_ATTENTION, class Q, class M>
__device__ float attention_row_score(const Q *q, const Q *k, const M *mask, long long row,
                                     long long s, int lane, float scale, float fill, bool &masked) {
  long long t = row % T, h = (row / T) % H, b = row / (T * H), key = (b * (H / G) + h / G) * S + s;
  float dot = attention_dot<OTC_ATTENTION_ARGS>(q + query_at<OTC_ATTENTION_ARGS>(row, D, QP),
                                                k + key_at<OTC_ATTENTION_ARGS>(key, D, KP), D, lane);
  return attention_score<OTC_ATTENTION_ARGS>(dot, mask, b, h, t, s, scale, fill, masked);
}

/// f(i, lane) for i in [0, count), a warp each.
template <class F>
__device__ void for_warp_rows(long long count, F f) {
  for (long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32; i < count;
       i += (long long)gridDim.x * blockDim.x / 32)
    f(i, int(threadIdx.x & 31));
}

template <OTC_ATTENTION, class Q, class M>
__global__ void attention_forward_kernel(const Q *q, const Q *k, const Q *v, const M *mask,
                                         Q *out, float *stats, float scale, float fill) {
  constexpr long long R = OTC_LANES(DV);
  for_warp_rows(B * H * T, [&](long long row, int lane) {
    long long t = row % T, h = (row / T) % H, b = row / (T * H), kv = (b * (H / G) + h / G) * S;
    float m = -INFINITY, l = 0.0f, acc[R];
    for (long long r = 0; r < R; ++r)
      acc[r] = 0.0f;
    long long end = Causal ? t + 1 : S;
    for (long long s = 0; s < end; ++s) {
      bool masked;
      float x = attention_row_score<OTC_ATTENTION_ARGS>(q, k, mask, row, s, lane, scale, fill, masked);
      float next = fmaxf(m, x);
      // Rescale what was summed against the old maximum (none yet: -inf).
      float c = m == -INFINITY ? 0.0f : expf(m - next), p = next == -INFINITY ? 0.0f : expf(x - next);
      l = l * c + p;
      for (long long r = 0; r < R; ++r) {
        long long j = lane + 32 * r;
        acc[r] = acc[r] * c + (j < DV ? p * otc_ld(v[key_at<OTC_ATTENTION_ARGS>(kv + s, DV, VP) + j]) : 0.0f);
      }
      m = next;
    }
    for (long long r = 0; r < R; ++r)
      if (lane + 32 * r < DV)
        otc_store(out + query_at<OTC_ATTENTION_ARGS>(row, DV, 0) + lane + 32 * r, acc[r] / l);
    if (lane == 0) {
      stats[2 * row] = m;
      stats[2 * row + 1] = logf(l);
    }
  });
}

/// dq per query row; also writes delta = dO · O for the key-row kernel.
template <OTC_ATTENTION, class Q, class M>
__global__ void attention_dq_kernel(const Q *dout, const Q *q, const Q *k, const Q *v,
                                    const Q *out, const float *stats, const M *mask,
                                    float *delta, Q *dq, float scale, float fill) {
  constexpr long long R = OTC_LANES(D);
  for_warp_rows(B * H * T, [&](long long row, int lane) {
    long long t = row % T, h = (row / T) % H, b = row / (T * H), kv = (b * (H / G) + h / G) * S;
    const long long o = query_at<OTC_ATTENTION_ARGS>(row, DV, 0);
    float dd = attention_dot<OTC_ATTENTION_ARGS>(dout + o, out + o, DV, lane);
    if (lane == 0)
      delta[row] = dd;
    float acc[R];
    for (long long r = 0; r < R; ++r)
      acc[r] = 0.0f;
    long long end = Causal ? t + 1 : S;
    for (long long s = 0; s < end; ++s) {
      bool masked;
      float x = attention_row_score<OTC_ATTENTION_ARGS>(q, k, mask, row, s, lane, scale, fill, masked);
      float p = expf(x - stats[2 * row] - stats[2 * row + 1]);
      float dp = attention_dot<OTC_ATTENTION_ARGS>(dout + o, v + key_at<OTC_ATTENTION_ARGS>(kv + s, DV, VP),
                                                   DV, lane);
      float ds = masked ? 0.0f : p * (dp - dd);
      for (long long r = 0; r < R; ++r)
        if (lane + 32 * r < D)
          acc[r] += ds * otc_ld(k[key_at<OTC_ATTENTION_ARGS>(kv + s, D, KP) + lane + 32 * r]);
    }
    for (long long r = 0; r < R; ++r)
      if (lane + 32 * r < D)
        otc_store(dq + query_at<OTC_ATTENTION_ARGS>(row, D, DQP) + lane + 32 * r, scale * acc[r]);
  });
}

/// dk and dv per key row, summed over the G query heads and the query rows
/// that read it, in order.
template <OTC_ATTENTION, class Q, class M>
__global__ void attention_dkv_kernel(const Q *dout, const Q *q, const Q *k, const Q *v,
                                     const float *stats, const M *mask, const float *delta,
                                     Q *dk, Q *dv, float scale, float fill) {
  constexpr long long HK = H / G, RK = OTC_LANES(D), RV = OTC_LANES(DV);
  for_warp_rows(B * HK * S, [&](long long key, int lane) {
    long long s = key % S, j = (key / S) % HK, b = key / (S * HK);
    float ak[RK], av[RV];
    for (long long r = 0; r < RK; ++r)
      ak[r] = 0.0f;
    for (long long r = 0; r < RV; ++r)
      av[r] = 0.0f;
    for (long long g = 0; g < G; ++g) {
      long long h = j * G + g;
      for (long long t = Causal ? s : 0; t < T; ++t) {
        long long row = (b * H + h) * T + t;
        bool masked;
        float x = attention_row_score<OTC_ATTENTION_ARGS>(q, k, mask, row, s, lane, scale, fill, masked);
        float p = expf(x - stats[2 * row] - stats[2 * row + 1]);
        const long long o = query_at<OTC_ATTENTION_ARGS>(row, DV, 0);
        float dp = attention_dot<OTC_ATTENTION_ARGS>(dout + o, v + key_at<OTC_ATTENTION_ARGS>(key, DV, VP),
                                                     DV, lane);
        float ds = masked ? 0.0f : p * (dp - delta[row]);
        for (long long r = 0; r < RV; ++r)
          if (lane + 32 * r < DV)
            av[r] += p * otc_ld(dout[o + lane + 32 * r]);
        for (long long r = 0; r < RK; ++r)
          if (lane + 32 * r < D)
            ak[r] += ds * otc_ld(q[query_at<OTC_ATTENTION_ARGS>(row, D, QP) + lane + 32 * r]);
      }
    }
    for (long long r = 0; r < RK; ++r)
      if (lane + 32 * r < D)
        otc_store(dk + key_at<OTC_ATTENTION_ARGS>(key, D, DKP) + lane + 32 * r, scale * ak[r]);
    for (long long r = 0; r < RV; ++r)
      if (lane + 32 * r < DV)
        otc_store(dv + key_at<OTC_ATTENTION_ARGS>(key, DV, DVP) + lane + 32 * r, av[r]);
  });
}

inline unsigned attention_blocks(long long rows) {
  long long blocks = (rows + 7) / 8; // 8 warps of 256 threads
  return (unsigned)(blocks < 65535 ? blocks : 65535);
}

template <OTC_ATTENTION, class Q, class M>
void attention_forward(const Q *q, const Q *k, const Q *v, const M *mask, Q *out, float *stats,
                       float scale, float fill, cudaStream_t stream) {
  attention_forward_kernel<OTC_ATTENTION_ARGS>
      <<<attention_blocks(B * H * T), 256, 0, stream>>>(q, k, v, mask, out, stats, scale, fill);
}

template <OTC_ATTENTION, class Q, class M>
void attention_backward(const Q *dout, const Q *q, const Q *k, const Q *v, const Q *out,
                        const float *stats, const M *mask, float *delta, Q *dq, Q *dk, Q *dv,
                        float scale, float fill, cudaStream_t stream) {
  attention_dq_kernel<OTC_ATTENTION_ARGS><<<attention_blocks(B * H * T), 256, 0, stream>>>(
      dout, q, k, v, out, stats, mask, delta, dq, scale, fill);
  attention_dkv_kernel<OTC_ATTENTION_ARGS><<<attention_blocks(B * (H / G) * S), 256, 0, stream>>>(
      dout, q, k, v, stats, mask, delta, dk, dv, scale, fill);
}

#ifdef OTC_HAVE_CUDNN
// cuDNN's flash attention takes 16-bit attention without a mask, one head
// size for keys and values, up to 128 (runtime/CudnnAttention.cpp); it
// declines a shape it does not support, which then runs the kernels above.
template <OTC_ATTENTION, class Q>
constexpr bool attention_on_cudnn() {
  return !std::is_same<Q, float>::value && Mask == 0 && D == DV && D % 8 == 0 && D <= 128;
}

template <OTC_ATTENTION, class Q>
otc_attention_shape attention_shape(float scale) {
  return {B, H, H / G, T, S, D, (int)Causal,
          std::is_same<Q, otc_bf16>::value ? OTC_ATTENTION_BF16 : OTC_ATTENTION_F16, scale,
          (int)Layout, {QP, KP, VP, DQP, DKP, DVP}};
}
#endif

// Without a mask.
template <OTC_ATTENTION, class Q>
void attention_forward(const Q *q, const Q *k, const Q *v, Q *out, float *stats, float scale,
                       float fill, cudaStream_t stream) {
#ifdef OTC_HAVE_CUDNN
  if constexpr (attention_on_cudnn<OTC_ATTENTION_ARGS, Q>()) {
    otc_attention_shape a = attention_shape<OTC_ATTENTION_ARGS, Q>(scale);
    if (otc_cudnn_attention_forward(&a, q, k, v, out, stats, stream))
      return;
  }
#endif
  attention_forward<OTC_ATTENTION_ARGS>(q, k, v, (const float *)nullptr, out, stats, scale, fill,
                                        stream);
}

template <OTC_ATTENTION, class Q>
void attention_backward(const Q *dout, const Q *q, const Q *k, const Q *v, const Q *out,
                        const float *stats, float *delta, Q *dq, Q *dk, Q *dv, float scale,
                        float fill, cudaStream_t stream) {
#ifdef OTC_HAVE_CUDNN
  if constexpr (attention_on_cudnn<OTC_ATTENTION_ARGS, Q>()) {
    otc_attention_shape a = attention_shape<OTC_ATTENTION_ARGS, Q>(scale);
    if (otc_cudnn_attention_backward(&a, dout, q, k, v, out, stats, dq, dk, dv, stream))
      return;
  }
#endif
  attention_backward<OTC_ATTENTION_ARGS>(dout, q, k, v, out, stats, (const float *)nullptr, delta,
                                         dq, dk, dv, scale, fill, stream);
}
#else
/// a . b over n elements summed in eight lanes (element d into lane d mod 8
/// in order, then the lanes pairwise): an order the kernel fixes, so the
/// vector width of -march, the optimisation level and the compiler leave
/// the bits alone, as an `omp simd reduction` does not. The lanes are
/// independent, so the loop still vectorises.
template <class Q>
inline float dot8(const float *a, const Q *b, long long n) {
  float l[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  long long d = 0;
  for (; d + 8 <= n; d += 8)
    for (int j = 0; j < 8; ++j)
      l[j] += a[d + j] * otc_ld(b[d + j]);
  for (int j = 0; d + j < n; ++j)
    l[j] += a[d + j] * otc_ld(b[d + j]);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// A query row per iteration: the row's scores in x[S], its output summed in
// acc[DV]. The probabilities are normalised before the product with v, as
// softmax then a matmul would.
template <OTC_ATTENTION, class Q, class M>
void attention_forward(const Q *q, const Q *k, const Q *v, const M *mask, Q *out, float *stats,
                       float scale, float fill) {
  constexpr long long HK = H / G;
#pragma omp parallel if (B * H * T * S * (D + DV) >= (1 << 16))
  {
    float *x = new float[S], *acc = new float[DV], *qr = new float[D];
#pragma omp for
    for (long long row = 0; row < B * H * T; ++row) {
      long long t = row % T, h = (row / T) % H, b = row / (T * H), kv = (b * HK + h / G) * S;
      for (long long d = 0; d < D; ++d)
        qr[d] = otc_ld(q[query_at<OTC_ATTENTION_ARGS>(row, D, QP) + d]);
      long long end = Causal ? t + 1 : S;
      float m = -INFINITY;
      for (long long s = 0; s < end; ++s) {
        const Q *kr = k + key_at<OTC_ATTENTION_ARGS>(kv + s, D, KP);
        float dot = dot8(qr, kr, D);
        bool masked;
        x[s] = attention_score<OTC_ATTENTION_ARGS>(dot, mask, b, h, t, s, scale, fill, masked);
        m = x[s] > m ? x[s] : m;
      }
      float sum = 0.0f;
      for (long long s = 0; s < end; ++s) {
        x[s] = expf(x[s] - m);
        sum += x[s];
      }
      for (long long j = 0; j < DV; ++j)
        acc[j] = 0.0f;
      for (long long s = 0; s < end; ++s) {
        const Q *vr = v + key_at<OTC_ATTENTION_ARGS>(kv + s, DV, VP);
        float p = x[s] / sum;
#pragma omp simd
        for (long long j = 0; j < DV; ++j)
          acc[j] += p * otc_ld(vr[j]);
      }
      for (long long j = 0; j < DV; ++j)
        otc_store(out + query_at<OTC_ATTENTION_ARGS>(row, DV, 0) + j, acc[j]);
      stats[2 * row] = m;
      stats[2 * row + 1] = logf(sum);
    }
    delete[] x;
    delete[] acc;
    delete[] qr;
  }
}

// A key/value head per iteration, which owns its dk and dv: the G query
// heads that read it add into them in order, so no two threads share one.
template <OTC_ATTENTION, class Q, class M>
void attention_backward(const Q *dout, const Q *q, const Q *k, const Q *v, const Q *out,
                        const float *stats, const M *mask, float *delta, Q *dq, Q *dk, Q *dv,
                        float scale, float fill) {
  constexpr long long HK = H / G;
#pragma omp parallel if (B * H * T * S * (D + DV) >= (1 << 16))
  {
    float *ak = new float[S * D], *av = new float[S * DV], *aq = new float[D];
    float *qr = new float[D], *go = new float[DV];
#pragma omp for
    for (long long head = 0; head < B * HK; ++head) {
      long long b = head / HK, j = head % HK;
      for (long long i = 0; i < S * D; ++i)
        ak[i] = 0.0f;
      for (long long i = 0; i < S * DV; ++i)
        av[i] = 0.0f;
      for (long long g = 0; g < G; ++g) {
        long long h = j * G + g;
        for (long long t = 0; t < T; ++t) {
          long long row = (b * H + h) * T + t;
          const long long qo = query_at<OTC_ATTENTION_ARGS>(row, D, QP),
                          oo = query_at<OTC_ATTENTION_ARGS>(row, DV, 0);
          for (long long d = 0; d < D; ++d) {
            qr[d] = otc_ld(q[qo + d]);
            aq[d] = 0.0f;
          }
          float dd = 0.0f;
          for (long long c = 0; c < DV; ++c) {
            go[c] = otc_ld(dout[oo + c]);
            dd += go[c] * otc_ld(out[oo + c]);
          }
          delta[row] = dd;
          long long end = Causal ? t + 1 : S;
          for (long long s = 0; s < end; ++s) {
            const Q *kr = k + key_at<OTC_ATTENTION_ARGS>(head * S + s, D, KP),
                    *vr = v + key_at<OTC_ATTENTION_ARGS>(head * S + s, DV, VP);
            float dot = dot8(qr, kr, D), dp = dot8(go, vr, DV);
            bool masked;
            float x = attention_score<OTC_ATTENTION_ARGS>(dot, mask, b, h, t, s, scale, fill, masked);
            float p = expf(x - stats[2 * row] - stats[2 * row + 1]);
            float ds = masked ? 0.0f : p * (dp - dd);
            float *vs = av + s * DV, *ks = ak + s * D;
#pragma omp simd
            for (long long c = 0; c < DV; ++c)
              vs[c] += p * go[c];
#pragma omp simd
            for (long long d = 0; d < D; ++d) {
              aq[d] += ds * otc_ld(kr[d]);
              ks[d] += ds * qr[d];
            }
          }
          const long long dqo = query_at<OTC_ATTENTION_ARGS>(row, D, DQP);
          for (long long d = 0; d < D; ++d)
            otc_store(dq + dqo + d, scale * aq[d]);
        }
      }
      for (long long s = 0; s < S; ++s) {
        Q *ks = dk + key_at<OTC_ATTENTION_ARGS>(head * S + s, D, DKP),
          *vs = dv + key_at<OTC_ATTENTION_ARGS>(head * S + s, DV, DVP);
        for (long long d = 0; d < D; ++d)
          otc_store(ks + d, scale * ak[s * D + d]);
        for (long long c = 0; c < DV; ++c)
          otc_store(vs + c, av[s * DV + c]);
      }
    }
    delete[] ak;
    delete[] av;
    delete[] aq;
    delete[] qr;
    delete[] go;
  }
}

// Without a mask.
template <OTC_ATTENTION, class Q>
void attention_forward(const Q *q, const Q *k, const Q *v, Q *out, float *stats, float scale,
                       float fill) {
  attention_forward<OTC_ATTENTION_ARGS>(q, k, v, (const float *)nullptr, out, stats, scale, fill);
}

template <OTC_ATTENTION, class Q>
void attention_backward(const Q *dout, const Q *q, const Q *k, const Q *v, const Q *out,
                        const float *stats, float *delta, Q *dq, Q *dk, Q *dv, float scale,
                        float fill) {
  attention_backward<OTC_ATTENTION_ARGS>(dout, q, k, v, out, stats, (const float *)nullptr, delta,
                                         dq, dk, dv, scale, fill);
}
#endif

} // namespace otc_kernels

#undef OTC_LANES
#endif
