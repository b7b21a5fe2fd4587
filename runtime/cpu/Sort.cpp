//===- Sort.cpp - CPU kernels: argsort ------------------------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: the positions that
// sort each line of a tensor along a dimension, by a stable sort (equal
// elements keep their order, descending too), NaN above every number as
// in PyTorch.
//
//===----------------------------------------------------------------------===//

#include "../common/Messages.h"
#include "KernelUtil.h"

#include <algorithm>
#include <numeric>

namespace glimmer_rt::cpu {

Tensor argsort(const Tensor &x, int64_t dim, bool descending) {
  const char *op = "argsort";
  requireDefined(op, x, "input");
  requireDim(op, dim, x.rank());
  Around a = around(x.shape(), dim);
  return dispatchNumeric(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(DType::I64, x.shape());
    const T *in = x.data<T>();
    int64_t *o = y.data<int64_t>();
    // NaN is the largest value: it goes last ascending, first descending.
    auto before = [&](T u, T v) {
      if (isNan(u) || isNan(v))
        return descending ? isNan(u) && !isNan(v) : !isNan(u) && isNan(v);
      return descending ? u > v : u < v;
    };
    std::vector<int64_t> order(size_t(a.len));
    for (int64_t p = 0; p < a.outer; ++p)
      for (int64_t i = 0; i < a.inner; ++i) {
        const T *line = in + p * a.len * a.inner + i;
        std::iota(order.begin(), order.end(), int64_t(0));
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t l, int64_t r) {
                           return before(line[l * a.inner], line[r * a.inner]);
                         });
        int64_t *out = o + p * a.len * a.inner + i;
        for (int64_t l = 0; l < a.len; ++l)
          out[l * a.inner] = order[size_t(l)];
      }
    return y;
  });
}

} // namespace glimmer_rt::cpu
