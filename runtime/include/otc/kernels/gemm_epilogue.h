// Kernel library: GEMM epilogues (the kernel program's Gemm step with a bias
// or a bias gradient). Row-major, as the Gemm step: C[m, n] = alpha op(A)
// op(B) (+ bias[n] on every row), perhaps through the tanh GELU with the
// preactivation kept beside it, and the bias gradient, the sums of op(A)
// (length m) or op(B) (length n) over the contraction index.
//
// On the CPU the product is BLAS's (float32) or gemm_f32acc's, and the
// epilogue a pass after it. On CUDA, cuBLASLt runs the epilogue inside the
// product; where it declines (alignment, types, a shape), cuBLAS's GEMM and
// the kernels below do the same in separate passes.
#ifndef OTC_KERNELS_GEMM_EPILOGUE_H
#define OTC_KERNELS_GEMM_EPILOGUE_H

#include "otc/kernels/gemm_f32acc.h"
#include "otc/runtime/kernel_support.h"

#include <vector>

namespace otc_kernels {

/// Sums of the stored [Rows, Cols] matrix x (rows LD apart; 0: dense) over
/// its rows (Cols of them) or, with AlongCols, over its columns (Rows of
/// them), in float32, in index order.
template <long long Rows, long long Cols, bool AlongCols, long long LD = 0, class T, class TO>
void contraction_sums(const T *x, TO *out) {
  constexpr long long ld = LD ? LD : Cols;
  if constexpr (AlongCols) {
    for (long long r = 0; r < Rows; ++r) {
      float acc = 0.0f;
      for (long long c = 0; c < Cols; ++c)
        acc += otc_ld(x[r * ld + c]);
      otc_store(&out[r], acc);
    }
  } else {
    std::vector<float> acc(Cols, 0.0f);
    for (long long r = 0; r < Rows; ++r)
      for (long long c = 0; c < Cols; ++c)
        acc[c] += otc_ld(x[r * ld + c]);
    for (long long c = 0; c < Cols; ++c)
      otc_store(&out[c], acc[c]);
  }
}

/// PyTorch's gelu(approximate="tanh"), the form cuBLASLt's epilogue has,
/// with the operations in the order of otc.gelu's elementwise form
/// (codegen/rules/Elementwise.cpp): a GELU that otc-recompute computes
/// again from the kept product then has the epilogue's bits on the CPU.
OTC_HD float gelu_tanh(float x) {
  float cube = x * x * x;
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * cube)));
}

/// gelu_tanh'(x), the factor of cuBLASLt's DGELU epilogue.
OTC_HD float gelu_tanh_grad(float x) {
  const float k = 0.7978845608028654f, a = 0.044715f;
  float t = tanhf(k * (x + a * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * a * x * x);
}

/// C, holding a float32 product, times gelu_tanh'(pre).
template <long long M, long long N, class TP>
void dgelu_rows(float *c, const TP *pre) {
#pragma omp parallel for if (M * N > (1 << 16))
  for (long long i = 0; i < M * N; ++i)
    c[i] *= gelu_tanh_grad(otc_ld(pre[i]));
}

/// The 16-bit product times gelu_tanh'(pre) in float32, rounded once.
template <bool TransA, bool TransB, long long M, long long N, long long K, class TA,
          class TB, class TC>
void gemm_f32acc_dgelu(float alpha, const TA *A, const TB *B, const TC *pre, TC *C) {
  gemm_f32acc_each<TransA, TransB, M, N, K>(A, B, [&](long long i, long long j, float acc) {
    otc_store(&C[i * N + j], alpha * acc * gelu_tanh_grad(otc_ld(pre[i * N + j])));
  });
}

/// The float32 product in `pre` (rows LDP apart; 0: dense) plus the bias
/// (when given); with Gelu, C the GELU of that sum and `pre` the sum.
template <long long M, long long N, bool Gelu, long long LDP = 0, class TV, class TC>
void bias_gelu_rows(float *pre, const TV *bias, TC *c) {
  constexpr long long ldp = LDP ? LDP : N;
#pragma omp parallel for if (M * N > (1 << 16))
  for (long long i = 0; i < M; ++i)
    for (long long j = 0; j < N; ++j) {
      float v = pre[i * ldp + j] + (bias ? otc_ld(bias[j]) : 0.0f);
      pre[i * ldp + j] = v;
      if constexpr (Gelu)
        otc_store(&c[i * N + j], gelu_tanh(v));
    }
}

/// The 16-bit product with its bias added in float32 (when given), rounded
/// once; with Gelu, `pre` that sum and C the GELU of `pre` as stored, as an
/// unfused GEMM and GELU compute it (PyTorch's linear, then gelu): a GELU
/// that otc-recompute computes again from the kept `pre` has its bits.
/// LDA, LDB, LDC: padded rows (0: dense), without Gelu.
template <bool TransA, bool TransB, long long M, long long N, long long K, bool Gelu,
          long long LDA = 0, long long LDB = 0, long long LDC = 0, class TA, class TB, class TV,
          class TC>
void gemm_f32acc_epilogue(float alpha, const TA *A, const TB *B, const TV *bias, TC *pre,
                          TC *C) {
  static_assert(!Gelu || LDC == 0, "the preactivation is dense beside a dense C");
  constexpr long long ldc = LDC ? LDC : N;
  gemm_f32acc_each<TransA, TransB, M, N, K, LDA, LDB>(A, B, [&](long long i, long long j,
                                                                 float acc) {
    float v = alpha * acc + (bias ? otc_ld(bias[j]) : 0.0f);
    if constexpr (Gelu) {
      otc_store(&pre[i * N + j], v);
      v = gelu_tanh(otc_ld(pre[i * N + j]));
    }
    otc_store(&C[i * ldc + j], v);
  });
}

} // namespace otc_kernels

