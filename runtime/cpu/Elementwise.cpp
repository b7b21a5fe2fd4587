//===- Elementwise.cpp - CPU kernels: Elementwise ops ---------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: unary and binary math,
// comparisons, selects and conversions. Integer arithmetic wraps around like
// PyTorch's.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

namespace glimmer_rt::cpu {

namespace {

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

constexpr double kSqrt2 = 1.41421356237309504880;         // sqrt(2)
constexpr double kSqrtHalf = 0.70710678118654752440;      // 1/sqrt(2)
constexpr double kTwoOverSqrtPi = 1.12837916709551257390; // 2/sqrt(pi)

} // namespace

Tensor neg(const Tensor &x) {
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
  return unaryFloat("exp", x, [](auto v) { return std::exp(v); });
}
Tensor log(const Tensor &x) {
  return unaryFloat("log", x, [](auto v) { return std::log(v); });
}
Tensor sqrt(const Tensor &x) {
  return unaryFloat("sqrt", x, [](auto v) { return std::sqrt(v); });
}
Tensor rsqrt(const Tensor &x) {
  return unaryFloat("rsqrt", x, [](auto v) {
    using T = decltype(v);
    return T(1) / std::sqrt(v);
  });
}
Tensor tanh(const Tensor &x) {
  return unaryFloat("tanh", x, [](auto v) { return std::tanh(v); });
}
Tensor erf(const Tensor &x) {
  return unaryFloat("erf", x, [](auto v) { return std::erf(v); });
}
Tensor sigmoid(const Tensor &x) {
  return unaryFloat("sigmoid", x, [](auto v) {
    using T = decltype(v);
    return T(1) / (T(1) + std::exp(-v));
  });
}
Tensor silu(const Tensor &x) {
  return unaryFloat("silu", x, [](auto v) {
    using T = decltype(v);
    return v / (T(1) + std::exp(-v));
  });
}
Tensor relu(const Tensor &x) {
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
  return unaryFloat("sin", x, [](auto v) { return std::sin(v); });
}
Tensor cos(const Tensor &x) {
  return unaryFloat("cos", x, [](auto v) { return std::cos(v); });
}
Tensor tan(const Tensor &x) {
  return unaryFloat("tan", x, [](auto v) { return std::tan(v); });
}
Tensor asin(const Tensor &x) {
  return unaryFloat("asin", x, [](auto v) { return std::asin(v); });
}
Tensor acos(const Tensor &x) {
  return unaryFloat("acos", x, [](auto v) { return std::acos(v); });
}
Tensor atan(const Tensor &x) {
  return unaryFloat("atan", x, [](auto v) { return std::atan(v); });
}
Tensor sinh(const Tensor &x) {
  return unaryFloat("sinh", x, [](auto v) { return std::sinh(v); });
}
Tensor cosh(const Tensor &x) {
  return unaryFloat("cosh", x, [](auto v) { return std::cosh(v); });
}
Tensor asinh(const Tensor &x) {
  return unaryFloat("asinh", x, [](auto v) { return std::asinh(v); });
}
Tensor acosh(const Tensor &x) {
  return unaryFloat("acosh", x, [](auto v) { return std::acosh(v); });
}
Tensor atanh(const Tensor &x) {
  return unaryFloat("atanh", x, [](auto v) { return std::atanh(v); });
}
Tensor expm1(const Tensor &x) {
  return unaryFloat("expm1", x, [](auto v) { return std::expm1(v); });
}
Tensor log1p(const Tensor &x) {
  return unaryFloat("log1p", x, [](auto v) { return std::log1p(v); });
}
Tensor abs(const Tensor &x) {
  return unaryFloat("abs", x, [](auto v) { return std::abs(v); });
}
Tensor floor(const Tensor &x) {
  return unaryFloat("floor", x, [](auto v) { return std::floor(v); });
}
Tensor ceil(const Tensor &x) {
  return unaryFloat("ceil", x, [](auto v) { return std::ceil(v); });
}
Tensor trunc(const Tensor &x) {
  return unaryFloat("trunc", x, [](auto v) { return std::trunc(v); });
}
// std::nearbyint under the default rounding mode: halves to even.
Tensor round(const Tensor &x) {
  return unaryFloat("round", x, [](auto v) { return std::nearbyint(v); });
}

Tensor gelu(const Tensor &x, bool tanhApproximation) {
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
  return binaryNumeric("add", a, b,
                       [](auto x, auto y) { return wrapAdd(x, y); });
}
Tensor sub(const Tensor &a, const Tensor &b) {
  return binaryNumeric("sub", a, b,
                       [](auto x, auto y) { return wrapSub(x, y); });
}
Tensor mul(const Tensor &a, const Tensor &b) {
  return binaryNumeric("mul", a, b,
                       [](auto x, auto y) { return wrapMul(x, y); });
}

Tensor div(const Tensor &a, const Tensor &b) {
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
  // NaN propagates, as torch.maximum.
  return binaryNumeric("max", a, b, [](auto x, auto y) {
    if (isNan(x) || isNan(y))
      return isNan(x) ? x : y;
    return x > y ? x : y;
  });
}
Tensor min(const Tensor &a, const Tensor &b) {
  return binaryNumeric("min", a, b, [](auto x, auto y) {
    if (isNan(x) || isNan(y))
      return isNan(x) ? x : y;
    return x < y ? x : y;
  });
}

Tensor pow(const Tensor &a, const Tensor &b) {
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
  std::vector<Tensor> out;
  out.reserve(inputs.size());
  for (const Tensor &x : inputs)
    out.push_back(cpu::convert(x, dtype));
  return out;
}

} // namespace glimmer_rt::cpu
