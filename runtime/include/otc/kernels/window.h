// Kernel library: sliding windows over N x C x H x W tensors, for
// convolution (im2col, then a GEMM) and pooling. The geometry is a template
// parameter list (OTC_WINDOW): kernel KH x KW, strides, pads top/left/
// bottom/right and dilations, output OH x OW. A 1-D window is H = KH = 1.
//
// Every gradient sums, for each input element, the windows that cover it
// in the order of kh, then kw: in gather form on CUDA (no atomics), by
// planes on the CPU, so runs and targets agree bit for bit. `zero` is 1,
// or the window's first-micro-batch flag when the output is a gradient
// buffer.
#ifndef OTC_KERNELS_WINDOW_H
#define OTC_KERNELS_WINDOW_H

#include "otc/runtime/kernel_support.h"

#include <math.h>

#define OTC_WINDOW                                                                        \
  long long N, long long C, long long H, long long W, long long KH, long long KW,         \
      long long OH, long long OW, long long SH, long long SW, long long PT, long long PL, \
      long long PB, long long PR, long long DH, long long DW
#define OTC_WINDOW_ARGS N, C, H, W, KH, KW, OH, OW, SH, SW, PT, PL, PB, PR, DH, DW

namespace otc_kernels {

/// The element at flat index `i` of im2col's output, laid out as
/// [C, KH, KW, N, OH, OW]: the input under that kernel tap, or 0 in padding.
template <OTC_WINDOW>
OTC_HD float im2col_at(const float *x, long long i) {
  long long ow = i % OW, oh = (i / OW) % OH, n = (i / (OW * OH)) % N;
  long long r = i / (OW * OH * N), kw = r % KW, kh = (r / KW) % KH, c = r / (KW * KH);
  long long ih = oh * SH - PT + kh * DH, iw = ow * SW - PL + kw * DW;
  if (ih < 0 || ih >= H || iw < 0 || iw >= W)
    return 0.0f;
  return x[((n * C + c) * H + ih) * W + iw];
}

/// Calls f(oh, ow, kh, kw) for each output window covering input (ih, iw),
/// in the order of kh, then kw.
template <OTC_WINDOW, class F>
OTC_HD void for_covering_windows(long long ih, long long iw, F f) {
  for (long long kh = 0; kh < KH; ++kh) {
    long long t = ih + PT - kh * DH;
    if (t < 0 || t % SH != 0 || t / SH >= OH)
      continue;
    for (long long kw = 0; kw < KW; ++kw) {
      long long u = iw + PL - kw * DW;
      if (u < 0 || u % SW != 0 || u / SW >= OW)
        continue;
      f(t / SH, u / SW, kh, kw);
    }
  }
}

/// The gradient of im2col at input element i of [N, C, H, W].
template <OTC_WINDOW>
OTC_HD float col2im_at(const float *cols, long long i) {
  long long iw = i % W, ih = (i / W) % H, c = (i / (W * H)) % C, n = i / (W * H * C);
  float sum = 0.0f;
  for_covering_windows<OTC_WINDOW_ARGS>(ih, iw, [&](long long oh, long long ow, long long kh,
                                                    long long kw) {
    sum += cols[((((c * KH + kh) * KW + kw) * N + n) * OH + oh) * OW + ow];
  });
  return sum;
}

/// Max pooling of window (oh, ow) of the plane `x` (H x W): the value, and
/// the flat index ih * W + iw of the first maximum in the plane (NaN wins,
/// as in PyTorch). Any float type: the maximum is one of its values.
template <OTC_WINDOW, class T>
OTC_HD void max_pool_window(const T *x, long long oh, long long ow, float &best,
                            long long &at) {
  best = -INFINITY;
  at = -1;
  for (long long kh = 0; kh < KH; ++kh) {
    long long ih = oh * SH - PT + kh * DH;
    if (ih < 0 || ih >= H)
      continue;
    for (long long kw = 0; kw < KW; ++kw) {
      long long iw = ow * SW - PL + kw * DW;
      if (iw < 0 || iw >= W)
        continue;
      float v = otc_ld(x[ih * W + iw]);
      if (at < 0 || v > best || isnan(v)) {
        best = v;
        at = ih * W + iw;
        if (isnan(v))
          return;
      }
    }
  }
}

/// Max pooling at output i of [N, C, OH, OW] (max_pool_window).
template <OTC_WINDOW, class T>
OTC_HD void max_pool_at(const T *x, long long i, float &best, long long &at) {
  long long ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
  max_pool_window<OTC_WINDOW_ARGS>(x + plane * H * W, oh, ow, best, at);
}

template <OTC_WINDOW, class T>
OTC_HD float max_pool_grad_at(const T *dy, const long long *idx, long long i) {
  long long iw = i % W, ih = (i / W) % H, plane = i / (W * H);
  float sum = 0.0f;
  for_covering_windows<OTC_WINDOW_ARGS>(ih, iw, [&](long long oh, long long ow, long long,
                                                    long long) {
    long long o = (plane * OH + oh) * OW + ow;
    if (idx[o] == ih * W + iw)
      sum += otc_ld(dy[o]);
  });
  return sum;
}

/// The divisor of average pooling's window (oh, ow), as PyTorch computes it:
/// the window clipped to the padded input, or to the input itself.
template <OTC_WINDOW, bool CountPad>
OTC_HD float avg_pool_divisor(long long oh, long long ow) {
  long long h0 = oh * SH - PT, w0 = ow * SW - PL;
  long long h1 = h0 + KH < H + PB ? h0 + KH : H + PB, w1 = w0 + KW < W + PR ? w0 + KW : W + PR;
  if (!CountPad) {
    h0 = h0 > 0 ? h0 : 0;
    w0 = w0 > 0 ? w0 : 0;
    h1 = h1 < H ? h1 : H;
    w1 = w1 < W ? w1 : W;
  }
  return (float)((h1 - h0) * (w1 - w0));
}

template <OTC_WINDOW, bool CountPad, class T>
OTC_HD float avg_pool_at(const T *x, long long i) {
  long long ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
  float sum = 0.0f;
  for (long long kh = 0; kh < KH; ++kh) {
    long long ih = oh * SH - PT + kh;
    if (ih < 0 || ih >= H)
      continue;
    for (long long kw = 0; kw < KW; ++kw) {
      long long iw = ow * SW - PL + kw;
      if (iw >= 0 && iw < W)
        sum += otc_ld(x[(plane * H + ih) * W + iw]);
    }
  }
  return sum / avg_pool_divisor<OTC_WINDOW_ARGS, CountPad>(oh, ow);
}

template <OTC_WINDOW, bool CountPad, class T>
OTC_HD float avg_pool_grad_at(const T *dy, long long i) {
  long long iw = i % W, ih = (i / W) % H, plane = i / (W * H);
  float sum = 0.0f;
  for_covering_windows<OTC_WINDOW_ARGS>(ih, iw, [&](long long oh, long long ow, long long,
                                                    long long) {
    sum += otc_ld(dy[(plane * OH + oh) * OW + ow]) / avg_pool_divisor<OTC_WINDOW_ARGS, CountPad>(oh, ow);
  });
  return sum;
}

#ifdef __CUDACC__
// A thread per output element; neighbouring threads write neighbours.
template <class F>
__global__ void window_kernel(long long count, F f) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x)
    f(i);
}

