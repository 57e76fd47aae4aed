#include "Backend.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace otc {
namespace {

class CpuBackend final : public Backend {
public:
  ~CpuBackend() override {
    for (void *p : blocks)
      std::free(p);
  }
  const char *name() const override { return "cpu"; }
  void *alloc(size_t bytes) override {
    void *p = std::calloc(1, bytes ? bytes : 1);
    if (!p)
      throw Fatal{"out of memory allocating " + std::to_string(bytes) + " bytes"};
    blocks.push_back(p);
    return p;
  }
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
  bool anyNonFinite(const float *p, int64_t n) override {
    // x - x is 0 for finite x and NaN otherwise; the sum vectorises.
    float acc = 0;
    for (int64_t i = 0; i < n; ++i)
      acc += p[i] - p[i];
    return acc != 0 || std::isnan(acc);
  }

private:
  std::vector<void *> blocks;
};

} // namespace

std::unique_ptr<Backend> makeBackend() { return std::make_unique<CpuBackend>(); }

} // namespace otc
