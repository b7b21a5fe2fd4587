//===- ElementwiseUtil.cuh - Helpers of the CUDA kernels -------*- CUDA -*-===//
//
// Internal to the runtime's CUDA backend: what Elementwise.cu, Shape.cu,
// Reduce.cu and Misc.cu share beyond Common.cuh.
//
//  - Host-side operand checks whose messages match the CPU kernels' (the
//    PyTorch comparison suite matches on them), widened to mention bf16,
//    which the GPU supports and the CPU does not.
//  - Scalar conversions between every pair of element types, bit for bit
//    those of the CPU kernels (runtime/common/Scalar.h), on host and device.
//  - Error flags: kernels that find a data-dependent error (an index out of
//    range) record the first offending position in device memory; the host
//    reads it back after the launch and throws.
//  - Merged dimension maps for strided index arithmetic in kernels.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_ELEMENTWISEUTIL_CUH
#define GLIMMER_RT_CUDA_ELEMENTWISEUTIL_CUH

#include "Common.cuh"
#include "../common/Scalar.h"

#include <array>
#include <functional>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace glimmer_rt {
namespace cuda {
namespace util {

//===----------------------------------------------------------------------===//
// Host checks (kernels/Checks.h, and the element types with bf16)
//===----------------------------------------------------------------------===//

inline bool isFloatType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16;
}
inline bool isIntType(DType t) { return t == DType::I32 || t == DType::I64; }

using detail::requireDefined;
using detail::requireDim;
using detail::requireInt;
using detail::requireLike;
using detail::requireRank;
using detail::requireShape;
using detail::stridesOf;

inline void requireFloat(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isFloatType(t.dtype()), op,
        std::string("expects ") + name + " of type bf16, f32 or f64, got " +
            t.describe());
}

/// f32, f64, bf16, i32, i64.
inline void requireNumeric(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isFloatType(t.dtype()) || isIntType(t.dtype()), op,
        std::string("expects ") + name +
            " of type bf16, f32, f64, i32 or i64, got " + t.describe());
}

/// A tensor viewed as [outer, len, inner] around `dim`.
struct Around {
  int64_t outer = 1, len = 1, inner = 1;
};
inline Around around(const Shape &shape, int64_t dim) {
  Around a;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (d < dim)
      a.outer *= shape[size_t(d)];
    else if (d == dim)
      a.len = shape[size_t(d)];
    else
      a.inner *= shape[size_t(d)];
  }
  return a;
}

/// Number of multiprocessors of `device` (cached; sizes grids of kernels
/// that split long reductions).
int multiprocessors(int device);

//===----------------------------------------------------------------------===//
// Launch helpers
//===----------------------------------------------------------------------===//

__device__ __forceinline__ int64_t gridStart() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t gridStride() {
  return int64_t(gridDim.x) * blockDim.x;
}

