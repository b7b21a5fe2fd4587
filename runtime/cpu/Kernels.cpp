//===- Kernels.cpp - Reference CPU kernels for the glimmer ops ------------===//
//
// Straightforward loops, written for clarity and for agreement with PyTorch:
// floating-point kernels compute and accumulate in the tensor's own precision
// (f32 or f64) with the usual numerically careful formulations (max
// subtraction before exponentials, two-pass mean/variance). Every kernel
// checks the ranks, shapes, dtypes and index ranges it relies on and throws
// RuntimeError naming the op; none reads or writes out of bounds.
//
// Kernels are pure functions of their operands and keep no global state, so
// ranks running as threads of one process can call them concurrently.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Kernels.h"
#include "../common/Messages.h"
#include "../common/Scalar.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#ifdef GLIMMER_RT_HAVE_CUDA
#include "../cuda/CudaBackend.h"
// Kernels run where their operands live: a GPU operand sends the call to
// the CUDA backend, which checks that all operands share its device.
#define GLIMMER_CUDA_CALL(fn, ...) return cuda::fn(__VA_ARGS__)
#else
#define GLIMMER_CUDA_CALL(fn, ...)                                             \
  throw RuntimeError("this runtime was built without the CUDA backend")
#endif

namespace glimmer_rt {
namespace {

template <typename... Ts> bool onCuda(const Ts &...ts) {
  return (ts.isCuda() || ...);
}

bool anyOnCuda(const std::vector<Tensor> &ts) {
  for (const Tensor &t : ts)
    if (t.isCuda())
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

[[noreturn]] void fail(const char *op, const std::string &message) {
  throw RuntimeError(std::string("glimmer.") + op + ": " + message);
}

void check(bool condition, const char *op, const std::string &message) {
  if (!condition)
    fail(op, message);
}

std::string str(const std::vector<int64_t> &v) { return shapeString(v); }

void requireDefined(const char *op, const Tensor &t, const char *name) {
  check(t.defined(), op, std::string("missing ") + name);
}

bool isF(DType t) { return t == DType::F32 || t == DType::F64; }
bool isI(DType t) { return t == DType::I32 || t == DType::I64; }

void requireFloat(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isF(t.dtype()), op,
        std::string("expects ") + name + " of type f32 or f64, got " +
            t.describe());
}

void requireInt(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isI(t.dtype()), op,
        std::string("expects ") + name + " of type i32 or i64, got " +
            t.describe());
}

void requireRank(const char *op, const Tensor &t, const char *name,
                 int64_t rank) {
  check(t.rank() == rank, op,
        std::string("expects ") + name + " of rank " + std::to_string(rank) +
            ", got " + t.describe());
}

void requireShape(const char *op, const Tensor &t, const char *name,
                  const Shape &shape) {
  check(t.shape() == shape, op,
        std::string("expects ") + name + " of shape " + shapeString(shape) +
            ", got " + t.describe());
}

void requireGradScale(const char *op, const Tensor &scale,
                      const Tensor &param) {
  std::string error = messages::badGradScale(scale, param);
  check(error.empty(), op, error);
}

void requireOptimizerGrad(const char *op, const Tensor &grad,
                          const Tensor &param) {
  std::string error = messages::badOptimizerGrad(grad, param);
  check(error.empty(), op, error);
}

/// An optimizer's grad in the parameter's type (a bf16 grad of an f32
/// parameter widened exactly, the CPU kernels computing in f32/f64 only).
Tensor widened(const Tensor &grad, const Tensor &param) {
  return grad.dtype() == param.dtype() ? grad : convert(grad, param.dtype());
}

/// Same dtype and shape as `ref`.
void requireLike(const char *op, const Tensor &t, const char *name,
                 const Tensor &ref, const char *refName) {
  requireDefined(op, t, name);
  check(t.dtype() == ref.dtype() && t.shape() == ref.shape(), op,
        std::string("expects ") + name + " like " + refName + " (" +
            ref.describe() + "), got " + t.describe());
}

void requireDim(const char *op, int64_t dim, int64_t rank) {
  check(dim >= 0 && dim < rank, op,
        "dim " + std::to_string(dim) + " is out of range for rank " +
            std::to_string(rank));
}

/// The values of an integer tensor.
std::vector<int64_t> indexValues(const char *op, const Tensor &t,
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

// Element conversions between any two dtypes: runtime/common/Scalar.h.
using namespace glimmer_rt::scalar;

void fillWith(Tensor &t, double value) {
  int64_t n = t.numel();
  if (n == 0)
    return;
  storeScalar(t.dtype(), t.raw(), 0, {true, value, 0});
  size_t es = dtypeSize(t.dtype());
  char *p = static_cast<char *>(t.raw());
  for (int64_t k = 1; k < n; ++k)
    std::memcpy(p + k * es, p, es);
}

//===----------------------------------------------------------------------===//
// Strided copies (dtype-agnostic, by element size)
//===----------------------------------------------------------------------===//

/// Contiguous row-major strides (in elements).
std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

template <typename E>
void stridedCopyT(const Shape &shape, const E *src,
                  const std::vector<int64_t> &ss, E *dst,
                  const std::vector<int64_t> &ds) {
  int64_t n = numElements(shape);
  if (n == 0)
    return;
  size_t r = shape.size();
  if (r == 0) {
    *dst = *src;
    return;
  }
  int64_t inner = shape[r - 1], si = ss[r - 1], di = ds[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t so = 0, dof = 0;
  for (int64_t o = 0, outer = n / inner; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i)
      dst[dof + i * di] = src[so + i * si];
    for (int64_t d = int64_t(r) - 2; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        so += ss[d];
        dof += ds[d];
        break;
      }
      so -= ss[d] * (shape[d] - 1);
      dof -= ds[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

/// dst[dstBase + sum(i_d * dstStrides[d])] = src[srcBase + sum(i_d *
/// srcStrides[d])] for every index i of `shape`. Strides and bases count
/// elements of `elemSize` bytes; callers guarantee they stay in bounds.
void stridedCopy(size_t elemSize, const Shape &shape, const void *src,
                 int64_t srcBase, const std::vector<int64_t> &srcStrides,
                 void *dst, int64_t dstBase,
                 const std::vector<int64_t> &dstStrides) {
  switch (elemSize) {
  case 1:
    return stridedCopyT(shape, static_cast<const uint8_t *>(src) + srcBase,
                        srcStrides, static_cast<uint8_t *>(dst) + dstBase,
                        dstStrides);
  case 2:
    return stridedCopyT(shape, static_cast<const uint16_t *>(src) + srcBase,
                        srcStrides, static_cast<uint16_t *>(dst) + dstBase,
                        dstStrides);
  case 4:
    return stridedCopyT(shape, static_cast<const uint32_t *>(src) + srcBase,
                        srcStrides, static_cast<uint32_t *>(dst) + dstBase,
                        dstStrides);
  case 8:
    return stridedCopyT(shape, static_cast<const uint64_t *>(src) + srcBase,
                        srcStrides, static_cast<uint64_t *>(dst) + dstBase,
                        dstStrides);
  default:
    throw RuntimeError("unsupported element size " + std::to_string(elemSize));
  }
}

/// For a tensor viewed as [outer, len, inner] around `dim`.
struct Around {
  int64_t outer = 1, len = 1, inner = 1;
};
Around around(const Shape &shape, int64_t dim) {
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

//===----------------------------------------------------------------------===//
// Elementwise helpers
//===----------------------------------------------------------------------===//

template <typename Fn>
Tensor unaryFloat(const char *op, const Tensor &x, Fn fn) {
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), x.shape());
    const T *a = x.data<T>();
    T *o = y.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      o[i] = fn(a[i]);
    return y;
  });
}

template <typename Fn>
Tensor binaryNumeric(const char *op, const Tensor &a, const Tensor &b, Fn fn) {
  requireDefined(op, a, "lhs");
  requireLike(op, b, "rhs", a, "lhs");
  return dispatchNumeric(op, a, "operands", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(a.dtype(), a.shape());
    const T *x = a.data<T>(), *z = b.data<T>();
    T *o = y.data<T>();
    for (int64_t i = 0, n = a.numel(); i < n; ++i)
      o[i] = fn(x[i], z[i]);
    return y;
  });
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

constexpr double kSqrt2 = 1.41421356237309504880;         // sqrt(2)
constexpr double kSqrtHalf = 0.70710678118654752440;      // 1/sqrt(2)
constexpr double kTwoOverSqrtPi = 1.12837916709551257390; // 2/sqrt(pi)

} // namespace

//===----------------------------------------------------------------------===//
// Creation
//===----------------------------------------------------------------------===//

Tensor full(DType dtype, const Shape &shape, double value) {
  if (currentDevice().isCuda())
    GLIMMER_CUDA_CALL(full, currentDevice(), dtype, shape, value);
  Tensor t(dtype, shape);
  fillWith(t, value);
  return t;
}

Tensor constant(DType dtype, const Shape &shape,
                const std::vector<double> &values) {
  if (currentDevice().isCuda())
    GLIMMER_CUDA_CALL(constant, currentDevice(), dtype, shape, values);
  Tensor t(dtype, shape);
  check(int64_t(values.size()) == t.numel(), "constant",
        std::to_string(values.size()) + " values for shape " +
            shapeString(shape) + " of " + std::to_string(t.numel()) +
            " elements");
  for (int64_t i = 0; i < t.numel(); ++i)
    storeScalar(dtype, t.raw(), i, {true, values[size_t(i)], 0});
  return t;
}

Tensor iota(DType dtype, const Shape &shape, int64_t dim) {
  if (currentDevice().isCuda())
    GLIMMER_CUDA_CALL(iota, currentDevice(), dtype, shape, dim);
  requireDim("iota", dim, int64_t(shape.size()));
  Tensor t(dtype, shape);
  Around a = around(shape, dim);
  int64_t k = 0;
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t l = 0; l < a.len; ++l)
      for (int64_t i = 0; i < a.inner; ++i)
        storeScalar(dtype, t.raw(), k++, {false, 0, l});
  return t;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Tensor neg(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(neg, x);
  requireDefined("neg", x, "input");
  return dispatchNumeric("neg", x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), x.shape());
    const T *a = x.data<T>();
    T *o = y.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      o[i] = wrapSub(T(0), a[i]);
    return y;
  });
}

