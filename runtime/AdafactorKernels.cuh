// Adafactor on CUDA (kernels/adafactor.h has the CPU loop and the
// algorithm): the same steps as kernels, then the launcher. Sums are in
// double, in a fixed order (no atomics), so a run is reproducible.
#ifndef OTC_RUNTIME_ADAFACTORKERNELS_CUH
#define OTC_RUNTIME_ADAFACTORKERNELS_CUH

#include "otc/kernels/adafactor.h"
#include "otc/runtime/cuda_check.h"

namespace otc {
namespace adafactor {

/// The block's sum of `x` (256 threads), in thread 0, in a fixed order
/// (also the gradient norm's, in CudaBackend.cu).
__device__ double sum256(double x) {
  __shared__ double part[256];
  part[threadIdx.x] = x;
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  double s = part[0];
  __syncthreads();
  return s;
}

/// One block: the sum of squares of `n` values into *out.
__global__ void sumSquares(const float *p, int64_t n, double *out) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    acc += double(p[i]) * p[i];
  double s = sum256(acc);
  if (threadIdx.x == 0)
    *out = s;
}

/// Block (b, i): row[b, i] = beta2t row + (1 - beta2t) mean_j (g^2 + eps1).
__global__ void rows(AdafactorStep s, const float *grad, int64_t R, int64_t C, float *row) {
  int64_t bi = blockIdx.x; // b * R + i
  const float *g = grad + bi * C;
  double acc = 0;
  for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {
    float x = g[j] * s.gradScale;
    acc += double(x * x + s.eps1);
  }
  double sum = sum256(acc);
  if (threadIdx.x == 0)
    row[bi] = row[bi] * s.beta2t + float(sum / double(C)) * s.oneMinusBeta2t;
}

/// Thread (b, j): col[b, j] = beta2t col + (1 - beta2t) mean_i (g^2 + eps1).
__global__ void cols(AdafactorStep s, const float *grad, int64_t lead, int64_t R, int64_t C,
                     float *col) {
  int64_t bj = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (bj >= lead * C)
    return;
  int64_t b = bj / C, j = bj % C;
  double acc = 0;
  for (int64_t i = 0; i < R; ++i) {
    float x = grad[(b * R + i) * C + j] * s.gradScale;
    acc += double(x * x + s.eps1);
  }
  col[bj] = col[bj] * s.beta2t + float(acc / double(R)) * s.oneMinusBeta2t;
}

/// Block b: the mean of row[b, :].
__global__ void rowMeans(const float *row, int64_t R, float *mean) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < R; i += blockDim.x)
    acc += row[blockIdx.x * R + i];
  double s = sum256(acc);
  if (threadIdx.x == 0)
    mean[blockIdx.x] = float(s / double(R));
}

/// The full second moment of a tensor of rank < 2.
__global__ void full(AdafactorStep s, const float *grad, int64_t n, float *v) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) {
    float x = grad[i] * s.gradScale;
    v[i] = v[i] * s.beta2t + (x * x + s.eps1) * s.oneMinusBeta2t;
  }
}

/// Element k's update before clipping and the step size.
__device__ float update(const AdafactorStep &s, const AdafactorShape &sh, const float *grad,
                        const float *row, const float *col, const float *mean, int64_t k) {
  float g = grad[k] * s.gradScale;
  if (!sh.factored)
    return (1.0f / sqrtf(row[k])) * g;
  int64_t b = k / (sh.rows * sh.cols), i = (k / sh.cols) % sh.rows, j = k % sh.cols;
  return (1.0f / sqrtf(row[b * sh.rows + i] / mean[b])) * (1.0f / sqrtf(col[b * sh.cols + j])) * g;
}

/// Per block: the sum of the updates' squares, into partial[block].
__global__ void updateSquares(AdafactorStep s, AdafactorShape sh, const float *grad,
                              const float *row, const float *col, const float *mean,
                              double *partial) {
  double acc = 0;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < sh.n;
       k += (int64_t)gridDim.x * blockDim.x) {
    float u = update(s, sh, grad, row, col, mean, k);
    acc += double(u) * u;
  }
  double sum = sum256(acc);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = sum;
}

