//===- Padding.cpp - Reflection and replication padding converters --------===//
//
// reflection_pad{1,2,3}d and replication_pad{1,2,3}d: each padded
// dimension read at a constant table of positions (the reflected or the
// clamped index of every output position), a gather whose VJP
// scatter-adds the gradient back. Negative padding crops, as PyTorch's.
// Constant padding is DataMovement.cpp's.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

#include <algorithm>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerPaddingConverters() {
  auto &C = converters;
  // (self, padding): padding is (left, right) pairs from the last
  // dimension backwards, k of them.
  auto padOp = [this](size_t k, bool reflect) {
    std::string name = std::string(reflect ? "reflection" : "replication") +
                       "_pad" + std::to_string(k) + "d";
    return [this, k, reflect, name](OpCall *n) {
      MValue x = tensorIn(n, 0);
      std::vector<int64_t> pad = intList(in(n, 1));
      int64_t rank = shapeOf(x).size();
      if (pad.size() != 2 * k ||
          (rank != int64_t(k) + 1 && rank != int64_t(k) + 2))
        fail(name + " expects " + std::to_string(2 * k) +
             " padding values and an input of rank " + std::to_string(k + 1) +
             " or " + std::to_string(k + 2));
      for (size_t j = 0; j < k; ++j) {
        int64_t dim = rank - 1 - j, size = shapeOf(x)[dim];
        int64_t lo = pad[2 * j], hi = pad[2 * j + 1];
        if (lo == 0 && hi == 0)
          continue;
        if (reflect && (lo >= size || hi >= size))
          fail(name + ": padding (" + std::to_string(lo) + ", " +
               std::to_string(hi) +
               ") must be less than the dimension's "
               "size " +
               std::to_string(size));
        if (size == 0 || size + lo + hi <= 0)
          fail(name + " of an empty dimension, or padding that leaves "
                      "nothing");
        at::Tensor table = at::empty({size + lo + hi}, at::kLong);
        auto cell = table.accessor<int64_t, 1>();
        for (int64_t o = 0; o < size + lo + hi; ++o) {
          int64_t p = o - lo;
          if (reflect)
            p = p < 0 ? -p : p >= size ? 2 * (size - 1) - p : p;
          else
            p = std::clamp<int64_t>(p, 0, size - 1);
          cell[o] = p;
        }
        x = selectAlong(x, dim, constantFromTensor(table));
      }
      setTensor(n, x);
    };
  };
  for (size_t k : {1, 2, 3}) {
    C["aten::reflection_pad" + std::to_string(k) + "d"] = padOp(k, true);
    C["aten::replication_pad" + std::to_string(k) + "d"] = padOp(k, false);
  }
}