#ifdef __CUDACC__
#include "otc/runtime/cuda_check.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

namespace otc_kernels {

template <class T> constexpr cudaDataType_t cuda_type();
template <> constexpr cudaDataType_t cuda_type<float>() { return CUDA_R_32F; }
template <> constexpr cudaDataType_t cuda_type<otc_f16>() { return CUDA_R_16F; }
template <> constexpr cudaDataType_t cuda_type<otc_bf16>() { return CUDA_R_16BF; }

/// What rides on the product.
enum class GemmEpilogue { Bias, Gelu, BiasGelu, Dgelu, BiasGradA, BiasGradB };

/// One call site's cuBLASLt plan, made at its first call.
struct LtPlan {
  bool made = false, fused = false;
  unsigned alignment = 0; // of the pointers it was chosen for
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo;
};

inline unsigned lt_alignment(const void *p) {
  unsigned a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a)
    a /= 2;
  return a;
}

// The float32 product plus the bias (when given), rounded once into C, or
// with `gelu` into `pre` and its GELU into C: the fallback of cuBLASLt's
// BIAS and GELU_AUX(_BIAS) epilogues. `product` may be `pre` or C itself
// when they are float32.
template <class TC, class TV>
__global__ void bias_gelu_kernel(long long rows, long long n, const float *product,
                                 long long ldp, const TV *bias, bool gelu, TC *pre, TC *c,
                                 long long ldc) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < rows * n;
       i += (long long)gridDim.x * blockDim.x) {
    long long r = i / n, col = i % n;
    float v = product[r * ldp + col] + (bias ? otc_ld(bias[col]) : 0.0f);
    if (gelu) { // of the preactivation as stored (gemm_f32acc_epilogue)
      otc_store(&pre[i], v);
      v = gelu_tanh(otc_ld(pre[i]));
    }
    otc_store(&c[r * ldc + col], v);
  }
}

// The float32 product times gelu_tanh'(pre), rounded once into C: the
// fallback of cuBLASLt's DGELU epilogue.
template <class TC>
__global__ void dgelu_kernel(long long rows, long long n, const float *product, const TC *pre,
                             TC *c) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < rows * n;
       i += (long long)gridDim.x * blockDim.x)
    otc_store(&c[i], product[i] * gelu_tanh_grad(otc_ld(pre[i])));
}

/// Float32 scratch for the 16-bit fallback's products, `bytes` at least:
/// grown at a first call, outside the memory plan (cuBLAS's workspace is
/// cuBLAS's own while it runs the product). An outgrown buffer is not
/// freed: a captured CUDA graph of the step may still read it.
inline float *fallback_scratch(size_t bytes) {
  static float *scratch = nullptr;
  static size_t have = 0;
  if (have < bytes) {
    OTC_CUDA_CHECK(cudaMalloc(&scratch, bytes));
    have = bytes;
  }
  return scratch;
}

// Sums over the rows of a stored [rows, cols] matrix: 32 columns a block,
// eight lanes of rows each, then a fixed-order tree (deterministic).
template <class T, class TO>
__global__ void sum_rows_kernel(long long rows, long long cols, long long ld, const T *x,
                                TO *out) {
  __shared__ float part[8][33];
  long long c = blockIdx.x * 32LL + threadIdx.x;
  float acc = 0.0f;
  if (c < cols)
    for (long long r = threadIdx.y; r < rows; r += 8)
      acc += otc_ld(x[r * ld + c]);
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int y = 1; y < 8; ++y)
      acc += part[y][threadIdx.x];
    otc_store(&out[c], acc);
  }
}

