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
struct Exp {
  template <typename A>
  __device__ A operator()(A v) const {
    return mExp(v);
  }
};
struct Log {
  template <typename A>
  __device__ A operator()(A v) const {
    return mLog(v);
  }
};
struct Sqrt {
  template <typename A>
  __device__ A operator()(A v) const {
    return mSqrt(v);
  }
};
struct Rsqrt {
  template <typename A>
  __device__ A operator()(A v) const {
    return A(1) / mSqrt(v);
  }
};
struct Tanh {
  template <typename A>
  __device__ A operator()(A v) const {
    return mTanh(v);
  }
};
struct Erf {
  template <typename A>
  __device__ A operator()(A v) const {
    return mErf(v);
  }
};
struct Sigmoid {
  template <typename A>
  __device__ A operator()(A v) const {
    return A(1) / (A(1) + mExp(-v));
  }
};
struct Silu {
  template <typename A>
  __device__ A operator()(A v) const {
    return v / (A(1) + mExp(-v));
  }
};
struct Sin {
  template <typename A>
  __device__ A operator()(A v) const {
    return mSin(v);
  }
};
struct Cos {
  template <typename A>
  __device__ A operator()(A v) const {
    return mCos(v);
  }
};
/// PyTorch: x * 0.5 * (1 + erf(x / sqrt(2)))
struct Gelu {
  template <typename A>
  __device__ A operator()(A v) const {
    return v * A(0.5) * (A(1) + mErf(v * A(kSqrtHalf)));
  }
};
/// PyTorch: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
struct GeluTanh {
  template <typename A>
  __device__ A operator()(A v) const {
    const A beta = A(kSqrt2 * kTwoOverSqrtPi * 0.5), kappa = A(0.044715);
    A inner = beta * (v + kappa * v * v * v);
    return A(0.5) * v * (A(1) + mTanh(inner));
  }
};

} // namespace math
} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_ELEMENTWISEMATH_CUH
