// Kernel library: a matrix product of any storage types, summed in float.
// The CPU path for 16-bit operands (cuBLAS's GemmEx does this on CUDA); f32
// products go to BLAS instead. Row-major, as the kernel program's Gemm step.
#ifndef OTC_KERNELS_GEMM_F32ACC_H
#define OTC_KERNELS_GEMM_F32ACC_H

#include "otc/runtime/kernel_support.h"

namespace otc_kernels {

/// Calls `out(i, j, acc)` with each element's float32 sum over K, in index
/// order: the one loop under every float-accumulating product and its
/// epilogues (gemm_epilogue.h). LDA and LDB are the operands' row pitches
/// where their rows are padded (0: dense).
template <bool TransA, bool TransB, long long M, long long N, long long K, long long LDA = 0,
          long long LDB = 0, class TA, class TB, class Out>
void gemm_f32acc_each(const TA *A, const TB *B, Out out) {
  constexpr long long lda = LDA ? LDA : TransA ? M : K, ldb = LDB ? LDB : TransB ? K : N;
#pragma omp parallel for if (M * N * K > (1 << 18))
  for (long long i = 0; i < M; ++i) {
    for (long long j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (long long p = 0; p < K; ++p)
        acc += otc_ld(A[TransA ? p * lda + i : i * lda + p]) *
               otc_ld(B[TransB ? j * ldb + p : p * ldb + j]);
      out(i, j, acc);
    }
  }
}

template <bool TransA, bool TransB, long long M, long long N, long long K, long long LDA = 0,
          long long LDB = 0, long long LDC = 0, class TA, class TB, class TC>
void gemm_f32acc(float alpha, const TA *A, const TB *B, float beta, TC *C) {
  constexpr long long ldc = LDC ? LDC : N;
  gemm_f32acc_each<TransA, TransB, M, N, K, LDA, LDB>(A, B, [&](long long i, long long j,
                                                                 float acc) {
    float prior = beta == 0.0f ? 0.0f : beta * otc_ld(C[i * ldc + j]);
    otc_store(&C[i * ldc + j], alpha * acc + prior);
  });
}

} // namespace otc_kernels

#endif
