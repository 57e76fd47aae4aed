// The CPU's window kernels (rows of columns, planes of gradients) against
// the gather-form functors CUDA runs, element by element: the same bits,
// over strides, dilations, uneven padding, 1-D windows, strides past the
// kernel, overlapping pools, NaN and tied maxima, and both settings of the
// gradient buffer's first-micro-batch flag. Pooling in fp16 and bf16 (as
// autocast leaves it) against the float32 kernels on the widened values,
// rounded once where they store.
#include "otc/kernels/window.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace otc_kernels;

std::vector<float> randomValues(size_t n, unsigned seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  if (specials && n > 8) {
    v[3] = NAN;      // NaN wins its window
    v[5] = v[6];     // a tie: the first maximum wins
    v[7] = -0.0f;
  }
  return v;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

template <OTC_WINDOW>
void checkWindow(bool avgPool) {
  SCOPED_TRACE("window " + std::to_string(KH) + "x" + std::to_string(KW) + " stride " +
               std::to_string(SH) + "x" + std::to_string(SW) + " dilation " +
               std::to_string(DH) + "x" + std::to_string(DW));
  size_t in = size_t(N * C * H * W), out = size_t(N * C * OH * OW),
         cols = size_t(C * KH * KW * N * OH * OW);
  std::vector<float> x = randomValues(in, 1, true), dx0 = randomValues(in, 2, false);

  std::vector<float> got(cols), want(cols);
  im2col<OTC_WINDOW_ARGS>(x.data(), got.data());
  for (size_t i = 0; i < cols; ++i)
    Im2Col<OTC_WINDOW_ARGS>{x.data(), want.data()}(i);
  EXPECT_TRUE(sameBits(got, want)) << "im2col";

  std::vector<float> c = randomValues(cols, 3, false);
  for (int zero : {1, 0}) {
    std::vector<float> g = dx0, w = dx0;
    col2im<OTC_WINDOW_ARGS>(c.data(), g.data(), zero);
    for (size_t i = 0; i < in; ++i)
      Col2Im<OTC_WINDOW_ARGS>{c.data(), w.data(), zero}(i);
    EXPECT_TRUE(sameBits(g, w)) << "col2im, zero " << zero;
  }

  std::vector<float> y(out), yw(out);
  std::vector<long long> idx(out), idxw(out);
  max_pool<OTC_WINDOW_ARGS>(x.data(), y.data(), idx.data());
  for (size_t i = 0; i < out; ++i)
    MaxPool<OTC_WINDOW_ARGS, float>{x.data(), yw.data(), idxw.data()}(i);
  EXPECT_TRUE(sameBits(y, yw)) << "max_pool";
  EXPECT_EQ(idx, idxw) << "max_pool indices";

  std::vector<float> dy = randomValues(out, 4, false);
  for (int zero : {1, 0}) {
    std::vector<float> g = dx0, w = dx0;
    max_pool_grad<OTC_WINDOW_ARGS>(dy.data(), idx.data(), g.data(), zero);
    for (size_t i = 0; i < in; ++i)
      MaxPoolGrad<OTC_WINDOW_ARGS, float, float>{dy.data(), idx.data(), w.data(), zero}(i);
    EXPECT_TRUE(sameBits(g, w)) << "max_pool_grad, zero " << zero;
  }

  if (!avgPool) // average pooling has no dilation
    return;
  for (int zero : {1, 0}) {
    std::vector<float> g = dx0, w = dx0, g1 = dx0, w1 = dx0;
    avg_pool_grad<OTC_WINDOW_ARGS, 0>(dy.data(), g.data(), zero);
    avg_pool_grad<OTC_WINDOW_ARGS, 1>(dy.data(), g1.data(), zero);
    for (size_t i = 0; i < in; ++i) {
      AvgPoolGrad<OTC_WINDOW_ARGS, false, float, float>{dy.data(), w.data(), zero}(i);
      AvgPoolGrad<OTC_WINDOW_ARGS, true, float, float>{dy.data(), w1.data(), zero}(i);
    }
    EXPECT_TRUE(sameBits(g, w)) << "avg_pool_grad, zero " << zero;
    EXPECT_TRUE(sameBits(g1, w1)) << "avg_pool_grad counting padding, zero " << zero;
  }
}

// Template arguments: N, C, H, W, KH, KW, OH, OW, SH, SW, PT, PL, PB, PR, DH, DW.
TEST(WindowKernels, CpuFormsMatchTheGatherForm) {
  checkWindow<2, 3, 7, 6, 3, 2, 7, 6, 1, 1, 1, 0, 1, 1, 1, 1>(true);  // uneven padding
  checkWindow<2, 2, 8, 8, 2, 2, 4, 4, 2, 2, 0, 0, 0, 0, 1, 1>(true);  // pooling apart
  checkWindow<1, 2, 9, 9, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 2, 2>(false); // dilated
  checkWindow<2, 2, 1, 10, 1, 3, 1, 5, 1, 2, 0, 1, 0, 1, 1, 1>(true); // 1-D
  checkWindow<1, 3, 8, 8, 2, 2, 3, 3, 3, 3, 0, 0, 0, 0, 1, 1>(true);  // stride past the kernel
  checkWindow<2, 2, 7, 7, 3, 3, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1>(true);  // overlapping pools
  checkWindow<1, 1, 5, 5, 2, 2, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1>(true);  // a window past the edge
}

/// Values rounded to Low, and those values widened back.
template <class Low>
void lowered(const std::vector<float> &v, std::vector<Low> &low, std::vector<float> &wide) {
  low.resize(v.size());
  wide.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    otc_store(&low[i], v[i]);
    wide[i] = otc_ld(low[i]);
  }
}

