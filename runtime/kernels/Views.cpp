//===- Views.cpp - Shape ops that need no kernel of their own -------------===//
//
// Part of the Glimmer runtime's kernel API: reshape (a view sharing the
// input's storage) and microbatch_slice (a slice of the other ops), the
// same on every device.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

namespace glimmer_rt {

using detail::check;
using detail::requireDefined;

Tensor reshape(const Tensor &x, const Shape &shape) {
  requireDefined("reshape", x, "input");
  for (int64_t d : shape)
    check(d >= 0, "reshape", "negative dimension in " + shapeString(shape));
  check(numElements(shape) == x.numel(), "reshape",
        "cannot reshape " + x.describe() + " into " + shapeString(shape));
  return x.view(shape);
}

Tensor microbatchSlice(const Tensor &x, const Tensor &index, int64_t pieces,
                       int64_t dim) {
  const char *op = "microbatch_slice";
  requireDefined(op, x, "input");
  requireDefined(op, index, "index");
  check(index.numel() == 1, op, "expects a scalar micro-batch index");
  check(dim >= 0 && dim < x.rank() && pieces >= 1 && x.dim(dim) % pieces == 0,
        op,
        "cannot cut dimension " + std::to_string(dim) + " of " + x.describe() +
            " into " + std::to_string(pieces) + " micro-batches");
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

} // namespace glimmer_rt