/// One block: the sum of `n` partial sums, in a fixed order.
__global__ void sumPartials(const double *partial, int n, double *out) {
  double acc = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    acc += partial[i];
  double s = sum256(acc);
  if (threadIdx.x == 0)
    *out = s;
}

/// p = p - p wd lr - update / max(1, RMS(update) / clip) lr (or that
/// update's moving average in `expAvg`, when kept), with lr the
/// step size (times max(eps2, RMS(p)) with scale_parameter); `sums` holds
/// sum p^2 (before the step) and sum update^2.
template <typename Low>
__global__ void apply(AdafactorStep s, AdafactorShape sh, float *param, const float *grad,
                      const float *row, const float *col, const float *mean, const double *sums,
                      float *expAvg, Low *low) {
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= sh.n)
    return;
  float lr = s.relStep;
  if (s.scaleParameter) {
    float rms = float(sqrt(sums[0]) / sqrt(double(sh.n)));
    lr = (rms > s.eps2 ? rms : s.eps2) * s.relStep;
  }
  float rms = float(sqrt(sums[1]) / sqrt(double(sh.n)));
  float clipDiv = rms / s.clipThreshold > 1.0f ? rms / s.clipThreshold : 1.0f;
  float u = update(s, sh, grad, row, col, mean, k) / clipDiv * lr;
  if (expAvg) // HF: exp_avg.mul_(beta1).add_(update, alpha=1 - beta1)
    u = expAvg[k] = expAvg[k] * s.beta1 + u * (1.0f - s.beta1);
  float p = param[k];
  if (s.weightDecay != 0.0f)
    p = p + p * (-s.weightDecay * lr);
  param[k] = p - u;
  if constexpr (!std::is_same_v<Low, float>)
    otc_store(&low[k], param[k]);
}

/// The launcher: `scratch` holds at least 2 + kPartials doubles and
/// sh.lead floats after them.
constexpr int kPartials = 4096;

inline void step(const AdafactorStep &s, const AdafactorShape &sh, float *param,
                 const float *grad, float *row, float *col, float *expAvg, void *low,
                 int lowDtype, double *scratch) {
  double *sums = scratch, *partial = scratch + 2;
  float *mean = reinterpret_cast<float *>(scratch + 2 + kPartials);
  if (s.scaleParameter)
    sumSquares<<<1, 256>>>(param, sh.n, sums);
  if (sh.factored) {
    rows<<<(unsigned)(sh.lead * sh.rows), 256>>>(s, grad, sh.rows, sh.cols, row);
    cols<<<(unsigned)((sh.lead * sh.cols + 255) / 256), 256>>>(s, grad, sh.lead, sh.rows, sh.cols, col);
    rowMeans<<<(unsigned)sh.lead, 256>>>(row, sh.rows, mean);
  } else {
    full<<<(unsigned)((sh.n + 255) / 256), 256>>>(s, grad, sh.n, row);
  }
  unsigned blocks = (unsigned)std::min<int64_t>((sh.n + 255) / 256, kPartials);
  updateSquares<<<blocks, 256>>>(s, sh, grad, row, col, mean, partial);
  sumPartials<<<1, 256>>>(partial, (int)blocks, sums + 1);
  unsigned grid = (unsigned)((sh.n + 255) / 256);
  if (low && lowDtype == OTC_F16)
    apply<<<grid, 256>>>(s, sh, param, grad, row, col, mean, sums, expAvg, static_cast<otc_f16 *>(low));
  else if (low && lowDtype == OTC_BF16)
    apply<<<grid, 256>>>(s, sh, param, grad, row, col, mean, sums, expAvg, static_cast<otc_bf16 *>(low));
  else
    apply<<<grid, 256>>>(s, sh, param, grad, row, col, mean, sums, expAvg, (float *)nullptr);
  OTC_CUDA_CHECK(cudaGetLastError());
}

} // namespace adafactor
} // namespace otc

#endif
