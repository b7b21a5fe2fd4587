//===- Creation.cpp - CPU kernels: Creation ops ---------------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: full, constant and iota
// on the host.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

namespace glimmer_rt::cpu {

Tensor full(DType dtype, const Shape &shape, double value) {
  Tensor t(dtype, shape);
  fillWith(t, value);
  return t;
}

Tensor constant(DType dtype, const Shape &shape,
                const std::vector<double> &values) {
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

} // namespace glimmer_rt::cpu