/// Multi-tensor kernels cut each of `count` tensors into chunks, tensor k's
/// being [firstChunk[k], firstChunk[k + 1]): the tensor that holds chunk
/// `b` (the last one starting at or before it; empty tensors own none).
__device__ __forceinline__ int chunkOwner(const int64_t *firstChunk,
                                          int count, int64_t b) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (firstChunk[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// The tensor of a list whose device a Ctx takes: the first on a GPU (every
/// input must share it), else the first.
inline const Tensor *firstOnGpu(const std::vector<Tensor> &inputs) {
  for (const Tensor &t : inputs)
    if (t.isCuda())
      return &t;
  return &inputs.front();
}

/// Launches `kernel` for a grid-stride loop over `n` elements on the
/// context's stream (nothing for n == 0).
template <typename... P, typename... A>
void launch(const Ctx &c, int64_t n, void (*kernel)(P...), A &&...args) {
  if (n <= 0)
    return;
  kernel<<<blocksFor(n), kThreads, 0, c.stream>>>(std::forward<A>(args)...);
  GLIMMER_CUDA_LAUNCHED(c.op);
}

/// Calls `f(E{})` with E an unsigned type of `bytes` bytes (1, 2, 4, 8 or
/// 16): kernels that only move elements work on raw words.
template <typename F>
auto dispatchBytes(const char *op, size_t bytes, F &&f) {
  switch (bytes) {
  case 1:
    return f(uint8_t{});
  case 2:
    return f(uint16_t{});
  case 4:
    return f(uint32_t{});
  case 8:
    return f(uint64_t{});
  case 16:
    return f(uint4{});
  default:
    fail(op, "unsupported element size " + std::to_string(bytes));
  }
}

/// The widest word (up to 16 bytes) that divides `rowBytes` and the
/// addresses in `ptrs`: copies of whole rows move such words.
inline size_t widestWord(size_t rowBytes,
                         std::initializer_list<const void *> ptrs) {
  for (size_t w = 16; w > 1; w /= 2) {
    bool ok = rowBytes % w == 0;
    for (const void *p : ptrs)
      ok = ok && reinterpret_cast<uintptr_t>(p) % w == 0;
    if (ok)
      return w;
  }
  return 1;
}

//===----------------------------------------------------------------------===//
// Integer arithmetic that wraps around (two's complement), as on the CPU
//===----------------------------------------------------------------------===//

template <typename A>
__host__ __device__ __forceinline__ A wrapAdd(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(std::make_unsigned_t<A>(a) + std::make_unsigned_t<A>(b));
  else
    return a + b;
}
template <typename A>
__host__ __device__ __forceinline__ A wrapSub(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(std::make_unsigned_t<A>(a) - std::make_unsigned_t<A>(b));
  else
    return a - b;
}
template <typename A>
__host__ __device__ __forceinline__ A wrapMul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(std::make_unsigned_t<A>(a) * std::make_unsigned_t<A>(b));
  else
    return a * b;
}
/// False for integers; NaN test without relying on overloads of isnan.
template <typename A>
__host__ __device__ __forceinline__ bool isNan(A v) {
  if constexpr (std::is_floating_point_v<A>)
    return v != v;
  else
    return false;
}

using namespace glimmer_rt::scalar;

/// Sets every element of `t` to `value` converted to its dtype (as the
/// CPU's fill), queued on the context's stream. Defined in Elementwise.cu.
void fillValue(const Ctx &c, Tensor &t, double value);

/// dst[sum(i_d * dstStrides[d])] = src[sum(i_d * srcStrides[d])] for every
/// index i of `shape`, elements of `elemSize` bytes, strides and bases in
/// elements (non-negative, in bounds). Defined in Shape.cu.
void stridedCopy(const Ctx &c, size_t elemSize, const Shape &shape,
                 const void *src, int64_t srcBase,
                 const std::vector<int64_t> &srcStrides, void *dst,
                 int64_t dstBase, const std::vector<int64_t> &dstStrides);

//===----------------------------------------------------------------------===//
// Error flags
//===----------------------------------------------------------------------===//

// Deferred checks (DeferredChecks.cu): while the calling thread defers
// checks on `device`, a "no error" word of its pool (null otherwise or when
// the pool is full), and the registration of a check on it.
unsigned long long *deferredFlag(int device);
void deferCheck(int device, const char *op, const unsigned long long *flag,
                std::function<std::string(int64_t)> message);

/// A device word in which kernels record the smallest position at which
/// they found an error (so the message names the same position as the
/// CPU's, which stops at the first). raise() reports it: at once (the host
/// waits for the stream), or, while checks are deferred, at the next
/// synchronize() of the device, with the same message.
class ErrorFlag {
public:
  /// `op` names the check's op in the message (the Ctx's by default).
  explicit ErrorFlag(const Ctx &c, const char *op = nullptr)
      : op(op ? op : c.op), device(c.device.index),
        pooled(deferredFlag(device)) {
    if (pooled)
      return;
    word = Tensor(DType::I64, {1}, c.device);
    GLIMMER_CUDA_CHECK(cudaMemsetAsync(word.raw(), 0xff, 8, c.stream));
  }
  unsigned long long *get() {
    return pooled ? pooled : static_cast<unsigned long long *>(word.raw());
  }
  /// Throws "glimmer.<op>: <message(position)>" if a kernel flagged a
  /// position (now, or at the next synchronize). `message` may read device
  /// tensors it holds (the offending value).
  void raise(std::function<std::string(int64_t position)> message) const {
    if (pooled) {
      deferCheck(device, op, pooled, std::move(message));
      return;
    }
    unsigned long long v = 0;
    copy(&v, Device::cpu(), word.raw(), word.device(), sizeof(v));
    if (v != ~0ull)
      fail(op, message(int64_t(v)));
  }

private:
  const char *op;
  int device;
  unsigned long long *pooled;
  Tensor word;
};

__device__ __forceinline__ void flagError(unsigned long long *flag,
                                          int64_t position) {
  atomicMin(flag, static_cast<unsigned long long>(position));
}

/// Element `i` of an integer (i32/i64) device tensor, read on the host.
inline int64_t readIndex(const Tensor &t, int64_t i) {
  if (t.dtype() == DType::I64) {
    int64_t v = 0;
    copy(&v, Device::cpu(), t.data<int64_t>() + i, t.device(), sizeof(v));
    return v;
  }
  int32_t v = 0;
  copy(&v, Device::cpu(), t.data<int32_t>() + i, t.device(), sizeof(v));
  return v;
}

//===----------------------------------------------------------------------===//
// Merged dimension maps
//===----------------------------------------------------------------------===//

/// Dimensions a kernel decomposes a linear index over, after merging.
constexpr int kMaxDims = 16;

/// `S` sets of strides over merged dimensions, innermost first, so kernels
/// turn a row-major linear index into `S` element offsets.
template <int S>
struct DimMap {
  int rank = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[S][kMaxDims] = {};
};

/// Builds a map from `sizes` (outermost first) and `S` stride vectors:
/// drops size-1 dimensions and merges neighbours that are contiguous with
/// each other in every stride set (the usual collapse of a strided loop).
template <int S>
DimMap<S> makeDimMap(const char *op, const std::vector<int64_t> &sizes,
                     const std::array<std::vector<int64_t>, S> &strides) {
  DimMap<S> m;
  // Walk from the innermost dimension out.
  for (size_t k = sizes.size(); k-- > 0;) {
    if (sizes[k] == 1)
      continue;
    if (m.rank > 0) {
      bool merge = true;
      for (int s = 0; s < S; ++s)
        merge = merge &&
                strides[s][k] == m.stride[s][m.rank - 1] * m.size[m.rank - 1];
      if (merge) {
        m.size[m.rank - 1] *= sizes[k];
        continue;
      }
    }
    check(m.rank < kMaxDims, op,
          "supports at most " + std::to_string(kMaxDims) +
              " non-mergeable dimensions, got more for shape " +
              shapeString(sizes));
    m.size[m.rank] = sizes[k];
    for (int s = 0; s < S; ++s)
      m.stride[s][m.rank] = strides[s][k];
    ++m.rank;
  }
  return m;
}

// Unrolled on the device (constant indices keep the map in parameter
// space); plain loops where the host compiles it (in tests).
#ifdef __CUDA_ARCH__
#define GLIMMER_UNROLL _Pragma("unroll")
#else
#define GLIMMER_UNROLL
#endif

/// The `S` offsets of row-major linear index `i` (index type I).
template <int S, typename I>
__host__ __device__ __forceinline__ void offsetsOf(const DimMap<S> &m, I i,
                                                   I (&off)[S]) {
  GLIMMER_UNROLL
  for (int s = 0; s < S; ++s)
    off[s] = 0;
  GLIMMER_UNROLL
  for (int d = 0; d < kMaxDims; ++d) {
    if (d >= m.rank)
      break;
    I size = I(m.size[d]);
    I c = i % size;
    i /= size;
    GLIMMER_UNROLL
    for (int s = 0; s < S; ++s)
      off[s] += c * I(m.stride[s][d]);
  }
}

/// Offset of a single-stride-set map.
template <typename I>
__host__ __device__ __forceinline__ I offsetOf(const DimMap<1> &m, I i) {
  I off[1];
  offsetsOf<1, I>(m, i, off);
  return off[0];
}

#undef GLIMMER_UNROLL

} // namespace util
} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_ELEMENTWISEUTIL_CUH
