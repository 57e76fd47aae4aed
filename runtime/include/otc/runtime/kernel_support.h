/* What generated kernels use on both targets: the 16-bit float storage types
 * with their widening loads and rounding stores, and (on CUDA) warp and
 * block reductions. Arithmetic is always in float. */
#ifndef OTC_RUNTIME_KERNEL_SUPPORT_H
#define OTC_RUNTIME_KERNEL_SUPPORT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <type_traits>
#define OTC_HD __host__ __device__ __forceinline__
typedef __half otc_f16;
typedef __nv_bfloat16 otc_bf16;
OTC_HD float otc_ld(otc_f16 v) { return __half2float(v); }
OTC_HD float otc_ld(otc_bf16 v) { return __bfloat162float(v); }
OTC_HD void otc_store(otc_f16 *p, float v) { *p = __float2half_rn(v); }
OTC_HD void otc_store(otc_bf16 *p, float v) { *p = __float2bfloat16_rn(v); }
#else
#define OTC_HD static inline
/* Distinct structs so that loads and stores overload on them. */
typedef struct otc_f16 { uint16_t bits; } otc_f16;
typedef struct otc_bf16 { uint16_t bits; } otc_bf16;

OTC_HD float otc_bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* IEEE binary16 to float: exact. */
OTC_HD float otc_ld(otc_f16 h) {
  uint32_t sign = (uint32_t)(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu, man = h.bits & 0x3ffu;
  if (exp == 0x1f)
    return otc_bits_to_float(sign | 0x7f800000u | (man << 13));
  if (exp != 0)
    return otc_bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
  float sub = (float)man * 5.9604644775390625e-8f; /* man * 2^-24, exact */
  return sign ? -sub : sub;
}

/* float to binary16, rounding to nearest even; overflow gives infinity. */
OTC_HD void otc_store(otc_f16 *p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  uint16_t h;
  if (a > 0x7f800000u)
    h = 0x7e00; /* a quiet NaN */
  else if (a >= 0x477ff000u) /* 65520 and above round to infinity */
    h = 0x7c00;
  else if (a >= 0x38800000u) /* 2^-14 and above: normal */
    h = (uint16_t)((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13);
  else /* subnormal: a multiple of 2^-24, exact after scaling */
    h = (uint16_t)nearbyintf(otc_bits_to_float(a) * 16777216.0f);
  p->bits = sign | h;
}

OTC_HD float otc_ld(otc_bf16 b) { return otc_bits_to_float((uint32_t)b.bits << 16); }

/* float to bfloat16, rounding to nearest even. */
OTC_HD void otc_store(otc_bf16 *p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    p->bits = (uint16_t)((u >> 16) | 0x40u); /* stays a NaN */
  else
    p->bits = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
#endif

OTC_HD float otc_ld(float v) { return v; }

/* A float rounded to a 16-bit type and back: a cast whose result is used
 * inside a fused expression rounds as a stored one would. */
OTC_HD float otc_round_f16(float v) {
  otc_f16 h;
  otc_store(&h, v);
  return otc_ld(h);
}
OTC_HD float otc_round_bf16(float v) {
  otc_bf16 h;
  otc_store(&h, v);
  return otc_ld(h);
}

/* A float cast to int64: toward zero, NaN to 0, saturating (a plain C cast
 * of NaN or of an out-of-range value is undefined). */
OTC_HD long long otc_to_i64(float v) {
  if (!(v == v))
    return 0;
  if (v >= 9.2233720368547758e18f)
    return 9223372036854775807LL;
  if (v <= -9.2233720368547758e18f)
    return -9223372036854775807LL - 1;
  return (long long)v;
}
OTC_HD long long otc_to_i64(long long v) { return v; }

/* Division: IEEE on floats; on int64 toward zero, as C and ONNX, with a
 * zero divisor giving 0 and INT64_MIN / -1 wrapping (both undefined in C,
 * where the first traps; ONNX leaves them undefined). */
OTC_HD float otc_div(float a, float b) { return a / b; }
OTC_HD long long otc_div(long long a, long long b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return (long long)(0ULL - (unsigned long long)a);
  return a / b;
}
OTC_HD long long otc_to_i64(bool v) { return v ? 1 : 0; }

/* Philox4x32-10 (Salmon et al., SC'11): 4 counter words and 2 key words
 * in, 4 random words out, the same on every target. */
OTC_HD void otc_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = (uint32_t)p1;
    c2 = n2;
    c3 = (uint32_t)p0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* A uniform float in [0, 1) for element `index` of random stream `stream`
 * (one per dropout op) at micro-batch `offset` of a run seeded `seed`:
 * keyed by (seed, stream), counted by (index, offset). */
OTC_HD float otc_uniform(unsigned long long seed, unsigned long long offset, uint32_t stream,
                         unsigned long long index) {
  uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), (uint32_t)offset,
                     (uint32_t)(offset >> 32)};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32) ^ stream}, out[4];
  otc_philox4x32(ctr, key, out);
  return (float)(out[0] >> 8) * 5.9604644775390625e-8f; /* 24 bits * 2^-24 */
}

