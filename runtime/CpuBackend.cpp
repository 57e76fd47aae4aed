#include "Backend.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace otc {
namespace {

class CpuBackend final : public Backend {
public:
  const char *name() const override { return "cpu"; }
  void *alloc(size_t bytes) override {
    void *p = std::calloc(1, bytes ? bytes : 1);
    if (!p) {
      std::fprintf(stderr, "train: error: out of memory allocating %zu bytes\n", bytes);
      std::exit(1);
    }
    return p;
  }
  void release(void *p) override { std::free(p); }
  void toDevice(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void toHost(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void *blas() override { return nullptr; }
  void update(const OptimizerStep &s, float *param, const float *grad, float *m,
              float *v, int64_t n) override {
    for (int64_t i = 0; i < n; ++i)
      updateElement(s, param[i], grad[i], m[i], v[i]);
  }
};

} // namespace

std::unique_ptr<Backend> makeBackend() { return std::make_unique<CpuBackend>(); }

} // namespace otc