Tensor exp(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(exp, x);
  return unaryFloat("exp", x, [](auto v) { return std::exp(v); });
}
Tensor log(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(log, x);
  return unaryFloat("log", x, [](auto v) { return std::log(v); });
}
Tensor sqrt(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(sqrt, x);
  return unaryFloat("sqrt", x, [](auto v) { return std::sqrt(v); });
}
Tensor rsqrt(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(rsqrt, x);
  return unaryFloat("rsqrt", x, [](auto v) {
    using T = decltype(v);
    return T(1) / std::sqrt(v);
  });
}
Tensor tanh(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(tanh, x);
  return unaryFloat("tanh", x, [](auto v) { return std::tanh(v); });
}
Tensor erf(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(erf, x);
  return unaryFloat("erf", x, [](auto v) { return std::erf(v); });
}
Tensor sigmoid(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(sigmoid, x);
  return unaryFloat("sigmoid", x, [](auto v) {
    using T = decltype(v);
    return T(1) / (T(1) + std::exp(-v));
  });
}
Tensor silu(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(silu, x);
  return unaryFloat("silu", x, [](auto v) {
    using T = decltype(v);
    return v / (T(1) + std::exp(-v));
  });
}
Tensor relu(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(relu, x);
  requireDefined("relu", x, "input");
  return dispatchNumeric("relu", x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), x.shape());
    const T *a = x.data<T>();
    T *o = y.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      o[i] = (a[i] > T(0) || isNan(a[i])) ? a[i] : T(0);
    return y;
  });
}
Tensor sin(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(sin, x);
  return unaryFloat("sin", x, [](auto v) { return std::sin(v); });
}
Tensor cos(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(cos, x);
  return unaryFloat("cos", x, [](auto v) { return std::cos(v); });
}

Tensor gelu(const Tensor &x, bool tanhApproximation) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(gelu, x, tanhApproximation);
  if (tanhApproximation)
    // PyTorch: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
    return unaryFloat("gelu", x, [](auto v) {
      using T = decltype(v);
      const T beta = T(kSqrt2 * kTwoOverSqrtPi * 0.5), kappa = T(0.044715);
      T inner = beta * (v + kappa * v * v * v);
      return T(0.5) * v * (T(1) + std::tanh(inner));
    });
  // PyTorch: x * 0.5 * (1 + erf(x / sqrt(2)))
  return unaryFloat("gelu", x, [](auto v) {
    using T = decltype(v);
    return v * T(0.5) * (T(1) + std::erf(v * T(kSqrtHalf)));
  });
}

Tensor add(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(add, a, b);
  return binaryNumeric("add", a, b,
                       [](auto x, auto y) { return wrapAdd(x, y); });
}
Tensor sub(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(sub, a, b);
  return binaryNumeric("sub", a, b,
                       [](auto x, auto y) { return wrapSub(x, y); });
}
Tensor mul(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(mul, a, b);
  return binaryNumeric("mul", a, b,
                       [](auto x, auto y) { return wrapMul(x, y); });
}

Tensor div(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(div, a, b);
  return binaryNumeric("div", a, b, [](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (y == 0)
        fail("div", "integer division by zero");
      if (x == std::numeric_limits<T>::min() && y == T(-1))
        return x;      // wraps around
      return T(x / y); // C++ truncates toward zero
    } else {
      return x / y;
    }
  });
}

Tensor max(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(max, a, b);
  // NaN propagates, as torch.maximum.
  return binaryNumeric("max", a, b, [](auto x, auto y) {
    if (isNan(x) || isNan(y))
      return isNan(x) ? x : y;
    return x > y ? x : y;
  });
}
Tensor min(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(min, a, b);
  return binaryNumeric("min", a, b, [](auto x, auto y) {
    if (isNan(x) || isNan(y))
      return isNan(x) ? x : y;
    return x < y ? x : y;
  });
}

Tensor pow(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(pow, a, b);
  return binaryNumeric("pow", a, b, [](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (y < 0)
        fail("pow", "integers to negative integer powers are not allowed");
      T result = 1, base = x;
      for (T e = y; e > 0; e >>= 1) {
        if (e & 1)
          result = wrapMul(result, base);
        base = wrapMul(base, base);
      }
      return result;
    } else {
      return std::pow(x, y);
    }
  });
}

Tensor compare(CompareDir dir, const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(compare, dir, a, b);
  requireDefined("compare", a, "lhs");
  requireLike("compare", b, "rhs", a, "lhs");
  return dispatchComparable("compare", a, "operands", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(DType::Bool, a.shape());
    const T *x = a.data<T>(), *z = b.data<T>();
    uint8_t *o = y.data<uint8_t>();
    for (int64_t i = 0, n = a.numel(); i < n; ++i) {
      bool r = false;
      switch (dir) {
      case CompareDir::EQ:
        r = x[i] == z[i];
        break;
      case CompareDir::NE:
        r = x[i] != z[i];
        break;
      case CompareDir::LT:
        r = x[i] < z[i];
        break;
      case CompareDir::LE:
        r = x[i] <= z[i];
        break;
      case CompareDir::GT:
        r = x[i] > z[i];
        break;
      case CompareDir::GE:
        r = x[i] >= z[i];
        break;
      default:
        fail("compare", "unknown comparison");
      }
      o[i] = r;
    }
    return y;
  });
}

Tensor select(const Tensor &cond, const Tensor &a, const Tensor &b) {
  if (onCuda(cond, a, b))
    GLIMMER_CUDA_CALL(select, cond, a, b);
  requireDefined("select", cond, "condition");
  requireDefined("select", a, "on_true");
  requireLike("select", b, "on_false", a, "on_true");
  check(cond.dtype() == DType::Bool, "select",
        "expects a bool condition, got " + cond.describe());
  requireShape("select", cond, "condition", a.shape());
  Tensor y(a.dtype(), a.shape());
  size_t es = dtypeSize(a.dtype());
  const uint8_t *c = cond.data<uint8_t>();
  const char *x = static_cast<const char *>(a.raw()),
             *z = static_cast<const char *>(b.raw());
  char *o = static_cast<char *>(y.raw());
  for (int64_t i = 0, n = a.numel(); i < n; ++i)
    std::memcpy(o + i * es, (c[i] ? x : z) + i * es, es);
  return y;
}

Tensor convert(const Tensor &x, DType dtype) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(convert, x, dtype);
  requireDefined("convert", x, "input");
  check(dtypeSize(dtype) != 0, "convert", "unknown result type");
  Tensor y(dtype, x.shape());
  if (dtype == x.dtype()) {
    if (y.nbytes())
      std::memcpy(y.raw(), x.raw(), y.nbytes());
    return y;
  }
  for (int64_t i = 0, n = x.numel(); i < n; ++i)
    storeScalar(dtype, y.raw(), i, loadScalar(x.dtype(), x.raw(), i));
  return y;
}

std::vector<Tensor> convertList(const std::vector<Tensor> &inputs,
                                DType dtype) {
  if (anyOnCuda(inputs))
    GLIMMER_CUDA_CALL(convertList, inputs, dtype);
  std::vector<Tensor> out;
  out.reserve(inputs.size());
  for (const Tensor &x : inputs)
    out.push_back(convert(x, dtype));
  return out;
}

//===----------------------------------------------------------------------===//
// Reductions and scans
//===----------------------------------------------------------------------===//

Tensor reduce(Reduction kind, const Tensor &x, const std::vector<int64_t> &dims,
              bool keepDims) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(reduce, kind, x, dims, keepDims);
  const char *op = "reduce";
  requireDefined(op, x, "input");
  check(!dims.empty(), op, "expects at least one dimension to reduce");
  std::vector<bool> reduced(size_t(x.rank()), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    requireDim(op, dims[i], x.rank());
    check(i == 0 || dims[i] > dims[i - 1], op,
          "expects dims sorted and unique, got " + str(dims));
    reduced[size_t(dims[i])] = true;
  }
  Shape outShape, keptShape; // keptShape: reduced dims as 1
  int64_t count = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (reduced[size_t(d)]) {
      count *= x.dim(d);
      keptShape.push_back(1);
      if (keepDims)
        outShape.push_back(1);
    } else {
      keptShape.push_back(x.dim(d));
      outShape.push_back(x.dim(d));
    }
  }
  check(kind == Reduction::Sum || count > 0 || numElements(outShape) == 0, op,
        "max/min over an empty dimension of " + x.describe());
  // Output offset of each input dimension (0 for reduced ones).
  std::vector<int64_t> outStrides = stridesOf(keptShape);
  for (int64_t d = 0; d < x.rank(); ++d)
    if (reduced[size_t(d)])
      outStrides[size_t(d)] = 0;

  return dispatchNumeric(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), outShape);
    T *o = y.data<T>();
    T init = kind == Reduction::Sum   ? T(0)
             : kind == Reduction::Max ? lowest<T>()
                                      : highest<T>();
    std::fill(o, o + y.numel(), init);
    const T *a = x.data<T>();
    int64_t n = x.numel();
    if (n == 0)
      return y;
    // Walk the input in row-major order, tracking the output offset.
    size_t r = size_t(x.rank());
    std::vector<int64_t> idx(r, 0);
    int64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      T v = a[i];
      T &acc = o[off];
      switch (kind) {
      case Reduction::Sum:
        acc = wrapAdd(acc, v);
        break;
      case Reduction::Max:
        if (v > acc || isNan(v))
          acc = v;
        break;
      case Reduction::Min:
        if (v < acc || isNan(v))
          acc = v;
        break;
      }
      for (int64_t d = int64_t(r) - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < x.dim(d)) {
          off += outStrides[size_t(d)];
          break;
        }
        off -= outStrides[size_t(d)] * (x.dim(d) - 1);
        idx[size_t(d)] = 0;
      }
    }
    return y;
  });
}

Tensor sumSquares(const std::vector<Tensor> &inputs, DType result) {
  if (anyOnCuda(inputs))
    GLIMMER_CUDA_CALL(sumSquares, inputs, result);
  const char *op = "sum_squares";
  std::string bad = messages::badSumSquaresInputs(inputs, result);
  check(bad.empty(), op, bad);
  Tensor y(result, {});
  return dispatchFloat(op, y, "result", [&](auto tag) {
    using T = decltype(tag);
    // Each square rounded to T, then accumulated in row-major order, as the
    // multiply and the reduction this op replaces compute them. A narrower
    // input is widened first (exactly).
    T total = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      Tensor x = inputs[k].dtype() == result ? inputs[k]
                                              : convert(inputs[k], result);
      const T *a = x.data<T>();
      T acc = 0;
      for (int64_t i = 0, n = x.numel(); i < n; ++i)
        acc += a[i] * a[i];
      total = k == 0 ? acc : total + acc;
    }
    *y.data<T>() = total;
    return y;
  });
}

Tensor cumsum(const Tensor &x, int64_t dim) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(cumsum, x, dim);
  requireDefined("cumsum", x, "input");
  requireDim("cumsum", dim, x.rank());
  Around a = around(x.shape(), dim);
  return dispatchNumeric("cumsum", x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), x.shape());
    const T *in = x.data<T>();
    T *o = y.data<T>();
    for (int64_t p = 0; p < a.outer; ++p)
      for (int64_t i = 0; i < a.inner; ++i) {
        T acc = 0;
        for (int64_t l = 0; l < a.len; ++l) {
          int64_t k = (p * a.len + l) * a.inner + i;
          acc = wrapAdd(acc, in[k]);
          o[k] = acc;
        }
      }
    return y;
  });
}

