/* The limits otc enforces on its input, shared by the compiler and the
 * runtime so both sides reject the same things (docs/design.md, "Input
 * contract"). Plain C so nvcc and the host compiler accept it. */
#ifndef OTC_RUNTIME_LIMITS_H
#define OTC_RUNTIME_LIMITS_H

#include <stdint.h>

/* Highest tensor rank: the runtime's tensor descriptors hold this many dims. */
#define OTC_MAX_RANK 8
/* Elements in one tensor (2^36: 256 GiB of float32, beyond any one GPU). */
#define OTC_MAX_ELEMENTS (INT64_C(1) << 36)
/* Elements of a tensor folded on the host at compile time. */
#define OTC_MAX_HOST_ELEMENTS (INT64_C(1) << 24)
/* Bytes of the activation arena of one micro-batch. */
#define OTC_MAX_ARENA_BYTES (INT64_C(1) << 40)
/* Samples in one micro-batch. */
#define OTC_MAX_MICRO_BATCH (INT64_C(1) << 24)
/* Micro-batches in one run, and any count flag (--steps, --epochs, ...):
 * beyond this a count is a typing error, and products of two stay exact. */
#define OTC_MAX_MICRO_BATCHES (INT64_C(1) << 40)
/* The cuBLAS workspace the CUDA runtime allocates and hands to cuBLAS
 * (cublasSetWorkspace), so that the memory plan counts it: 32 MiB, NVIDIA's
 * recommendation for Hopper. */
#define OTC_CUDA_WORKSPACE_BYTES (INT64_C(32) << 20)
/* Bytes in a graph input, initializer or node name. */
#define OTC_MAX_NAME_BYTES 1024
/* Bytes in a .npy header (numpy writes a few hundred). */
#define OTC_MAX_NPY_HEADER 65536

#ifdef __cplusplus
/* a * b into *out; false when it overflows int64 or either is negative. */
static inline bool otc_mul_count(int64_t a, int64_t b, int64_t *out) {
  return a >= 0 && b >= 0 && !__builtin_mul_overflow(a, b, out);
}
#endif

#endif /* OTC_RUNTIME_LIMITS_H */
