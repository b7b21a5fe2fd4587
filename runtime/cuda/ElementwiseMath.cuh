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
using Gelu = Unary<UnaryOp::Gelu>;
using GeluTanh = Unary<UnaryOp::GeluTanh>;

} // namespace math
} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_ELEMENTWISEMATH_CUH
