// Each library kernel of the CPU target run on buffers of exactly the
// extents kernels/extents.h gives them, which the compiler's program
// verifier checks every call against: no access past them (the sanitizer
// build's AddressSanitizer sees any), and every output's first and last
// elements written, so that the extents are not larger than the kernel's
// reach either. Geometries: strided, padded and dilated windows, grouped
// convolution, grouped-query attention in both layouts (pitched rows, a
// broadcast mask, causal), LSTM and GRU in both directions.
#include "otc/kernels/attention.h"
#include "otc/kernels/conv.h"
#include "otc/kernels/extents.h"
#include "otc/kernels/gather.h"
#include "otc/kernels/recurrent.h"
#include "otc/kernels/window.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace otc_kernels;

template <class T>
T marker() {
  if constexpr (std::is_same_v<T, long long>)
    return -(1LL << 62);
  else
    return NAN;
}

template <class T>
bool isMarker(T v) {
  if constexpr (std::is_same_v<T, long long>)
    return v == marker<T>();
  else
    return std::isnan(v);
}

/// One argument of a call: exactly its extent, heap-allocated so that the
/// sanitizers see every access past it. Inputs hold random values (indices
/// in [0, K)), outputs a marker the kernel must overwrite.
template <class T>
struct Arg {
  std::unique_ptr<T[]> data;
  long long size = 0;
  T *get() { return data.get(); }
};

template <class T>
Arg<T> input(long long size, unsigned seed, long long indexBound = 0) {
  Arg<T> a{std::unique_ptr<T[]>(new T[size]), size};
  std::mt19937 rng(seed);
  for (long long i = 0; i < size; ++i)
    if constexpr (std::is_same_v<T, long long>)
      a.data[i] = (long long)(rng() % (unsigned long long)indexBound);
    else if constexpr (std::is_same_v<T, bool>)
      a.data[i] = rng() % 2;
    else
      a.data[i] = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  return a;
}

template <class T>
Arg<T> output(long long size) {
  Arg<T> a{std::unique_ptr<T[]>(new T[size]), size};
  for (long long i = 0; i < size; ++i)
    a.data[i] = marker<T>();
  return a;
}

/// The kernel's extents for `constants` and `pointers` arguments.
template <class F>
std::vector<long long> extentsOf(F f, std::initializer_list<long long> constants, int pointers) {
  std::vector<long long> k(constants);
  Extents e = f(k.data(), (int)k.size(), pointers);
  EXPECT_EQ(e.count, pointers);
  return std::vector<long long>(e.elements, e.elements + e.count);
}

/// Each output's first and last elements were written.
template <class T>
void expectReached(Arg<T> &a, const std::string &what) {
  ASSERT_GT(a.size, 0) << what;
  EXPECT_FALSE(isMarker(a.data[0])) << what << ": its first element is not written";
  EXPECT_FALSE(isMarker(a.data[a.size - 1])) << what << ": its last element is not written";
}

// N, C, H, W, KH, KW, OH, OW, SH, SW, PT, PL, PB, PR, DH, DW: a 3x2 window,
// strides 2 and 1, uneven padding, dilation 2 along H.
#define GEOMETRY 2, 4, 7, 5, 3, 2, 3, 5, 2, 1, 1, 0, 1, 1, 2, 1