/* An ONNX index into a dim of n: negative counts from the end; -1 when it
 * lies outside [-n, n), which a gather reads as 0. */
OTC_HD long long otc_wrap_index(long long i, long long n) {
  if (i < 0)
    i += n;
  return i >= 0 && i < n ? i : -1;
}
OTC_HD void otc_store(float *p, float v) { *p = v; }

#ifdef __CUDACC__
/* Sum and max over the 32 lanes of a warp; every lane gets the result. */
__device__ __forceinline__ float otc_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float otc_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
/* Over a whole block (a multiple of 32 threads, at most 1024); every thread
 * gets the result. `scratch` holds 32 floats of shared memory. */
__device__ __forceinline__ float otc_block_reduce(float v, bool isMax, float *scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = isMax ? otc_warp_max(v) : otc_warp_sum(v);
  __syncthreads(); /* scratch may still be read by a previous reduction */
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : (isMax ? -INFINITY : 0.0f);
  return isMax ? otc_warp_max(v) : otc_warp_sum(v);
}

/* Elements W q .. W q + W - 1 of p (W 4 or 8; p aligned to W elements) as
 * floats, in 16-byte loads (8-byte for four 16-bit elements): the
 * vectorised elementwise kernels' accesses. Stores round as otc_store. */
template <int W> struct otc_pack16 { /* W 16-bit elements in one load */
  typedef typename std::conditional<W == 8, uint4, uint2>::type type;
};
template <int W> __device__ __forceinline__ void otc_vload(const float *p, long long q, float *v) {
  const float4 *s = reinterpret_cast<const float4 *>(p) + q * (W / 4);
#pragma unroll
  for (int i = 0; i < W / 4; ++i) {
    float4 t = s[i];
    v[4 * i] = t.x, v[4 * i + 1] = t.y, v[4 * i + 2] = t.z, v[4 * i + 3] = t.w;
  }
}
template <int W> __device__ __forceinline__ void otc_vstore(float *p, long long q, const float *v) {
  float4 *d = reinterpret_cast<float4 *>(p) + q * (W / 4);
#pragma unroll
  for (int i = 0; i < W / 4; ++i)
    d[i] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
}
template <int W, class H>
__device__ __forceinline__ void otc_vload16(const H *p, long long q, float *v) {
  typedef typename otc_pack16<W>::type Raw;
  Raw raw = reinterpret_cast<const Raw *>(p)[q];
  const H *h = reinterpret_cast<const H *>(&raw);
#pragma unroll
  for (int i = 0; i < W; ++i)
    v[i] = otc_ld(h[i]);
}
template <int W, class H> __device__ __forceinline__ void otc_vstore16(H *p, long long q, const float *v) {
  typedef typename otc_pack16<W>::type Raw;
  Raw raw;
  H *h = reinterpret_cast<H *>(&raw);
#pragma unroll
  for (int i = 0; i < W; ++i)
    otc_store(&h[i], v[i]);
  reinterpret_cast<Raw *>(p)[q] = raw;
}
template <int W> __device__ __forceinline__ void otc_vload(const otc_bf16 *p, long long q, float *v) {
  otc_vload16<W>(p, q, v);
}
template <int W> __device__ __forceinline__ void otc_vload(const otc_f16 *p, long long q, float *v) {
  otc_vload16<W>(p, q, v);
}
template <int W> __device__ __forceinline__ void otc_vstore(otc_bf16 *p, long long q, const float *v) {
  otc_vstore16<W>(p, q, v);
}
template <int W> __device__ __forceinline__ void otc_vstore(otc_f16 *p, long long q, const float *v) {
  otc_vstore16<W>(p, q, v);
}
#endif

#endif /* OTC_RUNTIME_KERNEL_SUPPORT_H */
