//===- Optimizers.cpp - CPU kernels: Optimizers ---------------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: AdamW and SGD updates
// (torch.optim semantics).
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

namespace glimmer_rt::cpu {

std::tuple<Tensor, Tensor, Tensor>
adamwUpdate(const Tensor &param, const Tensor &grad, const Tensor &expAvg,
            const Tensor &expAvgSq, const Tensor &step, double lr, double beta1,
            double beta2, double eps, double weightDecay,
            const Tensor &gradScale) {
  const char *op = "adamw_update";
  requireFloat(op, param, "param");
  detail::checkAdamWOperands(op, param, grad, expAvg, expAvgSq, gradScale);
  detail::checkAdamWStep(op, step);
  int64_t t = step.data<int64_t>()[0];
  check(t >= 1, op, "expects a 1-based step, got " + std::to_string(t));
  detail::checkAdamWHyperparameters(op, beta1, beta2, eps);
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
    // In place where the state is handed over (each element is read before
    // it is written).
    Tensor p = replacing(param), m = replacing(expAvg), v = replacing(expAvgSq);
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
  size_t n = params.size();
  std::vector<Tensor> out(3 * n);
  for (size_t k = 0; k < n; ++k)
    std::tie(out[k], out[n + k], out[2 * n + k]) =
        cpu::adamwUpdate(params[k], grads[k], expAvgs[k], expAvgSqs[k], step,
                         lr, beta1, beta2, eps, weightDecay, gradScale);
  return out;
}

Tensor sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                 double weightDecay, const Tensor &gradScale) {
  const char *op = "sgd_update";
  requireFloat(op, param, "param");
  detail::requireOptimizerGrad(op, grad, param, gradScale);
  return dispatchFloat(op, param, "param", [&](auto tag) {
    using T = decltype(tag);
    Tensor wide = widened(grad, param);
    Tensor p = replacing(param);
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

} // namespace glimmer_rt::cpu