template <class Low>
std::vector<float> widened(const std::vector<Low> &v) {
  std::vector<float> w(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    w[i] = otc_ld(v[i]);
  return w;
}

/// Rounded to Low and widened: what a float32 kernel and a cast store.
template <class Low>
std::vector<float> roundedThrough(const std::vector<float> &v, const Low *) {
  std::vector<Low> low;
  std::vector<float> wide;
  lowered(v, low, wide);
  return wide;
}

template <class Low, OTC_WINDOW>
void checkLowPooling() {
  size_t in = size_t(N * C * H * W), out = size_t(N * C * OH * OW);
  const Low *tag = nullptr;
  std::vector<Low> x, dy, dx0;
  std::vector<float> xf, dyf, dx0f;
  lowered(randomValues(in, 1, true), x, xf);
  lowered(randomValues(out, 4, false), dy, dyf);
  lowered(randomValues(in, 2, false), dx0, dx0f);

  std::vector<Low> y(out);
  std::vector<float> yf(out);
  std::vector<long long> idx(out), idxf(out);
  max_pool<OTC_WINDOW_ARGS>(x.data(), y.data(), idx.data());
  max_pool<OTC_WINDOW_ARGS>(xf.data(), yf.data(), idxf.data());
  EXPECT_TRUE(sameBits(widened(y), yf)) << "max_pool: a maximum is one of the values";
  EXPECT_EQ(idx, idxf) << "max_pool indices";
  for (int zero : {1, 0}) {
    std::vector<Low> g = dx0;
    std::vector<float> gf = dx0f;
    max_pool_grad<OTC_WINDOW_ARGS>(dy.data(), idx.data(), g.data(), zero);
    max_pool_grad<OTC_WINDOW_ARGS>(dyf.data(), idxf.data(), gf.data(), zero);
    EXPECT_TRUE(sameBits(widened(g), roundedThrough(gf, tag))) << "max_pool_grad, zero " << zero;
  }

  std::vector<Low> a(out);
  std::vector<float> af(out);
  avg_pool<OTC_WINDOW_ARGS, 1>(x.data(), a.data());
  avg_pool<OTC_WINDOW_ARGS, 1>(xf.data(), af.data());
  EXPECT_TRUE(sameBits(widened(a), roundedThrough(af, tag))) << "avg_pool";
  for (int zero : {1, 0}) {
    std::vector<Low> g = dx0;
    std::vector<float> gf = dx0f;
    avg_pool_grad<OTC_WINDOW_ARGS, 0>(dy.data(), g.data(), zero);
    avg_pool_grad<OTC_WINDOW_ARGS, 0>(dyf.data(), gf.data(), zero);
    EXPECT_TRUE(sameBits(widened(g), roundedThrough(gf, tag))) << "avg_pool_grad, zero " << zero;
  }
}

TEST(WindowKernels, SixteenBitPoolingRoundsOnce) {
  checkLowPooling<otc_bf16, 2, 2, 7, 7, 3, 3, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1>(); // overlapping
  checkLowPooling<otc_f16, 2, 2, 7, 7, 3, 3, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1>();
  checkLowPooling<otc_bf16, 2, 2, 8, 8, 2, 2, 4, 4, 2, 2, 0, 0, 0, 0, 1, 1>(); // apart
  checkLowPooling<otc_f16, 2, 2, 8, 8, 2, 2, 4, 4, 2, 2, 0, 0, 0, 0, 1, 1>();
}

} // namespace
