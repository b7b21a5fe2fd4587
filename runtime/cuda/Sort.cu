//===- Sort.cu - CUDA argsort ---------------------------------------------===//
//
// argsort on a GPU with the CPU kernel's semantics: each line along `dim`
// sorted stably (equal elements keep their order, descending too), NaN
// above every number. A bottom-up merge sort of the positions: pass w
// merges neighbouring sorted runs of w positions into runs of 2w, one
// thread per (line, pair of runs), ping-ponging between the result and a
// scratch buffer. Every pass is O(n) work per line, and the merge order is
// fixed by the shape, so results are deterministic; the last passes have
// few pairs (one per line at the end), which bounds the speed on one long
// line but needs no library sort and no key transformation for NaN.
//
//===----------------------------------------------------------------------===//

#include "../common/Messages.h"
#include "ElementwiseUtil.cuh"

#include <utility>

namespace glimmer_rt {
namespace cuda {

using namespace util;

namespace {

/// Whether `u` sorts strictly before `v` (NaN is the largest value).
template <typename A>
__device__ __forceinline__ bool sortsBefore(A u, A v, bool descending) {
  bool nu = u != u, nv = v != v;
  if (nu || nv)
    return descending ? nu && !nv : !nu && nv;
  return descending ? u > v : u < v;
}

/// Line (p, i) of x viewed as [outer, len, inner]: element l at
/// (p * len + l) * inner + i. Positions are stored in the same layout.
__device__ __forceinline__ int64_t lineBase(int64_t line, int64_t len,
                                            int64_t inner) {
  return line / inner * len * inner + line % inner;
}

__global__ void iotaLinesKernel(int64_t *idx, int64_t lines, int64_t len,
                                int64_t inner) {
  for (int64_t t = gridStart(); t < lines * len; t += gridStride()) {
    int64_t line = t / len, l = t % len;
    idx[lineBase(line, len, inner) + l * inner] = l;
  }
}

/// Merges runs [s, s + w) and [s + w, s + 2w) of every line from `src`
/// into `dst`, taking from the left run on ties (stability).
template <typename T>
__global__ void mergePassKernel(const T *x, const int64_t *src, int64_t *dst,
                                int64_t lines, int64_t len, int64_t inner,
                                int64_t width, bool descending) {
  using A = acc_t<T>;
  int64_t pairs = (len + 2 * width - 1) / (2 * width);
  for (int64_t t = gridStart(); t < lines * pairs; t += gridStride()) {
    int64_t line = t / pairs, start = t % pairs * 2 * width;
    int64_t base = lineBase(line, len, inner);
    int64_t mid = start + width < len ? start + width : len;
    int64_t end = start + 2 * width < len ? start + 2 * width : len;
    int64_t a = start, b = mid;
    for (int64_t k = start; k < end; ++k) {
      bool takeRight = false;
      if (a >= mid)
        takeRight = true;
      else if (b < end) {
        int64_t pa = src[base + a * inner], pb = src[base + b * inner];
        takeRight = sortsBefore<A>(A(ld(x + base + pb * inner)),
                                   A(ld(x + base + pa * inner)), descending);
      }
      dst[base + k * inner] = takeRight ? src[base + (b++) * inner]
                                        : src[base + (a++) * inner];
    }
  }
}

} // namespace

Tensor argsort(const Tensor &x, int64_t dim, bool descending) {
  const char *op = "argsort";
  Ctx c(op, {&x});
  requireNumeric(op, x, "input");
  requireDim(op, dim, x.rank());
  Around a = around(x.shape(), dim);
  return dispatchNumeric(op, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = c.empty(DType::I64, x.shape());
    if (y.numel() == 0)
      return y;
    int64_t lines = a.outer * a.inner;
    Tensor scratch = c.empty(DType::I64, x.shape());
    int64_t *cur = y.data<int64_t>(), *other = scratch.data<int64_t>();
    launch(c, lines * a.len, iotaLinesKernel, cur, lines, a.len, a.inner);
    for (int64_t width = 1; width < a.len; width *= 2) {
      int64_t pairs = (a.len + 2 * width - 1) / (2 * width);
      launch(c, lines * pairs, mergePassKernel<T>, x.data<T>(),
             (const int64_t *)cur, other, lines, a.len, a.inner, width,
             descending);
      std::swap(cur, other);
    }
    if (cur != y.data<int64_t>())
      GLIMMER_CUDA_CHECK(cudaMemcpyAsync(y.data<int64_t>(), cur,
                                         y.numel() * sizeof(int64_t),
                                         cudaMemcpyDeviceToDevice, c.stream));
    return y;
  });
}

} // namespace cuda
} // namespace glimmer_rt
