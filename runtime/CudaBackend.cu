#include "Backend.h"
#include "otc/runtime/cuda_check.h"

namespace otc {
namespace {

__global__ void updateKernel(OptimizerStep s, float *param, const float *grad,
                             float *m, float *v, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    updateElement(s, param[i], grad[i], m[i], v[i]);
}

class CudaBackend final : public Backend {
public:
  CudaBackend() { OTC_CUBLAS_CHECK(cublasCreate(&handle)); }
  ~CudaBackend() override { cublasDestroy(handle); }
  const char *name() const override { return "cuda"; }
  void *alloc(size_t bytes) override {
    void *p = nullptr;
    OTC_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    OTC_CUDA_CHECK(cudaMemset(p, 0, bytes ? bytes : 1));
    return p;
  }
  void release(void *p) override { OTC_CUDA_CHECK(cudaFree(p)); }
  void toDevice(void *dst, const void *src, size_t bytes) override {
    OTC_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  }
  void toHost(void *dst, const void *src, size_t bytes) override {
    OTC_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  }
  void *blas() override { return handle; }
  void update(const OptimizerStep &s, float *param, const float *grad, float *m,
              float *v, int64_t n) override {
    updateKernel<<<(unsigned)((n + 255) / 256), 256>>>(s, param, grad, m, v, n);
    OTC_CUDA_CHECK(cudaGetLastError());
  }

private:
  cublasHandle_t handle;
};

} // namespace

std::unique_ptr<Backend> makeBackend() { return std::make_unique<CudaBackend>(); }

} // namespace otc
