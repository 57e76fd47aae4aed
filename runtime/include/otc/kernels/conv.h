// Kernel library: convolution as one op (otc.conv, otc.conv_data_grad,
// otc.conv_filter_grad; `otc compile --conv-op`). On CUDA, 16-bit
// convolutions run on cuDNN (runtime/CudnnConv.cpp) when otc was built
// with it; elsewhere, and where cuDNN is missing or declines a shape, these
// direct kernels run: one output element per iteration, its products summed
// in float32 in a fixed order (c, kh, kw; or m, kh, kw; or n, oh, ow), so
// the CPU and CUDA give the same bits.
//
// The geometry is the window's (OTC_WINDOW, kernels/window.h) plus M
// filters in G groups: x [N, C, H, W], w [M, C/G, KH, KW], y [N, M, OH, OW].
#ifndef OTC_KERNELS_CONV_H
#define OTC_KERNELS_CONV_H

#include "otc/kernels/window.h"

#if defined(__CUDACC__) && defined(OTC_HAVE_CUDNN)
#include "otc/runtime/cudnn_conv.h"
#include <type_traits>
#endif

#define OTC_CONV OTC_WINDOW, long long M, long long G
#define OTC_CONV_ARGS OTC_WINDOW_ARGS, M, G

namespace otc_kernels {

/// y at flat index i of [N, M, OH, OW].
template <OTC_CONV, class T>
OTC_HD float conv_at(const T *x, const T *w, long long i) {
  constexpr long long CG = C / G, MG = M / G;
  long long ow = i % OW, oh = (i / OW) % OH, m = (i / (OW * OH)) % M, n = i / (OW * OH * M);
  const T *image = x + (n * C + m / MG * CG) * H * W, *filter = w + m * CG * KH * KW;
  float sum = 0.0f;
  for (long long c = 0; c < CG; ++c)
    for (long long kh = 0; kh < KH; ++kh) {
      long long ih = oh * SH - PT + kh * DH;
      if (ih < 0 || ih >= H)
        continue;
      for (long long kw = 0; kw < KW; ++kw) {
        long long iw = ow * SW - PL + kw * DW;
        if (iw >= 0 && iw < W)
          sum += otc_ld(image[(c * H + ih) * W + iw]) * otc_ld(filter[(c * KH + kh) * KW + kw]);
      }
    }
  return sum;
}

/// dx at flat index i of [N, C, H, W]: the group's filters m, then the
/// windows covering (ih, iw) in the order of kh, then kw.
template <OTC_CONV, class T>
OTC_HD float conv_data_grad_at(const T *dy, const T *w, long long i) {
  constexpr long long CG = C / G, MG = M / G;
  long long iw = i % W, ih = (i / W) % H, c = (i / (W * H)) % C, n = i / (W * H * C);
  long long first = c / CG * MG, cl = c % CG;
  float sum = 0.0f;
  for (long long m = first; m < first + MG; ++m) {
    const T *g = dy + (n * M + m) * OH * OW, *filter = w + (m * CG + cl) * KH * KW;
    for_covering_windows<OTC_WINDOW_ARGS>(ih, iw, [&](long long oh, long long ow, long long kh,
                                                      long long kw) {
      sum += otc_ld(g[oh * OW + ow]) * otc_ld(filter[kh * KW + kw]);
    });
  }
  return sum;
}

/// dw at flat index i of [M, C/G, KH, KW]: over n, then the windows whose
/// tap (kh, kw) lands inside the image.
template <OTC_CONV, class T>
OTC_HD float conv_filter_grad_at(const T *dy, const T *x, long long i) {
  constexpr long long CG = C / G, MG = M / G;
  long long kw = i % KW, kh = (i / KW) % KH, cl = (i / (KW * KH)) % CG, m = i / (KW * KH * CG);
  long long c = m / MG * CG + cl;
  float sum = 0.0f;
  for (long long n = 0; n < N; ++n) {
    const T *g = dy + (n * M + m) * OH * OW, *image = x + (n * C + c) * H * W;
    for (long long oh = 0; oh < OH; ++oh) {
      long long ih = oh * SH - PT + kh * DH;
      if (ih < 0 || ih >= H)
        continue;
      for (long long ow = 0; ow < OW; ++ow) {
        long long iw = ow * SW - PL + kw * DW;
        if (iw >= 0 && iw < W)
          sum += otc_ld(g[oh * OW + ow]) * otc_ld(image[ih * W + iw]);
      }
    }
  }
  return sum;
}

// One functor for the three, so that both targets run the same bodies:
// Part 0 is y from (x, w), 1 dx from (dy, w), 2 dw from (dy, x).
#ifdef __CUDACC__
#define OTC_CONV_MEMBER __host__ __device__
#else
#define OTC_CONV_MEMBER
#endif
template <int Part, OTC_CONV, class T>
struct ConvElements {
  const T *a, *b;
  T *out;
  OTC_CONV_MEMBER void operator()(long long i) const {
    if constexpr (Part == 0)
      otc_store(out + i, conv_at<OTC_CONV_ARGS>(a, b, i));
    else if constexpr (Part == 1)
      otc_store(out + i, conv_data_grad_at<OTC_CONV_ARGS>(a, b, i));
    else
      otc_store(out + i, conv_filter_grad_at<OTC_CONV_ARGS>(a, b, i));
  }
};
#undef OTC_CONV_MEMBER

#if defined(__CUDACC__) && defined(OTC_HAVE_CUDNN)
/// cuDNN's description of the geometry, for 16-bit tensors (float32 ones
/// run the direct kernels: cuDNN would use TF32 where PyTorch's float32
/// reference does not).
template <OTC_CONV, class T>
constexpr bool conv_on_cudnn() {
  return !std::is_same<T, float>::value;
}

template <OTC_CONV, class T>
otc_conv_shape conv_shape() {
  return {N, C, H, W, M, G, KH, KW, OH, OW, SH, SW, PT, PL, PB, PR, DH, DW,
          std::is_same<T, otc_bf16>::value ? OTC_CONV_BF16 : OTC_CONV_F16};
}
#define OTC_CONV_CUDNN(call)                                                              \
  if constexpr (conv_on_cudnn<OTC_CONV_ARGS, T>()) {                                      \
    otc_conv_shape s = conv_shape<OTC_CONV_ARGS, T>();                                    \
    if (call)                                                                             \
      return;                                                                             \
  }
#else
#define OTC_CONV_CUDNN(call)
#endif

#ifdef __CUDACC__
#define OTC_CONV_STREAM , cudaStream_t stream
#define OTC_CONV_RUN(count, f) window_run(count, f, stream)
#else
#define OTC_CONV_STREAM
#define OTC_CONV_RUN(count, f) window_run(count, f)
#endif

// The launchers generated code calls.
template <OTC_CONV, class T>
void conv_forward(const T *x, const T *w, T *y OTC_CONV_STREAM) {
  OTC_CONV_CUDNN(otc_cudnn_conv_forward(&s, x, w, y, stream))
  OTC_CONV_RUN(N * M * OH * OW, (ConvElements<0, OTC_CONV_ARGS, T>{x, w, y}));
}

template <OTC_CONV, class T>
void conv_data_grad(const T *dy, const T *w, T *dx OTC_CONV_STREAM) {
  OTC_CONV_CUDNN(otc_cudnn_conv_data_grad(&s, dy, w, dx, stream))
  OTC_CONV_RUN(N * C * H * W, (ConvElements<1, OTC_CONV_ARGS, T>{dy, w, dx}));
}

template <OTC_CONV, class T>
void conv_filter_grad(const T *dy, const T *x, T *dw OTC_CONV_STREAM) {
  OTC_CONV_CUDNN(otc_cudnn_conv_filter_grad(&s, dy, x, dw, stream))
  OTC_CONV_RUN(M * (C / G) * KH * KW, (ConvElements<2, OTC_CONV_ARGS, T>{dy, x, dw}));
}

#undef OTC_CONV_CUDNN
#undef OTC_CONV_STREAM
#undef OTC_CONV_RUN

} // namespace otc_kernels

#endif
