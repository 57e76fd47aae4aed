/* cuDNN's convolutions, compiled once into the CUDA runtime
 * (runtime/CudnnConv.cpp): kernels/conv.h calls them for 16-bit otc.conv,
 * otc.conv_data_grad and otc.conv_filter_grad when otc was built with cuDNN
 * (OTC_HAVE_CUDNN). Each returns 1 when cuDNN ran, 0 when the caller runs
 * its own kernels (no libcudnn.so.9, a shape cuDNN declines, or
 * OTC_CONV=kernel in the environment). Tensors are contiguous NCHW; the
 * products sum in float32. */
#ifndef OTC_RUNTIME_CUDNN_CONV_H
#define OTC_RUNTIME_CUDNN_CONV_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { OTC_CONV_F16 = 0, OTC_CONV_BF16 = 1 };

/* x [n, c, h, w], the filters [m, c / g, kh, kw], y [n, m, oh, ow]; pads
 * top, left, bottom, right. */
typedef struct otc_conv_shape {
  long long n, c, h, w, m, g, kh, kw, oh, ow, sh, sw, pt, pl, pb, pr, dh, dw;
  int dtype;
} otc_conv_shape;

int otc_cudnn_conv_forward(const otc_conv_shape *s, const void *x, const void *w, void *y,
                           cudaStream_t stream);
int otc_cudnn_conv_data_grad(const otc_conv_shape *s, const void *dy, const void *w, void *dx,
                             cudaStream_t stream);
int otc_cudnn_conv_filter_grad(const otc_conv_shape *s, const void *dy, const void *x, void *dw,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
