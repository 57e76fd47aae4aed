// Kernel library: LSTM, GRU and Elman recurrences (otc.lstm, otc.gru,
// otc.rnn) and their backpropagation through time (otc.*_grad). The input
// projection of every step is one GEMM outside; here each step is a GEMM
// with the recurrent weight (BLAS: OpenBLAS or cuBLAS) and a pass of the
// gates over [B, H] cells. The time loop is written once, over an executor
// that is the CPU (OpenMP loops, cblas) or a CUDA stream (a grid-stride
// kernel per pass, cublasGemmEx).
//
// Layouts are time-major, contiguous: input [T, B, G H] (G = 4 for LSTM, 3
// for GRU, 1 for the Elman cell), recurrence [G H, H], states [T, B, H] and
// [B, H], kept gates [T, B, 4 H] (the Elman cell keeps its states [T, B,
// H]). X is the storage type of the input, weights and hidden states; cell
// states, gates and carries are float. With Reverse, step t runs from T - 1
// down and its predecessor is t + 1.
//
// Sequence lengths (ONNX's sequence_lens, PyTorch's packed sequences):
// with `lens` [B], row b holds its state through every step t >= lens[b]
// (its kept gates are 0 there), so the walk's last state is the state at
// the row's own last step, forward or reverse; the caller zeroes those
// steps of the output. Backwards, a held step passes its gradient through.
#ifndef OTC_KERNELS_RECURRENT_H
#define OTC_KERNELS_RECURRENT_H

#include "otc/runtime/kernel_support.h"

#include <math.h>
#include <string.h>
#include <type_traits>

#ifdef __CUDACC__
#include "otc/runtime/cuda_check.h"
#define OTC_CELL __host__ __device__
#else
#include <cblas.h>
#define OTC_CELL
#endif

namespace otc_kernels {

OTC_HD float rec_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/// Whether row b holds its state at step t (t at or past its length).
OTC_HD bool rec_held(const long long *lens, long long t, long long b) {
  return lens && t >= lens[b];
}

/// Step index s of the walk: the time it runs, and the one before it.
template <long long T, bool Reverse>
struct RecTime {
  static long long at(long long s) { return Reverse ? T - 1 - s : s; }
  static long long before(long long s) { return Reverse ? T - s : s - 1; }
};

#ifdef __CUDACC__
template <class Cell>
__global__ void __launch_bounds__(256) rec_cells_kernel(long long n, Cell cell) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n;
       k += (long long)gridDim.x * blockDim.x)
    cell(k);
}

template <class T>
constexpr cudaDataType rec_cuda_type() {
  return std::is_same<T, float>::value    ? CUDA_R_32F
         : std::is_same<T, otc_f16>::value ? CUDA_R_16F
                                           : CUDA_R_16BF;
}

