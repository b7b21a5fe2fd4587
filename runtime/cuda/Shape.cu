//===- Shape.cu - CUDA kernels that move elements -------------------------===//
//
// transpose, broadcast_in_dim, slice, concat, pad and cp_permute on a GPU.
// They only move elements, so they work on raw words of the element's size
// and every dtype is supported. All but cp_permute are one strided copy
// (the CPU's formulation): each thread turns an output index into a source
// offset. Before launching, dimensions that are contiguous in both source
// and destination are merged and, where the innermost run allows, elements
// are moved as wider words (up to 16 bytes); a fully contiguous copy is a
// cudaMemcpyAsync. Index arithmetic is 32-bit when every offset fits.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseUtil.cuh"

namespace glimmer_rt {
namespace cuda {

using namespace util;

namespace {

template <typename E, typename I>
__global__ void stridedCopyKernel(const E *src, E *dst, DimMap<2> m, I n) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += I(gridDim.x) * blockDim.x) {
    I off[2];
    offsetsOf<2, I>(m, i, off);
    dst[off[1]] = src[off[0]];
  }
}

/// cp_permute over x viewed as [outer, chunks, inner]: destination chunk j
/// reads source chunk srcChunk(j).
template <typename E>
__global__ void cpPermuteKernel(const E *src, E *dst, int64_t n, int64_t chunks,
                                int64_t inner, bool inverse) {
  int64_t cp = chunks / 2;
  for (int64_t i = gridStart(); i < n; i += gridStride()) {
    int64_t k = i % inner, t = i / inner;
    int64_t j = t % chunks, a = t / chunks;
    // Permuted position 2r holds original chunk r, position 2r+1 holds
    // chunk 2cp-1-r.
    int64_t from;
    if (!inverse)
      from = j % 2 == 0 ? j / 2 : chunks - 1 - j / 2;
    else
      from = j < cp ? 2 * j : 2 * (chunks - 1 - j) + 1;
    dst[i] = src[(a * chunks + from) * inner + k];
  }
}

bool allEven(const DimMap<2> &m, int from) {
  for (int d = from; d < m.rank; ++d)
    if (m.stride[0][d] % 2 || m.stride[1][d] % 2)
      return false;
  return true;
}

} // namespace

namespace {

/// How stridedCopy moves a strided region.
struct CopyPlan {
  const char *from; // first source byte
  char *to;         // first destination byte
  int64_t n;        // words to move
  size_t wordBytes;
  bool contiguous; // one cudaMemcpyAsync of n words
  bool narrow;     // 32-bit index arithmetic suffices
  DimMap<2> map;   // source (0) and destination (1) offsets, in words
};

CopyPlan planCopy(const char *op, size_t elemSize, const Shape &shape,
                  const void *src, int64_t srcBase,
                  const std::vector<int64_t> &srcStrides, void *dst,
                  int64_t dstBase, const std::vector<int64_t> &dstStrides) {
  CopyPlan p;
  p.from = static_cast<const char *>(src) + srcBase * int64_t(elemSize);
  p.to = static_cast<char *>(dst) + dstBase * int64_t(elemSize);
  p.n = numElements(shape);
  p.wordBytes = elemSize;
  DimMap<2> &m = p.map;
  m = makeDimMap<2>(op, shape, {srcStrides, dstStrides});
  p.contiguous = m.rank == 0 ||
                 (m.rank == 1 && m.stride[0][0] == 1 && m.stride[1][0] == 1);
  // Move pairs of elements as one word while the innermost run is
  // contiguous on both sides, of even length, and everything stays aligned.
  while (!p.contiguous && p.wordBytes < 16 && m.stride[0][0] == 1 &&
         m.stride[1][0] == 1 && m.size[0] % 2 == 0 && allEven(m, 1) &&
         reinterpret_cast<uintptr_t>(p.from) % (2 * p.wordBytes) == 0 &&
         reinterpret_cast<uintptr_t>(p.to) % (2 * p.wordBytes) == 0) {
    p.wordBytes *= 2;
    p.n /= 2;
    m.size[0] /= 2;
    for (int d = 1; d < m.rank; ++d) {
      m.stride[0][d] /= 2;
      m.stride[1][d] /= 2;
    }
  }
  int64_t srcSpan = 0, dstSpan = 0; // largest offsets
  for (int d = 0; d < m.rank; ++d) {
    srcSpan += (m.size[d] - 1) * m.stride[0][d];
    dstSpan += (m.size[d] - 1) * m.stride[1][d];
  }
  // 32-bit indices when the loop index (plus a grid stride) and every
  // offset stay below 2^31: divisions are several times cheaper.
  constexpr int64_t kNarrow = int64_t(1) << 31;
  p.narrow = p.n < kNarrow && srcSpan < kNarrow && dstSpan < kNarrow;
  return p;
}

} // namespace

