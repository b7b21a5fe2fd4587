//===- LinearAlgebra.cpp - CPU kernels: Linear algebra --------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: linear, matmul and
// conv2d with their gradients.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

namespace glimmer_rt::cpu {

Tensor linear(const Tensor &x, const Tensor &w, const Tensor &bias) {
  const char *op = "linear";
  requireFloat(op, x, "input");
  detail::GemmDims dims = detail::checkLinear(op, x, w, bias);
  int64_t M = dims.M, K = dims.K, N = dims.N;
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), dims.outShape);
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
  const char *op = "matmul";
  requireFloat(op, a, "lhs");
  detail::GemmDims dims = detail::checkMatmul(op, a, b, transposeA, transposeB);
  int64_t batches = dims.batches, M = dims.M, K = dims.K, N = dims.N;
  // Element strides of A(m, k) and B(k, n) within one batch.
  int64_t aM = transposeA ? 1 : K, aK = transposeA ? M : 1;
  int64_t bK = transposeB ? 1 : N, bN = transposeB ? K : 1;
  return dispatchFloat(op, a, "lhs", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(a.dtype(), dims.outShape);
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
detail::ConvShape checkConv(const char *op, const Tensor &x, const Tensor &w,
                            const std::vector<int64_t> &stride,
                            const std::vector<int64_t> &padding) {
  requireFloat(op, x, "input");
  return detail::checkConv(op, x, w, stride, padding);
}
} // namespace

Tensor conv2d(const Tensor &x, const Tensor &w, const Tensor &bias,
              const std::vector<int64_t> &stride,
              const std::vector<int64_t> &padding) {
  const char *op = "conv2d";
  detail::ConvShape s = checkConv(op, x, w, stride, padding);
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
  const char *op = "conv2d_grad";
  detail::ConvShape s = checkConv(op, x, w, stride, padding);
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

} // namespace glimmer_rt::cpu
