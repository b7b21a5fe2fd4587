//===- KernelUtil.h - Helpers of the CPU kernels ----------------*- C++ -*-===//
//
// Internal to the runtime's CPU kernels: their element types (f32 and f64
// for floating point), dtype dispatch, and the index arithmetic and integer
// semantics several kernel families share.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CPU_KERNELUTIL_H
#define GLIMMER_RT_CPU_KERNELUTIL_H

#include "../common/Scalar.h"
#include "../kernels/Checks.h"
#include "CpuKernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace glimmer_rt::cpu {

using detail::check;
using detail::fail;
using detail::requireDefined;
using detail::requireDim;
using detail::requireInt;
using detail::requireLike;
using detail::requireRank;
using detail::requireShape;
using detail::stridesOf;

// Element conversions between any two dtypes: runtime/common/Scalar.h.
using namespace glimmer_rt::scalar;

inline bool isF(DType t) { return t == DType::F32 || t == DType::F64; }

inline void requireFloat(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isF(t.dtype()), op,
        std::string("expects ") + name + " of type f32 or f64, got " +
            t.describe());
}

/// An optimizer's grad in the parameter's type (a bf16 grad of an f32
/// parameter widened exactly, the CPU kernels computing in f32/f64 only).
inline Tensor widened(const Tensor &grad, const Tensor &param) {
  return grad.dtype() == param.dtype() ? grad
                                       : cpu::convert(grad, param.dtype());
}

/// The values of an integer tensor.
inline std::vector<int64_t> indexValues(const char *op, const Tensor &t,
                                        const char *name) {
  requireInt(op, t, name);
  std::vector<int64_t> out(size_t(t.numel()));
  if (t.dtype() == DType::I64)
    std::copy(t.data<int64_t>(), t.data<int64_t>() + t.numel(), out.begin());
  else
    std::copy(t.data<int32_t>(), t.data<int32_t>() + t.numel(), out.begin());
  return out;
}

//===----------------------------------------------------------------------===//
// Dtype dispatch
//===----------------------------------------------------------------------===//

/// Calls `f(T())` with T the C++ type of a f32/f64 tensor.
template <typename F>
auto dispatchFloat(const char *op, const Tensor &t, const char *name, F &&f) {
  switch (t.dtype()) {
  case DType::F32:
    return f(float());
  case DType::F64:
    return f(double());
  default:
    requireFloat(op, t, name); // throws
    return f(double());
  }
}

/// f32, f64, i32, i64.
template <typename F>
auto dispatchNumeric(const char *op, const Tensor &t, const char *name, F &&f) {
  switch (t.dtype()) {
  case DType::F32:
    return f(float());
  case DType::F64:
    return f(double());
  case DType::I32:
    return f(int32_t());
  case DType::I64:
    return f(int64_t());
  default:
    fail(op, std::string("expects ") + name +
                 " of type f32, f64, i32 or i64, got " + t.describe());
  }
}

/// Numeric types and bool (stored as uint8_t).
template <typename F>
auto dispatchComparable(const char *op, const Tensor &t, const char *name,
                        F &&f) {
  if (t.dtype() == DType::Bool)
    return f(uint8_t());
  return dispatchNumeric(op, t, name, std::forward<F>(f));
}

inline void fillWith(Tensor &t, double value) {
  int64_t n = t.numel();
  if (n == 0)
    return;
  storeScalar(t.dtype(), t.raw(), 0, {true, value, 0});
  size_t es = dtypeSize(t.dtype());
  char *p = static_cast<char *>(t.raw());
  for (int64_t k = 1; k < n; ++k)
    std::memcpy(p + k * es, p, es);
}

/// For a tensor viewed as [outer, len, inner] around `dim`.
struct Around {
  int64_t outer = 1, len = 1, inner = 1;
};

inline Around around(const Shape &shape, int64_t dim) {
  Around a;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (d < dim)
      a.outer *= shape[d];
    else if (d == dim)
      a.len = shape[d];
    else
      a.inner *= shape[d];
  }
  return a;
}

/// Integer arithmetic wraps around (as two's complement) instead of
/// overflowing, like PyTorch's integer tensors.
template <typename T>
T wrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else
    return a + b;
}

template <typename T>
T wrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) - std::make_unsigned_t<T>(b));
  else
    return a - b;
}

template <typename T>
T wrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) * std::make_unsigned_t<T>(b));
  else
    return a * b;
}

template <typename T>
bool isNan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

template <typename T>
T lowest() {
  if constexpr (std::is_floating_point_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

template <typename T>
T highest() {
  if constexpr (std::is_floating_point_v<T>)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}

} // namespace glimmer_rt::cpu

#endif // GLIMMER_RT_CPU_KERNELUTIL_H
