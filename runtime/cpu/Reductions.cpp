//===- Reductions.cpp - CPU kernels: Reductions and scans -----------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: reduce, sum of squares,
// cumsum and softmax, accumulating in the tensor's own precision (softmax
// subtracts the max first).
//
//===----------------------------------------------------------------------===//

#include "../common/Messages.h"
#include "KernelUtil.h"

namespace glimmer_rt::cpu {

Tensor reduce(Reduction kind, const Tensor &x, const std::vector<int64_t> &dims,
              bool keepDims) {
  const char *op = "reduce";
  requireDefined(op, x, "input");
  check(!dims.empty(), op, "expects at least one dimension to reduce");
  std::vector<bool> reduced(size_t(x.rank()), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    requireDim(op, dims[i], x.rank());
    check(i == 0 || dims[i] > dims[i - 1], op,
          "expects dims sorted and unique, got " + shapeString(dims));
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
                                             : cpu::convert(inputs[k], result);
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

} // namespace glimmer_rt::cpu