Tensor softmax(const Tensor &x, int64_t dim) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(softmax, x, dim);
  requireFloat("softmax", x, "input");
  requireDim("softmax", dim, x.rank());
  Around a = around(x.shape(), dim);
  return dispatchFloat("softmax", x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), x.shape());
    const T *in = x.data<T>();
    T *o = y.data<T>();
    for (int64_t p = 0; p < a.outer; ++p)
      for (int64_t i = 0; i < a.inner; ++i) {
        const T *row = in + p * a.len * a.inner + i;
        T *out = o + p * a.len * a.inner + i;
        T m = lowest<T>();
        for (int64_t l = 0; l < a.len; ++l)
          m = std::max(m, row[l * a.inner]);
        T sum = 0;
        for (int64_t l = 0; l < a.len; ++l) {
          out[l * a.inner] = std::exp(row[l * a.inner] - m);
          sum += out[l * a.inner];
        }
        for (int64_t l = 0; l < a.len; ++l)
          out[l * a.inner] /= sum;
      }
    return y;
  });
}

Tensor softmaxGrad(const Tensor &grad, const Tensor &y, int64_t dim) {
  if (onCuda(grad, y))
    GLIMMER_CUDA_CALL(softmaxGrad, grad, y, dim);
  requireFloat("softmax_grad", y, "output value");
  requireLike("softmax_grad", grad, "grad", y, "output value");
  requireDim("softmax_grad", dim, y.rank());
  Around a = around(y.shape(), dim);
  return dispatchFloat("softmax_grad", y, "output value", [&](auto tag) {
    using T = decltype(tag);
    Tensor dx(y.dtype(), y.shape());
    const T *g = grad.data<T>(), *s = y.data<T>();
    T *o = dx.data<T>();
    for (int64_t p = 0; p < a.outer; ++p)
      for (int64_t i = 0; i < a.inner; ++i) {
        int64_t base = p * a.len * a.inner + i;
        T dot = 0;
        for (int64_t l = 0; l < a.len; ++l)
          dot += g[base + l * a.inner] * s[base + l * a.inner];
        for (int64_t l = 0; l < a.len; ++l) {
          int64_t k = base + l * a.inner;
          o[k] = s[k] * (g[k] - dot);
        }
      }
    return dx;
  });
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

Tensor reshape(const Tensor &x, const Shape &shape) {
  requireDefined("reshape", x, "input");
  for (int64_t d : shape)
    check(d >= 0, "reshape", "negative dimension in " + shapeString(shape));
  check(numElements(shape) == x.numel(), "reshape",
        "cannot reshape " + x.describe() + " into " + shapeString(shape));
  return x.view(shape);
}

Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(transpose, x, perm);
  const char *op = "transpose";
  requireDefined(op, x, "input");
  check(int64_t(perm.size()) == x.rank(), op,
        "expects a permutation of " + std::to_string(x.rank()) +
            " dimensions, got " + str(perm));
  std::vector<bool> seen(perm.size(), false);
  Shape outShape;
  std::vector<int64_t> inStrides = stridesOf(x.shape()), srcStrides;
  for (int64_t p : perm) {
    check(p >= 0 && p < x.rank() && !seen[size_t(p)], op,
          str(perm) + " is not a permutation of [0, " +
              std::to_string(x.rank()) + ")");
    seen[size_t(p)] = true;
    outShape.push_back(x.dim(p));
    srcStrides.push_back(inStrides[size_t(p)]);
  }
  Tensor y(x.dtype(), outShape);
  stridedCopy(dtypeSize(x.dtype()), outShape, x.raw(), 0, srcStrides, y.raw(),
              0, stridesOf(outShape));
  return y;
}

Tensor broadcastInDim(const Tensor &x, const Shape &shape,
                      const std::vector<int64_t> &dims) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(broadcastInDim, x, shape, dims);
  const char *op = "broadcast_in_dim";
  requireDefined(op, x, "input");
  check(int64_t(dims.size()) == x.rank(), op,
        "expects one result dimension per input dimension (" +
            std::to_string(x.rank()) + "), got " + str(dims));
  for (int64_t d : shape)
    check(d >= 0, op, "negative dimension in " + shapeString(shape));
  std::vector<int64_t> inStrides = stridesOf(x.shape());
  std::vector<int64_t> srcStrides(shape.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    check(d >= 0 && d < int64_t(shape.size()), op,
          "broadcast dimension " + std::to_string(d) +
              " is out of range for rank " + std::to_string(shape.size()));
    check(i == 0 || d > dims[i - 1], op,
          "expects strictly increasing dims, got " + str(dims));
    int64_t in = x.dim(int64_t(i)), out = shape[size_t(d)];
    check(in == 1 || in == out, op,
          "cannot broadcast input dimension " + std::to_string(i) +
              " of size " + std::to_string(in) + " to result dimension " +
              std::to_string(d) + " of size " + std::to_string(out));
    srcStrides[size_t(d)] = in == 1 ? 0 : inStrides[i];
  }
  Tensor y(x.dtype(), shape);
  stridedCopy(dtypeSize(x.dtype()), shape, x.raw(), 0, srcStrides, y.raw(), 0,
              stridesOf(shape));
  return y;
}

Tensor microbatchSlice(const Tensor &x, const Tensor &index, int64_t pieces,
                       int64_t dim) {
  const char *op = "microbatch_slice";
  requireDefined(op, x, "input");
  requireDefined(op, index, "index");
  check(index.numel() == 1, op, "expects a scalar micro-batch index");
  check(dim >= 0 && dim < x.rank() && pieces >= 1 && x.dim(dim) % pieces == 0,
        op,
        "cannot cut dimension " + std::to_string(dim) + " of " +
            x.describe() + " into " + std::to_string(pieces) +
            " micro-batches");
  // The index is a host scalar (the trainer's loop counter): no device sync.
  auto i = int64_t(index.item(0));
  check(i >= 0 && i < pieces, op,
        "micro-batch " + std::to_string(i) + " is out of range [0, " +
            std::to_string(pieces) + ")");
  int64_t piece = x.dim(dim) / pieces;
  std::vector<int64_t> start(size_t(x.rank()), 0), stride(size_t(x.rank()), 1);
  std::vector<int64_t> limit(x.shape());
  start[size_t(dim)] = i * piece;
  limit[size_t(dim)] = (i + 1) * piece;
  return slice(x, start, limit, stride);
}

Tensor slice(const Tensor &x, const std::vector<int64_t> &start,
             const std::vector<int64_t> &limit,
             const std::vector<int64_t> &stride) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(slice, x, start, limit, stride);
  const char *op = "slice";
  requireDefined(op, x, "input");
  size_t r = size_t(x.rank());
  check(start.size() == r && limit.size() == r && stride.size() == r, op,
        "expects start, limit and stride of length " + std::to_string(r));
  std::vector<int64_t> inStrides = stridesOf(x.shape()), srcStrides(r);
  Shape outShape(r);
  int64_t base = 0;
  for (size_t d = 0; d < r; ++d) {
    check(stride[d] >= 1, op,
          "stride of dimension " + std::to_string(d) +
              " must be positive, got " + std::to_string(stride[d]));
    check(
        start[d] >= 0 && start[d] <= limit[d] && limit[d] <= x.dim(int64_t(d)),
        op,
        "slice [" + std::to_string(start[d]) + ", " + std::to_string(limit[d]) +
            ") of dimension " + std::to_string(d) +
            " is out of bounds for size " + std::to_string(x.dim(int64_t(d))));
    outShape[d] = (limit[d] - start[d] + stride[d] - 1) / stride[d];
    srcStrides[d] = inStrides[d] * stride[d];
    base += start[d] * inStrides[d];
  }
  Tensor y(x.dtype(), outShape);
  if (y.numel() == 0)
    return y;
  stridedCopy(dtypeSize(x.dtype()), outShape, x.raw(), base, srcStrides,
              y.raw(), 0, stridesOf(outShape));
  return y;
}

Tensor concat(const std::vector<Tensor> &inputs, int64_t dim) {
  if (anyOnCuda(inputs))
    GLIMMER_CUDA_CALL(concat, inputs, dim);
  const char *op = "concat";
  check(!inputs.empty(), op, "expects at least one input");
  const Tensor &first = inputs.front();
  requireDefined(op, first, "input #0");
  requireDim(op, dim, first.rank());
  Shape outShape = first.shape();
  outShape[size_t(dim)] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &t = inputs[i];
    std::string name = "input #" + std::to_string(i);
    requireDefined(op, t, name.c_str());
    check(t.dtype() == first.dtype() && t.rank() == first.rank(), op,
          name + " " + t.describe() + " does not match input #0 " +
              first.describe());
    for (int64_t d = 0; d < t.rank(); ++d)
      check(d == dim || t.dim(d) == first.dim(d), op,
            name + " " + t.describe() + " differs from input #0 " +
                first.describe() + " in dimension " + std::to_string(d));
    outShape[size_t(dim)] += t.dim(dim);
  }
  Tensor y(first.dtype(), outShape);
  std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t offset = 0;
  for (const Tensor &t : inputs) {
    if (t.numel())
      stridedCopy(dtypeSize(t.dtype()), t.shape(), t.raw(), 0,
                  stridesOf(t.shape()), y.raw(),
                  offset * outStrides[size_t(dim)], outStrides);
    offset += t.dim(dim);
  }
  return y;
}

Tensor pad(const Tensor &x, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high, double value) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(pad, x, low, high, value);
  const char *op = "pad";
  requireDefined(op, x, "input");
  size_t r = size_t(x.rank());
  check(low.size() == r && high.size() == r, op,
        "expects low and high padding of length " + std::to_string(r));
  Shape outShape(r);
  for (size_t d = 0; d < r; ++d) {
    check(low[d] >= 0 && high[d] >= 0, op,
          "padding of dimension " + std::to_string(d) +
              " must be non-negative");
    outShape[d] = x.dim(int64_t(d)) + low[d] + high[d];
  }
  Tensor y(x.dtype(), outShape);
  fillWith(y, value);
  std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t base = 0;
  for (size_t d = 0; d < r; ++d)
    base += low[d] * outStrides[d];
  if (x.numel())
    stridedCopy(dtypeSize(x.dtype()), x.shape(), x.raw(), 0,
                stridesOf(x.shape()), y.raw(), base, outStrides);
  return y;
}

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

Tensor checkIndices(const Tensor &ids, int64_t bound, bool hasIgnore,
                    int64_t ignoreIndex, const char *op) {
  if (onCuda(ids))
    GLIMMER_CUDA_CALL(checkIndices, ids, bound, hasIgnore, ignoreIndex, op);
  std::vector<int64_t> v = indexValues(op, ids, hasIgnore ? "labels" : "ids");
  for (size_t p = 0; p < v.size(); ++p) {
    if ((hasIgnore && v[p] == ignoreIndex) || (v[p] >= 0 && v[p] < bound))
      continue;
    fail(op, hasIgnore ? messages::labelOutOfRange(v[p], int64_t(p), bound,
                                                   ignoreIndex)
                       : messages::idOutOfRange(v[p], int64_t(p), bound));
  }
  return ids;
}

