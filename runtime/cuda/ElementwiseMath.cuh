//===- ElementwiseMath.cuh - Math of the elementwise kernels ---*- CUDA -*-===//
//
// The formulas of the runtime's floating-point unary ops, one definition for
// the CUDA kernels (Elementwise.cu) and for the fused kernels the compiler
// generates for glimmer.fusion, which the runtime compiles with NVRTC
// (Fusion.cpp) from a source that includes this file: both compute every op
// bit for bit alike. Device code only and no standard headers (NVRTC has
// none); the math functions are qualified because the backend's own exp,
// log, ... would hide the global ones.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_ELEMENTWISEMATH_CUH
#define GLIMMER_RT_CUDA_ELEMENTWISEMATH_CUH

namespace glimmer_rt {
namespace cuda {
namespace math {

__device__ __forceinline__ float mExp(float v) { return ::expf(v); }
__device__ __forceinline__ double mExp(double v) { return ::exp(v); }
__device__ __forceinline__ float mLog(float v) { return ::logf(v); }
__device__ __forceinline__ double mLog(double v) { return ::log(v); }
__device__ __forceinline__ float mSqrt(float v) { return ::sqrtf(v); }
__device__ __forceinline__ double mSqrt(double v) { return ::sqrt(v); }
__device__ __forceinline__ float mTanh(float v) { return ::tanhf(v); }
__device__ __forceinline__ double mTanh(double v) { return ::tanh(v); }
__device__ __forceinline__ float mErf(float v) { return ::erff(v); }
__device__ __forceinline__ double mErf(double v) { return ::erf(v); }
__device__ __forceinline__ float mSin(float v) { return ::sinf(v); }
__device__ __forceinline__ double mSin(double v) { return ::sin(v); }
__device__ __forceinline__ float mCos(float v) { return ::cosf(v); }
__device__ __forceinline__ double mCos(double v) { return ::cos(v); }
__device__ __forceinline__ float mTan(float v) { return ::tanf(v); }
__device__ __forceinline__ double mTan(double v) { return ::tan(v); }
__device__ __forceinline__ float mAsin(float v) { return ::asinf(v); }
__device__ __forceinline__ double mAsin(double v) { return ::asin(v); }
__device__ __forceinline__ float mAcos(float v) { return ::acosf(v); }
__device__ __forceinline__ double mAcos(double v) { return ::acos(v); }
__device__ __forceinline__ float mAtan(float v) { return ::atanf(v); }
__device__ __forceinline__ double mAtan(double v) { return ::atan(v); }
__device__ __forceinline__ float mSinh(float v) { return ::sinhf(v); }
__device__ __forceinline__ double mSinh(double v) { return ::sinh(v); }
__device__ __forceinline__ float mCosh(float v) { return ::coshf(v); }
__device__ __forceinline__ double mCosh(double v) { return ::cosh(v); }
__device__ __forceinline__ float mAsinh(float v) { return ::asinhf(v); }
__device__ __forceinline__ double mAsinh(double v) { return ::asinh(v); }
__device__ __forceinline__ float mAcosh(float v) { return ::acoshf(v); }
__device__ __forceinline__ double mAcosh(double v) { return ::acosh(v); }
__device__ __forceinline__ float mAtanh(float v) { return ::atanhf(v); }
__device__ __forceinline__ double mAtanh(double v) { return ::atanh(v); }
__device__ __forceinline__ float mExpm1(float v) { return ::expm1f(v); }
__device__ __forceinline__ double mExpm1(double v) { return ::expm1(v); }
__device__ __forceinline__ float mLog1p(float v) { return ::log1pf(v); }
__device__ __forceinline__ double mLog1p(double v) { return ::log1p(v); }
__device__ __forceinline__ float mAbs(float v) { return ::fabsf(v); }
__device__ __forceinline__ double mAbs(double v) { return ::fabs(v); }
__device__ __forceinline__ float mFloor(float v) { return ::floorf(v); }
__device__ __forceinline__ double mFloor(double v) { return ::floor(v); }
__device__ __forceinline__ float mCeil(float v) { return ::ceilf(v); }
__device__ __forceinline__ double mCeil(double v) { return ::ceil(v); }
__device__ __forceinline__ float mTrunc(float v) { return ::truncf(v); }
__device__ __forceinline__ double mTrunc(double v) { return ::trunc(v); }
__device__ __forceinline__ float mRound(float v) { return ::rintf(v); }
__device__ __forceinline__ double mRound(double v) { return ::rint(v); }
__device__ __forceinline__ float mPow(float a, float b) { return ::powf(a, b); }
__device__ __forceinline__ double mPow(double a, double b) {
  return ::pow(a, b);
}

constexpr double kSqrt2 = 1.41421356237309504880;         // sqrt(2)
constexpr double kSqrtHalf = 0.70710678118654752440;      // 1/sqrt(2)
constexpr double kTwoOverSqrtPi = 1.12837916709551257390; // 2/sqrt(pi)

// Unary functors, applied to the compute type (float or double; integers
// for neg and relu). The formulas are the CPU's.
enum class UnaryOp {
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Erf,
  Sigmoid,
  Silu,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Expm1,
  Log1p,
  Abs,
  Floor,
  Ceil,
  Trunc,
  Round,
  Gelu,
  GeluTanh
};

template <UnaryOp Op>
struct Unary {
  template <typename A>
  __device__ A operator()(A v) const {
    if constexpr (Op == UnaryOp::Exp) {
      return mExp(v);
    } else if constexpr (Op == UnaryOp::Log) {
      return mLog(v);
    } else if constexpr (Op == UnaryOp::Sqrt) {
      return mSqrt(v);
    } else if constexpr (Op == UnaryOp::Rsqrt) {
      return A(1) / mSqrt(v);
    } else if constexpr (Op == UnaryOp::Tanh) {
      return mTanh(v);
    } else if constexpr (Op == UnaryOp::Erf) {
      return mErf(v);
    } else if constexpr (Op == UnaryOp::Sigmoid) {
      return A(1) / (A(1) + mExp(-v));
    } else if constexpr (Op == UnaryOp::Silu) {
      return v / (A(1) + mExp(-v));
    } else if constexpr (Op == UnaryOp::Sin) {
      return mSin(v);
    } else if constexpr (Op == UnaryOp::Cos) {
      return mCos(v);
    } else if constexpr (Op == UnaryOp::Tan) {
      return mTan(v);
    } else if constexpr (Op == UnaryOp::Asin) {
      return mAsin(v);
    } else if constexpr (Op == UnaryOp::Acos) {
      return mAcos(v);
    } else if constexpr (Op == UnaryOp::Atan) {
      return mAtan(v);
    } else if constexpr (Op == UnaryOp::Sinh) {
      return mSinh(v);
    } else if constexpr (Op == UnaryOp::Cosh) {
      return mCosh(v);
    } else if constexpr (Op == UnaryOp::Asinh) {
      return mAsinh(v);
    } else if constexpr (Op == UnaryOp::Acosh) {
      return mAcosh(v);
    } else if constexpr (Op == UnaryOp::Atanh) {
      return mAtanh(v);
    } else if constexpr (Op == UnaryOp::Expm1) {
      return mExpm1(v);
    } else if constexpr (Op == UnaryOp::Log1p) {
      return mLog1p(v);
    } else if constexpr (Op == UnaryOp::Abs) {
      return mAbs(v);
    } else if constexpr (Op == UnaryOp::Floor) {
      return mFloor(v);
    } else if constexpr (Op == UnaryOp::Ceil) {
      return mCeil(v);
    } else if constexpr (Op == UnaryOp::Trunc) {
      return mTrunc(v);
    } else if constexpr (Op == UnaryOp::Round) {
      return mRound(v);
    } else if constexpr (Op == UnaryOp::Gelu) {
      // PyTorch: x * 0.5 * (1 + erf(x / sqrt(2)))
      return v * A(0.5) * (A(1) + mErf(v * A(kSqrtHalf)));
    } else {
      // PyTorch: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
      const A beta = A(kSqrt2 * kTwoOverSqrtPi * 0.5), kappa = A(0.044715);
      A inner = beta * (v + kappa * v * v * v);
      return A(0.5) * v * (A(1) + mTanh(inner));
    }
  }
};

using Exp = Unary<UnaryOp::Exp>;
using Log = Unary<UnaryOp::Log>;
using Sqrt = Unary<UnaryOp::Sqrt>;
using Rsqrt = Unary<UnaryOp::Rsqrt>;
using Tanh = Unary<UnaryOp::Tanh>;
using Erf = Unary<UnaryOp::Erf>;
using Sigmoid = Unary<UnaryOp::Sigmoid>;
using Silu = Unary<UnaryOp::Silu>;
using Sin = Unary<UnaryOp::Sin>;
using Cos = Unary<UnaryOp::Cos>;
using Tan = Unary<UnaryOp::Tan>;
using Asin = Unary<UnaryOp::Asin>;
using Acos = Unary<UnaryOp::Acos>;
using Atan = Unary<UnaryOp::Atan>;
using Sinh = Unary<UnaryOp::Sinh>;
using Cosh = Unary<UnaryOp::Cosh>;
using Asinh = Unary<UnaryOp::Asinh>;
using Acosh = Unary<UnaryOp::Acosh>;
using Atanh = Unary<UnaryOp::Atanh>;
using Expm1 = Unary<UnaryOp::Expm1>;
using Log1p = Unary<UnaryOp::Log1p>;
using Abs = Unary<UnaryOp::Abs>;
using Floor = Unary<UnaryOp::Floor>;
using Ceil = Unary<UnaryOp::Ceil>;
using Trunc = Unary<UnaryOp::Trunc>;
using Round = Unary<UnaryOp::Round>;
using Gelu = Unary<UnaryOp::Gelu>;
using GeluTanh = Unary<UnaryOp::GeluTanh>;

} // namespace math
} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_ELEMENTWISEMATH_CUH