TEST(KernelExtents, Windows) {
  std::vector<long long> e = extentsOf(im2col_extents, {GEOMETRY}, 2);
  auto x = input<float>(e[0], 1);
  auto cols = output<float>(e[1]);
  im2col<GEOMETRY>(x.get(), cols.get());
  expectReached(cols, "im2col's columns");

  e = extentsOf(col2im_extents, {GEOMETRY}, 2);
  auto c = input<float>(e[0], 2);
  auto dx = output<float>(e[1]);
  col2im<GEOMETRY>(c.get(), dx.get(), 1);
  expectReached(dx, "col2im's image");

  e = extentsOf(max_pool_extents, {GEOMETRY}, 3);
  auto px = input<float>(e[0], 3);
  auto y = output<float>(e[1]);
  auto idx = output<long long>(e[2]);
  max_pool<GEOMETRY>(px.get(), y.get(), idx.get());
  expectReached(y, "max_pool's values");
  expectReached(idx, "max_pool's indices");

  e = extentsOf(max_pool_grad_extents, {GEOMETRY}, 3);
  auto dy = input<float>(e[0], 4);
  auto gdx = output<float>(e[2]);
  max_pool_grad<GEOMETRY>(dy.get(), idx.get(), gdx.get(), 1);
  expectReached(gdx, "max_pool_grad's image");

  for (long long countPad : {0, 1}) {
    e = extentsOf(avg_pool_extents, {GEOMETRY, countPad}, 2);
    auto ax = input<float>(e[0], 5);
    auto ay = output<float>(e[1]);
    if (countPad)
      avg_pool<GEOMETRY, 1>(ax.get(), ay.get());
    else
      avg_pool<GEOMETRY, 0>(ax.get(), ay.get());
    expectReached(ay, "avg_pool's values");

    e = extentsOf(avg_pool_grad_extents, {GEOMETRY, countPad}, 2);
    auto ady = input<float>(e[0], 6);
    auto adx = output<float>(e[1]);
    if (countPad)
      avg_pool_grad<GEOMETRY, 1>(ady.get(), adx.get(), 1);
    else
      avg_pool_grad<GEOMETRY, 0>(ady.get(), adx.get(), 1);
    expectReached(adx, "avg_pool_grad's image");
  }
}

// The window's geometry with M = 6 filters in G = 2 groups.
#define CONV GEOMETRY, 6, 2

TEST(KernelExtents, GroupedConvolution) {
  std::vector<long long> e = extentsOf(conv_forward_extents, {CONV}, 3);
  auto x = input<float>(e[0], 1), w = input<float>(e[1], 2);
  auto y = output<float>(e[2]);
  conv_forward<CONV>(x.get(), w.get(), y.get());
  expectReached(y, "conv_forward's output");

  e = extentsOf(conv_data_grad_extents, {CONV}, 3);
  auto dy = input<float>(e[0], 3);
  auto dx = output<float>(e[2]);
  conv_data_grad<CONV>(dy.get(), w.get(), dx.get());
  expectReached(dx, "conv_data_grad's image");

  e = extentsOf(conv_filter_grad_extents, {CONV}, 3);
  auto dw = output<float>(e[2]);
  conv_filter_grad<CONV>(dy.get(), x.get(), dw.get());
  expectReached(dw, "conv_filter_grad's filters");
}

TEST(KernelExtents, GatherBackward) {
  std::vector<long long> e = extentsOf(gather_backward_extents, {3, 5, 7, 4}, 3);
  auto dy = input<float>(e[0], 1);
  auto idx = input<long long>(e[1], 2, 5);
  auto out = output<float>(e[2]);
  gather_backward<3, 5, 7, 4>(dy.get(), idx.get(), out.get(), 1);
  expectReached(out, "gather_backward's table");
}

