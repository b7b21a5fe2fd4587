//===- FusionPrelude.cuh - What generated fused kernels include -*- CUDA -*-===//
//
// The first lines of every NVRTC translation unit of fused kernels
// (Fusion.cpp): the compiler's kernels for glimmer.fusion call these. Each
// matches what the runtime's own kernel for the same op stores, so that a
// fused kernel's results equal those of its ops run one by one, bit for bit:
// bf16 values travel as floats that hold a bf16 value, and every bf16
// arithmetic result is rounded as the elementwise kernels store theirs.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_FUSIONPRELUDE_CUH
#define GLIMMER_RT_CUDA_FUSIONPRELUDE_CUH

#include "Bf16.h"
#include "ElementwiseMath.cuh"

namespace glimmer_fusion {

using namespace glimmer_rt::cuda::math;

/// A bf16 element as the float it is.
__device__ __forceinline__ float fromBf16(unsigned short b) {
  return __uint_as_float((unsigned int)b << 16);
}
/// The bf16 bits of a float that holds a bf16 value (exact).
__device__ __forceinline__ unsigned short toBf16(float v) {
  return (unsigned short)(__float_as_uint(v) >> 16);
}
/// An arithmetic result rounded to bf16 as the elementwise kernels store it
/// (__float2bfloat16: nearest even, NaN made canonical).
__device__ __forceinline__ float roundBf16(float v) {
#ifdef __CUDA_ARCH__
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return fromBf16(h);
#else
  // The host build of the kernels (FusionHost.h): the same rounding.
  unsigned int x = __float_as_uint(v);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return fromBf16(0x7fffu);
  return fromBf16(glimmer_rt::scalar::bf16FromFloatBits(x));
#endif
}
/// glimmer.convert to bf16 (Scalar.h's rounding: a NaN keeps its payload).
__device__ __forceinline__ float convertBf16(float v) {
  return fromBf16(glimmer_rt::scalar::bf16FromFloatBits(__float_as_uint(v)));
}
/// 16 bytes, the unit of a vector access.
struct alignas(16) Word16 {
  unsigned int x, y, z, w;
};
/// N consecutive elements of an operand or result of a fused kernel's
/// vector loop; sizeof(T) * N is a multiple of 16 and the address 16-byte
/// aligned (the kernel checks), so each 16 bytes move in one access. The
/// elements and the words share storage (a union, as the compilers of both
/// builds define it), so no access goes through a pointer of another type.
template <typename T, int N> union Vec {
  T v[N];
  Word16 words[sizeof(T) * N / 16];
};
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> loadVec(const T *p) {
  Vec<T, N> r;
#ifdef __CUDA_ARCH__
  const uint4 *s = reinterpret_cast<const uint4 *>(p);
#pragma unroll
  for (int k = 0; k < int(sizeof(r.words) / 16); ++k) {
    const uint4 q = s[k];
    r.words[k] = Word16{q.x, q.y, q.z, q.w};
  }
#else
  std::memcpy(r.v, p, sizeof(r.v));
#endif
  return r;
}
template <typename T, int N>
__device__ __forceinline__ void storeVec(T *p, const Vec<T, N> &x) {
#ifdef __CUDA_ARCH__
  uint4 *d = reinterpret_cast<uint4 *>(p);
#pragma unroll
  for (int k = 0; k < int(sizeof(x.words) / 16); ++k) {
    const Word16 q = x.words[k];
    uint4 u;
    u.x = q.x;
    u.y = q.y;
    u.z = q.z;
    u.w = q.w;
    d[k] = u;
  }
#else
  std::memcpy(p, x.v, sizeof(x.v));
#endif
}

/// max/min as the pick kernels: a NaN operand wins, the lhs first.
template <typename A> __device__ __forceinline__ A pickMax(A a, A b) {
  if (a != a || b != b)
    return a != a ? a : b;
  return a > b ? a : b;
}
template <typename A> __device__ __forceinline__ A pickMin(A a, A b) {
  if (a != a || b != b)
    return a != a ? a : b;
  return a < b ? a : b;
}

} // namespace glimmer_fusion

#endif // GLIMMER_RT_CUDA_FUSIONPRELUDE_CUH
