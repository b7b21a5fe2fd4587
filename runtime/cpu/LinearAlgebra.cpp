//===- LinearAlgebra.cpp - CPU kernels: Linear algebra --------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: linear, matmul and
// conv2d with their gradients.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

#include <vector>

namespace glimmer_rt::cpu {

namespace {
/// C[m, n] = sum over k of A(m, k) * B(k, n) for one M x K x N product, with
/// element strides aM, aK, bK, bN. Each sum starts from zero and adds its
/// terms in ascending k, as the plain triple loop does, so every result
/// keeps that loop's bits; the loops are only ordered for the cache and
/// interleave independent sums (rows of B walked in order, four rows of C
/// at a time; a B with strided rows is copied into contiguous ones first
/// when there are rows enough to pay for it, else four dot products run at
/// a time), which makes the reference kernels several times faster.
template <typename T>
void gemm(const T *A, int64_t aM, int64_t aK, const T *B, int64_t bK,
          int64_t bN, T *C, int64_t M, int64_t K, int64_t N) {
  if (bN != 1 && M >= 4) {
    std::vector<T> rows(size_t(K * N));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        rows[size_t(k * N + n)] = B[k * bK + n * bN];
    return gemm(A, aM, aK, rows.data(), N, 1, C, M, K, N);
  }
  if (bN == 1) {
    int64_t m = 0;
    for (; m + 4 <= M; m += 4) {
      T *c0 = C + m * N, *c1 = c0 + N, *c2 = c1 + N, *c3 = c2 + N;
      std::fill(c0, c0 + 4 * N, T(0));
      for (int64_t k = 0; k < K; ++k) {
        const T *b = B + k * bK;
        T a0 = A[m * aM + k * aK], a1 = A[(m + 1) * aM + k * aK];
        T a2 = A[(m + 2) * aM + k * aK], a3 = A[(m + 3) * aM + k * aK];
        for (int64_t n = 0; n < N; ++n) {
          c0[n] += a0 * b[n];
          c1[n] += a1 * b[n];
          c2[n] += a2 * b[n];
          c3[n] += a3 * b[n];
        }
      }
    }
    for (; m < M; ++m) {
      T *c = C + m * N;
      std::fill(c, c + N, T(0));
      for (int64_t k = 0; k < K; ++k) {
        const T *b = B + k * bK;
        T a = A[m * aM + k * aK];
        for (int64_t n = 0; n < N; ++n)
          c[n] += a * b[n];
      }
    }
    return;
  }
  for (int64_t m = 0; m < M; ++m) {
    const T *a = A + m * aM;
    T *c = C + m * N;
    int64_t n = 0;
    for (; n + 4 <= N; n += 4) {
      const T *b0 = B + n * bN, *b1 = b0 + bN, *b2 = b1 + bN, *b3 = b2 + bN;
      T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int64_t k = 0; k < K; ++k) {
        T x = a[k * aK];
        s0 += x * b0[k * bK];
        s1 += x * b1[k * bK];
        s2 += x * b2[k * bK];
        s3 += x * b3[k * bK];
      }
      c[n] = s0;
      c[n + 1] = s1;
      c[n + 2] = s2;
      c[n + 3] = s3;
    }
    for (; n < N; ++n) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += a[k * aK] * B[k * bK + n * bN];
      c[n] = acc;
    }
  }
}
} // namespace

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
    // y = x w^T: B(k, n) = w[n, k].
    gemm(a, K, 1, b, 1, K, o, M, K, N);
    if (c)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t n = 0; n < N; ++n)
          o[i * N + n] += c[n];
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
      gemm(A, aM, aK, B, bK, bN, C, M, K, N);
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