Tensor embedding(const Tensor &table, const Tensor &ids) {
  if (onCuda(table, ids))
    GLIMMER_CUDA_CALL(embedding, table, ids);
  const char *op = "embedding";
  requireDefined(op, table, "table");
  requireRank(op, table, "a [V, D] table", 2);
  std::vector<int64_t> idv = indexValues(op, ids, "ids");
  int64_t V = table.dim(0), D = table.dim(1);
  Shape outShape = ids.shape();
  outShape.push_back(D);
  Tensor y(table.dtype(), outShape);
  size_t row = size_t(D) * dtypeSize(table.dtype());
  for (size_t p = 0; p < idv.size(); ++p) {
    int64_t id = idv[p];
    check(id >= 0 && id < V, op, messages::idOutOfRange(id, int64_t(p), V));
    if (row)
      std::memcpy(static_cast<char *>(y.raw()) + p * row,
                  static_cast<const char *>(table.raw()) + size_t(id) * row,
                  row);
  }
  return y;
}

Tensor embeddingGrad(const Tensor &grad, const Tensor &ids,
                     int64_t numEmbeddings) {
  if (onCuda(grad, ids))
    GLIMMER_CUDA_CALL(embeddingGrad, grad, ids, numEmbeddings);
  const char *op = "embedding_grad";
  requireFloat(op, grad, "grad");
  std::vector<int64_t> idv = indexValues(op, ids, "ids");
  check(numEmbeddings >= 0, op, "negative number of embeddings");
  check(grad.rank() == ids.rank() + 1, op,
        "expects grad of shape ids.shape + [D], got grad " + grad.describe() +
            " and ids " + ids.describe());
  int64_t D = grad.dim(-1);
  Shape expected = ids.shape();
  expected.push_back(D);
  requireShape(op, grad, "grad", expected);
  return dispatchFloat(op, grad, "grad", [&](auto tag) {
    using T = decltype(tag);
    Tensor out = Tensor::zeros(grad.dtype(), {numEmbeddings, D});
    const T *g = grad.data<T>();
    T *o = out.data<T>();
    for (size_t p = 0; p < idv.size(); ++p) {
      int64_t id = idv[p];
      check(id >= 0 && id < numEmbeddings, op,
            messages::idOutOfRange(id, int64_t(p), numEmbeddings));
      for (int64_t d = 0; d < D; ++d)
        o[id * D + d] += g[int64_t(p) * D + d];
    }
    return out;
  });
}

Tensor linear(const Tensor &x, const Tensor &w, const Tensor &bias) {
  if (onCuda(x, w, bias))
    GLIMMER_CUDA_CALL(linear, x, w, bias);
  const char *op = "linear";
  requireFloat(op, x, "input");
  check(x.rank() >= 1, op, "expects an input of rank >= 1");
  requireDefined(op, w, "weight");
  requireRank(op, w, "an [N, K] weight", 2);
  check(w.dtype() == x.dtype(), op,
        "expects input and weight of the same type, got " + x.describe() +
            " and " + w.describe());
  int64_t K = x.dim(-1), N = w.dim(0);
  check(w.dim(1) == K, op,
        "contraction mismatch: input has K = " + std::to_string(K) +
            " but weight has K = " + std::to_string(w.dim(1)));
  if (bias.defined()) {
    check(bias.dtype() == x.dtype(), op,
          "expects a bias of the input's type, got " + bias.describe());
    requireShape(op, bias, "bias", {N});
  }
  Shape outShape = x.shape();
  outShape.back() = N;
  int64_t M = 1; // rows: the product of the leading dimensions
  for (int64_t d = 0; d + 1 < x.rank(); ++d)
    M *= x.dim(d);
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), outShape);
    const T *a = x.data<T>(), *b = w.data<T>();
    const T *c = bias.defined() ? bias.data<T>() : nullptr;
    T *o = y.data<T>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t n = 0; n < N; ++n) {
        T acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += a[i * K + k] * b[n * K + k];
        o[i * N + n] = c ? acc + c[n] : acc;
      }
    return y;
  });
}

Tensor matmul(const Tensor &a, const Tensor &b, bool transposeA,
              bool transposeB) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(matmul, a, b, transposeA, transposeB);
  const char *op = "matmul";
  requireFloat(op, a, "lhs");
  requireDefined(op, b, "rhs");
  check(a.rank() >= 2 && a.rank() == b.rank(), op,
        "expects operands of equal rank >= 2, got " + a.describe() + " and " +
            b.describe());
  check(a.dtype() == b.dtype(), op,
        "expects operands of the same type, got " + a.describe() + " and " +
            b.describe());
  int64_t r = a.rank();
  Shape batch(a.shape().begin(), a.shape().end() - 2);
  check(Shape(b.shape().begin(), b.shape().end() - 2) == batch, op,
        "batch dimensions differ: " + a.describe() + " vs " + b.describe());
  int64_t M = transposeA ? a.dim(r - 1) : a.dim(r - 2);
  int64_t K = transposeA ? a.dim(r - 2) : a.dim(r - 1);
  int64_t Kb = transposeB ? b.dim(r - 1) : b.dim(r - 2);
  int64_t N = transposeB ? b.dim(r - 2) : b.dim(r - 1);
  check(K == Kb, op,
        "contraction mismatch: lhs has K = " + std::to_string(K) +
            " but rhs has K = " + std::to_string(Kb));
  // Element strides of A(m, k) and B(k, n) within one batch.
  int64_t aM = transposeA ? 1 : K, aK = transposeA ? M : 1;
  int64_t bK = transposeB ? 1 : N, bN = transposeB ? K : 1;
  Shape outShape = batch;
  outShape.push_back(M);
  outShape.push_back(N);
  int64_t batches = numElements(batch);
  return dispatchFloat(op, a, "lhs", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(a.dtype(), outShape);
    for (int64_t s = 0; s < batches; ++s) {
      const T *A = a.data<T>() + s * M * K, *B = b.data<T>() + s * K * N;
      T *C = y.data<T>() + s * M * N;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          T acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += A[m * aM + k * aK] * B[k * bK + n * bN];
          C[m * N + n] = acc;
        }
    }
    return y;
  });
}

namespace {
/// The CPU kernels write the input's type only.
void requireCpuNormType(const char *op, const Tensor &x, DType t,
                        const char *what) {
  check(t == x.dtype(), op,
        std::string("computes ") + what + " of another type than its input (" +
            dtypeLabel(t) + " from " + dtypeLabel(x.dtype()) +
            ") on GPUs only");
}
} // namespace

namespace detail {
DType normResultType(const char *op, const Tensor &x,
                     std::optional<DType> out) {
  requireDefined(op, x, "input");
  DType type = out.value_or(x.dtype());
  std::string error = messages::badNormType(x, type, "a result");
  check(error.empty(), op, error);
  return type;
}

void requireNormGrad(const char *op, const Tensor &grad, const Tensor &x) {
  requireDefined(op, grad, "grad");
  check(grad.shape() == x.shape(), op,
        "expects grad of the input's shape (" + x.describe() + "), got " +
            grad.describe());
  std::string error = messages::badNormType(x, grad.dtype(), "grad");
  check(error.empty(), op, error);
}

void requireResidualAddend(const char *op, const Tensor &lhs,
                           const Tensor &rhs) {
  requireDefined(op, lhs, "lhs");
  check(lhs.shape() == rhs.shape(), op,
        "expects lhs of rhs's shape (" + rhs.describe() + "), got " +
            lhs.describe());
  check(lhs.dtype() == rhs.dtype() ||
            (lhs.dtype() == DType::BF16 && rhs.dtype() == DType::F32),
        op,
        "expects lhs of rhs's type " + dtypeLabel(rhs.dtype()) +
            " (or bf16 for an f32 rhs), got " + lhs.describe());
}

int64_t checkNorm(
    const char *op, const Tensor &x,
    std::initializer_list<std::pair<const Tensor *, const char *>> params,
    double eps) {
  check(x.rank() >= 1, op, "expects an input of rank >= 1");
  int64_t D = x.dim(-1);
  for (auto [p, name] : params) {
    requireDefined(op, *p, name);
    check(p->dtype() == x.dtype() && p->shape() == Shape{D}, op,
          std::string("expects ") + name + " of type " +
              dtypeLabel(x.dtype()) + shapeString({D}) + ", got " +
              p->describe());
  }
  check(eps > 0, op, "expects eps > 0, got " + std::to_string(eps));
  return D;
}
} // namespace detail

Tensor rmsNorm(const Tensor &x, const Tensor &w, double eps,
               std::optional<DType> out) {
  const char *op = "rms_norm";
  DType type = detail::normResultType(op, x, out);
  if (onCuda(x, w))
    GLIMMER_CUDA_CALL(rmsNorm, x, w, eps, type);
  requireFloat(op, x, "input");
  int64_t D = detail::checkNorm(op, x, {{&w, "weight"}}, eps);
  requireCpuNormType(op, x, type, "a result");
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), x.shape());
    const T *in = x.data<T>(), *g = w.data<T>();
    T *o = y.data<T>();
    int64_t rows = D ? x.numel() / D : 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T *row = in + r * D;
      T ss = 0;
      for (int64_t d = 0; d < D; ++d)
        ss += row[d] * row[d];
      T rstd = T(1) / std::sqrt(ss / T(D) + T(eps));
      for (int64_t d = 0; d < D; ++d)
        o[r * D + d] = row[d] * rstd * g[d];
    }
    return y;
  });
}

std::tuple<Tensor, Tensor> addRmsNorm(const Tensor &lhs, const Tensor &rhs,
                                      const Tensor &w, double eps,
                                      std::optional<DType> out) {
  const char *op = "add_rms_norm";
  DType type = detail::normResultType(op, rhs, out);
  if (onCuda(lhs, rhs, w))
    GLIMMER_CUDA_CALL(addRmsNorm, lhs, rhs, w, eps, type);
  requireFloat(op, rhs, "rhs");
  detail::requireResidualAddend(op, lhs, rhs);
  detail::checkNorm(op, rhs, {{&w, "weight"}}, eps);
  requireCpuNormType(op, rhs, type, "a result");
  check(lhs.dtype() == rhs.dtype(), op,
        "adds a " + dtypeLabel(lhs.dtype()) + " lhs to an " +
            dtypeLabel(rhs.dtype()) + " rhs on GPUs only");
  // The CPU kernels compute one op at a time: the same values.
  Tensor sum = add(lhs, rhs);
  return {sum, rmsNorm(sum, w, eps, type)};
}