template <class F>
void window_run(long long count, F f, cudaStream_t stream) {
  long long blocks = (count + 255) / 256;
  window_kernel<<<(unsigned)(blocks < 65535 ? blocks : 65535), 256, 0, stream>>>(count, f);
}
#define OTC_WINDOW_STREAM , cudaStream_t stream
#define OTC_WINDOW_RUN(count, f) window_run(count, f, stream)
#else
template <class F>
void window_run(long long count, F f) {
#pragma omp parallel for if (count >= (1 << 14))
  for (long long i = 0; i < count; ++i)
    f(i);
}
#define OTC_WINDOW_STREAM
#define OTC_WINDOW_RUN(count, f) window_run(count, f)
#endif

// One functor per operation, so that both targets run the same body.
#ifdef __CUDACC__
#define OTC_MEMBER __host__ __device__
#else
#define OTC_MEMBER
#endif
template <OTC_WINDOW>
struct Im2Col {
  const float *x;
  float *cols;
  OTC_MEMBER void operator()(long long i) const { cols[i] = im2col_at<OTC_WINDOW_ARGS>(x, i); }
};

template <OTC_WINDOW>
struct Col2Im {
  const float *cols;
  float *dx;
  int zero;
  OTC_MEMBER void operator()(long long i) const {
    float g = col2im_at<OTC_WINDOW_ARGS>(cols, i);
    dx[i] = zero ? g : dx[i] + g;
  }
};

// Pooling reads and writes any float type (16-bit under mixed precision,
// as autocast leaves it) and sums in float32: a gradient is rounded once,
// where it is stored, as a float32 kernel and a cast would round it.
template <class D>
OTC_HD void store_or_add(D *p, int zero, float g) {
  otc_store(p, zero ? g : otc_ld(*p) + g);
}

template <OTC_WINDOW, class T>
struct MaxPool {
  const T *x;
  T *y;
  long long *idx;
  OTC_MEMBER void operator()(long long i) const {
    float best;
    max_pool_at<OTC_WINDOW_ARGS>(x, i, best, idx[i]);
    otc_store(y + i, best);
  }
};

