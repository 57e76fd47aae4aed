// The gradient of gather: the CUDA form's threads (columns split by ranges
// of rows, GatherBackwardSplit), run here one after another, against the
// CPU form, element by element: the same bits, since both sum each output
// in the order of j. Over repeated indices (a padding token everywhere),
// negative ones that wrap, ones outside [-K, K) that are skipped, an outer
// dim, row counts that the ranges do not divide, and both settings of the
// first-micro-batch flag.
#include "otc/kernels/gather.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace otc_kernels;

template <long long Outer, long long K, long long J, long long Inner>
void check(unsigned seed) {
  SCOPED_TRACE("gather_backward " + std::to_string(Outer) + "x" + std::to_string(K) + "x" +
               std::to_string(J) + "x" + std::to_string(Inner));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<long long> pick(-K, K - 1);
  std::vector<float> dy(size_t(Outer * J * Inner)), prior(size_t(Outer * K * Inner));
  for (float &v : dy)
    v = u(rng);
  for (float &v : prior)
    v = u(rng);
  std::vector<long long> idx(J);
  for (long long j = 0; j < J; ++j)
    idx[size_t(j)] = j % 3 == 0 ? 1 : pick(rng); // one row read again and again
  idx[0] = K + 5;                                 // outside: no row
  idx[size_t(J - 1)] = -1;                        // wraps to the last row
  using S = GatherBackwardSplit<Outer, K, Inner>;
  EXPECT_GE(S::Ranges * S::RangeRows, K);
  for (int zero : {1, 0}) {
    std::vector<float> cpu = prior, cuda = prior;
    gather_backward<Outer, K, J, Inner>(dy.data(), idx.data(), cpu.data(), zero);
    for (long long t = 0; t < S::threads; ++t)
      gather_backward_thread<Outer, K, J, Inner>(t, dy.data(), idx.data(), cuda.data(), zero);
    EXPECT_EQ(std::memcmp(cpu.data(), cuda.data(), cpu.size() * sizeof(float)), 0)
        << "zero " << zero;
  }
}

TEST(GatherKernel, CudaSplitMatchesTheCpuForm) {
  check<1, 1000, 257, 8>(1);   // 1000 rows in ranges of 2 (16384 ranges wanted)
  check<1, 50257, 64, 96>(2);  // a vocabulary in ranges that do not divide it
  check<3, 7, 40, 5>(3);       // an outer dim; every row its own range
  check<1, 4, 33, 70000>(4);   // columns enough alone: one range
}

} // namespace