/// Forward and backward attention with constants K... (OTC_ATTENTION's
/// order) on buffers of their extents.
template <long long... K>
void checkAttention(const char *what) {
  SCOPED_TRACE(what);
  constexpr long long k[] = {K...};
  constexpr bool masked = k[8] != 0;
  std::vector<long long> e = extentsOf(attention_forward_extents, {K...}, masked ? 6 : 5);
  auto q = input<float>(e[0], 1), key = input<float>(e[1], 2), v = input<float>(e[2], 3);
  using M = std::conditional_t<k[8] == 1, bool, float>; // Mask 1: i1
  auto mask = input<M>(masked ? e[3] : 1, 4);
  auto out = output<float>(e[masked ? 4 : 3]);
  auto stats = output<float>(e[masked ? 5 : 4]);
  if constexpr (masked)
    attention_forward<K...>(q.get(), key.get(), v.get(), mask.get(), out.get(), stats.get(),
                            0.5f, 0.0f);
  else
    attention_forward<K...>(q.get(), key.get(), v.get(), out.get(), stats.get(), 0.5f, 0.0f);
  expectReached(out, "attention_forward's output");
  expectReached(stats, "attention_forward's statistics");

  e = extentsOf(attention_backward_extents, {K...}, masked ? 11 : 10);
  auto dout = input<float>(e[0], 5);
  int at = masked ? 7 : 6;
  auto delta = output<float>(e[at]);
  auto dq = output<float>(e[at + 1]), dk = output<float>(e[at + 2]),
       dv = output<float>(e[at + 3]);
  if constexpr (masked)
    attention_backward<K...>(dout.get(), q.get(), key.get(), v.get(), out.get(), stats.get(),
                             mask.get(), delta.get(), dq.get(), dk.get(), dv.get(), 0.5f, 0.0f);
  else
    attention_backward<K...>(dout.get(), q.get(), key.get(), v.get(), out.get(), stats.get(),
                             delta.get(), dq.get(), dk.get(), dv.get(), 0.5f, 0.0f);
  expectReached(delta, "attention_backward's delta");
  expectReached(dq, "dq");
  expectReached(dk, "dk");
  expectReached(dv, "dv");
}

TEST(KernelExtents, Attention) {
  // B, H, G, T, S, D, DV, Causal, Mask, MB, MH, MT, MS, Layout, QP, KP, VP,
  // DQP, DKP, DVP.
  checkAttention<2, 4, 2, 3, 5, 8, 4, 0, 2, 0, 0, 5, 1, 0, 0, 0, 0, 0, 0, 0>(
      "layout 0, grouped queries, a [T, S] additive mask");
  checkAttention<2, 4, 1, 5, 5, 8, 8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>(
      "layout 0, causal");
  // q, k and v slices of one packed [B, T, 4 D + 2 D + 2 D] projection,
  // their gradients written into another.
  checkAttention<2, 4, 2, 3, 3, 8, 8, 0, 0, 0, 0, 0, 0, 1, 64, 64, 64, 64, 64, 64>(
      "layout 1, pitched rows, grouped queries");
  checkAttention<1, 2, 1, 4, 4, 8, 8, 0, 1, 16, 0, 4, 1, 1, 0, 0, 0, 0, 0, 0>(
      "layout 1, an i1 [B, 1, T, S] mask");
}

// Lens: the sequence lengths [B] follow the inputs (one row held from
// step 1, one from step T - 1 on).
template <long long Lens>
Arg<long long> lensArg(long long T, long long B) {
  Arg<long long> a{std::unique_ptr<long long[]>(new long long[B]), B};
  for (long long b = 0; b < B; ++b)
    a.data[b] = b % 2 ? 1 : T - 1;
  return a;
}

