//===- ElementwiseUtil.cuh - Helpers of the CUDA kernels -------*- CUDA -*-===//
//
// Internal to the runtime's CUDA backend: what Elementwise.cu, Shape.cu,
// Reduce.cu and Misc.cu share beyond Common.cuh.
//
//  - Host-side operand checks whose messages match the CPU kernels' (the
//    PyTorch comparison suite matches on them), widened to mention bf16,
//    which the GPU supports and the CPU does not.
//  - Scalar conversions between every pair of element types, bit for bit
//    those of the CPU kernels (runtime/cpu/Kernels.cpp), on host and device.
//  - Error flags: kernels that find a data-dependent error (an index out of
//    range) record the first offending position in device memory; the host
//    reads it back after the launch and throws.
//  - Merged dimension maps for strided index arithmetic in kernels.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_ELEMENTWISEUTIL_CUH
#define GLIMMER_RT_CUDA_ELEMENTWISEUTIL_CUH

#include "Common.cuh"

#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace glimmer_rt {
namespace cuda {
namespace util {

//===----------------------------------------------------------------------===//
// Host checks (messages as in runtime/cpu/Kernels.cpp)
//===----------------------------------------------------------------------===//

inline bool isFloatType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16;
}
inline bool isIntType(DType t) { return t == DType::I32 || t == DType::I64; }

inline void requireDefined(const char *op, const Tensor &t, const char *name) {
  check(t.defined(), op, std::string("missing ") + name);
}

inline void requireFloat(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isFloatType(t.dtype()), op,
        std::string("expects ") + name + " of type bf16, f32 or f64, got " +
            t.describe());
}

inline void requireInt(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isIntType(t.dtype()), op,
        std::string("expects ") + name + " of type i32 or i64, got " +
            t.describe());
}

/// f32, f64, bf16, i32, i64.
inline void requireNumeric(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isFloatType(t.dtype()) || isIntType(t.dtype()), op,
        std::string("expects ") + name +
            " of type bf16, f32, f64, i32 or i64, got " + t.describe());
}

inline void requireRank(const char *op, const Tensor &t, const char *name,
                        int64_t rank) {
  check(t.rank() == rank, op,
        std::string("expects ") + name + " of rank " + std::to_string(rank) +
            ", got " + t.describe());
}

inline void requireShape(const char *op, const Tensor &t, const char *name,
                         const Shape &shape) {
  check(t.shape() == shape, op,
        std::string("expects ") + name + " of shape " + shapeString(shape) +
            ", got " + t.describe());
}

/// Same dtype and shape as `ref`.
inline void requireLike(const char *op, const Tensor &t, const char *name,
                        const Tensor &ref, const char *refName) {
  requireDefined(op, t, name);
  check(t.dtype() == ref.dtype() && t.shape() == ref.shape(), op,
        std::string("expects ") + name + " like " + refName + " (" +
            ref.describe() + "), got " + t.describe());
}

inline void requireDim(const char *op, int64_t dim, int64_t rank) {
  check(dim >= 0 && dim < rank, op,
        "dim " + std::to_string(dim) + " is out of range for rank " +
            std::to_string(rank));
}

/// Contiguous row-major strides (in elements).
inline std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[size_t(d)] = s[size_t(d) + 1] * shape[size_t(d) + 1];
  return s;
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

//===----------------------------------------------------------------------===//
// Scalar conversions between any two dtypes (as the CPU's load/store)
//===----------------------------------------------------------------------===//

__host__ __device__ __forceinline__ uint32_t floatBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
#endif
}
__host__ __device__ __forceinline__ float bitsFloat(uint32_t x) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(x);
#else
  float f;
  std::memcpy(&f, &x, 4);
  return f;
#endif
}

__host__ __device__ inline uint16_t floatToBf16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return uint16_t((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1u); // round to nearest even
  return uint16_t(x >> 16);
}

__host__ __device__ inline float bf16ToFloat(uint16_t b) {
  return bitsFloat(uint32_t(b) << 16);
}