std::tuple<Tensor, Tensor> rmsNormGrad(const Tensor &grad, const Tensor &x,
                                       const Tensor &w, double eps) {
  if (onCuda(grad, x, w))
    GLIMMER_CUDA_CALL(rmsNormGrad, grad, x, w, eps);
  const char *op = "rms_norm_grad";
  requireFloat(op, x, "input");
  int64_t D = detail::checkNorm(op, x, {{&w, "weight"}}, eps);
  detail::requireNormGrad(op, grad, x);
  requireCpuNormType(op, x, grad.dtype(), "a grad");
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor dx(x.dtype(), x.shape());
    Tensor dw = Tensor::zeros(x.dtype(), {D});
    const T *in = x.data<T>(), *g = grad.data<T>(), *wt = w.data<T>();
    T *ox = dx.data<T>(), *ow = dw.data<T>();
    int64_t rows = D ? x.numel() / D : 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T *row = in + r * D, *gr = g + r * D;
      T ss = 0, dot = 0; // dot = sum(g * w * x)
      for (int64_t d = 0; d < D; ++d) {
        ss += row[d] * row[d];
        dot += gr[d] * wt[d] * row[d];
      }
      T rstd = T(1) / std::sqrt(ss / T(D) + T(eps));
      // dx = rstd * (g*w - x * rstd^2 * mean(g*w*x))
      T c = rstd * rstd * dot / T(D);
      for (int64_t d = 0; d < D; ++d) {
        ox[r * D + d] = rstd * (gr[d] * wt[d] - row[d] * c);
        ow[d] += gr[d] * row[d] * rstd;
      }
    }
    return std::make_tuple(dx, dw);
  });
}

Tensor layerNorm(const Tensor &x, const Tensor &w, const Tensor &b,
                 double eps, std::optional<DType> out) {
  const char *op = "layer_norm";
  DType type = detail::normResultType(op, x, out);
  if (onCuda(x, w, b))
    GLIMMER_CUDA_CALL(layerNorm, x, w, b, eps, type);
  requireFloat(op, x, "input");
  int64_t D = detail::checkNorm(op, x, {{&w, "weight"}, {&b, "bias"}}, eps);
  requireCpuNormType(op, x, type, "a result");
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), x.shape());
    const T *in = x.data<T>(), *g = w.data<T>(), *bb = b.data<T>();
    T *o = y.data<T>();
    int64_t rows = D ? x.numel() / D : 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T *row = in + r * D;
      T mean = 0;
      for (int64_t d = 0; d < D; ++d)
        mean += row[d];
      mean /= T(D);
      T var = 0; // biased, two-pass
      for (int64_t d = 0; d < D; ++d)
        var += (row[d] - mean) * (row[d] - mean);
      var /= T(D);
      T rstd = T(1) / std::sqrt(var + T(eps));
      for (int64_t d = 0; d < D; ++d)
        o[r * D + d] = (row[d] - mean) * rstd * g[d] + bb[d];
    }
    return y;
  });
}

std::tuple<Tensor, Tensor, Tensor> layerNormGrad(const Tensor &grad,
                                                 const Tensor &x,
                                                 const Tensor &w, double eps) {
  if (onCuda(grad, x, w))
    GLIMMER_CUDA_CALL(layerNormGrad, grad, x, w, eps);
  const char *op = "layer_norm_grad";
  requireFloat(op, x, "input");
  int64_t D = detail::checkNorm(op, x, {{&w, "weight"}}, eps);
  detail::requireNormGrad(op, grad, x);
  requireCpuNormType(op, x, grad.dtype(), "a grad");
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor dx(x.dtype(), x.shape());
    Tensor dw = Tensor::zeros(x.dtype(), {D});
    Tensor db = Tensor::zeros(x.dtype(), {D});
    const T *in = x.data<T>(), *g = grad.data<T>(), *wt = w.data<T>();
    T *ox = dx.data<T>(), *ow = dw.data<T>(), *ob = db.data<T>();
    int64_t rows = D ? x.numel() / D : 0;
    std::vector<T> xhat(static_cast<size_t>(D > 0 ? D : 0));
    for (int64_t r = 0; r < rows; ++r) {
      const T *row = in + r * D, *gr = g + r * D;
      T mean = 0;
      for (int64_t d = 0; d < D; ++d)
        mean += row[d];
      mean /= T(D);
      T var = 0;
      for (int64_t d = 0; d < D; ++d)
        var += (row[d] - mean) * (row[d] - mean);
      var /= T(D);
      T rstd = T(1) / std::sqrt(var + T(eps));
      // dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w
      T sumGw = 0, sumGwXhat = 0;
      for (int64_t d = 0; d < D; ++d) {
        xhat[size_t(d)] = (row[d] - mean) * rstd;
        T gw = gr[d] * wt[d];
        sumGw += gw;
        sumGwXhat += gw * xhat[size_t(d)];
        ow[d] += gr[d] * xhat[size_t(d)];
        ob[d] += gr[d];
      }
      T meanGw = sumGw / T(D), meanGwXhat = sumGwXhat / T(D);
      for (int64_t d = 0; d < D; ++d)
        ox[r * D + d] =
            rstd * (gr[d] * wt[d] - meanGw - xhat[size_t(d)] * meanGwXhat);
    }
    return std::make_tuple(dx, dw, db);
  });
}

Tensor rope(const Tensor &x, const Tensor &positions, double theta,
            RopeStyle style, bool inverse) {
  if (onCuda(x, positions))
    GLIMMER_CUDA_CALL(rope, x, positions, theta, style, inverse);
  const char *op = "rope";
  requireFloat(op, x, "input");
  requireRank(op, x, "a [B, T, H, D] input", 4);
  int64_t B = x.dim(0), T_ = x.dim(1), H = x.dim(2), D = x.dim(3);
  check(D % 2 == 0, op,
        "expects an even head dimension, got " + std::to_string(D));
  check(theta > 0, op, "expects theta > 0");
  std::vector<int64_t> pos = indexValues(op, positions, "positions");
  requireShape(op, positions, "positions", {B, T_});
  check(style == RopeStyle::Interleaved || style == RopeStyle::Half, op,
        "unknown rope style");
  int64_t half = D / 2;
  // Frequencies theta^(-2i/D). Angles, cosines and sines are computed in
  // double and rounded once to the tensor's type.
  std::vector<double> freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    freq[size_t(i)] = std::pow(theta, -2.0 * double(i) / double(D));
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), x.shape());
    const T *in = x.data<T>();
    T *o = y.data<T>();
    std::vector<T> c(static_cast<size_t>(half)), s(static_cast<size_t>(half));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T_; ++t) {
        double p = double(pos[size_t(b * T_ + t)]);
        for (int64_t i = 0; i < half; ++i) {
          double angle = p * freq[size_t(i)];
          c[size_t(i)] = T(std::cos(angle));
          s[size_t(i)] = T(inverse ? -std::sin(angle) : std::sin(angle));
        }
        for (int64_t h = 0; h < H; ++h) {
          int64_t base = ((b * T_ + t) * H + h) * D;
          for (int64_t i = 0; i < half; ++i) {
            int64_t i0 = style == RopeStyle::Interleaved ? 2 * i : i;
            int64_t i1 = style == RopeStyle::Interleaved ? 2 * i + 1 : i + half;
            T x0 = in[base + i0], x1 = in[base + i1];
            T ci = c[size_t(i)], si = s[size_t(i)];
            o[base + i0] = x0 * ci - x1 * si;
            o[base + i1] = x0 * si + x1 * ci;
          }
        }
      }
    return y;
  });
}

namespace {
/// Validated attention operands and the mask they define.
struct AttentionShape {
  int64_t B, Hq, Hkv, Tq, Tk, D;
  bool causal;
  int64_t window; // > 0: keys less than `window` positions back; 0: none
  std::vector<int64_t> qPos, kPos, qDoc, kDoc, qBlk, kBlk;

  /// The mask of Kernels.h: same document, within the window, and causal
  /// unless the query's block (>= 0) is the key's.
  bool allowed(int64_t b, int64_t i, int64_t j) const {
    if (!qDoc.empty() && kDoc[size_t(b * Tk + j)] != qDoc[size_t(b * Tq + i)])
      return false;
    if (!causal)
      return true;
    // Causal without positions: the indices are the positions.
    int64_t qp = qPos.empty() ? i : qPos[size_t(b * Tq + i)];
    int64_t kp = kPos.empty() ? j : kPos[size_t(b * Tk + j)];
    if (window > 0 && qp - kp >= window)
      return false;
    if (kp <= qp)
      return true;
    if (qBlk.empty())
      return false;
    int64_t qb = qBlk[size_t(b * Tq + i)];
    return qb >= 0 && qb == kBlk[size_t(b * Tk + j)];
  }
};

AttentionShape checkAttention(const char *op, const Tensor &q, const Tensor &k,
                              const Tensor &v, const Tensor &qPositions,
                              const Tensor &kPositions,
                              const Tensor &qDocuments,
                              const Tensor &kDocuments, const Tensor &qBlocks,
                              const Tensor &kBlocks, bool causal,
                              int64_t window, double scale) {
  requireFloat(op, q, "query");
  requireRank(op, q, "query [B, H, T, D]", 4);
  requireDefined(op, k, "key");
  requireRank(op, k, "key [B, H, T, D]", 4);
  requireLike(op, v, "value", k, "key");
  check(k.dtype() == q.dtype(), op,
        "expects query and key of the same type, got " + q.describe() +
            " and " + k.describe());
  AttentionShape s;
  s.B = q.dim(0);
  s.Hq = q.dim(1);
  s.Tq = q.dim(2);
  s.D = q.dim(3);
  s.Hkv = k.dim(1);
  s.Tk = k.dim(2);
  s.causal = causal;
  s.window = window;
  check(k.dim(0) == s.B && k.dim(3) == s.D, op,
        "key " + k.describe() + " does not match query batch and head size " +
            q.describe());
  check(s.Hkv > 0 && s.Hq % s.Hkv == 0, op,
        "query heads (" + std::to_string(s.Hq) +
            ") must be a multiple of key/value heads (" +
            std::to_string(s.Hkv) + ")");
  check(scale > 0, op, "expects scale > 0, got " + std::to_string(scale));
  std::string mask = messages::badAttentionMask(
      qPositions, kPositions, qDocuments, kDocuments, qBlocks, kBlocks,
      causal, window, s.B, s.Tq, s.Tk);
  check(mask.empty(), op, mask);
  if (qPositions.defined()) {
    s.qPos = indexValues(op, qPositions, "query positions");
    s.kPos = indexValues(op, kPositions, "key positions");
  }
  if (qDocuments.defined()) {
    s.qDoc = indexValues(op, qDocuments, "query documents");
    s.kDoc = indexValues(op, kDocuments, "key documents");
  }
  if (qBlocks.defined()) {
    s.qBlk = indexValues(op, qBlocks, "query blocks");
    s.kBlk = indexValues(op, kBlocks, "key blocks");
  }
  return s;
}
} // namespace

