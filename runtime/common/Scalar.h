//===- Scalar.h - Element conversions between any two dtypes ----*- C++ -*-===//
//
// Internal to the runtime: reading and writing one element of any dtype
// through a common scalar (floats as double, integers and bools as int64),
// with bf16/f16 rounding to nearest even and saturating float-to-int
// truncation. One definition for the CPU kernels (cpu/KernelUtil.h,
// cpu/Tensor.cpp) and the CUDA kernels (cuda/ElementwiseUtil.cuh), where the
// same functions also run on the device, so both backends convert bit for
// bit alike.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMMON_SCALAR_H
#define GLIMMER_RT_COMMON_SCALAR_H

#include "Bf16.h"
#include "glimmer_rt/Safetensors.h" // DType

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#ifdef __CUDACC__
#define GLIMMER_HD __host__ __device__
#else
#define GLIMMER_HD
#endif

namespace glimmer_rt {
namespace scalar {
// Internal linkage: host-only and CUDA translation units compile these
// differently (GLIMMER_HD), so each keeps its own copy.
namespace {


GLIMMER_HD inline uint32_t floatBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
#endif
}
GLIMMER_HD inline float bitsFloat(uint32_t x) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(x);
#else
  float f;
  std::memcpy(&f, &x, 4);
  return f;
#endif
}

GLIMMER_HD inline uint16_t floatToBf16(float f) {
  return bf16FromFloatBits(floatBits(f));
}

GLIMMER_HD inline float bf16ToFloat(uint16_t b) {
  return bitsFloat(uint32_t(b) << 16);
}

GLIMMER_HD inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) // inf or NaN
    return sign | (ax > 0x7f800000u ? 0x7e00 : 0x7c00);
  if (ax >= 0x477ff000u) // >= 65520 rounds to inf
    return sign | 0x7c00;
  if (ax < 0x38800000u) { // below 2^-14: half subnormal (or zero)
    // a * 2^24 is exact and below 1024; rintf rounds half to even.
    return sign | uint16_t(rintf(bitsFloat(ax) * 16777216.0f));
  }
  uint32_t mantissa = ax & 0x7fffffu;
  uint32_t h = (((ax >> 23) - 127 + 15) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // a carry into the exponent is the correct rounding
  return sign | uint16_t(h);
}

GLIMMER_HD inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  if (exponent == 0) {
    // zero or subnormal: mantissa * 2^-24, exact in float
    bits = floatBits(float(mantissa) * (1.0f / 16777216.0f)) | sign;
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return bitsFloat(bits);
}

/// Float to integer: truncation toward zero, NaN -> 0, saturating.
GLIMMER_HD inline int64_t truncToInt(double v) {
  if (v != v)
    return 0;
  if (v >= 9223372036854775807.0)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

/// An element read in its natural domain: integers and bools as int64,
/// floats as double.
struct Scalar {
  bool isFloat;
  double f;
  int64_t i;
};

GLIMMER_HD inline Scalar loadScalar(DType t, const void *base,
                                             int64_t k) {
  switch (t) {
  case DType::F64:
    return {true, static_cast<const double *>(base)[k], 0};
  case DType::F32:
    return {true, static_cast<const float *>(base)[k], 0};
  case DType::BF16:
    return {true, bf16ToFloat(static_cast<const uint16_t *>(base)[k]), 0};
  case DType::F16:
    return {true, halfToFloat(static_cast<const uint16_t *>(base)[k]), 0};
  case DType::I64:
    return {false, 0, static_cast<const int64_t *>(base)[k]};
  case DType::I32:
    return {false, 0, static_cast<const int32_t *>(base)[k]};
  case DType::I16:
    return {false, 0, static_cast<const int16_t *>(base)[k]};
  case DType::I8:
    return {false, 0, static_cast<const int8_t *>(base)[k]};
  case DType::U8:
    return {false, 0, static_cast<const uint8_t *>(base)[k]};
  case DType::Bool:
    return {false, 0, static_cast<const uint8_t *>(base)[k] ? 1 : 0};
  }
  return {false, 0, 0};
}

GLIMMER_HD inline void storeScalar(DType t, void *base, int64_t k,
                                            Scalar s) {
  // Integer destinations take the integer (truncated) value; float ones the
  // double (an int64 converts to the nearest double first).
  double f = s.isFloat ? s.f : double(s.i);
  int64_t i = s.isFloat ? truncToInt(s.f) : s.i;
  switch (t) {
  case DType::F64:
    static_cast<double *>(base)[k] = f;
    break;
  case DType::F32:
    static_cast<float *>(base)[k] = float(f);
    break;
  case DType::BF16:
    static_cast<uint16_t *>(base)[k] = floatToBf16(float(f));
    break;
  case DType::F16:
    static_cast<uint16_t *>(base)[k] = floatToHalf(float(f));
    break;
  case DType::I64:
    static_cast<int64_t *>(base)[k] = i;
    break;
  case DType::I32:
    static_cast<int32_t *>(base)[k] = int32_t(i);
    break;
  case DType::I16:
    static_cast<int16_t *>(base)[k] = int16_t(i);
    break;
  case DType::I8:
    static_cast<int8_t *>(base)[k] = int8_t(i);
    break;
  case DType::U8:
    static_cast<uint8_t *>(base)[k] = uint8_t(i);
    break;
  case DType::Bool:
    static_cast<uint8_t *>(base)[k] = (s.isFloat ? s.f != 0 : s.i != 0);
    break;
  }
}

} // namespace
} // namespace scalar
} // namespace glimmer_rt

#endif // GLIMMER_RT_COMMON_SCALAR_H