void util::stridedCopy(const Ctx &c, size_t elemSize, const Shape &shape,
                       const void *src, int64_t srcBase,
                       const std::vector<int64_t> &srcStrides, void *dst,
                       int64_t dstBase,
                       const std::vector<int64_t> &dstStrides) {
  if (numElements(shape) == 0)
    return;
  CopyPlan p = planCopy(c.op, elemSize, shape, src, srcBase, srcStrides, dst,
                        dstBase, dstStrides);
  if (p.contiguous) {
    GLIMMER_CUDA_CHECK(cudaMemcpyAsync(p.to, p.from, size_t(p.n) * elemSize,
                                       cudaMemcpyDeviceToDevice, c.stream));
    return;
  }
  dispatchBytes(c.op, p.wordBytes, [&](auto tag) {
    using E = decltype(tag);
    const E *s = reinterpret_cast<const E *>(p.from);
    E *d = reinterpret_cast<E *>(p.to);
    if (p.narrow)
      launch(c, p.n, stridedCopyKernel<E, uint32_t>, s, d, p.map,
             uint32_t(p.n));
    else
      launch(c, p.n, stridedCopyKernel<E, int64_t>, s, d, p.map, p.n);
  });
}

Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
  const char *op = "transpose";
  Ctx c(op, {&x});
  auto [outShape, srcStrides, base] = detail::transposeSource(op, x, perm);
  Tensor y = c.empty(x.dtype(), outShape);
  stridedCopy(c, dtypeSize(x.dtype()), outShape, x.raw(), base, srcStrides,
              y.raw(), 0, stridesOf(outShape));
  return y;
}

Tensor broadcastInDim(const Tensor &x, const Shape &shape,
                      const std::vector<int64_t> &dims) {
  const char *op = "broadcast_in_dim";
  Ctx c(op, {&x});
  std::vector<int64_t> srcStrides =
      detail::broadcastStrides(op, x, shape, dims);
  Tensor y = c.empty(x.dtype(), shape);
  stridedCopy(c, dtypeSize(x.dtype()), shape, x.raw(), 0, srcStrides, y.raw(),
              0, stridesOf(shape));
  return y;
}

Tensor slice(const Tensor &x, const std::vector<int64_t> &start,
             const std::vector<int64_t> &limit,
             const std::vector<int64_t> &stride) {
  const char *op = "slice";
  Ctx c(op, {&x});
  auto [outShape, srcStrides, base] =
      detail::sliceSource(op, x, start, limit, stride);
  Tensor y = c.empty(x.dtype(), outShape);
  stridedCopy(c, dtypeSize(x.dtype()), outShape, x.raw(), base, srcStrides,
              y.raw(), 0, stridesOf(outShape));
  return y;
}

Tensor concat(const std::vector<Tensor> &inputs, int64_t dim) {
  const char *op = "concat";
  check(!inputs.empty(), op, "expects at least one input");
  Ctx c(op, {firstOnGpu(inputs)});
  const Tensor &first = inputs.front();
  requireDefined(op, first, "input #0");
  requireDim(op, dim, first.rank());
  Shape outShape = first.shape();
  outShape[size_t(dim)] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &t = inputs[i];
    std::string name = "input #" + std::to_string(i);
    requireDefined(op, t, name.c_str());
    check(t.device() == c.device, op,
          "operands live on different devices (" + c.device.str() + " and " +
              t.device().str() + ")");
    check(t.dtype() == first.dtype() && t.rank() == first.rank(), op,
          name + " " + t.describe() + " does not match input #0 " +
              first.describe());
    for (int64_t d = 0; d < t.rank(); ++d)
      check(d == dim || t.dim(d) == first.dim(d), op,
            name + " " + t.describe() + " differs from input #0 " +
                first.describe() + " in dimension " + std::to_string(d));
    outShape[size_t(dim)] += t.dim(dim);
  }
  Tensor y = c.empty(first.dtype(), outShape);
  std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t offset = 0;
  for (const Tensor &t : inputs) {
    stridedCopy(c, dtypeSize(t.dtype()), t.shape(), t.raw(), 0,
                stridesOf(t.shape()), y.raw(), offset * outStrides[size_t(dim)],
                outStrides);
    offset += t.dim(dim);
  }
  return y;
}

Tensor pad(const Tensor &x, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high, double value) {
  const char *op = "pad";
  Ctx c(op, {&x});
  Shape outShape = detail::padShape(op, x, low, high);
  size_t r = outShape.size();
  Tensor y = c.empty(x.dtype(), outShape);
  // The padding value everywhere, then the input over its interior (both
  // on the stream, in order).
  fillValue(c, y, value);
  std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t base = 0;
  for (size_t d = 0; d < r; ++d)
    base += low[d] * outStrides[d];
  stridedCopy(c, dtypeSize(x.dtype()), x.shape(), x.raw(), 0,
              stridesOf(x.shape()), y.raw(), base, outStrides);
  return y;
}

Tensor cpPermute(const Tensor &x, int64_t dim, int64_t cp, Balancer balancer,
                 bool inverse) {
  const char *op = inverse ? "cp_unpermute" : "cp_permute";
  Ctx c(op, {&x});
  int64_t chunks = detail::cpChunks(op, x, dim, cp, balancer);
  int64_t L = x.dim(dim);
  if (balancer == Balancer::Contiguous)
    return x.clone();
  Tensor y = c.empty(x.dtype(), x.shape());
  int64_t n = x.numel();
  if (n == 0)
    return y;
  // [outer, chunks, inner]: a chunk's elements of one outer index are a
  // contiguous run of inner elements, moved as the widest words that fit.
  Around a = around(x.shape(), dim);
  size_t runBytes = size_t(a.len / chunks * a.inner) * dtypeSize(x.dtype());
  size_t w = widestWord(runBytes, {x.raw(), y.raw()});
  int64_t inner = int64_t(runBytes / w);
  dispatchBytes(op, w, [&](auto tag) {
    using E = decltype(tag);
    int64_t words = int64_t(x.nbytes() / sizeof(E));
    launch(c, words, cpPermuteKernel<E>, x.data<E>(), y.data<E>(), words,
           chunks, inner, inverse);
  });
  return y;
}

} // namespace cuda
} // namespace glimmer_rt