std::tuple<Tensor, Tensor>
attention(const Tensor &q, const Tensor &k, const Tensor &v,
          const Tensor &qPositions, const Tensor &kPositions,
          const Tensor &qDocuments, const Tensor &kDocuments,
          const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
          int64_t window, double scale, AttentionLayout layout) {
  if (onCuda(q, k, v, qPositions, kPositions, qDocuments, kDocuments, qBlocks,
             kBlocks))
    GLIMMER_CUDA_CALL(attention, q, k, v, qPositions, kPositions, qDocuments,
                      kDocuments, qBlocks, kBlocks, causal, window, scale,
                      layout);
  if (layout.any())
    return detail::attentionTransposed(q, k, v, qPositions, kPositions,
                                       qDocuments, kDocuments, qBlocks, kBlocks,
                                       causal, window, scale, layout);
  const char *op = "attention";
  AttentionShape s =
      checkAttention(op, q, k, v, qPositions, kPositions, qDocuments,
                     kDocuments, qBlocks, kBlocks, causal, window, scale);
  return dispatchFloat(op, q, "query", [&](auto tag) {
    using T = decltype(tag);
    const int64_t D = s.D, group = s.Hq / s.Hkv;
    Tensor out = Tensor::zeros(q.dtype(), q.shape());
    Tensor lse(q.dtype(), {s.B, s.Hq, s.Tq});
    const T *Q = q.data<T>(), *K = k.data<T>(), *V = v.data<T>();
    T *O = out.data<T>(), *L = lse.data<T>();
    const T sc = T(scale);
    std::vector<T> score(static_cast<size_t>(s.Tk));
    std::vector<char> ok(static_cast<size_t>(s.Tk));
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.Hq; ++h) {
        int64_t kvh = h / group; // as repeat_interleave of the kv heads
        const T *Kh = K + (b * s.Hkv + kvh) * s.Tk * D;
        const T *Vh = V + (b * s.Hkv + kvh) * s.Tk * D;
        for (int64_t i = 0; i < s.Tq; ++i) {
          int64_t row = (b * s.Hq + h) * s.Tq + i;
          const T *qi = Q + row * D;
          T *oi = O + row * D;
          T m = -std::numeric_limits<T>::infinity();
          bool any = false;
          for (int64_t j = 0; j < s.Tk; ++j) {
            ok[size_t(j)] = s.allowed(b, i, j);
            if (!ok[size_t(j)])
              continue;
            T dot = 0;
            for (int64_t d = 0; d < D; ++d)
              dot += qi[d] * Kh[j * D + d];
            score[size_t(j)] = sc * dot;
            m = std::max(m, score[size_t(j)]);
            any = true;
          }
          if (!any) { // fully masked: zero output, lse = -inf
            L[row] = -std::numeric_limits<T>::infinity();
            continue;
          }
          T sum = 0;
          for (int64_t j = 0; j < s.Tk; ++j)
            if (ok[size_t(j)]) {
              score[size_t(j)] = std::exp(score[size_t(j)] - m);
              sum += score[size_t(j)];
            }
          for (int64_t j = 0; j < s.Tk; ++j)
            if (ok[size_t(j)]) {
              T p = score[size_t(j)] / sum;
              for (int64_t d = 0; d < D; ++d)
                oi[d] += p * Vh[j * D + d];
            }
          L[row] = m + std::log(sum);
        }
      }
    return std::make_tuple(out, lse);
  });
}

std::tuple<Tensor, Tensor, Tensor>
attentionGrad(const Tensor &grad, const Tensor &q, const Tensor &k,
              const Tensor &v, const Tensor &out, const Tensor &lse,
              const Tensor &qPositions, const Tensor &kPositions,
              const Tensor &qDocuments, const Tensor &kDocuments,
              const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
              int64_t window, double scale, AttentionLayout layout) {
  if (onCuda(grad, q, k, v, out, lse, qPositions, kPositions, qDocuments,
             kDocuments, qBlocks, kBlocks))
    GLIMMER_CUDA_CALL(attentionGrad, grad, q, k, v, out, lse, qPositions,
                      kPositions, qDocuments, kDocuments, qBlocks, kBlocks,
                      causal, window, scale, layout);
  if (layout.any())
    return detail::attentionGradTransposed(
        grad, q, k, v, out, lse, qPositions, kPositions, qDocuments, kDocuments,
        qBlocks, kBlocks, causal, window, scale, layout);
  const char *op = "attention_grad";
  AttentionShape s =
      checkAttention(op, q, k, v, qPositions, kPositions, qDocuments,
                     kDocuments, qBlocks, kBlocks, causal, window, scale);
  requireLike(op, grad, "grad", q, "query");
  requireLike(op, out, "output", q, "query");
  requireDefined(op, lse, "lse");
  check(lse.dtype() == q.dtype(), op,
        "expects lse in the query's precision, got " + lse.describe());
  requireShape(op, lse, "lse", {s.B, s.Hq, s.Tq});
  return dispatchFloat(op, q, "query", [&](auto tag) {
    using T = decltype(tag);
    const int64_t D = s.D, group = s.Hq / s.Hkv;
    Tensor dq = Tensor::zeros(q.dtype(), q.shape());
    Tensor dk = Tensor::zeros(k.dtype(), k.shape());
    Tensor dv = Tensor::zeros(v.dtype(), v.shape());
    const T *Q = q.data<T>(), *K = k.data<T>(), *V = v.data<T>();
    const T *G = grad.data<T>(), *O = out.data<T>(), *L = lse.data<T>();
    T *dQ = dq.data<T>(), *dK = dk.data<T>(), *dV = dv.data<T>();
    const T sc = T(scale);
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.Hq; ++h) {
        int64_t kvOff = (b * s.Hkv + h / group) * s.Tk * D;
        for (int64_t i = 0; i < s.Tq; ++i) {
          int64_t row = (b * s.Hq + h) * s.Tq + i;
          T l = L[row];
          if (l == -std::numeric_limits<T>::infinity())
            continue; // fully masked row: no gradient
          const T *qi = Q + row * D, *gi = G + row * D, *oi = O + row * D;
          T *dqi = dQ + row * D;
          T delta = 0; // rowsum(dO * O)
          for (int64_t d = 0; d < D; ++d)
            delta += gi[d] * oi[d];
          for (int64_t j = 0; j < s.Tk; ++j) {
            if (!s.allowed(b, i, j))
              continue;
            const T *kj = K + kvOff + j * D, *vj = V + kvOff + j * D;
            T dot = 0, dp = 0;
            for (int64_t d = 0; d < D; ++d) {
              dot += qi[d] * kj[d];
              dp += gi[d] * vj[d];
            }
            T p = std::exp(sc * dot - l);
            T ds = p * (dp - delta);
            T *dkj = dK + kvOff + j * D, *dvj = dV + kvOff + j * D;
            for (int64_t d = 0; d < D; ++d) {
              dvj[d] += p * gi[d];
              dqi[d] += sc * ds * kj[d];
              dkj[d] += sc * ds * qi[d];
            }
          }
        }
      }
    return std::make_tuple(dq, dk, dv);
  });
}

namespace {
/// [B, T, H, D] <-> [B, H, T, D] (a copy) when `sequenceMajor`, else `t`.
Tensor swapHeads(const Tensor &t, bool sequenceMajor) {
  return sequenceMajor && t.defined() ? transpose(t, {0, 2, 1, 3}) : t;
}

/// The [B, H, T, D] view of a tensor stored as `sequenceMajor` says.
Tensor headMajorView(const char *op, const Tensor &t, const char *name,
                     bool sequenceMajor) {
  if (!sequenceMajor || !t.defined())
    return t;
  requireRank(op, t, (std::string(name) + " [B, T, H, D]").c_str(), 4);
  return t.view({t.dim(0), t.dim(2), t.dim(1), t.dim(3)});
}
} // namespace

namespace detail {
AttentionViews attentionViews(const char *op, AttentionLayout layout,
                              const Tensor &q, const Tensor &k, const Tensor &v,
                              const Tensor &grad, const Tensor &out) {
  return {headMajorView(op, q, "query", layout.query),
          headMajorView(op, k, "key", layout.key),
          headMajorView(op, v, "value", layout.value),
          headMajorView(op, grad, "grad", layout.output),
          headMajorView(op, out, "output", layout.output)};
}

std::tuple<Tensor, Tensor>
attentionTransposed(const Tensor &q, const Tensor &k, const Tensor &v,
                    const Tensor &qPositions, const Tensor &kPositions,
                    const Tensor &qDocuments, const Tensor &kDocuments,
                    const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
                    int64_t window, double scale, AttentionLayout layout) {
  attentionViews("attention", layout, q, k, v);
  auto [out, lse] =
      attention(swapHeads(q, layout.query), swapHeads(k, layout.key),
                swapHeads(v, layout.value), qPositions, kPositions, qDocuments,
                kDocuments, qBlocks, kBlocks, causal, window, scale);
  return std::make_tuple(swapHeads(out, layout.output), lse);
}

std::tuple<Tensor, Tensor, Tensor> attentionGradTransposed(
    const Tensor &grad, const Tensor &q, const Tensor &k, const Tensor &v,
    const Tensor &out, const Tensor &lse, const Tensor &qPositions,
    const Tensor &kPositions, const Tensor &qDocuments,
    const Tensor &kDocuments, const Tensor &qBlocks, const Tensor &kBlocks,
    bool causal, int64_t window, double scale, AttentionLayout layout) {
  attentionViews("attention_grad", layout, q, k, v, grad, out);
  auto [dq, dk, dv] = attentionGrad(
      swapHeads(grad, layout.output), swapHeads(q, layout.query),
      swapHeads(k, layout.key), swapHeads(v, layout.value),
      swapHeads(out, layout.output), lse, qPositions, kPositions, qDocuments,
      kDocuments, qBlocks, kBlocks, causal, window, scale);
  return std::make_tuple(swapHeads(dq, layout.query), swapHeads(dk, layout.key),
                         swapHeads(dv, layout.value));
}
} // namespace detail

namespace {
/// Checks logits [..., V] float and labels [...] integer; returns (rows, V,
/// labels).
std::tuple<int64_t, int64_t, std::vector<int64_t>>
checkCrossEntropy(const char *op, const Tensor &logits, const Tensor &labels,
                  int64_t ignoreIndex) {
  requireFloat(op, logits, "logits");
  check(logits.rank() >= 1, op, "expects logits of rank >= 1");
  std::vector<int64_t> lab = indexValues(op, labels, "labels");
  Shape expected(logits.shape().begin(), logits.shape().end() - 1);
  requireShape(op, labels, "labels", expected);
  int64_t V = logits.dim(-1);
  for (size_t p = 0; p < lab.size(); ++p)
    check(lab[p] == ignoreIndex || (lab[p] >= 0 && lab[p] < V), op,
          messages::labelOutOfRange(lab[p], int64_t(p), V, ignoreIndex));
  return {int64_t(lab.size()), V, std::move(lab)};
}

/// log(sum(exp(row))) with the max subtracted.
template <typename T>
T logSumExp(const T *row, int64_t n) {
  T m = lowest<T>();
  for (int64_t v = 0; v < n; ++v)
    m = std::max(m, row[v]);
  T sum = 0;
  for (int64_t v = 0; v < n; ++v)
    sum += std::exp(row[v] - m);
  return m + std::log(sum);
}
} // namespace