// Sums over the columns: a warp per row.
template <class T, class TO>
__global__ void sum_cols_kernel(long long rows, long long cols, long long ld, const T *x,
                                TO *out) {
  long long r = blockIdx.x * 8LL + threadIdx.y;
  if (r >= rows)
    return;
  float acc = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += 32)
    acc += otc_ld(x[r * ld + c]);
  acc = otc_warp_sum(acc);
  if (threadIdx.x == 0)
    otc_store(&out[r], acc);
}

/// Makes `plan` for these shapes, types and pointers' alignment: fused when
/// cuBLASLt has an algorithm for the epilogue.
inline void lt_plan(LtPlan &plan, cublasLtHandle_t lt, size_t workspaceBytes, bool transA,
                    bool transB, long long m, long long n, long long k, long long lda,
                    long long ldb, long long ldc, cudaDataType_t ab, cudaDataType_t dt,
                    GemmEpilogue epi, void *vec, void *aux, unsigned alignment) {
  if (plan.made) {
    cublasLtMatmulDescDestroy(plan.desc);
    cublasLtMatrixLayoutDestroy(plan.a);
    cublasLtMatrixLayoutDestroy(plan.b);
    cublasLtMatrixLayoutDestroy(plan.d);
  }
  plan = LtPlan();
  plan.made = true;
  plan.alignment = alignment;
  // Column-major: D^T [n, m] = op(B)^T op(A)^T, so cuBLAS's A is our B.
  OTC_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  OTC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA,
                                                  sizeof(opA)));
  OTC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB,
                                                  sizeof(opB)));
  // Our op(B) is cuBLAS's A (BGRADA, length n), our op(A) its B (BGRADB).
  uint32_t e = epi == GemmEpilogue::Bias        ? CUBLASLT_EPILOGUE_BIAS
               : epi == GemmEpilogue::Gelu      ? CUBLASLT_EPILOGUE_GELU_AUX
               : epi == GemmEpilogue::BiasGelu  ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
               : epi == GemmEpilogue::Dgelu     ? CUBLASLT_EPILOGUE_DGELU
               : epi == GemmEpilogue::BiasGradB ? CUBLASLT_EPILOGUE_BGRADA
                                                : CUBLASLT_EPILOGUE_BGRADB;
  OTC_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
  OTC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                  &vec, sizeof(vec)));
  if (aux) { // the preactivation, [m, n] row-major: column-major n x m
    int64_t ld = n;
    OTC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
    OTC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
  }
  long long ar = transB ? k : n, ac = transB ? n : k, br = transA ? m : k, bc = transA ? k : m;
  OTC_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, ab, ar, ac, ldb));
  OTC_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, ab, br, bc, lda));
  OTC_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.d, dt, n, m, ldc));
  cublasLtMatmulPreference_t pref;
  OTC_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = workspaceBytes;
  OTC_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  uint32_t al = alignment;
  for (cublasLtMatmulPreferenceAttributes_t attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    OTC_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &al, sizeof(al)));
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, plan.desc, plan.a, plan.b, plan.d,
                                                     plan.d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  plan.fused = st == CUBLAS_STATUS_SUCCESS && found > 0;
  if (plan.fused)
    plan.algo = result.algo;
}