/// Passes and products on a stream; cuBLAS's handle is on it already.
struct RecExec {
  cublasHandle_t handle;
  cudaStream_t stream;
  template <class Cell>
  void cells(long long n, const Cell &cell) const {
    long long blocks = (n + 255) / 256;
    rec_cells_kernel<<<(unsigned)(blocks < 65535 ? blocks : 65535), 256, 0, stream>>>(n, cell);
    OTC_CUDA_CHECK(cudaGetLastError());
  }
  /// Row-major C[M, N] = A[M, K] op(B) + beta C; op(B) is B [K, N], or Bᵀ of
  /// B [N, K]. cuBLAS is column-major, so it computes Cᵀ = op(B)ᵀ Aᵀ.
  template <class TA, class TB>
  void gemm(bool transB, long long M, long long N, long long K, const TA *A, long long lda,
            const TB *B, long long ldb, float beta, float *C, long long ldc) const {
    const float one = 1.0f;
    OTC_CUBLAS_CHECK(cublasGemmEx(handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N,
                                  (int)N, (int)M, (int)K, &one, B, rec_cuda_type<TB>(), (int)ldb,
                                  A, rec_cuda_type<TA>(), (int)lda, &beta, C, CUDA_R_32F,
                                  (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  void zero(float *p, long long n) const {
    OTC_CUDA_CHECK(cudaMemsetAsync(p, 0, (size_t)n * sizeof(float), stream));
  }
};
#else
struct RecExec {
  template <class Cell>
  void cells(long long n, const Cell &cell) const {
#pragma omp parallel for if (n >= 4096)
    for (long long k = 0; k < n; ++k)
      cell(k);
  }
  template <class TA, class TB>
  void gemm(bool transB, long long M, long long N, long long K, const TA *A, long long lda,
            const TB *B, long long ldb, float beta, float *C, long long ldc) const {
    if constexpr (std::is_same<TA, float>::value && std::is_same<TB, float>::value) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                  (int)K, 1.0f, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
    } else { // 16-bit storage, summed in float
#pragma omp parallel for if (M * N * K >= (1 << 18))
      for (long long i = 0; i < M; ++i)
        for (long long j = 0; j < N; ++j) {
          float acc = 0.0f;
          for (long long p = 0; p < K; ++p)
            acc += otc_ld(A[i * lda + p]) * otc_ld(transB ? B[j * ldb + p] : B[p * ldb + j]);
          C[i * ldc + j] = acc + (beta == 0.0f ? 0.0f : beta * C[i * ldc + j]);
        }
    }
  }
  void zero(float *p, long long n) const { memset(p, 0, (size_t)n * sizeof(float)); }
};
#endif

/// dst = src, narrowed to X (an initial state's gradient from its carry).
template <class X>
struct RecStore {
  const float *src;
  X *dst;
  OTC_CELL void operator()(long long k) const { otc_store(&dst[k], src[k]); }
};

//===--------------------------------------------------------------------===//
// LSTM: gates i, o, f, c~ in ONNX's order.
//===--------------------------------------------------------------------===//

/// g holds x_t + h R^T on entry and the activated gates on return;
/// c = f c_prev + i c~, h = o tanh(c).
template <class X>
struct LstmCell {
  long long H;
  float *g;
  const float *cprev;
  float *c;
  X *h;
  const X *hprev;
  const long long *lens;
  long long t;
  OTC_CELL void operator()(long long k) const {
    long long b = k / H, j = k % H;
    float *row = g + b * 4 * H;
    if (rec_held(lens, t, b)) {
      row[j] = row[H + j] = row[2 * H + j] = row[3 * H + j] = 0.0f;
      c[k] = cprev[k];
      h[k] = hprev[k];
      return;
    }
    float i = rec_sigmoid(row[j]), o = rec_sigmoid(row[H + j]);
    float f = rec_sigmoid(row[2 * H + j]), cand = tanhf(row[3 * H + j]);
    float cn = f * cprev[k] + i * cand;
    row[j] = i, row[H + j] = o, row[2 * H + j] = f, row[3 * H + j] = cand;
    c[k] = cn;
    otc_store(&h[k], o * tanhf(cn));
  }
};

/// g = x_t, widened (the recurrent product adds onto it).
template <class X>
struct RecLoad {
  const X *src;
  float *dst;
  OTC_CELL void operator()(long long k) const { dst[k] = otc_ld(src[k]); }
};

/// The gates' gradient of one step from dh (its own plus the carry) and dc;
/// leaves the cell's carry for the step before in dcarry.
template <class X>
struct LstmCellGrad {
  long long H;
  const X *dh_t;
  const float *dc_t; // null when the cell states are not read
  float *hcarry;     // with lens: left as the held rows' pass-through
  float *ccarry;
  const float *g, *c, *cprev;
  X *dx;
  const long long *lens;
  long long t;
  OTC_CELL void operator()(long long k) const {
    long long b = k / H, j = k % H;
    const float *row = g + b * 4 * H;
    float i = row[j], o = row[H + j], f = row[2 * H + j], cand = row[3 * H + j];
    float dh = otc_ld(dh_t[k]) + hcarry[k];
    if (lens) {
      bool held = rec_held(lens, t, b);
      hcarry[k] = held ? dh : 0.0f;
      if (held) {
        X *d = dx + b * 4 * H;
        for (int q = 0; q < 4; ++q)
          otc_store(&d[q * H + j], 0.0f);
        ccarry[k] += dc_t ? dc_t[k] : 0.0f;
        return;
      }
    }
    float tc = tanhf(c[k]);
    float dc = ccarry[k] + (dc_t ? dc_t[k] : 0.0f) + dh * o * (1.0f - tc * tc);
    X *d = dx + b * 4 * H;
    otc_store(&d[j], dc * cand * i * (1.0f - i));
    otc_store(&d[H + j], dh * tc * o * (1.0f - o));
    otc_store(&d[2 * H + j], dc * cprev[k] * f * (1.0f - f));
    otc_store(&d[3 * H + j], dc * i * (1.0f - cand * cand));
    ccarry[k] = dc * f;
  }
};

template <long long T, long long B, long long H, long long Reverse, class X>
void lstm_run_forward(const RecExec &ex, const X *x, const X *r, const X *h0, const float *c0,
                      const long long *lens, X *hs, float *cs, float *gates) {
  using Time = RecTime<T, Reverse != 0>;
  for (long long s = 0; s < T; ++s) {
    long long t = Time::at(s), p = Time::before(s);
    const X *hprev = s == 0 ? h0 : hs + p * B * H;
    const float *cprev = s == 0 ? c0 : cs + p * B * H;
    float *g = gates + t * B * 4 * H;
    ex.cells(B * 4 * H, RecLoad<X>{x + t * B * 4 * H, g});
    ex.gemm(true, B, 4 * H, H, hprev, H, r, H, 1.0f, g, 4 * H);
    ex.cells(B * H, LstmCell<X>{H, g, cprev, cs + t * B * H, hs + t * B * H, hprev, lens, t});
  }
}

/// hcarry [B, H] is the hidden state's gradient from the step after; the
/// cell's is carried in dc0 itself, which it ends as.
template <long long T, long long B, long long H, long long Reverse, class X>
void lstm_run_backward(const RecExec &ex, const X *dhs, const float *dcs, const X *r,
                       const float *cs, const float *gates, const float *c0,
                       const long long *lens, float *hcarry, X *dx, X *dh0, float *dc0) {
  using Time = RecTime<T, Reverse != 0>;
  float *ccarry = dc0;
  ex.zero(hcarry, B * H);
  ex.zero(ccarry, B * H);
  for (long long s = T - 1; s >= 0; --s) {
    long long t = Time::at(s), p = Time::before(s);
    const float *cprev = s == 0 ? c0 : cs + p * B * H;
    X *d = dx + t * B * 4 * H;
    ex.cells(B * H, LstmCellGrad<X>{H, dhs + t * B * H, dcs ? dcs + t * B * H : nullptr, hcarry,
                                    ccarry, gates + t * B * 4 * H, cs + t * B * H, cprev, d,
                                    lens, t});
    ex.gemm(false, B, H, 4 * H, d, 4 * H, r, H, lens ? 1.0f : 0.0f, hcarry, H);
  }
  ex.cells(B * H, RecStore<X>{hcarry, dh0});
}

//===--------------------------------------------------------------------===//
// GRU: gates z, r, n in ONNX's order; kept gates z, r, n, q.
//===--------------------------------------------------------------------===//

/// acc holds h R_zr^T (and h R_n^T with Lbr) for the step. Without Lbr, the
/// first pass stores q = r h for the candidate's product (qx) and the second
/// finishes the cell.
template <class X, bool Lbr, int Pass>
struct GruCell {
  long long H;
  const X *x, *hprev, *rb;
  const float *acc;
  X *qx;
  float *g;
  X *h;
  const long long *lens;
  long long t;
  OTC_CELL void operator()(long long k) const {
    long long b = k / H, j = k % H;
    const X *xr = x + b * 3 * H;
    const float *a = acc + b * 3 * H;
    float *row = g + b * 4 * H;
    float hp = otc_ld(hprev[k]);
    if (rec_held(lens, t, b)) {
      if (Pass == 0)
        row[j] = row[H + j] = row[2 * H + j] = row[3 * H + j] = 0.0f;
      if (!Lbr && Pass == 0)
        otc_store(&qx[k], 0.0f);
      else
        h[k] = hprev[k];
      return;
    }
    if (Pass == 0) {
      float z = rec_sigmoid(otc_ld(xr[j]) + a[j]), r = rec_sigmoid(otc_ld(xr[H + j]) + a[H + j]);
      row[j] = z, row[H + j] = r;
      if (!Lbr) {
        row[3 * H + j] = r * hp;
        otc_store(&qx[k], r * hp);
        return;
      }
      row[3 * H + j] = a[2 * H + j] + (rb ? otc_ld(rb[j]) : 0.0f);
    }
    float z = row[j], r = row[H + j], q = row[3 * H + j];
    float n = tanhf(otc_ld(xr[2 * H + j]) + (Lbr ? r * q : a[2 * H + j]));
    row[2 * H + j] = n;
    otc_store(&h[k], n + z * (hp - n));
  }
};

/// Pass 0: dh (own plus carry) into the carry, and the candidate's
/// pre-activation gradient dn into dx. Pass 1: the gates' gradients into dx
/// and work (the recurrent product's operand), the direct part of h_prev's
/// gradient into the carry; m = dn R_n without Lbr.
template <class X, bool Lbr, int Pass>
struct GruCellGrad {
  long long H;
  const X *dh_t, *hprev;
  const float *g, *m;
  float *carry;
  X *dx, *work;
  const long long *lens;
  long long t;
  OTC_CELL void operator()(long long k) const {
    long long b = k / H, j = k % H;
    const float *row = g + b * 4 * H;
    float z = row[j], r = row[H + j], n = row[2 * H + j], q = row[3 * H + j];
    X *d = dx + b * 3 * H;
    if (rec_held(lens, t, b)) { // the carry passes through, nothing reaches the gates
      if (Pass == 0) {
        carry[k] += otc_ld(dh_t[k]);
        otc_store(&d[2 * H + j], 0.0f);
        return;
      }
      X *w = work + b * 3 * H;
      for (int p = 0; p < 2; ++p) {
        otc_store(&d[p * H + j], 0.0f);
        otc_store(&w[p * H + j], 0.0f);
      }
      if (Lbr)
        otc_store(&w[2 * H + j], 0.0f);
      return;
    }
    if (Pass == 0) {
      float dh = otc_ld(dh_t[k]) + carry[k];
      carry[k] = dh;
      otc_store(&d[2 * H + j], dh * (1.0f - z) * (1.0f - n * n));
      return;
    }
    float dh = carry[k], hp = otc_ld(hprev[k]);
    float dn = dh * (1.0f - z) * (1.0f - n * n);
    float dr = Lbr ? dn * q : m[k] * hp;
    float dz = dh * (hp - n) * z * (1.0f - z);
    dr *= r * (1.0f - r);
    otc_store(&d[j], dz);
    otc_store(&d[H + j], dr);
    X *w = work + b * 3 * H;
    otc_store(&w[j], dz);
    otc_store(&w[H + j], dr);
    if (Lbr)
      otc_store(&w[2 * H + j], dn * r);
    carry[k] = dh * z + (Lbr ? 0.0f : m[k] * r);
  }
};

/// acc [B, 3H] and qx [B, H] are scratch.
template <long long T, long long B, long long H, long long Reverse, long long Lbr, class X>
void gru_run_forward(const RecExec &ex, const X *x, const X *r, const X *h0, const X *rb,
                     const long long *lens, float *acc, X *qx, X *hs, float *gates) {
  using Time = RecTime<T, Reverse != 0>;
  for (long long s = 0; s < T; ++s) {
    long long t = Time::at(s), p = Time::before(s);
    const X *hprev = s == 0 ? h0 : hs + p * B * H, *xt = x + t * B * 3 * H;
    float *g = gates + t * B * 4 * H;
    X *h = hs + t * B * H;
    ex.gemm(true, B, Lbr ? 3 * H : 2 * H, H, hprev, H, r, H, 0.0f, acc, 3 * H);
    ex.cells(B * H, GruCell<X, Lbr != 0, 0>{H, xt, hprev, rb, acc, qx, g, h, lens, t});
    if (!Lbr) {
      ex.gemm(true, B, H, H, qx, H, r + 2 * H * H, H, 0.0f, acc + 2 * H, 3 * H);
      ex.cells(B * H, GruCell<X, false, 1>{H, xt, hprev, rb, acc, qx, g, h, lens, t});
    }
  }
}

/// carry [B, H], m [B, H] and work [B, 3H] are scratch.
template <long long T, long long B, long long H, long long Reverse, long long Lbr, class X>
void gru_run_backward(const RecExec &ex, const X *dhs, const X *r, const X *hs,
                      const float *gates, const X *h0, const long long *lens, float *carry,
                      float *m, X *work, X *dx, X *dh0) {
  using Time = RecTime<T, Reverse != 0>;
  ex.zero(carry, B * H);
  for (long long s = T - 1; s >= 0; --s) {
    long long t = Time::at(s), p = Time::before(s);
    const X *hprev = s == 0 ? h0 : hs + p * B * H;
    const float *g = gates + t * B * 4 * H;
    X *d = dx + t * B * 3 * H;
    const X *dh = dhs + t * B * H;
    ex.cells(B * H, GruCellGrad<X, Lbr != 0, 0>{H, dh, hprev, g, m, carry, d, work, lens, t});
    if (!Lbr)
      ex.gemm(false, B, H, H, d + 2 * H, 3 * H, r + 2 * H * H, H, 0.0f, m, H);
    ex.cells(B * H, GruCellGrad<X, Lbr != 0, 1>{H, dh, hprev, g, m, carry, d, work, lens, t});
    ex.gemm(false, B, H, Lbr ? 3 * H : 2 * H, work, 3 * H, r, H, 1.0f, carry, H);
  }
  ex.cells(B * H, RecStore<X>{carry, dh0});
}

//===--------------------------------------------------------------------===//
// Elman RNN: h = f(x_t + h_prev R^T), f = tanh (Act 0) or relu (Act 1).
//===--------------------------------------------------------------------===//

/// s holds x_t + h R^T on entry and f of it on return; h its stored copy.
template <class X, long long Act>
struct RnnCell {
  long long H;
  float *s;
  X *h;
  const X *hprev;
  const long long *lens;
  long long t;
  OTC_CELL void operator()(long long k) const {
    if (rec_held(lens, t, k / H)) {
      s[k] = otc_ld(hprev[k]);
      h[k] = hprev[k];
      return;
    }
    float v = Act == 0 ? tanhf(s[k]) : (s[k] > 0.0f ? s[k] : 0.0f);
    s[k] = v;
    otc_store(&h[k], v);
  }
};

/// d = (dh_t + carry) f'(h_t), from the kept state h_t (tanh' = 1 - h²,
/// relu' = [h > 0], PyTorch's at 0).
template <class X, long long Act>
struct RnnCellGrad {
  long long H;
  const X *dh_t;
  float *carry; // with lens: left as the held rows' pass-through
  const float *s;
  X *dx;
  const long long *lens;
  long long t;
  OTC_CELL void operator()(long long k) const {
    float g = otc_ld(dh_t[k]) + carry[k], v = s[k];
    bool held = rec_held(lens, t, k / H);
    if (lens)
      carry[k] = held ? g : 0.0f;
    otc_store(&dx[k], held ? 0.0f : Act == 0 ? g * (1.0f - v * v) : (v > 0.0f ? g : 0.0f));
  }
};

template <long long T, long long B, long long H, long long Reverse, long long Act, class X>
void rnn_run_forward(const RecExec &ex, const X *x, const X *r, const X *h0,
                     const long long *lens, X *hs, float *states) {
  using Time = RecTime<T, Reverse != 0>;
  for (long long s = 0; s < T; ++s) {
    long long t = Time::at(s), p = Time::before(s);
    const X *hprev = s == 0 ? h0 : hs + p * B * H;
    float *st = states + t * B * H;
    ex.cells(B * H, RecLoad<X>{x + t * B * H, st});
    ex.gemm(true, B, H, H, hprev, H, r, H, 1.0f, st, H);
    ex.cells(B * H, RnnCell<X, Act>{H, st, hs + t * B * H, hprev, lens, t});
  }
}

/// states are the kept f(.) values: float32, or X itself when X is float.
template <long long T, long long B, long long H, long long Reverse, long long Act, class X>
void rnn_run_backward(const RecExec &ex, const X *dhs, const X *r, const float *states,
                      const long long *lens, float *carry, X *dx, X *dh0) {
  using Time = RecTime<T, Reverse != 0>;
  ex.zero(carry, B * H);
  for (long long s = T - 1; s >= 0; --s) {
    long long t = Time::at(s);
    X *d = dx + t * B * H;
    ex.cells(B * H, RnnCellGrad<X, Act>{H, dhs + t * B * H, carry, states + t * B * H, d, lens, t});
    ex.gemm(false, B, H, H, d, H, r, H, lens ? 1.0f : 0.0f, carry, H);
  }
  ex.cells(B * H, RecStore<X>{carry, dh0});
}

//===--------------------------------------------------------------------===//
// Entry points: the buffers in the op's order (inputs, scratch, results),
// then cuBLAS's handle and the stream on CUDA.
//===--------------------------------------------------------------------===//

#ifdef __CUDACC__
#define OTC_REC_EXEC , cublasHandle_t handle, cudaStream_t stream
#define OTC_REC_EX (RecExec{handle, stream})
#else
#define OTC_REC_EXEC
#define OTC_REC_EX (RecExec{})
#endif

// Lens (the last constant) says whether the sequence lengths [B] follow
// the inputs.
#define OTC_REC_LENS(want) static_assert(Lens == (want), "Lens must match the lens pointer")

template <long long T, long long B, long long H, long long Reverse, long long Lens, class X>
void lstm_forward(const X *x, const X *r, const X *h0, const float *c0, X *hs, float *cs,
                  float *gates OTC_REC_EXEC) {
  OTC_REC_LENS(0);
  lstm_run_forward<T, B, H, Reverse>(OTC_REC_EX, x, r, h0, c0, nullptr, hs, cs, gates);
}

template <long long T, long long B, long long H, long long Reverse, long long Lens, class X>
void lstm_forward(const X *x, const X *r, const X *h0, const float *c0, const long long *lens,
                  X *hs, float *cs, float *gates OTC_REC_EXEC) {
  OTC_REC_LENS(1);
  lstm_run_forward<T, B, H, Reverse>(OTC_REC_EX, x, r, h0, c0, lens, hs, cs, gates);
}

template <long long T, long long B, long long H, long long Reverse, long long Lens, class X>
void lstm_backward(const X *dhs, const float *dcs, const X *r, const float *cs,
                   const float *gates, const float *c0, float *carry, X *dx, X *dh0,
                   float *dc0 OTC_REC_EXEC) {
  OTC_REC_LENS(0);
  lstm_run_backward<T, B, H, Reverse>(OTC_REC_EX, dhs, dcs, r, cs, gates, c0, nullptr, carry, dx,
                                      dh0, dc0);
}

template <long long T, long long B, long long H, long long Reverse, long long Lens, class X>
void lstm_backward(const X *dhs, const float *dcs, const X *r, const float *cs,
                   const float *gates, const float *c0, const long long *lens, float *carry,
                   X *dx, X *dh0, float *dc0 OTC_REC_EXEC) {
  OTC_REC_LENS(1);
  lstm_run_backward<T, B, H, Reverse>(OTC_REC_EX, dhs, dcs, r, cs, gates, c0, lens, carry, dx,
                                      dh0, dc0);
}

// Without the cell states' gradient.
template <long long T, long long B, long long H, long long Reverse, long long Lens, class X>
void lstm_backward(const X *dhs, const X *r, const float *cs, const float *gates,
                   const float *c0, float *carry, X *dx, X *dh0, float *dc0 OTC_REC_EXEC) {
  OTC_REC_LENS(0);
  lstm_run_backward<T, B, H, Reverse>(OTC_REC_EX, dhs, (const float *)nullptr, r, cs, gates, c0,
                                      nullptr, carry, dx, dh0, dc0);
}

template <long long T, long long B, long long H, long long Reverse, long long Lens, class X>
void lstm_backward(const X *dhs, const X *r, const float *cs, const float *gates,
                   const float *c0, const long long *lens, float *carry, X *dx, X *dh0,
                   float *dc0 OTC_REC_EXEC) {
  OTC_REC_LENS(1);
  lstm_run_backward<T, B, H, Reverse>(OTC_REC_EX, dhs, (const float *)nullptr, r, cs, gates, c0,
                                      lens, carry, dx, dh0, dc0);
}

template <long long T, long long B, long long H, long long Reverse, long long Lbr, long long Lens,
          class X>
void gru_forward(const X *x, const X *r, const X *h0, const X *rb, float *acc, X *qx, X *hs,
                 float *gates OTC_REC_EXEC) {
  OTC_REC_LENS(0);
  gru_run_forward<T, B, H, Reverse, Lbr>(OTC_REC_EX, x, r, h0, rb, nullptr, acc, qx, hs, gates);
}

template <long long T, long long B, long long H, long long Reverse, long long Lbr, long long Lens,
          class X>
void gru_forward(const X *x, const X *r, const X *h0, const X *rb, const long long *lens,
                 float *acc, X *qx, X *hs, float *gates OTC_REC_EXEC) {
  OTC_REC_LENS(1);
  gru_run_forward<T, B, H, Reverse, Lbr>(OTC_REC_EX, x, r, h0, rb, lens, acc, qx, hs, gates);
}

// Without rbias.
template <long long T, long long B, long long H, long long Reverse, long long Lbr, long long Lens,
          class X>
void gru_forward(const X *x, const X *r, const X *h0, float *acc, X *qx, X *hs,
                 float *gates OTC_REC_EXEC) {
  OTC_REC_LENS(0);
  gru_run_forward<T, B, H, Reverse, Lbr>(OTC_REC_EX, x, r, h0, (const X *)nullptr, nullptr, acc,
                                         qx, hs, gates);
}

template <long long T, long long B, long long H, long long Reverse, long long Lbr, long long Lens,
          class X>
void gru_forward(const X *x, const X *r, const X *h0, const long long *lens, float *acc, X *qx,
                 X *hs, float *gates OTC_REC_EXEC) {
  OTC_REC_LENS(1);
  gru_run_forward<T, B, H, Reverse, Lbr>(OTC_REC_EX, x, r, h0, (const X *)nullptr, lens, acc, qx,
                                         hs, gates);
}

template <long long T, long long B, long long H, long long Reverse, long long Lbr, long long Lens,
          class X>
void gru_backward(const X *dhs, const X *r, const X *hs, const float *gates, const X *h0,
                  float *carry, float *m, X *work, X *dx, X *dh0 OTC_REC_EXEC) {
  OTC_REC_LENS(0);
  gru_run_backward<T, B, H, Reverse, Lbr>(OTC_REC_EX, dhs, r, hs, gates, h0, nullptr, carry, m,
                                          work, dx, dh0);
}

template <long long T, long long B, long long H, long long Reverse, long long Lbr, long long Lens,
          class X>
void gru_backward(const X *dhs, const X *r, const X *hs, const float *gates, const X *h0,
                  const long long *lens, float *carry, float *m, X *work, X *dx,
                  X *dh0 OTC_REC_EXEC) {
  OTC_REC_LENS(1);
  gru_run_backward<T, B, H, Reverse, Lbr>(OTC_REC_EX, dhs, r, hs, gates, h0, lens, carry, m, work,
                                          dx, dh0);
}

template <long long T, long long B, long long H, long long Reverse, long long Act, long long Lens,
          class X>
void rnn_forward(const X *x, const X *r, const X *h0, X *hs, float *states OTC_REC_EXEC) {
  OTC_REC_LENS(0);
  rnn_run_forward<T, B, H, Reverse, Act>(OTC_REC_EX, x, r, h0, nullptr, hs, states);
}

template <long long T, long long B, long long H, long long Reverse, long long Act, long long Lens,
          class X>
void rnn_forward(const X *x, const X *r, const X *h0, const long long *lens, X *hs,
                 float *states OTC_REC_EXEC) {
  OTC_REC_LENS(1);
  rnn_run_forward<T, B, H, Reverse, Act>(OTC_REC_EX, x, r, h0, lens, hs, states);
}

template <long long T, long long B, long long H, long long Reverse, long long Act, long long Lens,
          class X>
void rnn_backward(const X *dhs, const X *r, const float *states, float *carry, X *dx,
                  X *dh0 OTC_REC_EXEC) {
  OTC_REC_LENS(0);
  rnn_run_backward<T, B, H, Reverse, Act>(OTC_REC_EX, dhs, r, states, nullptr, carry, dx, dh0);
}

template <long long T, long long B, long long H, long long Reverse, long long Act, long long Lens,
          class X>
void rnn_backward(const X *dhs, const X *r, const float *states, const long long *lens,
                  float *carry, X *dx, X *dh0 OTC_REC_EXEC) {
  OTC_REC_LENS(1);
  rnn_run_backward<T, B, H, Reverse, Act>(OTC_REC_EX, dhs, r, states, lens, carry, dx, dh0);
}

#undef OTC_REC_EXEC
#undef OTC_REC_EX
#undef OTC_REC_LENS

} // namespace otc_kernels

#undef OTC_CELL

#endif