std::tuple<Tensor, Tensor> crossEntropy(const Tensor &logits,
                                        const Tensor &labels,
                                        int64_t ignoreIndex, DType sumDType) {
  if (onCuda(logits, labels))
    GLIMMER_CUDA_CALL(crossEntropy, logits, labels, ignoreIndex, sumDType);
  const char *op = "cross_entropy";
  int64_t rows, V;
  std::vector<int64_t> lab;
  std::tie(rows, V, lab) = checkCrossEntropy(op, logits, labels, ignoreIndex);
  check(isF(sumDType), op, "expects an f32 or f64 sum type");
  Tensor count(DType::I64, {});
  Tensor sum(sumDType, {});
  dispatchFloat(op, logits, "logits", [&](auto tag) {
    using T = decltype(tag);
    // Accumulate in the wider of the logits' and the sum's precision.
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    double total = 0;
    Acc accT = 0;
    bool wide = sumDType == DType::F64 || std::is_same_v<T, double>;
    int64_t n = 0;
    const T *x = logits.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      if (lab[size_t(r)] == ignoreIndex)
        continue;
      const T *row = x + r * V;
      T loss = logSumExp(row, V) - row[lab[size_t(r)]];
      if (wide)
        total += double(loss);
      else
        accT += Acc(loss);
      ++n;
    }
    storeScalar(sumDType, sum.raw(), 0, {true, wide ? total : double(accT), 0});
    count.data<int64_t>()[0] = n;
    return 0;
  });
  return std::make_tuple(sum, count);
}

Tensor crossEntropyGrad(const Tensor &grad, const Tensor &logits,
                        const Tensor &labels, int64_t ignoreIndex) {
  if (onCuda(grad, logits, labels))
    GLIMMER_CUDA_CALL(crossEntropyGrad, grad, logits, labels, ignoreIndex);
  const char *op = "cross_entropy_grad";
  int64_t rows, V;
  std::vector<int64_t> lab;
  std::tie(rows, V, lab) = checkCrossEntropy(op, logits, labels, ignoreIndex);
  requireFloat(op, grad, "grad");
  check(grad.rank() == 0, op,
        "expects a scalar (rank-0) grad of the sum, got " + grad.describe());
  double g = grad.item();
  return dispatchFloat(op, logits, "logits", [&](auto tag) {
    using T = decltype(tag);
    Tensor dl = Tensor::zeros(logits.dtype(), logits.shape());
    const T *x = logits.data<T>();
    T *o = dl.data<T>();
    const T gs = T(g);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t label = lab[size_t(r)];
      if (label == ignoreIndex)
        continue;
      const T *row = x + r * V;
      T lse = logSumExp(row, V);
      for (int64_t c = 0; c < V; ++c)
        o[r * V + c] =
            gs * (std::exp(row[c] - lse) - (c == label ? T(1) : T(0)));
    }
    return dl;
  });
}

namespace {
struct ConvShape {
  int64_t N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw;
};

ConvShape checkConv(const char *op, const Tensor &x, const Tensor &w,
                    const std::vector<int64_t> &stride,
                    const std::vector<int64_t> &padding) {
  requireFloat(op, x, "input");
  requireRank(op, x, "an NCHW input", 4);
  requireDefined(op, w, "weight");
  requireRank(op, w, "an OIHW weight", 4);
  check(w.dtype() == x.dtype(), op,
        "expects input and weight of the same type, got " + x.describe() +
            " and " + w.describe());
  check(stride.size() == 2 && padding.size() == 2, op,
        "expects 2 strides and 2 paddings");
  check(stride[0] >= 1 && stride[1] >= 1 && padding[0] >= 0 && padding[1] >= 0,
        op, "expects positive strides and non-negative padding");
  ConvShape s{x.dim(0),  x.dim(1),   x.dim(2),  x.dim(3), w.dim(0),
              w.dim(2),  w.dim(3),   0,         0,        stride[0],
              stride[1], padding[0], padding[1]};
  check(w.dim(1) == s.C, op,
        "input has " + std::to_string(s.C) + " channels but weight expects " +
            std::to_string(w.dim(1)));
  int64_t spanH = s.H + 2 * s.ph - s.KH, spanW = s.W + 2 * s.pw - s.KW;
  check(spanH >= 0 && spanW >= 0, op, "kernel is larger than the padded input");
  s.OH = spanH / s.sh + 1;
  s.OW = spanW / s.sw + 1;
  return s;
}
} // namespace

Tensor conv2d(const Tensor &x, const Tensor &w, const Tensor &bias,
              const std::vector<int64_t> &stride,
              const std::vector<int64_t> &padding) {
  if (onCuda(x, w, bias))
    GLIMMER_CUDA_CALL(conv2d, x, w, bias, stride, padding);
  const char *op = "conv2d";
  ConvShape s = checkConv(op, x, w, stride, padding);
  if (bias.defined()) {
    check(bias.dtype() == x.dtype(), op,
          "expects a bias of the input's type, got " + bias.describe());
    requireShape(op, bias, "bias", {s.O});
  }
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), {s.N, s.O, s.OH, s.OW});
    const T *X = x.data<T>(), *Wt = w.data<T>();
    const T *Bs = bias.defined() ? bias.data<T>() : nullptr;
    T *Y = y.data<T>();
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t o = 0; o < s.O; ++o)
        for (int64_t oh = 0; oh < s.OH; ++oh)
          for (int64_t ow = 0; ow < s.OW; ++ow) {
            T acc = 0;
            for (int64_t c = 0; c < s.C; ++c)
              for (int64_t kh = 0; kh < s.KH; ++kh) {
                int64_t ih = oh * s.sh - s.ph + kh;
                if (ih < 0 || ih >= s.H)
                  continue;
                for (int64_t kw = 0; kw < s.KW; ++kw) {
                  int64_t iw = ow * s.sw - s.pw + kw;
                  if (iw < 0 || iw >= s.W)
                    continue;
                  acc += X[((n * s.C + c) * s.H + ih) * s.W + iw] *
                         Wt[((o * s.C + c) * s.KH + kh) * s.KW + kw];
                }
              }
            Y[((n * s.O + o) * s.OH + oh) * s.OW + ow] = Bs ? acc + Bs[o] : acc;
          }
    return y;
  });
}

std::tuple<Tensor, Tensor> conv2dGrad(const Tensor &grad, const Tensor &x,
                                      const Tensor &w,
                                      const std::vector<int64_t> &stride,
                                      const std::vector<int64_t> &padding) {
  if (onCuda(grad, x, w))
    GLIMMER_CUDA_CALL(conv2dGrad, grad, x, w, stride, padding);
  const char *op = "conv2d_grad";
  ConvShape s = checkConv(op, x, w, stride, padding);
  requireDefined(op, grad, "grad");
  check(grad.dtype() == x.dtype(), op,
        "expects grad of the input's type, got " + grad.describe());
  requireShape(op, grad, "grad", {s.N, s.O, s.OH, s.OW});
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor dx = Tensor::zeros(x.dtype(), x.shape());
    Tensor dw = Tensor::zeros(w.dtype(), w.shape());
    const T *X = x.data<T>(), *Wt = w.data<T>(), *G = grad.data<T>();
    T *dX = dx.data<T>(), *dW = dw.data<T>();
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t o = 0; o < s.O; ++o)
        for (int64_t oh = 0; oh < s.OH; ++oh)
          for (int64_t ow = 0; ow < s.OW; ++ow) {
            T g = G[((n * s.O + o) * s.OH + oh) * s.OW + ow];
            for (int64_t c = 0; c < s.C; ++c)
              for (int64_t kh = 0; kh < s.KH; ++kh) {
                int64_t ih = oh * s.sh - s.ph + kh;
                if (ih < 0 || ih >= s.H)
                  continue;
                for (int64_t kw = 0; kw < s.KW; ++kw) {
                  int64_t iw = ow * s.sw - s.pw + kw;
                  if (iw < 0 || iw >= s.W)
                    continue;
                  int64_t xi = ((n * s.C + c) * s.H + ih) * s.W + iw;
                  int64_t wi = ((o * s.C + c) * s.KH + kh) * s.KW + kw;
                  dX[xi] += g * Wt[wi];
                  dW[wi] += g * X[xi];
                }
              }
          }
    return std::make_tuple(dx, dw);
  });
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

std::tuple<Tensor, Tensor, Tensor>
adamwUpdate(const Tensor &param, const Tensor &grad, const Tensor &expAvg,
            const Tensor &expAvgSq, const Tensor &step, double lr, double beta1,
            double beta2, double eps, double weightDecay,
            const Tensor &gradScale) {
  if (onCuda(param, grad, expAvg, expAvgSq, step, gradScale))
    GLIMMER_CUDA_CALL(adamwUpdate, param, grad, expAvg, expAvgSq, step, lr, beta1, beta2, eps, weightDecay, gradScale);
  const char *op = "adamw_update";
  requireFloat(op, param, "param");
  requireOptimizerGrad(op, grad, param);
  requireGradScale(op, gradScale, param);
  requireLike(op, expAvg, "exp_avg", param, "param");
  requireLike(op, expAvgSq, "exp_avg_sq", param, "param");
  requireDefined(op, step, "step");
  check(step.dtype() == DType::I64 && step.rank() == 0, op,
        "expects a scalar i64 step, got " + step.describe());
  int64_t t = step.data<int64_t>()[0];
  check(t >= 1, op, "expects a 1-based step, got " + std::to_string(t));
  check(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, op,
        "expects beta1 and beta2 in [0, 1)");
  check(eps > 0, op, "expects eps > 0");
  // The order of operations follows torch.optim.AdamW (single-tensor path):
  //   p *= 1 - lr * wd
  //   m.lerp_(g, 1 - beta1)
  //   v = v * beta2 + (1 - beta2) * g * g
  //   denom = sqrt(v) / sqrt(1 - beta2^t) + eps
  //   p += (-lr / (1 - beta1^t)) * m / denom
  // with the scalars computed in double, as Python floats.
  double bc1 = 1 - std::pow(beta1, double(t));
  double bc2 = 1 - std::pow(beta2, double(t));
  double stepSize = lr / bc1;
  double bc2Sqrt = std::sqrt(bc2);
  return dispatchFloat(op, param, "param", [&](auto tag) {
    using T = decltype(tag);
    Tensor p(param.dtype(), param.shape()), m(param.dtype(), param.shape()),
        v(param.dtype(), param.shape());
    Tensor wide = widened(grad, param);
    const T *P = param.data<T>(), *G = wide.data<T>(), *M = expAvg.data<T>(),
            *Vs = expAvgSq.data<T>();
    T *oP = p.data<T>(), *oM = m.data<T>(), *oV = v.data<T>();
    const T decay = T(1 - lr * weightDecay), w1 = T(1 - beta1), b2 = T(beta2),
            w2 = T(1 - beta2), c2 = T(bc2Sqrt), e = T(eps),
            negStep = T(-stepSize);
    const bool scaled = gradScale.defined();
    const T gs = scaled ? gradScale.data<T>()[0] : T(1);
    for (int64_t i = 0, n = param.numel(); i < n; ++i) {
      T pi = weightDecay != 0 ? P[i] * decay : P[i];
      T g = scaled ? G[i] * gs : G[i];
      // torch.lerp: start + w * (end - start) for w < 0.5, else
      // end - (end - start) * (1 - w).
      T mi =
          w1 < T(0.5) ? M[i] + w1 * (g - M[i]) : g - (g - M[i]) * (T(1) - w1);
      T vi = Vs[i] * b2 + w2 * g * g;
      T denom = std::sqrt(vi) / c2 + e;
      oP[i] = pi + negStep * mi / denom;
      oM[i] = mi;
      oV[i] = vi;
    }
    return std::make_tuple(p, m, v);
  });
}

