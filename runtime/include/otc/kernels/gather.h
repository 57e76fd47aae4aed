// Kernel library: the gradient of gather, a deterministic scatter-add.
//   out[o, k, i] = (zero ? 0 : out[o, k, i]) + sum, in the order of j,
//                  over the j with wrap(idx[j]) == k of dy[o, j, i]
// for data viewed as [Outer, K, Inner] and dy as [Outer, J, Inner]. Each
// output element is summed by one thread in index order, so every run and
// both targets give the same bits (no atomics); on CUDA, threads split K's
// rows into ranges as well as the columns. `zero` is 1, or the
// window's first-micro-batch flag when `out` is a gradient buffer.
#ifndef OTC_KERNELS_GATHER_H
#define OTC_KERNELS_GATHER_H

#include "otc/runtime/kernel_support.h"

namespace otc_kernels {

/// The CUDA form's split: K's rows in Ranges ranges of RangeRows each, so
/// that Outer x Ranges x Inner threads (about 2^17) share the work. One
/// thread per (o, i) column alone (GPT-2's token embedding: 768 threads,
/// each walking 8192 tokens one dependent read-modify-write after another)
/// leaves the device nearly idle for milliseconds.
template <long long Outer, long long K, long long Inner>
struct GatherBackwardSplit {
  static constexpr long long want = (1LL << 17) / (Outer * Inner);
  static constexpr long long Ranges = want < 1 ? 1 : want > K ? K : want;
  static constexpr long long RangeRows = (K + Ranges - 1) / Ranges;
  static constexpr long long threads = Outer * Ranges * Inner;
};

/// Thread t of the CUDA form: column (o, i) of out over one range of rows,
/// each element summed in the order of j as the CPU form sums it, so the
/// two give the same bits. Neighbouring threads touch neighbouring i and
/// read the same indices.
template <long long Outer, long long K, long long J, long long Inner>
OTC_HD void gather_backward_thread(long long t, const float *dy, const long long *idx, float *out,
                                   int zero) {
  using S = GatherBackwardSplit<Outer, K, Inner>;
  long long i = t % Inner, r = (t / Inner) % S::Ranges, o = t / (Inner * S::Ranges);
  long long k0 = r * S::RangeRows, k1 = k0 + S::RangeRows < K ? k0 + S::RangeRows : K;
  if (zero)
    for (long long k = k0; k < k1; ++k)
      out[(o * K + k) * Inner + i] = 0.0f;
  for (long long j = 0; j < J; ++j) {
    long long k = otc_wrap_index(idx[j], K);
    if (k >= k0 && k < k1)
      out[(o * K + k) * Inner + i] += dy[(o * J + j) * Inner + i];
  }
}

#ifdef __CUDACC__
template <long long Outer, long long K, long long J, long long Inner>
__global__ void gather_backward_kernel(const float *dy, const long long *idx, float *out,
                                       int zero) {
  using S = GatherBackwardSplit<Outer, K, Inner>;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < S::threads;
       t += (long long)gridDim.x * blockDim.x)
    gather_backward_thread<Outer, K, J, Inner>(t, dy, idx, out, zero);
}

template <long long Outer, long long K, long long J, long long Inner>
void gather_backward(const float *dy, const long long *idx, float *out, int zero,
                     cudaStream_t stream) {
  long long blocks = (GatherBackwardSplit<Outer, K, Inner>::threads + 255) / 256;
  gather_backward_kernel<Outer, K, J, Inner>
      <<<(unsigned)(blocks < 65535 ? blocks : 65535), 256, 0, stream>>>(dy, idx, out, zero);
}
#else
// Blocks of 256 contiguous i per thread; within one, j runs in order.
template <long long Outer, long long K, long long J, long long Inner>
void gather_backward(const float *dy, const long long *idx, float *out, int zero) {
  constexpr long long B = 256, blocks = (Inner + B - 1) / B;
#pragma omp parallel for if (Outer * J * Inner >= (1 << 20))
  for (long long blk = 0; blk < Outer * blocks; ++blk) {
    long long o = blk / blocks, i0 = (blk % blocks) * B, i1 = i0 + B < Inner ? i0 + B : Inner;
    if (zero)
      for (long long k = 0; k < K; ++k)
        for (long long i = i0; i < i1; ++i)
          out[(o * K + k) * Inner + i] = 0.0f;
    for (long long j = 0; j < J; ++j) {
      long long k = otc_wrap_index(idx[j], K);
      if (k < 0)
        continue;
      float *dst = out + (o * K + k) * Inner;
      const float *src = dy + (o * J + j) * Inner;
#pragma omp simd
      for (long long i = i0; i < i1; ++i)
        dst[i] += src[i];
    }
  }
}
#endif

} // namespace otc_kernels

#endif
