#include "Backend.h"

#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>
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
    allocated += bytes;
    return p;
  }
  void toDevice(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void fill(void *dst, unsigned char value, size_t bytes) override {
    std::memset(dst, value, bytes);
  }
  void toHost(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void *blas() override { return nullptr; }
  void setUpdateKernel(decltype(otc_program::update) k) override { kernel = k; }
  void update(const OptimizerStep &s, float *param, const float *grad, float *m,
              float *v, void *low, int lowDtype, int64_t n) override {
    // The generated code's loop: compiled, threaded and vectorised with it;
    // otherwise the same library loop, unthreaded.
    if (kernel)
      return kernel(&s, param, grad, m, v, low, lowDtype, n);
    switch (s.kind) {
    case OTC_SGD: return otc_kernels::optimizer_update<OTC_SGD>(&s, param, grad, m, v, low, lowDtype, n);
    case OTC_MOMENTUM:
      return otc_kernels::optimizer_update<OTC_MOMENTUM>(&s, param, grad, m, v, low, lowDtype, n);
    case OTC_ADAM: return otc_kernels::optimizer_update<OTC_ADAM>(&s, param, grad, m, v, low, lowDtype, n);
    case OTC_ADAMW: return otc_kernels::optimizer_update<OTC_ADAMW>(&s, param, grad, m, v, low, lowDtype, n);
    case OTC_ADAFACTOR: return; // Backend::adafactor
    case OTC_ADAMW8BIT: // small tensors: float32 AdamW (Backend::adamw8bit for the others)
      return otc_kernels::optimizer_update<OTC_ADAMW>(&s, param, grad, m, v, low, lowDtype, n);
    }
  }
  bool anyNonFinite(const float *p, int64_t n) override {
    // NaN and infinity are the floats whose exponent bits are all ones; an
    // integer OR-reduction over that test vectorises (a float sum cannot).
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t u;
      std::memcpy(&u, p + i, sizeof u);
      bad |= (~u & 0x7f800000u) == 0;
    }
    return bad != 0;
  }

  double sumOfSquares(const std::vector<Span> &spans) override {
    // Four sums in turn, so that the loop vectorises in a fixed order.
    double total = 0;
    for (const Span &t : spans) {
      double acc[4] = {0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 4 <= t.count; i += 4)
        for (int k = 0; k < 4; ++k)
          acc[k] += double(t.data[i + k]) * double(t.data[i + k]);
      for (; i < t.count; ++i)
        acc[0] += double(t.data[i]) * double(t.data[i]);
      total += (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }
    return total;
  }
  void copy(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void markTime(int i, void *) override {
    if (marks.size() <= size_t(i))
      marks.resize(size_t(i) + 1);
    marks[size_t(i)] = std::chrono::steady_clock::now();
  }
  std::vector<double> markedSeconds(int n) override {
    std::vector<double> s(static_cast<size_t>(n));
    for (size_t i = 0; i < s.size(); ++i)
      s[i] = std::chrono::duration<double>(marks[i] - marks[0]).count();
    return s;
  }
  double copyBytesPerSecond() override {
    const size_t bytes = size_t(256) << 20;
    std::vector<char> a(bytes, 1), b(bytes, 0); // touched: no page faults timed
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      std::memcpy(b.data(), a.data(), bytes);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, 2.0 * double(bytes) / s);
    }
    return best;
  }
  std::string deviceName() override { return "cpu"; }
  void adamw8bit(const OptimizerStep &s, float *param, const float *grad, uint8_t *q1, uint8_t *q2,
                 float *absmax1, float *absmax2, void *low, int lowDtype, int64_t n) override {
    otc_kernels::adamw8bit_update(s, param, grad, q1, q2, absmax1, absmax2, low, lowDtype, n);
  }
  void adafactor(const AdafactorStep &s, const AdafactorShape &sh, float *param, const float *grad,
                 float *row, float *col, float *expAvg, void *low, int lowDtype) override {
    otc_kernels::adafactor_update(s, sh, param, grad, row, col, expAvg, low, lowDtype);
  }

private:
  std::vector<void *> blocks;
  decltype(otc_program::update) kernel = nullptr;
  std::vector<std::chrono::steady_clock::time_point> marks;
};

} // namespace

std::unique_ptr<Backend> makeBackend() { return std::make_unique<CpuBackend>(); }

} // namespace otc
