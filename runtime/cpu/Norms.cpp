//===- Norms.cpp - CPU kernels: Normalizations ----------------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: RMS and layer norms and
// their gradients, with two-pass mean and variance.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

namespace glimmer_rt::cpu {

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

Tensor rmsNorm(const Tensor &x, const Tensor &w, double eps, DType type) {
  const char *op = "rms_norm";
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
                                      const Tensor &w, double eps, DType type) {
  const char *op = "add_rms_norm";
  requireFloat(op, rhs, "rhs");
  detail::requireResidualAddend(op, lhs, rhs);
  detail::checkNorm(op, rhs, {{&w, "weight"}}, eps);
  requireCpuNormType(op, rhs, type, "a result");
  check(lhs.dtype() == rhs.dtype(), op,
        "adds a " + dtypeLabel(lhs.dtype()) + " lhs to an " +
            dtypeLabel(rhs.dtype()) + " rhs on GPUs only");
  // The CPU kernels compute one op at a time: the same values.
  Tensor sum = cpu::add(lhs, rhs);
  return {sum, cpu::rmsNorm(sum, w, eps, type)};
}

std::tuple<Tensor, Tensor> rmsNormGrad(const Tensor &grad, const Tensor &x,
                                       const Tensor &w, double eps) {
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

Tensor layerNorm(const Tensor &x, const Tensor &w, const Tensor &b, double eps,
                 DType type) {
  const char *op = "layer_norm";
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

} // namespace glimmer_rt::cpu