template <OTC_WINDOW, class T, class D>
struct MaxPoolGrad {
  const T *dy;
  const long long *idx;
  D *dx;
  int zero;
  OTC_MEMBER void operator()(long long i) const {
    store_or_add(dx + i, zero, max_pool_grad_at<OTC_WINDOW_ARGS>(dy, idx, i));
  }
};

template <OTC_WINDOW, bool CountPad, class T>
struct AvgPool {
  const T *x;
  T *y;
  OTC_MEMBER void operator()(long long i) const {
    otc_store(y + i, avg_pool_at<OTC_WINDOW_ARGS, CountPad>(x, i));
  }
};

template <OTC_WINDOW, bool CountPad, class T, class D>
struct AvgPoolGrad {
  const T *dy;
  D *dx;
  int zero;
  OTC_MEMBER void operator()(long long i) const {
    store_or_add(dx + i, zero, avg_pool_grad_at<OTC_WINDOW_ARGS, CountPad>(dy, i));
  }
};

#ifndef __CUDACC__
// The CPU's forms: rows of columns and planes of gradients, with no index
// arithmetic per element. A gradient plane adds each window's share in the
// order of kh, then kw, as the gather form does, so both give the same bits.

/// im2col by rows of [C, KH, KW, N, OH] x OW.
/// The outputs o in [0, O) whose input o * S + off lies in [0, I): [lo, hi).
inline void inside(long long O, long long S, long long off, long long I, long long &lo,
                   long long &hi) {
  hi = I - off <= 0 ? 0 : (I - off + S - 1) / S;
  hi = hi < O ? hi : O;
  lo = off >= 0 ? 0 : (-off + S - 1) / S;
  lo = lo < hi ? lo : hi;
}

/// im2col by rows of [C, KH, KW, N, OH] x OW: per row, the windows over the
/// padding are zeros and the rest strided copies. (Loops that tested the
/// bounds per element were miscompiled by GCC 12's vectoriser at -O3
/// -march=native for KW = 1 and 6 <= W <= 16: conv_rows.test.)
template <OTC_WINDOW>
void im2col_rows(const float *x, float *cols) {
#pragma omp parallel for if (C * KH * KW * N * OH * OW >= (1 << 14))
  for (long long row = 0; row < C * KH * KW * N; ++row) {
    long long n = row % N, kw = (row / N) % KW, kh = (row / (N * KW)) % KH, c = row / (N * KW * KH);
    float *out = cols + row * OH * OW;
    long long ohLo, ohHi, owLo, owHi;
    inside(OH, SH, kh * DH - PT, H, ohLo, ohHi);
    inside(OW, SW, kw * DW - PL, W, owLo, owHi);
    for (long long i = 0; i < ohLo * OW; ++i)
      out[i] = 0.0f;
    for (long long oh = ohLo; oh < ohHi; ++oh) {
      // Indices, not a pointer: the first window's may lie before the row.
      const long long at = ((n * C + c) * H + oh * SH + kh * DH - PT) * W + kw * DW - PL;
      float *o = out + oh * OW;
      for (long long ow = 0; ow < owLo; ++ow)
        o[ow] = 0.0f;
      for (long long ow = owLo; ow < owHi; ++ow)
        o[ow] = x[at + ow * SW];
      for (long long ow = owHi; ow < OW; ++ow)
        o[ow] = 0.0f;
    }
    for (long long i = ohHi * OW; i < OH * OW; ++i)
      out[i] = 0.0f;
  }
}

/// For each plane of [N, C] (of dx, H x W): sum[] holds the plane's
/// gradient, built by add(plane, sum) and then stored or added into dx.
template <OTC_WINDOW, class D, class Add>
void gradient_planes(D *dx, int zero, Add add) {
#pragma omp parallel if (N * C * H * W >= (1 << 14))
  {
    float *sum = new float[H * W];
#pragma omp for
    for (long long plane = 0; plane < N * C; ++plane) {
      for (long long i = 0; i < H * W; ++i)
        sum[i] = 0.0f;
      add(plane, sum);
      D *out = dx + plane * H * W;
      for (long long i = 0; i < H * W; ++i)
        store_or_add(out + i, zero, sum[i]);
    }
    delete[] sum;
  }
}

/// Calls f(kh, kw, ih * W + iw, oh * OW + ow) for each tap (kh, kw), in
/// that order, of each window (oh, ow) that lands inside the input.
template <OTC_WINDOW, class F>
void for_taps(F f) {
  for (long long kh = 0; kh < KH; ++kh)
    for (long long kw = 0; kw < KW; ++kw)
      for (long long oh = 0; oh < OH; ++oh) {
        long long ih = oh * SH - PT + kh * DH;
        if (ih < 0 || ih >= H)
          continue;
        for (long long ow = 0; ow < OW; ++ow) {
          long long iw = ow * SW - PL + kw * DW;
          if (iw >= 0 && iw < W)
            f(kh, kw, ih * W + iw, oh * OW + ow);
        }
      }
}
#endif

