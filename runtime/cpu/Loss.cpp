//===- Loss.cpp - CPU kernels: Losses -------------------------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: cross-entropy and its
// gradient.
//
//===----------------------------------------------------------------------===//

#include "../common/Messages.h"
#include "KernelUtil.h"

namespace glimmer_rt::cpu {

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

} // namespace glimmer_rt::cpu