__host__ __device__ inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) // inf or NaN
    return sign | (ax > 0x7f800000u ? 0x7e00 : 0x7c00);
  if (ax >= 0x477ff000u) // >= 65520 rounds to inf
    return sign | 0x7c00;
  if (ax < 0x38800000u) { // below 2^-14: half subnormal (or zero)
    // a * 2^24 is exact and below 1024; rintf rounds half to even.
    return sign | uint16_t(rintf(bitsFloat(ax) * 16777216.0f));
  }
  uint32_t mantissa = ax & 0x7fffffu;
  uint32_t h = (((ax >> 23) - 127 + 15) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // a carry into the exponent is the correct rounding
  return sign | uint16_t(h);
}

__host__ __device__ inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  if (exponent == 0) {
    // zero or subnormal: mantissa * 2^-24, exact in float
    bits = floatBits(float(mantissa) * (1.0f / 16777216.0f)) | sign;
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return bitsFloat(bits);
}

/// Float to integer: truncation toward zero, NaN -> 0, saturating.
__host__ __device__ inline int64_t truncToInt(double v) {
  if (v != v)
    return 0;
  if (v >= 9223372036854775807.0)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

/// An element read in its natural domain: integers and bools as int64,
/// floats as double.
struct Scalar {
  bool isFloat;
  double f;
  int64_t i;
};

__host__ __device__ inline Scalar loadScalar(DType t, const void *base,
                                             int64_t k) {
  switch (t) {
  case DType::F64:
    return {true, static_cast<const double *>(base)[k], 0};
  case DType::F32:
    return {true, static_cast<const float *>(base)[k], 0};
  case DType::BF16:
    return {true, bf16ToFloat(static_cast<const uint16_t *>(base)[k]), 0};
  case DType::F16:
    return {true, halfToFloat(static_cast<const uint16_t *>(base)[k]), 0};
  case DType::I64:
    return {false, 0, static_cast<const int64_t *>(base)[k]};
  case DType::I32:
    return {false, 0, static_cast<const int32_t *>(base)[k]};
  case DType::I16:
    return {false, 0, static_cast<const int16_t *>(base)[k]};
  case DType::I8:
    return {false, 0, static_cast<const int8_t *>(base)[k]};
  case DType::U8:
    return {false, 0, static_cast<const uint8_t *>(base)[k]};
  case DType::Bool:
    return {false, 0, static_cast<const uint8_t *>(base)[k] ? 1 : 0};
  }
  return {false, 0, 0};
}

__host__ __device__ inline void storeScalar(DType t, void *base, int64_t k,
                                            Scalar s) {
  // Integer destinations take the integer (truncated) value; float ones the
  // double (an int64 converts to the nearest double first).
  double f = s.isFloat ? s.f : double(s.i);
  int64_t i = s.isFloat ? truncToInt(s.f) : s.i;
  switch (t) {
  case DType::F64:
    static_cast<double *>(base)[k] = f;
    break;
  case DType::F32:
    static_cast<float *>(base)[k] = float(f);
    break;
  case DType::BF16:
    static_cast<uint16_t *>(base)[k] = floatToBf16(float(f));
    break;
  case DType::F16:
    static_cast<uint16_t *>(base)[k] = floatToHalf(float(f));
    break;
  case DType::I64:
    static_cast<int64_t *>(base)[k] = i;
    break;
  case DType::I32:
    static_cast<int32_t *>(base)[k] = int32_t(i);
    break;
  case DType::I16:
    static_cast<int16_t *>(base)[k] = int16_t(i);
    break;
  case DType::I8:
    static_cast<int8_t *>(base)[k] = int8_t(i);
    break;
  case DType::U8:
    static_cast<uint8_t *>(base)[k] = uint8_t(i);
    break;
  case DType::Bool:
    static_cast<uint8_t *>(base)[k] = (s.isFloat ? s.f != 0 : s.i != 0);
    break;
  }
}

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

/// A device word in which kernels record the smallest position at which
/// they found an error (so the message names the same position as the
/// CPU's, which stops at the first).
class ErrorFlag {
public:
  explicit ErrorFlag(const Ctx &c) : word(DType::I64, {1}, c.device) {
    GLIMMER_CUDA_CHECK(cudaMemsetAsync(word.raw(), 0xff, 8, c.stream));
  }
  unsigned long long *get() {
    return static_cast<unsigned long long *>(word.raw());
  }
  /// Waits for the work queued so far; the flagged position or -1.
  int64_t first() const {
    unsigned long long v = 0;
    copy(&v, Device::cpu(), word.raw(), word.device(), sizeof(v));
    return v == ~0ull ? -1 : int64_t(v);
  }

private:
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