std::vector<Tensor> adamwUpdateList(
    const std::vector<Tensor> &params, const std::vector<Tensor> &grads,
    const std::vector<Tensor> &expAvgs, const std::vector<Tensor> &expAvgSqs,
    const Tensor &step, double lr, double beta1, double beta2, double eps,
    double weightDecay, const Tensor &gradScale) {
  if (anyOnCuda(params) || anyOnCuda(grads) || anyOnCuda(expAvgs) ||
      anyOnCuda(expAvgSqs) || onCuda(step, gradScale))
    GLIMMER_CUDA_CALL(adamwUpdateList, params, grads, expAvgs, expAvgSqs, step,
                      lr, beta1, beta2, eps, weightDecay, gradScale);
  std::string bad = messages::badAdamWListLengths(
      params.size(), grads.size(), expAvgs.size(), expAvgSqs.size());
  check(bad.empty(), "adamw_update_list", bad);
  size_t n = params.size();
  std::vector<Tensor> out(3 * n);
  for (size_t k = 0; k < n; ++k)
    std::tie(out[k], out[n + k], out[2 * n + k]) =
        adamwUpdate(params[k], grads[k], expAvgs[k], expAvgSqs[k], step, lr,
                    beta1, beta2, eps, weightDecay, gradScale);
  return out;
}

Tensor sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                 double weightDecay, const Tensor &gradScale) {
  if (onCuda(param, grad, gradScale))
    GLIMMER_CUDA_CALL(sgdUpdate, param, grad, lr, weightDecay, gradScale);
  const char *op = "sgd_update";
  requireFloat(op, param, "param");
  requireOptimizerGrad(op, grad, param);
  requireGradScale(op, gradScale, param);
  return dispatchFloat(op, param, "param", [&](auto tag) {
    using T = decltype(tag);
    Tensor p(param.dtype(), param.shape());
    Tensor wide = widened(grad, param);
    const T *P = param.data<T>(), *G = wide.data<T>();
    T *o = p.data<T>();
    const T wd = T(weightDecay), negLr = T(-lr);
    const bool scaled = gradScale.defined();
    const T gs = scaled ? gradScale.data<T>()[0] : T(1);
    for (int64_t i = 0, n = param.numel(); i < n; ++i) {
      // torch.optim.SGD: g = g + wd * p; p = p + (-lr) * g
      T gi = scaled ? G[i] * gs : G[i];
      T g = weightDecay != 0 ? gi + wd * P[i] : gi;
      o[i] = P[i] + negLr * g;
    }
    return p;
  });
}

//===----------------------------------------------------------------------===//
// Multimodal
//===----------------------------------------------------------------------===//

Tensor visionBankIndices(const Tensor &tokens, int64_t imageTokenId) {
  if (onCuda(tokens))
    GLIMMER_CUDA_CALL(visionBankIndices, tokens, imageTokenId);
  const char *op = "vision_bank_indices";
  std::vector<int64_t> tok = indexValues(op, tokens, "tokens");
  Tensor out(tokens.dtype(), tokens.shape());
  int64_t seen = 0;
  for (size_t i = 0; i < tok.size(); ++i) {
    int64_t idx = tok[i] == imageTokenId ? seen++ : -1;
    storeScalar(tokens.dtype(), out.raw(), int64_t(i), {false, 0, idx});
  }
  return out;
}

namespace {
/// rows [B, T, D] and indices [B, T]; returns the indices.
std::vector<int64_t> checkTokenRows(const char *op, const Tensor &rows,
                                    const char *rowsName,
                                    const Tensor &indices) {
  requireFloat(op, rows, rowsName);
  check(rows.rank() == 3, op,
        std::string("expects ") + rowsName + " [B, T, D], got " +
            rows.describe());
  std::vector<int64_t> idx = indexValues(op, indices, "indices");
  requireShape(op, indices, "indices", {rows.dim(0), rows.dim(1)});
  return idx;
}

void checkBankIndex(const char *op, int64_t idx, size_t position,
                    int64_t bankRows) {
  check(idx < bankRows, op,
        "vision bank index " + std::to_string(idx) + " at position " +
            std::to_string(position) + " is out of range for a bank of " +
            std::to_string(bankRows) +
            " rows (more image tokens than image features?)");
}
} // namespace

Tensor visionGather(const Tensor &embeds, const Tensor &bank,
                    const Tensor &indices) {
  if (onCuda(embeds, bank, indices))
    GLIMMER_CUDA_CALL(visionGather, embeds, bank, indices);
  const char *op = "vision_gather";
  std::vector<int64_t> idx = checkTokenRows(op, embeds, "embeds", indices);
  requireDefined(op, bank, "bank");
  requireRank(op, bank, "an [N, D] bank", 2);
  check(bank.dtype() == embeds.dtype(), op,
        "expects embeds and bank of the same type, got " + embeds.describe() +
            " and " + bank.describe());
  int64_t D = embeds.dim(2), N = bank.dim(0);
  check(bank.dim(1) == D, op,
        "bank rows have width " + std::to_string(bank.dim(1)) +
            " but embeddings have width " + std::to_string(D));
  Tensor y(embeds.dtype(), embeds.shape());
  size_t row = size_t(D) * dtypeSize(embeds.dtype());
  for (size_t p = 0; p < idx.size(); ++p) {
    checkBankIndex(op, idx[p], p, N);
    const char *src =
        idx[p] >= 0
            ? static_cast<const char *>(bank.raw()) + size_t(idx[p]) * row
            : static_cast<const char *>(embeds.raw()) + p * row;
    if (row)
      std::memcpy(static_cast<char *>(y.raw()) + p * row, src, row);
  }
  return y;
}

std::tuple<Tensor, Tensor>
visionGatherGrad(const Tensor &grad, const Tensor &indices, int64_t bankRows) {
  if (onCuda(grad, indices))
    GLIMMER_CUDA_CALL(visionGatherGrad, grad, indices, bankRows);
  const char *op = "vision_gather_grad";
  std::vector<int64_t> idx = checkTokenRows(op, grad, "grad", indices);
  check(bankRows >= 0, op, "negative number of bank rows");
  int64_t D = grad.dim(2);
  return dispatchFloat(op, grad, "grad", [&](auto tag) {
    using T = decltype(tag);
    Tensor de(grad.dtype(), grad.shape());
    Tensor db = Tensor::zeros(grad.dtype(), {bankRows, D});
    const T *G = grad.data<T>();
    T *dE = de.data<T>(), *dB = db.data<T>();
    for (size_t p = 0; p < idx.size(); ++p) {
      checkBankIndex(op, idx[p], p, bankRows);
      const T *g = G + int64_t(p) * D;
      T *e = dE + int64_t(p) * D;
      if (idx[p] >= 0) {
        T *b = dB + idx[p] * D;
        for (int64_t d = 0; d < D; ++d) {
          b[d] += g[d];
          e[d] = 0;
        }
      } else {
        for (int64_t d = 0; d < D; ++d)
          e[d] = g[d];
      }
    }
    return std::make_tuple(de, db);
  });
}

//===----------------------------------------------------------------------===//
// Context parallelism
//===----------------------------------------------------------------------===//

Tensor cpPermute(const Tensor &x, int64_t dim, int64_t cp, Balancer balancer,
                 bool inverse) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(cpPermute, x, dim, cp, balancer, inverse);
  const char *op = inverse ? "cp_unpermute" : "cp_permute";
  requireDefined(op, x, "input");
  requireDim(op, dim, x.rank());
  check(cp >= 1, op, "expects cp >= 1, got " + std::to_string(cp));
  check(balancer == Balancer::HeadTail || balancer == Balancer::Contiguous, op,
        "unknown balancer");
  int64_t chunks = balancer == Balancer::HeadTail ? 2 * cp : cp;
  int64_t L = x.dim(dim);
  check(L % chunks == 0, op,
        "sequence length " + std::to_string(L) + " (dimension " +
            std::to_string(dim) + ") is not divisible by " +
            std::to_string(chunks) + " (the " +
            (balancer == Balancer::HeadTail ? "head_tail" : "contiguous") +
            " balancer with cp = " + std::to_string(cp) + " needs " +
            std::to_string(chunks) + " equal chunks)");
  if (balancer == Balancer::Contiguous)
    return x.clone();
  // Position 2r of the permuted sequence holds chunk r, position 2r+1 holds
  // chunk 2cp-1-r, so rank r's contiguous share is chunks {r, 2cp-1-r}.
  int64_t C = L / chunks;
  Tensor y(x.dtype(), x.shape());
  std::vector<int64_t> strides = stridesOf(x.shape());
  Shape chunkShape = x.shape();
  chunkShape[size_t(dim)] = C;
  int64_t step = C * strides[size_t(dim)];
  for (int64_t r = 0; r < cp; ++r) {
    int64_t pairs[2][2] = {{2 * r, r}, {2 * r + 1, chunks - 1 - r}};
    for (auto &pr : pairs) {
      int64_t permuted = pr[0], original = pr[1];
      int64_t src = inverse ? permuted : original;
      int64_t dst = inverse ? original : permuted;
      if (numElements(chunkShape))
        stridedCopy(dtypeSize(x.dtype()), chunkShape, x.raw(), src * step,
                    strides, y.raw(), dst * step, strides);
    }
  }
  return y;
}

} // namespace glimmer_rt