template <long long Reverse, long long Act, long long Lens>
void checkRnn() {
  SCOPED_TRACE(Act ? "relu" : "tanh");
  constexpr long long T = 3, B = 2, H = 4;
  std::vector<long long> e = extentsOf(rnn_forward_extents, {T, B, H, Reverse, Act, Lens}, 5 + Lens);
  auto x = input<float>(e[0], 12), r = input<float>(e[1], 13), h0 = input<float>(e[2], 14);
  auto lens = lensArg<Lens>(T, B);
  if (Lens)
    EXPECT_EQ(e[3], B);
  auto hs = output<float>(e[3 + Lens]), states = output<float>(e[4 + Lens]);
  if constexpr (Lens)
    rnn_forward<T, B, H, Reverse, Act, Lens>(x.get(), r.get(), h0.get(), lens.get(), hs.get(),
                                             states.get());
  else
    rnn_forward<T, B, H, Reverse, Act, Lens>(x.get(), r.get(), h0.get(), hs.get(), states.get());
  expectReached(hs, "rnn hidden states");
  expectReached(states, "rnn states");

  e = extentsOf(rnn_backward_extents, {T, B, H, Reverse, Act, Lens}, 6 + Lens);
  auto dhs = input<float>(e[0], 15);
  auto carry = output<float>(e[3 + Lens]), dx = output<float>(e[4 + Lens]),
       dh0 = output<float>(e[5 + Lens]);
  if constexpr (Lens)
    rnn_backward<T, B, H, Reverse, Act, Lens>(dhs.get(), r.get(), states.get(), lens.get(),
                                              carry.get(), dx.get(), dh0.get());
  else
    rnn_backward<T, B, H, Reverse, Act, Lens>(dhs.get(), r.get(), states.get(), carry.get(),
                                              dx.get(), dh0.get());
  expectReached(dx, "rnn input gradient");
  expectReached(dh0, "rnn initial hidden gradient");
}