// The launchers generated code calls.
template <OTC_WINDOW>
void im2col(const float *x, float *cols OTC_WINDOW_STREAM) {
#ifdef __CUDACC__
  OTC_WINDOW_RUN(C * KH * KW * N * OH * OW, (Im2Col<OTC_WINDOW_ARGS>{x, cols}));
#else
  im2col_rows<OTC_WINDOW_ARGS>(x, cols);
#endif
}

template <OTC_WINDOW>
void col2im(const float *cols, float *dx, int zero OTC_WINDOW_STREAM) {
#ifdef __CUDACC__
  OTC_WINDOW_RUN(N * C * H * W, (Col2Im<OTC_WINDOW_ARGS>{cols, dx, zero}));
#else
  gradient_planes<OTC_WINDOW_ARGS>(dx, zero, [&](long long plane, float *sum) {
    long long n = plane / C, c = plane % C;
    for_taps<OTC_WINDOW_ARGS>([&](long long kh, long long kw, long long in, long long out) {
      sum[in] += cols[(((c * KH + kh) * KW + kw) * N + n) * OH * OW + out];
    });
  });
#endif
}

template <OTC_WINDOW, class T>
void max_pool(const T *x, T *y, long long *idx OTC_WINDOW_STREAM) {
#ifdef __CUDACC__
  OTC_WINDOW_RUN(N * C * OH * OW, (MaxPool<OTC_WINDOW_ARGS, T>{x, y, idx}));
#else
#pragma omp parallel for if (N * C * OH * OW >= (1 << 14))
  for (long long plane = 0; plane < N * C; ++plane)
    for (long long oh = 0; oh < OH; ++oh)
      for (long long ow = 0; ow < OW; ++ow) {
        long long o = (plane * OH + oh) * OW + ow;
        float best;
        max_pool_window<OTC_WINDOW_ARGS>(x + plane * H * W, oh, ow, best, idx[o]);
        otc_store(y + o, best);
      }
#endif
}

template <OTC_WINDOW, class T, class D>
void max_pool_grad(const T *dy, const long long *idx, D *dx, int zero OTC_WINDOW_STREAM) {
#ifdef __CUDACC__
  OTC_WINDOW_RUN(N * C * H * W, (MaxPoolGrad<OTC_WINDOW_ARGS, T, D>{dy, idx, dx, zero}));
#else
  // Windows that do not overlap cover each input once: each output's share
  // goes straight to its maximum, in any order.
  constexpr bool apart = SH >= (KH - 1) * DH + 1 && SW >= (KW - 1) * DW + 1;
  gradient_planes<OTC_WINDOW_ARGS>(dx, zero, [&](long long plane, float *sum) {
    const T *g = dy + plane * OH * OW;
    const long long *at = idx + plane * OH * OW;
    if (apart) {
      for (long long o = 0; o < OH * OW; ++o)
        if (at[o] >= 0)
          sum[at[o]] += otc_ld(g[o]);
      return;
    }
    for_taps<OTC_WINDOW_ARGS>([&](long long, long long, long long in, long long out) {
      if (at[out] == in)
        sum[in] += otc_ld(g[out]);
    });
  });
#endif
}

template <OTC_WINDOW, long long CountPad, class T>
void avg_pool(const T *x, T *y OTC_WINDOW_STREAM) {
  OTC_WINDOW_RUN(N * C * OH * OW, (AvgPool<OTC_WINDOW_ARGS, CountPad != 0, T>{x, y}));
}

template <OTC_WINDOW, long long CountPad, class T, class D>
void avg_pool_grad(const T *dy, D *dx, int zero OTC_WINDOW_STREAM) {
#ifdef __CUDACC__
  OTC_WINDOW_RUN(N * C * H * W, (AvgPoolGrad<OTC_WINDOW_ARGS, CountPad != 0, T, D>{dy, dx, zero}));
#else
  gradient_planes<OTC_WINDOW_ARGS>(dx, zero, [&](long long plane, float *sum) {
    const T *g = dy + plane * OH * OW;
    for_taps<OTC_WINDOW_ARGS>([&](long long, long long, long long in, long long out) {
      sum[in] += otc_ld(g[out]) / avg_pool_divisor<OTC_WINDOW_ARGS, CountPad != 0>(out / OW, out % OW);
    });
  });
#endif
}

#undef OTC_MEMBER
#undef OTC_WINDOW_STREAM
#undef OTC_WINDOW_RUN

} // namespace otc_kernels

#endif
