//===- Shapes.cpp - CPU kernels: Shape ops --------------------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: transposes, broadcasts,
// slices, concatenation, padding and the context-parallel reorder, as strided
// copies by element size.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

namespace glimmer_rt::cpu {

namespace {

template <typename E>
void stridedCopyT(const Shape &shape, const E *src,
                  const std::vector<int64_t> &ss, E *dst,
                  const std::vector<int64_t> &ds) {
  int64_t n = numElements(shape);
  if (n == 0)
    return;
  size_t r = shape.size();
  if (r == 0) {
    *dst = *src;
    return;
  }
  int64_t inner = shape[r - 1], si = ss[r - 1], di = ds[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t so = 0, dof = 0;
  for (int64_t o = 0, outer = n / inner; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i)
      dst[dof + i * di] = src[so + i * si];
    for (int64_t d = int64_t(r) - 2; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        so += ss[d];
        dof += ds[d];
        break;
      }
      so -= ss[d] * (shape[d] - 1);
      dof -= ds[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

/// dst[dstBase + sum(i_d * dstStrides[d])] = src[srcBase + sum(i_d *
/// srcStrides[d])] for every index i of `shape`. Strides and bases count
/// elements of `elemSize` bytes; callers guarantee they stay in bounds.
void stridedCopy(size_t elemSize, const Shape &shape, const void *src,
                 int64_t srcBase, const std::vector<int64_t> &srcStrides,
                 void *dst, int64_t dstBase,
                 const std::vector<int64_t> &dstStrides) {
  switch (elemSize) {
  case 1:
    return stridedCopyT(shape, static_cast<const uint8_t *>(src) + srcBase,
                        srcStrides, static_cast<uint8_t *>(dst) + dstBase,
                        dstStrides);
  case 2:
    return stridedCopyT(shape, static_cast<const uint16_t *>(src) + srcBase,
                        srcStrides, static_cast<uint16_t *>(dst) + dstBase,
                        dstStrides);
  case 4:
    return stridedCopyT(shape, static_cast<const uint32_t *>(src) + srcBase,
                        srcStrides, static_cast<uint32_t *>(dst) + dstBase,
                        dstStrides);
  case 8:
    return stridedCopyT(shape, static_cast<const uint64_t *>(src) + srcBase,
                        srcStrides, static_cast<uint64_t *>(dst) + dstBase,
                        dstStrides);
  default:
    throw RuntimeError("unsupported element size " + std::to_string(elemSize));
  }
}

} // namespace

Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
  auto [outShape, srcStrides, base] =
      detail::transposeSource("transpose", x, perm);
  Tensor y(x.dtype(), outShape);
  stridedCopy(dtypeSize(x.dtype()), outShape, x.raw(), base, srcStrides,
              y.raw(), 0, stridesOf(outShape));
  return y;
}

Tensor broadcastInDim(const Tensor &x, const Shape &shape,
                      const std::vector<int64_t> &dims) {
  std::vector<int64_t> srcStrides =
      detail::broadcastStrides("broadcast_in_dim", x, shape, dims);
  Tensor y(x.dtype(), shape);
  stridedCopy(dtypeSize(x.dtype()), shape, x.raw(), 0, srcStrides, y.raw(), 0,
              stridesOf(shape));
  return y;
}

Tensor slice(const Tensor &x, const std::vector<int64_t> &start,
             const std::vector<int64_t> &limit,
             const std::vector<int64_t> &stride) {
  auto [outShape, srcStrides, base] =
      detail::sliceSource("slice", x, start, limit, stride);
  Tensor y(x.dtype(), outShape);
  if (y.numel() == 0)
    return y;
  stridedCopy(dtypeSize(x.dtype()), outShape, x.raw(), base, srcStrides,
              y.raw(), 0, stridesOf(outShape));
  return y;
}

Tensor concat(const std::vector<Tensor> &inputs, int64_t dim) {
  const char *op = "concat";
  check(!inputs.empty(), op, "expects at least one input");
  const Tensor &first = inputs.front();
  requireDefined(op, first, "input #0");
  requireDim(op, dim, first.rank());
  Shape outShape = first.shape();
  outShape[size_t(dim)] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &t = inputs[i];
    std::string name = "input #" + std::to_string(i);
    requireDefined(op, t, name.c_str());
    check(t.dtype() == first.dtype() && t.rank() == first.rank(), op,
          name + " " + t.describe() + " does not match input #0 " +
              first.describe());
    for (int64_t d = 0; d < t.rank(); ++d)
      check(d == dim || t.dim(d) == first.dim(d), op,
            name + " " + t.describe() + " differs from input #0 " +
                first.describe() + " in dimension " + std::to_string(d));
    outShape[size_t(dim)] += t.dim(dim);
  }
  Tensor y(first.dtype(), outShape);
  std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t offset = 0;
  for (const Tensor &t : inputs) {
    if (t.numel())
      stridedCopy(dtypeSize(t.dtype()), t.shape(), t.raw(), 0,
                  stridesOf(t.shape()), y.raw(),
                  offset * outStrides[size_t(dim)], outStrides);
    offset += t.dim(dim);
  }
  return y;
}

Tensor pad(const Tensor &x, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high, double value) {
  Shape outShape = detail::padShape("pad", x, low, high);
  size_t r = outShape.size();
  Tensor y(x.dtype(), outShape);
  fillWith(y, value);
  std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t base = 0;
  for (size_t d = 0; d < r; ++d)
    base += low[d] * outStrides[d];
  if (x.numel())
    stridedCopy(dtypeSize(x.dtype()), x.shape(), x.raw(), 0,
                stridesOf(x.shape()), y.raw(), base, outStrides);
  return y;
}

Tensor cpPermute(const Tensor &x, int64_t dim, int64_t cp, Balancer balancer,
                 bool inverse) {
  const char *op = inverse ? "cp_unpermute" : "cp_permute";
  int64_t chunks = detail::cpChunks(op, x, dim, cp, balancer);
  int64_t L = x.dim(dim);
  if (balancer == Balancer::Contiguous)
    return x.clone();
  // Position 2r of the permuted sequence holds chunk r, position 2r+1 holds
  // chunk 2cp-1-r, so rank r's contiguous share is chunks {r, 2cp-1-r}.
  int64_t C = L / chunks;
  Tensor y(x.dtype(), x.shape());
  std::vector<int64_t> strides = stridesOf(x.shape());
  Shape chunkShape = x.shape();
  chunkShape[size_t(dim)] = C;
  int64_t step = C * strides[size_t(dim)];
  for (int64_t r = 0; r < cp; ++r) {
    int64_t pairs[2][2] = {{2 * r, r}, {2 * r + 1, chunks - 1 - r}};
    for (auto &pr : pairs) {
      int64_t permuted = pr[0], original = pr[1];
      int64_t src = inverse ? permuted : original;
      int64_t dst = inverse ? original : permuted;
      if (numElements(chunkShape))
        stridedCopy(dtypeSize(x.dtype()), chunkShape, x.raw(), src * step,
                    strides, y.raw(), dst * step, strides);
    }
  }
  return y;
}

} // namespace glimmer_rt::cpu