/// The Gemm step with an epilogue on `stream`: `vec` is the bias (read;
/// null for Gelu) or the bias gradient (written), `aux` the GELU's
/// preactivation (written; read under Dgelu; null for the others). cuBLAS's `handle` is also
/// a cuBLASLt handle (a documented cast); `workspace` is the one it was given. `lda`,
/// `ldb`, `ldc`: padded rows (0: dense), with a bias or a bias gradient only.
template <class TA, class TC, class TV>
void gemm_epilogue(LtPlan &plan, cublasHandle_t handle, cudaStream_t stream, void *workspace,
                   size_t workspaceBytes, bool transA, bool transB, long long m, long long n,
                   long long k, float alpha, const TA *A, const TA *B, float beta, TC *C,
                   GemmEpilogue epi, TV *vec, TC *aux, long long lda = 0, long long ldb = 0,
                   long long ldc = 0) {
  lda = lda ? lda : transA ? m : k;
  ldb = ldb ? ldb : transB ? k : n;
  ldc = ldc ? ldc : n;
  bool gelu = epi == GemmEpilogue::Gelu || epi == GemmEpilogue::BiasGelu;
  bool dgelu = epi == GemmEpilogue::Dgelu;
  constexpr cudaDataType_t ab = cuda_type<TA>(), dt = cuda_type<TC>();
  // cuBLASLt's vector has D's type. OTC_GEMM_EPILOGUE=unfused runs the
  // fallback instead (to check it, and to compare).
  static const bool unfused = [] {
    const char *e = getenv("OTC_GEMM_EPILOGUE");
    return e && strcmp(e, "unfused") == 0;
  }();
  // The preactivation's leading dimension must be a multiple of 8.
  bool typed = cuda_type<TV>() == dt && workspace != nullptr && !unfused &&
               !((gelu || dgelu) && n % 8);
  unsigned alignment = lt_alignment(A);
  for (const void *p : {(const void *)B, (const void *)C, (const void *)vec, (const void *)aux})
    alignment = alignment < lt_alignment(p) ? alignment : lt_alignment(p);
  if (typed && (!plan.made || alignment < plan.alignment))
    lt_plan(plan, (cublasLtHandle_t)handle, workspaceBytes, transA, transB, m, n, k, lda, ldb,
            ldc, ab, dt, epi, vec, aux, alignment);
  if (typed && plan.fused) {
    OTC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vec, sizeof(vec)));
    if (aux)
      OTC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
    OTC_CUBLAS_CHECK(cublasLtMatmul((cublasLtHandle_t)handle, plan.desc, &alpha, B, plan.a, A,
                                    plan.b, &beta, C, plan.d, C, plan.d, &plan.algo, workspace,
                                    workspaceBytes, stream));
    return;
  }
  // Unfused: the product, then the epilogue as a pass of its own.
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (epi == GemmEpilogue::Bias || gelu || dgelu) {
    // The product in float32, so that the bias and GELU come before the one
    // rounding as in the fused epilogue: in place when C is float32, else
    // in scratch, 32 MiB of rows at a time.
    constexpr bool f32 = cuda_type<TC>() == CUDA_R_32F;
    long long chunk = f32 ? m : (32LL << 20) / (4 * n);
    chunk = chunk < 1 ? 1 : chunk > m ? m : chunk;
    float *scratch = f32 ? nullptr : fallback_scratch(size_t(chunk * n) * 4);
    for (long long r0 = 0; r0 < m; r0 += chunk) {
      long long rows = m - r0 < chunk ? m - r0 : chunk;
      // A float32 C holds its own product, at its pitch; the preactivation
      // and the scratch are dense.
      long long ldp = f32 && !gelu ? ldc : n;
      float *product = f32 ? reinterpret_cast<float *>(gelu ? aux : C) + r0 * ldp : scratch;
      const TA *a = A + (transA ? r0 : r0 * lda);
      OTC_CUBLAS_CHECK(cublasGemmEx(handle, opB, opA, n, rows, k, &alpha, B, ab, ldb, a, ab, lda,
                                    &beta, product, CUDA_R_32F, ldp, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
      long long blocks = (rows * n + 255) / 256;
      if (dgelu)
        dgelu_kernel<<<blocks < 4096 ? blocks : 4096, 256, 0, stream>>>(rows, n, product,
                                                                        aux + r0 * n, C + r0 * n);
      else
        bias_gelu_kernel<<<blocks < 4096 ? blocks : 4096, 256, 0, stream>>>(
            rows, n, product, ldp, vec, gelu, aux ? aux + r0 * n : aux, C + r0 * ldc, ldc);
      OTC_CUDA_CHECK(cudaGetLastError());
    }
    return;
  }
  OTC_CUBLAS_CHECK(cublasGemmEx(handle, opB, opA, n, m, k, &alpha, B, ab, ldb, A, ab, lda, &beta,
                                C, dt, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  {
    // The summed operand as stored, and whether its contraction index runs
    // along its rows (then the sums are over rows) or its columns.
    bool ofA = epi == GemmEpilogue::BiasGradA;
    const TA *x = ofA ? A : B;
    bool trans = ofA ? transA : transB;
    long long len = ofA ? m : n;
    // op(A) [m, k]: stored [k, m] when transposed, so the sums run over rows.
    bool overRows = ofA ? trans : !trans;
    long long rows = overRows ? k : len, cols = overRows ? len : k, ld = ofA ? lda : ldb;
    if (overRows)
      sum_rows_kernel<<<(cols + 31) / 32, dim3(32, 8), 0, stream>>>(rows, cols, ld, x, vec);
    else
      sum_cols_kernel<<<(rows + 7) / 8, dim3(32, 8), 0, stream>>>(rows, cols, ld, x, vec);
  }
  OTC_CUDA_CHECK(cudaGetLastError());
}

} // namespace otc_kernels
#endif

#endif
