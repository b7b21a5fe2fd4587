//===- Bf16.h - Rounding a float's bits to bf16 -----------------*- C++ -*-===//
//
// Internal to the runtime: glimmer.convert's float -> bf16 rounding, on the
// bits of the float. One definition for Scalar.h (the CPU and CUDA kernels)
// and for the fused kernels' NVRTC source (Fusion.cpp), which has no
// standard headers: so only built-in types here.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMMON_BF16_H
#define GLIMMER_RT_COMMON_BF16_H

#ifdef __CUDACC__
#define GLIMMER_BF16_HD __host__ __device__
#else
#define GLIMMER_BF16_HD
#endif

namespace glimmer_rt {
namespace scalar {
namespace {

/// Round to nearest even; a NaN stays NaN, made quiet, its payload's top
/// bits kept.
GLIMMER_BF16_HD inline unsigned short bf16FromFloatBits(unsigned int x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return (unsigned short)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u); // round to nearest even
  return (unsigned short)(x >> 16);
}

} // namespace
} // namespace scalar
} // namespace glimmer_rt

#endif // GLIMMER_RT_COMMON_BF16_H