template <long long Reverse, long long Lens>
void checkRecurrent() {
  SCOPED_TRACE(Reverse ? "reverse" : "forward");
  SCOPED_TRACE(Lens ? "with lengths" : "full length");
  constexpr long long T = 3, B = 2, H = 4;
  auto lens = lensArg<Lens>(T, B);
  std::vector<long long> e = extentsOf(lstm_forward_extents, {T, B, H, Reverse, Lens}, 7 + Lens);
  auto x = input<float>(e[0], 1), r = input<float>(e[1], 2), h0 = input<float>(e[2], 3),
       c0 = input<float>(e[3], 4);
  auto hs = output<float>(e[4 + Lens]), cs = output<float>(e[5 + Lens]),
       gates = output<float>(e[6 + Lens]);
  if constexpr (Lens)
    lstm_forward<T, B, H, Reverse, Lens>(x.get(), r.get(), h0.get(), c0.get(), lens.get(),
                                         hs.get(), cs.get(), gates.get());
  else
    lstm_forward<T, B, H, Reverse, Lens>(x.get(), r.get(), h0.get(), c0.get(), hs.get(), cs.get(),
                                         gates.get());
  expectReached(hs, "lstm hidden states");
  expectReached(cs, "lstm cell states");
  expectReached(gates, "lstm gates");

  for (int cellGrad : {1, 0}) {
    e = extentsOf(lstm_backward_extents, {T, B, H, Reverse, Lens}, 9 + cellGrad + Lens);
    auto dhs = input<float>(e[0], 5), dcs = input<float>(cellGrad ? e[1] : 1, 6);
    int at = 5 + cellGrad + Lens;
    auto carry = output<float>(e[at]), dx = output<float>(e[at + 1]),
         dh0 = output<float>(e[at + 2]), dc0 = output<float>(e[at + 3]);
    if constexpr (Lens) {
      if (cellGrad)
        lstm_backward<T, B, H, Reverse, Lens>(dhs.get(), dcs.get(), r.get(), cs.get(), gates.get(),
                                              c0.get(), lens.get(), carry.get(), dx.get(),
                                              dh0.get(), dc0.get());
      else
        lstm_backward<T, B, H, Reverse, Lens>(dhs.get(), r.get(), cs.get(), gates.get(), c0.get(),
                                              lens.get(), carry.get(), dx.get(), dh0.get(),
                                              dc0.get());
    } else {
      if (cellGrad)
        lstm_backward<T, B, H, Reverse, Lens>(dhs.get(), dcs.get(), r.get(), cs.get(), gates.get(),
                                              c0.get(), carry.get(), dx.get(), dh0.get(),
                                              dc0.get());
      else
        lstm_backward<T, B, H, Reverse, Lens>(dhs.get(), r.get(), cs.get(), gates.get(), c0.get(),
                                              carry.get(), dx.get(), dh0.get(), dc0.get());
    }
    expectReached(dx, "lstm input gradient");
    expectReached(dh0, "lstm initial hidden gradient");
    expectReached(dc0, "lstm initial cell gradient");
  }

  for (int rbias : {1, 0}) {
    e = extentsOf(gru_forward_extents, {T, B, H, Reverse, 1, Lens}, 7 + rbias + Lens);
    auto gx = input<float>(e[0], 7), gr = input<float>(e[1], 8), gh0 = input<float>(e[2], 9);
    auto rb = input<float>(rbias ? e[3] : 1, 10);
    int at = 3 + rbias + Lens;
    auto acc = output<float>(e[at]), qx = output<float>(e[at + 1]),
         ghs = output<float>(e[at + 2]), ggates = output<float>(e[at + 3]);
    if constexpr (Lens) {
      if (rbias)
        gru_forward<T, B, H, Reverse, 1, Lens>(gx.get(), gr.get(), gh0.get(), rb.get(), lens.get(),
                                               acc.get(), qx.get(), ghs.get(), ggates.get());
      else
        gru_forward<T, B, H, Reverse, 1, Lens>(gx.get(), gr.get(), gh0.get(), lens.get(),
                                               acc.get(), qx.get(), ghs.get(), ggates.get());
    } else {
      if (rbias)
        gru_forward<T, B, H, Reverse, 1, Lens>(gx.get(), gr.get(), gh0.get(), rb.get(), acc.get(),
                                               qx.get(), ghs.get(), ggates.get());
      else
        gru_forward<T, B, H, Reverse, 1, Lens>(gx.get(), gr.get(), gh0.get(), acc.get(), qx.get(),
                                               ghs.get(), ggates.get());
    }
    expectReached(ghs, "gru hidden states");
    expectReached(ggates, "gru gates");

    e = extentsOf(gru_backward_extents, {T, B, H, Reverse, 1, Lens}, 10 + Lens);
    auto gdhs = input<float>(e[0], 11);
    auto carry = output<float>(e[5 + Lens]), m = output<float>(e[6 + Lens]),
         work = output<float>(e[7 + Lens]), gdx = output<float>(e[8 + Lens]),
         gdh0 = output<float>(e[9 + Lens]);
    if constexpr (Lens)
      gru_backward<T, B, H, Reverse, 1, Lens>(gdhs.get(), gr.get(), ghs.get(), ggates.get(),
                                              gh0.get(), lens.get(), carry.get(), m.get(),
                                              work.get(), gdx.get(), gdh0.get());
    else
      gru_backward<T, B, H, Reverse, 1, Lens>(gdhs.get(), gr.get(), ghs.get(), ggates.get(),
                                              gh0.get(), carry.get(), m.get(), work.get(),
                                              gdx.get(), gdh0.get());
    expectReached(gdx, "gru input gradient");
    expectReached(gdh0, "gru initial hidden gradient");
  }
  checkRnn<Reverse, 0, Lens>();
  checkRnn<Reverse, 1, Lens>();
}

TEST(KernelExtents, Recurrent) {
  checkRecurrent<0, 0>();
  checkRecurrent<1, 0>();
  checkRecurrent<0, 1>();
  checkRecurrent<1, 1>();
}

TEST(KernelExtents, FormsTheKernelsDoNotHave) {
  std::vector<long long> window = {GEOMETRY};
  EXPECT_EQ(im2col_extents(window.data(), 16, 3).count, 0); // a third pointer
  EXPECT_EQ(avg_pool_extents(window.data(), 16, 2).count, 0); // no CountPad
  std::vector<long long> attention = {2, 4, 3, 3, 5, 8, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(attention_forward_extents(attention.data(), 20, 6).count, 0); // no mask
  attention[2] = 0;
  EXPECT_EQ(attention_forward_extents(attention.data(), 20, 5).count, 0); // no groups
}

} // namespace
