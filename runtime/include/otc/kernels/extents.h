// Kernel library: how many elements each pointer argument of a library
// kernel spans, in the order of its arguments, from its template constants
// (the layouts its header documents). The compiler's program verifier
// checks every call against them (codegen/ProgramVerifier.cpp), and the
// kernel tests run the kernels on buffers of exactly these sizes (under
// the sanitizers in the test command's second pass).
//
// Each function takes the constants as the call lists them and how many
// pointers the call passes (an optional one left out: the overload
// without it), and returns no extents (count 0) for a form the kernel
// does not have.
#ifndef OTC_KERNELS_EXTENTS_H
#define OTC_KERNELS_EXTENTS_H

#include <initializer_list>

namespace otc_kernels {

struct Extents {
  int count = 0;
  long long elements[12] = {};
};

namespace detail {
inline Extents extents(std::initializer_list<long long> e) {
  Extents x;
  for (long long v : e)
    x.elements[x.count++] = v;
  return x;
}
} // namespace detail

// gather_backward<Outer, K, J, Inner>(dy, idx, out).
inline Extents gather_backward_extents(const long long *k, int constants, int pointers) {
  if (constants != 4 || pointers != 3)
    return {};
  return detail::extents({k[0] * k[2] * k[3], k[2], k[0] * k[1] * k[3]});
}

// The window kernels (OTC_WINDOW: N, C, H, W, KH, KW, OH, OW, ...): the
// image [N, C, H, W], im2col's columns [C KH KW, N OH OW], pooled values
// and max pooling's indices [N, C, OH, OW].
namespace detail {
inline long long image(const long long *k) { return k[0] * k[1] * k[2] * k[3]; }
inline long long columns(const long long *k) { return k[1] * k[4] * k[5] * k[0] * k[6] * k[7]; }
inline long long pooled(const long long *k) { return k[0] * k[1] * k[6] * k[7]; }
} // namespace detail

// im2col(x, cols), col2im(cols, dx).
inline Extents im2col_extents(const long long *k, int constants, int pointers) {
  if (constants != 16 || pointers != 2)
    return {};
  return detail::extents({detail::image(k), detail::columns(k)});
}
inline Extents col2im_extents(const long long *k, int constants, int pointers) {
  if (constants != 16 || pointers != 2)
    return {};
  return detail::extents({detail::columns(k), detail::image(k)});
}

// max_pool(x, y, idx), max_pool_grad(dy, idx, dx).
inline Extents max_pool_extents(const long long *k, int constants, int pointers) {
  if (constants != 16 || pointers != 3)
    return {};
  return detail::extents({detail::image(k), detail::pooled(k), detail::pooled(k)});
}
inline Extents max_pool_grad_extents(const long long *k, int constants, int pointers) {
  if (constants != 16 || pointers != 3)
    return {};
  return detail::extents({detail::pooled(k), detail::pooled(k), detail::image(k)});
}

// avg_pool<..., CountPad>(x, y), avg_pool_grad<..., CountPad>(dy, dx).
inline Extents avg_pool_extents(const long long *k, int constants, int pointers) {
  if (constants != 17 || pointers != 2)
    return {};
  return detail::extents({detail::image(k), detail::pooled(k)});
}
inline Extents avg_pool_grad_extents(const long long *k, int constants, int pointers) {
  if (constants != 17 || pointers != 2)
    return {};
  return detail::extents({detail::pooled(k), detail::image(k)});
}

// Convolution (OTC_CONV: the window's, then M filters in G groups): x
// [N, C, H, W], w [M, C/G, KH, KW], y [N, M, OH, OW].
namespace detail {
inline long long filters(const long long *k) { return k[16] * (k[1] / k[17]) * k[4] * k[5]; }
inline long long convolved(const long long *k) { return k[0] * k[16] * k[6] * k[7]; }
} // namespace detail

// conv_forward(x, w, y), conv_data_grad(dy, w, dx), conv_filter_grad(dy, x, dw).
inline Extents conv_forward_extents(const long long *k, int constants, int pointers) {
  if (constants != 18 || pointers != 3 || k[17] <= 0)
    return {};
  return detail::extents({detail::image(k), detail::filters(k), detail::convolved(k)});
}
inline Extents conv_data_grad_extents(const long long *k, int constants, int pointers) {
  if (constants != 18 || pointers != 3 || k[17] <= 0)
    return {};
  return detail::extents({detail::convolved(k), detail::filters(k), detail::image(k)});
}
inline Extents conv_filter_grad_extents(const long long *k, int constants, int pointers) {
  if (constants != 18 || pointers != 3 || k[17] <= 0)
    return {};
  return detail::extents({detail::convolved(k), detail::image(k), detail::filters(k)});
}

// Attention (OTC_ATTENTION: B, H, G, T, S, D, DV, Causal, Mask, MB, MH,
// MT, MS, Layout, QP, KP, VP, DQP, DKP, DVP). In layout 0 every tensor is
// dense; in layout 1 q, k, v and their gradients hold one row of heads per
// (b, t) position, the rows `pitch` apart (0: dense). out, dout, stats
// and delta are dense in both.
namespace detail {
/// Rows of `heads` heads `width` wide at `positions` positions.
inline long long rows(const long long *k, long long positions, long long heads, long long width,
                      long long pitch) {
  if (k[13] == 0 || pitch == 0)
    return positions * heads * width;
  return (positions - 1) * pitch + heads * width;
}
inline long long queries(const long long *k, long long width, long long pitch) {
  return rows(k, k[0] * k[3], k[1], width, pitch);
}
inline long long keys(const long long *k, long long width, long long pitch) {
  return rows(k, k[0] * k[4], k[1] / k[2], width, pitch);
}
inline long long mask(const long long *k) {
  return (k[0] - 1) * k[9] + (k[1] - 1) * k[10] + (k[3] - 1) * k[11] + (k[4] - 1) * k[12] + 1;
}
} // namespace detail

// attention_forward(q, k, v, [mask,] out, stats).
inline Extents attention_forward_extents(const long long *k, int constants, int pointers) {
  if (constants != 20 || k[2] <= 0 || pointers != (k[8] ? 6 : 5))
    return {};
  long long bht = k[0] * k[1] * k[3];
  Extents x = detail::extents({detail::queries(k, k[5], k[14]), detail::keys(k, k[5], k[15]),
                               detail::keys(k, k[6], k[16])});
  if (k[8])
    x.elements[x.count++] = detail::mask(k);
  x.elements[x.count++] = bht * k[6];
  x.elements[x.count++] = bht * 2;
  return x;
}

// attention_backward(dout, q, k, v, out, stats, [mask,] delta, dq, dk, dv).
inline Extents attention_backward_extents(const long long *k, int constants, int pointers) {
  if (constants != 20 || k[2] <= 0 || pointers != (k[8] ? 11 : 10))
    return {};
  long long bht = k[0] * k[1] * k[3];
  Extents x = detail::extents({bht * k[6], detail::queries(k, k[5], k[14]),
                               detail::keys(k, k[5], k[15]), detail::keys(k, k[6], k[16]),
                               bht * k[6], bht * 2});
  if (k[8])
    x.elements[x.count++] = detail::mask(k);
  x.elements[x.count++] = bht;
  x.elements[x.count++] = detail::queries(k, k[5], k[17]);
  x.elements[x.count++] = detail::keys(k, k[5], k[18]);
  x.elements[x.count++] = detail::keys(k, k[6], k[19]);
  return x;
}

// The recurrences (T, B, H, Reverse[, Lbr or Act], Lens), time-major: the
// projected input and its gradient [T, B, G H] (G = 4 for LSTM, 3 for GRU,
// 1 for the Elman RNN), the recurrence [G H, H], sequences [T, B, H],
// states [B, H], kept gates [T, B, 4 H] for LSTM and GRU; with Lens, the
// sequence lengths [B] after the inputs.
namespace detail {
/// The recurrence's extents: `inputs` then, with Lens (the last constant),
/// the lengths, then `rest`; none when the call's pointers disagree.
inline Extents recurrence(const long long *k, int constants, int pointers,
                          std::initializer_list<long long> inputs,
                          std::initializer_list<long long> rest) {
  long long lens = k[constants - 1];
  if ((lens != 0 && lens != 1) || pointers != int(inputs.size() + rest.size() + lens))
    return {};
  Extents x = extents(inputs);
  if (lens)
    x.elements[x.count++] = k[1];
  for (long long e : rest)
    x.elements[x.count++] = e;
  return x;
}
} // namespace detail

// lstm_forward(x, r, h0, c0, [lens,] hs, cs, gates).
inline Extents lstm_forward_extents(const long long *k, int constants, int pointers) {
  if (constants != 5)
    return {};
  long long T = k[0], B = k[1], H = k[2];
  return detail::recurrence(k, constants, pointers, {T * B * 4 * H, 4 * H * H, B * H, B * H},
                            {T * B * H, T * B * H, T * B * 4 * H});
}

// lstm_backward(dhs, [dcs,] r, cs, gates, c0, [lens,] carry, dx, dh0, dc0).
inline Extents lstm_backward_extents(const long long *k, int constants, int pointers) {
  if (constants != 5)
    return {};
  long long T = k[0], B = k[1], H = k[2];
  std::initializer_list<long long> rest = {B * H, T * B * 4 * H, B * H, B * H};
  bool cellGrad = pointers - k[4] == 10;
  return cellGrad ? detail::recurrence(k, constants, pointers,
                                       {T * B * H, T * B * H, 4 * H * H, T * B * H,
                                        T * B * 4 * H, B * H},
                                       rest)
                  : detail::recurrence(k, constants, pointers,
                                       {T * B * H, 4 * H * H, T * B * H, T * B * 4 * H, B * H},
                                       rest);
}

// gru_forward(x, r, h0, [rbias,] [lens,] acc, qx, hs, gates).
inline Extents gru_forward_extents(const long long *k, int constants, int pointers) {
  if (constants != 6)
    return {};
  long long T = k[0], B = k[1], H = k[2];
  std::initializer_list<long long> rest = {B * 3 * H, B * H, T * B * H, T * B * 4 * H};
  bool rbias = pointers - k[5] == 8;
  return rbias ? detail::recurrence(k, constants, pointers, {T * B * 3 * H, 3 * H * H, B * H, H},
                                    rest)
               : detail::recurrence(k, constants, pointers, {T * B * 3 * H, 3 * H * H, B * H},
                                    rest);
}

// gru_backward(dhs, r, hs, gates, h0, [lens,] carry, m, work, dx, dh0).
inline Extents gru_backward_extents(const long long *k, int constants, int pointers) {
  if (constants != 6)
    return {};
  long long T = k[0], B = k[1], H = k[2];
  return detail::recurrence(k, constants, pointers,
                            {T * B * H, 3 * H * H, T * B * H, T * B * 4 * H, B * H},
                            {B * H, B * H, B * 3 * H, T * B * 3 * H, B * H});
}

// rnn_forward(x, r, h0, [lens,] hs, states).
inline Extents rnn_forward_extents(const long long *k, int constants, int pointers) {
  if (constants != 6)
    return {};
  long long T = k[0], B = k[1], H = k[2];
  return detail::recurrence(k, constants, pointers, {T * B * H, H * H, B * H},
                            {T * B * H, T * B * H});
}

// rnn_backward(dhs, r, states, [lens,] carry, dx, dh0).
inline Extents rnn_backward_extents(const long long *k, int constants, int pointers) {
  if (constants != 6)
    return {};
  long long T = k[0], B = k[1], H = k[2];
  return detail::recurrence(k, constants, pointers, {T * B * H, H * H, T * B * H},
                            {B * H, T * B * H, B * H});
}

} // namespace otc_kernels

#endif
