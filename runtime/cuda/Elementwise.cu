//===- Elementwise.cu - CUDA creation and elementwise kernels -------------===//
//
// full, constant, iota and the elementwise ops of Kernels.h on a GPU, with
// the CPU kernels' semantics: floating-point ops compute in the tensor's
// precision (f32 for bf16), integer arithmetic wraps around, integer
// division truncates toward zero, max/min propagate NaN, and conversions
// are bit for bit the CPU's (ElementwiseUtil.cuh). One grid-stride kernel
// per op over the flattened tensor; operands are contiguous, so accesses
// are coalesced.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseMath.cuh"
#include "ElementwiseUtil.cuh"
#include "Vector.cuh"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace glimmer_rt {
namespace cuda {

using namespace util;

namespace {

//===----------------------------------------------------------------------===//
// Fill and creation kernels
//===----------------------------------------------------------------------===//

template <typename E>
__global__ void fillKernel(E *out, int64_t n, E value) {
  for (int64_t i = gridStart(); i < n; i += gridStride())
    out[i] = value;
}

__global__ void iotaKernel(DType dtype, void *out, int64_t n, int64_t len,
                           int64_t inner) {
  for (int64_t i = gridStart(); i < n; i += gridStride())
    storeScalar(dtype, out, i, {false, 0, (i / inner) % len});
}

__global__ void convertKernel(DType from, const void *in, DType to, void *out,
                              int64_t n) {
  for (int64_t i = gridStart(); i < n; i += gridStride())
    storeScalar(to, out, i, loadScalar(from, in, i));
}

/// The same with both types known at compile time: the switches fold and
/// the unused half of the conversion disappears (the common pairs).
template <DType From, DType To>
__global__ void convertTypedKernel(const void *in, void *out, int64_t n) {
  for (int64_t i = gridStart(); i < n; i += gridStride())
    storeScalar(To, out, i, loadScalar(From, in, i));
}

// The vectorized kernels (Vector.cuh) took the bf16 residual adds of the
// medium training step from 1.39 to 0.77 ms.

/// Vector j covers elements [kVec j, kVec j + kVec); the last n % kVec
/// elements are done one by one.
template <DType From, DType To>
__global__ void convertVecKernel(const void *in, void *out, int64_t n) {
  using In = ElemPack<bytesOf(From)>;
  using Out = ElemPack<bytesOf(To)>;
  int64_t vectors = n / kVec;
  for (int64_t j = gridStart(); j < vectors; j += gridStride()) {
    In a = static_cast<const In *>(in)[j];
    Out r;
#pragma unroll
    for (int u = 0; u < kVec; ++u)
      storeScalar(To, r.b, u, loadScalar(From, a.b, u));
    static_cast<Out *>(out)[j] = r;
  }
  for (int64_t i = vectors * kVec + gridStart(); i < n; i += gridStride())
    storeScalar(To, out, i, loadScalar(From, in, i));
}

/// Up to kConvertBatch conversions per launch, passed by value as kernel
/// parameters (about 1.6 KB).
constexpr int kConvertBatch = 64;
/// Elements per chunk (a multiple of kVec); a block converts a chunk of one
/// input at a time.
constexpr int64_t kConvertChunk = int64_t(1) << 14;

struct ConvertBatch {
  const void *in[kConvertBatch];
  void *out[kConvertBatch];
  int64_t numel[kConvertBatch];
  /// Input k's chunks are [firstChunk[k], firstChunk[k + 1]).
  int64_t firstChunk[kConvertBatch + 1];
  /// Bit k: input k and its output are aligned for kVec-element accesses.
  unsigned long long vec;
  int count;
};

/// convertVecKernel / convertTypedKernel over a batch of inputs: a grid of
/// blocks striding over the chunks, each element converted as there.
template <DType From, DType To>
__global__ void convertListKernel(const __grid_constant__ ConvertBatch batch) {
  using In = ElemPack<bytesOf(From)>;
  using Out = ElemPack<bytesOf(To)>;
  int64_t chunks = batch.firstChunk[batch.count];
  for (int64_t b = blockIdx.x; b < chunks; b += gridDim.x) {
    int lo = chunkOwner(batch.firstChunk, batch.count, b);
    const void *in = batch.in[lo];
    void *out = batch.out[lo];
    int64_t begin = (b - batch.firstChunk[lo]) * kConvertChunk;
    int64_t end = begin + kConvertChunk < batch.numel[lo]
                      ? begin + kConvertChunk
                      : batch.numel[lo];
    int64_t first = begin;
    if ((batch.vec >> lo) & 1ull) {
      int64_t last = end / kVec;
      for (int64_t j = begin / kVec + threadIdx.x; j < last; j += blockDim.x) {
        In a = static_cast<const In *>(in)[j];
        Out r;
#pragma unroll
        for (int u = 0; u < kVec; ++u)
          storeScalar(To, r.b, u, loadScalar(From, a.b, u));
        static_cast<Out *>(out)[j] = r;
      }
      first = last * kVec;
    }
    for (int64_t i = first + threadIdx.x; i < end; i += blockDim.x)
      storeScalar(To, out, i, loadScalar(From, in, i));
  }
}

// Unary formulas shared with the fused kernels (ElementwiseMath.cuh).
using namespace math;

/// 0 - x (so neg(0.0) is +0.0, as on the CPU); wraps for integers.
struct Neg {
  template <typename A>
  __device__ A operator()(A v) const {
    return wrapSub(A(0), v);
  }
};
struct Relu {
  template <typename A>
  __device__ A operator()(A v) const {
    return (v > A(0) || isNan(v)) ? v : A(0);
  }
};

template <typename T, typename F>
__global__ void unaryKernel(const T *x, T *y, int64_t n, F f) {
  for (int64_t i = gridStart(); i < n; i += gridStride())
    st(y + i, f(ld(x + i)));
}

/// unaryKernel on kVec elements per access (see convertVecKernel).
template <typename T, typename F>
__global__ void unaryVecKernel(const T *x, T *y, int64_t n, F f) {
  using P = ElemPack<sizeof(T)>;
  int64_t vectors = n / kVec;
  for (int64_t j = gridStart(); j < vectors; j += gridStride()) {
    P a = reinterpret_cast<const P *>(x)[j], r;
    const T *av = reinterpret_cast<const T *>(a.b);
    T *rv = reinterpret_cast<T *>(r.b);
#pragma unroll
    for (int u = 0; u < kVec; ++u)
      st(rv + u, f(ld(av + u)));
    reinterpret_cast<P *>(y)[j] = r;
  }
  for (int64_t i = vectors * kVec + gridStart(); i < n; i += gridStride())
    st(y + i, f(ld(x + i)));
}

// Binary functors.
struct Add {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return wrapAdd(a, b);
  }
};
struct Sub {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return wrapSub(a, b);
  }
};
struct Mul {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return wrapMul(a, b);
  }
};
/// Integer division by zero is flagged (the host throws); INT_MIN / -1
/// wraps around; C++ division truncates toward zero.
struct Div {
  unsigned long long *flag;
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      if (b == 0) {
        flagError(flag, 0);
        return 0;
      }
      if (a == std::numeric_limits<A>::min() && b == A(-1))
        return a;
      return A(a / b);
    } else {
      return a / b;
    }
  }
};
/// Integer powers by squaring (wrapping); negative exponents are flagged.
struct Pow {
  unsigned long long *flag;
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      if (b < 0) {
        flagError(flag, 0);
        return 0;
      }
      A result = 1, base = a;
      for (A e = b; e > 0; e >>= 1) {
        if (e & 1)
          result = wrapMul(result, base);
        base = wrapMul(base, base);
      }
      return result;
    } else {
      return mPow(a, b);
    }
  }
};

template <typename T, typename F>
__global__ void binaryKernel(const T *a, const T *b, T *y, int64_t n, F f) {
  for (int64_t i = gridStart(); i < n; i += gridStride())
    st(y + i, f(ld(a + i), ld(b + i)));
}

/// binaryKernel on kVec elements per access (see convertVecKernel).
template <typename T, typename F>
__global__ void binaryVecKernel(const T *a, const T *b, T *y, int64_t n, F f) {
  using P = ElemPack<sizeof(T)>;
  int64_t vectors = n / kVec;
  for (int64_t j = gridStart(); j < vectors; j += gridStride()) {
    P pa = reinterpret_cast<const P *>(a)[j], pb = reinterpret_cast<const P *>(b)[j], r;
    const T *av = reinterpret_cast<const T *>(pa.b);
    const T *bv = reinterpret_cast<const T *>(pb.b);
    T *rv = reinterpret_cast<T *>(r.b);
#pragma unroll
    for (int u = 0; u < kVec; ++u)
      st(rv + u, f(ld(av + u), ld(bv + u)));
    reinterpret_cast<P *>(y)[j] = r;
  }
  for (int64_t i = vectors * kVec + gridStart(); i < n; i += gridStride())
    st(y + i, f(ld(a + i), ld(b + i)));
}

/// Launches the vectorized kernel over n / kVec vectors when every pointer
/// allows it and there is at least one vector, else the scalar one.
template <typename... P, typename... Q, typename... A>
void launchElementwise(const Ctx &c, int64_t n, bool aligned,
                       void (*vec)(P...), void (*scalar)(Q...),
                       A &&...args) {
  if (aligned && n >= kVec) {
    int64_t threads = n / kVec;
    vec<<<blocksFor(threads), kThreads, 0, c.stream>>>(args...);
    GLIMMER_CUDA_LAUNCHED(c.op);
  } else {
    launch(c, n, scalar, std::forward<A>(args)...);
  }
}

/// max/min: copies the chosen operand's element itself (NaN payloads and
/// bf16 bits survive). A NaN operand wins, the lhs first, as torch.maximum.
template <typename T, bool IsMax>
__global__ void pickKernel(const T *a, const T *b, T *y, int64_t n) {
  for (int64_t i = gridStart(); i < n; i += gridStride()) {
    acc_t<T> x = ld(a + i), z = ld(b + i);
    bool takeA;
    if (isNan(x) || isNan(z))
      takeA = isNan(x);
    else
      takeA = IsMax ? x > z : x < z;
    y[i] = takeA ? a[i] : b[i];
  }
}

template <typename T>
__global__ void compareKernel(CompareDir dir, const T *a, const T *b,
                              uint8_t *y, int64_t n) {
  for (int64_t i = gridStart(); i < n; i += gridStride()) {
    acc_t<T> x = ld(a + i), z = ld(b + i);
    bool r = false;
    switch (dir) {
    case CompareDir::EQ:
      r = x == z;
      break;
    case CompareDir::NE:
      r = x != z;
      break;
    case CompareDir::LT:
      r = x < z;
      break;
    case CompareDir::LE:
      r = x <= z;
      break;
    case CompareDir::GT:
      r = x > z;
      break;
    case CompareDir::GE:
      r = x >= z;
      break;
    }
    y[i] = r;
  }
}

template <typename E>
__global__ void selectKernel(const uint8_t *cond, const E *a, const E *b, E *y,
                             int64_t n) {
  for (int64_t i = gridStart(); i < n; i += gridStride())
    y[i] = cond[i] ? a[i] : b[i];
}

//===----------------------------------------------------------------------===//
// Host wrappers
//===----------------------------------------------------------------------===//

template <typename F>
Tensor unaryFloat(const char *op, const Tensor &x, F f) {
  Ctx c(op, {&x});
  requireFloat(op, x, "input");
  return dispatchFloat(op, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = c.empty(x.dtype(), x.shape());
    launchElementwise(
        c, x.numel(),
        packAligned({{x.raw(), int(sizeof(T))}, {y.raw(), int(sizeof(T))}}),
        unaryVecKernel<T, F>, unaryKernel<T, F>, x.data<T>(), y.data<T>(),
        x.numel(), f);
    return y;
  });
}

template <typename F>
Tensor unaryNumeric(const char *op, const Tensor &x, F f) {
  Ctx c(op, {&x});
  requireNumeric(op, x, "input");
  return dispatchNumeric(op, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = c.empty(x.dtype(), x.shape());
    launchElementwise(
        c, x.numel(),
        packAligned({{x.raw(), int(sizeof(T))}, {y.raw(), int(sizeof(T))}}),
        unaryVecKernel<T, F>, unaryKernel<T, F>, x.data<T>(), y.data<T>(),
        x.numel(), f);
    return y;
  });
}

/// The CPU's binary checks: lhs defined, rhs like lhs, numeric dtype.
void checkBinary(const char *op, const Tensor &a, const Tensor &b) {
  requireDefined(op, a, "lhs");
  requireLike(op, b, "rhs", a, "lhs");
  requireNumeric(op, a, "operands");
}

template <typename F>
Tensor binaryNumeric(const char *op, const Tensor &a, const Tensor &b, F f) {
  Ctx c(op, {&a, &b});
  checkBinary(op, a, b);
  return dispatchNumeric(op, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = c.empty(a.dtype(), a.shape());
    launchElementwise(c, a.numel(),
                      packAligned({{a.raw(), int(sizeof(T))},
                                   {b.raw(), int(sizeof(T))},
                                   {y.raw(), int(sizeof(T))}}),
                      binaryVecKernel<T, F>, binaryKernel<T, F>, a.data<T>(),
                      b.data<T>(), y.data<T>(), a.numel(), f);
    return y;
  });
}

/// div and pow: integer operands can fail on their values, which the
/// kernel flags; the host waits for it only then.
template <typename F>
Tensor binaryChecked(const char *op, const Tensor &a, const Tensor &b,
                     const char *message) {
  Ctx c(op, {&a, &b});
  checkBinary(op, a, b);
  if (!isIntType(a.dtype()) || a.numel() == 0)
    return binaryNumeric(op, a, b, F{nullptr});
  ErrorFlag flag(c);
  Tensor y = binaryNumeric(op, a, b, F{flag.get()});
  flag.raise([message](int64_t) { return std::string(message); });
  return y;
}

bool isCommonType(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::BF16 ||
         dtype == DType::I64 || dtype == DType::I32 || dtype == DType::Bool;
}

/// Calls `f(tag)` with tag a std::integral_constant of `dtype`, one of the
/// common types (isCommonType).
template <typename F>
void withCommonType(DType dtype, F &&f) {
  switch (dtype) {
  case DType::F64:
    return f(std::integral_constant<DType, DType::F64>{});
  case DType::F32:
    return f(std::integral_constant<DType, DType::F32>{});
  case DType::BF16:
    return f(std::integral_constant<DType, DType::BF16>{});
  case DType::I64:
    return f(std::integral_constant<DType, DType::I64>{});
  case DType::I32:
    return f(std::integral_constant<DType, DType::I32>{});
  default:
    return f(std::integral_constant<DType, DType::Bool>{});
  }
}

void launchConvert(const Ctx &c, DType from, const void *in, DType to,
                   void *out, int64_t n) {
  if (!isCommonType(from) || !isCommonType(to)) {
    launch(c, n, convertKernel, from, in, to, out, n);
    return;
  }
  withCommonType(from, [&](auto f) {
    withCommonType(to, [&](auto t) {
      constexpr DType From = decltype(f)::value, To = decltype(t)::value;
      launchElementwise(
          c, n, packAligned({{in, bytesOf(From)}, {out, bytesOf(To)}}),
          convertVecKernel<From, To>, convertTypedKernel<From, To>, in, out, n);
    });
  });
}

template <bool IsMax>
Tensor pick(const char *op, const Tensor &a, const Tensor &b) {
  Ctx c(op, {&a, &b});
  checkBinary(op, a, b);
  return dispatchNumeric(op, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = c.empty(a.dtype(), a.shape());
    launch(c, a.numel(), pickKernel<T, IsMax>, a.data<T>(), b.data<T>(),
           y.data<T>(), a.numel());
    return y;
  });
}

} // namespace

//===----------------------------------------------------------------------===//
// Fill (shared with Shape.cu's pad)
//===----------------------------------------------------------------------===//

void util::fillValue(const Ctx &c, Tensor &t, double value) {
  int64_t n = t.numel();
  if (n == 0)
    return;
  // The element's bytes, converted on the host exactly as the CPU does.
  uint64_t pattern = 0;
  storeScalar(t.dtype(), &pattern, 0, {true, value, 0});
  if (pattern == 0) {
    GLIMMER_CUDA_CHECK(cudaMemsetAsync(t.raw(), 0, t.nbytes(), c.stream));
    return;
  }
  dispatchBytes(c.op, dtypeSize(t.dtype()), [&](auto tag) {
    using E = decltype(tag);
    if constexpr (sizeof(E) <= sizeof(pattern)) {
      E v;
      std::memcpy(&v, &pattern, sizeof(E));
      launch(c, n, fillKernel<E>, static_cast<E *>(t.raw()), n, v);
    }
  });
}

//===----------------------------------------------------------------------===//
// Creation
//===----------------------------------------------------------------------===//

Tensor full(Device device, DType dtype, const Shape &shape, double value) {
  DeviceScope scope(device);
  Ctx c("full", {});
  Tensor t = c.empty(dtype, shape);
  fillValue(c, t, value);
  return t;
}

namespace {
/// The constants a device has been given, by content. A program's
/// constants are literals of its code, the same at every step: each is
/// copied to the device once (a copy from host memory makes the host wait
/// for the device, and cannot be captured in a CUDA graph), and later
/// calls share the device tensor, which no kernel writes in place (they
/// write an input only where it is the sole owner of its storage).
struct ConstantCache {
  struct Entry {
    DType dtype;
    Shape shape;
    std::vector<uint8_t> bytes;
    Tensor tensor;
  };
  std::mutex mutex;
  std::unordered_multimap<size_t, Entry> entries;
  size_t bytes = 0;
};
/// Beyond this many bytes per device, constants are copied at each call:
/// GLIMMER_CUDA_CONSTANT_CACHE_MB, 256 MiB by default.
size_t constantCacheBytes() {
  static const size_t bytes = [] {
    const char *name = "GLIMMER_CUDA_CONSTANT_CACHE_MB";
    const char *e = std::getenv(name);
    if (!e)
      return size_t(256) << 20;
    char *end = nullptr;
    errno = 0;
    unsigned long long mib = std::strtoull(e, &end, 10);
    if (!std::isdigit(static_cast<unsigned char>(*e)) || *end || errno ||
        mib > (1ull << 30))
      throw RuntimeError(std::string(name) +
                         " must be a whole number of MiB, got '" + e + "'");
    return size_t(mib) << 20;
  }();
  return bytes;
}
} // namespace

Tensor constant(Device device, DType dtype, const Shape &shape,
                const std::vector<double> &values) {
  DeviceScope scope(device);
  Ctx c("constant", {});
  int64_t n = numElements(shape);
  check(int64_t(values.size()) == n, "constant",
        std::to_string(values.size()) + " values for shape " +
            shapeString(shape) + " of " + std::to_string(n) + " elements");
  // Converted on the host (the CPU's rules), then one copy.
  std::vector<uint8_t> host(size_t(n) * dtypeSize(dtype));
  for (int64_t i = 0; i < n; ++i)
    storeScalar(dtype, host.data(), i, {true, values[size_t(i)], 0});
  size_t key = std::hash<std::string_view>()(std::string_view(
                   reinterpret_cast<const char *>(host.data()), host.size())) ^
               (size_t(dtype) * 0x9e3779b97f4a7c15ull) ^ size_t(n);
  ConstantCache &cache =
      perDevice<ConstantCache>(c.device.index, [](auto &) {});
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto range = cache.entries.equal_range(key);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second.dtype == dtype && it->second.shape == shape &&
        it->second.bytes == host)
      return it->second.tensor;
  bool keep = cache.bytes + host.size() <= constantCacheBytes();
  // A copy from the host makes it wait for the device, which a capture
  // cannot hold: say which limit to raise instead of CUDA's error.
  if (!keep && graphCapturing(c.device.index))
    throw RuntimeError(
        "a constant of " + std::to_string(host.size()) +
        " bytes does not fit the device's constant cache (" +
        std::to_string(cache.bytes) + " bytes of " +
        std::to_string(constantCacheBytes() >> 20) +
        " MiB in use; GLIMMER_CUDA_CONSTANT_CACHE_MB), so it is copied from "
        "the host at each use, which a CUDA graph cannot capture");
  Tensor t = c.empty(dtype, shape);
  copy(t.raw(), t.device(), host.data(), Device::cpu(), host.size());
  if (keep) {
    cache.bytes += host.size();
    cache.entries.emplace(key, ConstantCache::Entry{dtype, shape,
                                                    std::move(host), t});
  }
  return t;
}

Tensor iota(Device device, DType dtype, const Shape &shape, int64_t dim) {
  DeviceScope scope(device);
  Ctx c("iota", {});
  requireDim("iota", dim, int64_t(shape.size()));
  Tensor t = c.empty(dtype, shape);
  Around a = around(shape, dim);
  launch(c, t.numel(), iotaKernel, dtype, t.raw(), t.numel(), a.len, a.inner);
  return t;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Tensor neg(const Tensor &x) { return unaryNumeric("neg", x, Neg{}); }
Tensor exp(const Tensor &x) { return unaryFloat("exp", x, Exp{}); }
Tensor log(const Tensor &x) { return unaryFloat("log", x, Log{}); }
Tensor sqrt(const Tensor &x) { return unaryFloat("sqrt", x, Sqrt{}); }
Tensor rsqrt(const Tensor &x) { return unaryFloat("rsqrt", x, Rsqrt{}); }
Tensor tanh(const Tensor &x) { return unaryFloat("tanh", x, Tanh{}); }
Tensor erf(const Tensor &x) { return unaryFloat("erf", x, Erf{}); }
Tensor sigmoid(const Tensor &x) { return unaryFloat("sigmoid", x, Sigmoid{}); }
Tensor silu(const Tensor &x) { return unaryFloat("silu", x, Silu{}); }
Tensor relu(const Tensor &x) { return unaryNumeric("relu", x, Relu{}); }
Tensor sin(const Tensor &x) { return unaryFloat("sin", x, Sin{}); }
Tensor cos(const Tensor &x) { return unaryFloat("cos", x, Cos{}); }
Tensor tan(const Tensor &x) { return unaryFloat("tan", x, Tan{}); }
Tensor asin(const Tensor &x) { return unaryFloat("asin", x, Asin{}); }
Tensor acos(const Tensor &x) { return unaryFloat("acos", x, Acos{}); }
Tensor atan(const Tensor &x) { return unaryFloat("atan", x, Atan{}); }
Tensor sinh(const Tensor &x) { return unaryFloat("sinh", x, Sinh{}); }
Tensor cosh(const Tensor &x) { return unaryFloat("cosh", x, Cosh{}); }
Tensor asinh(const Tensor &x) { return unaryFloat("asinh", x, Asinh{}); }
Tensor acosh(const Tensor &x) { return unaryFloat("acosh", x, Acosh{}); }
Tensor atanh(const Tensor &x) { return unaryFloat("atanh", x, Atanh{}); }
Tensor expm1(const Tensor &x) { return unaryFloat("expm1", x, Expm1{}); }
Tensor log1p(const Tensor &x) { return unaryFloat("log1p", x, Log1p{}); }
Tensor abs(const Tensor &x) { return unaryFloat("abs", x, Abs{}); }
Tensor floor(const Tensor &x) { return unaryFloat("floor", x, Floor{}); }
Tensor ceil(const Tensor &x) { return unaryFloat("ceil", x, Ceil{}); }
Tensor trunc(const Tensor &x) { return unaryFloat("trunc", x, Trunc{}); }
Tensor round(const Tensor &x) { return unaryFloat("round", x, Round{}); }
Tensor gelu(const Tensor &x, bool tanhApproximation) {
  if (tanhApproximation)
    return unaryFloat("gelu", x, GeluTanh{});
  return unaryFloat("gelu", x, Gelu{});
}

Tensor add(const Tensor &a, const Tensor &b) {
  return binaryNumeric("add", a, b, Add{});
}
Tensor sub(const Tensor &a, const Tensor &b) {
  return binaryNumeric("sub", a, b, Sub{});
}
Tensor mul(const Tensor &a, const Tensor &b) {
  return binaryNumeric("mul", a, b, Mul{});
}
Tensor div(const Tensor &a, const Tensor &b) {
  return binaryChecked<Div>("div", a, b, "integer division by zero");
}
Tensor max(const Tensor &a, const Tensor &b) { return pick<true>("max", a, b); }
Tensor min(const Tensor &a, const Tensor &b) {
  return pick<false>("min", a, b);
}
Tensor pow(const Tensor &a, const Tensor &b) {
  return binaryChecked<Pow>(
      "pow", a, b, "integers to negative integer powers are not allowed");
}

Tensor compare(CompareDir dir, const Tensor &a, const Tensor &b) {
  const char *op = "compare";
  Ctx c(op, {&a, &b});
  requireDefined(op, a, "lhs");
  requireLike(op, b, "rhs", a, "lhs");
  check(a.dtype() == DType::Bool || isFloatType(a.dtype()) ||
            isIntType(a.dtype()),
        op,
        "expects operands of type bf16, f32, f64, i32, i64 or bool, got " +
            a.describe());
  check(dir >= CompareDir::EQ && dir <= CompareDir::GE, op,
        "unknown comparison");
  Tensor y = c.empty(DType::Bool, a.shape());
  auto run = [&](auto tag) {
    using T = decltype(tag);
    launch(c, a.numel(), compareKernel<T>, dir, a.data<T>(), b.data<T>(),
           y.data<uint8_t>(), a.numel());
    return 0;
  };
  if (a.dtype() == DType::Bool)
    run(uint8_t{});
  else
    dispatchNumeric(op, a.dtype(), run);
  return y;
}

Tensor select(const Tensor &cond, const Tensor &a, const Tensor &b) {
  const char *op = "select";
  Ctx c(op, {&cond, &a, &b});
  requireDefined(op, cond, "condition");
  requireDefined(op, a, "on_true");
  requireLike(op, b, "on_false", a, "on_true");
  check(cond.dtype() == DType::Bool, op,
        "expects a bool condition, got " + cond.describe());
  requireShape(op, cond, "condition", a.shape());
  Tensor y = c.empty(a.dtype(), a.shape());
  dispatchBytes(op, dtypeSize(a.dtype()), [&](auto tag) {
    using E = decltype(tag);
    launch(c, a.numel(), selectKernel<E>, cond.data<uint8_t>(), a.data<E>(),
           b.data<E>(), y.data<E>(), a.numel());
  });
  return y;
}

Tensor convert(const Tensor &x, DType dtype) {
  const char *op = "convert";
  Ctx c(op, {&x});
  requireDefined(op, x, "input");
  check(dtypeSize(dtype) != 0, op, "unknown result type");
  if (dtype == x.dtype())
    return x.clone();
  Tensor y = c.empty(dtype, x.shape());
  launchConvert(c, x.dtype(), x.raw(), dtype, y.raw(), x.numel());
  return y;
}

std::vector<Tensor> convertList(const std::vector<Tensor> &inputs,
                                DType dtype) {
  std::vector<Tensor> out(inputs.size());
  if (inputs.empty())
    return out;
  // Each input is checked and converted as convert does it (its messages).
  const char *op = "convert";
  for (const Tensor &x : inputs)
    requireDefined(op, x, "input");
  check(dtypeSize(dtype) != 0, op, "unknown result type");
  Ctx c("convert_list", {firstOnGpu(inputs)});
  for (const Tensor &x : inputs)
    check(x.device() == c.device, op,
          "operands live on different devices (" + c.device.str() + " and " +
              x.device().str() + ")");
  // Inputs of one common type share launches; the others (and copies to
  // the same type) go one by one.
  std::vector<bool> done(inputs.size(), false);
  for (size_t first = 0; first < inputs.size(); ++first) {
    if (done[first])
      continue;
    DType from = inputs[first].dtype();
    if (from == dtype || !isCommonType(from) || !isCommonType(dtype)) {
      out[first] = from == dtype ? inputs[first].clone()
                                 : c.empty(dtype, inputs[first].shape());
      if (from != dtype)
        launchConvert(c, from, inputs[first].raw(), dtype, out[first].raw(),
                      inputs[first].numel());
      done[first] = true;
      continue;
    }
    std::vector<size_t> group;
    for (size_t k = first; k < inputs.size(); ++k)
      if (!done[k] && inputs[k].dtype() == from) {
        group.push_back(k);
        done[k] = true;
      }
    withCommonType(from, [&](auto f) {
      withCommonType(dtype, [&](auto t) {
        constexpr DType From = decltype(f)::value, To = decltype(t)::value;
        for (size_t at = 0; at < group.size(); at += kConvertBatch) {
          ConvertBatch batch{};
          batch.count = int(std::min<size_t>(kConvertBatch, group.size() - at));
          for (int j = 0; j < batch.count; ++j) {
            size_t k = group[at + size_t(j)];
            out[k] = c.empty(dtype, inputs[k].shape());
            batch.in[j] = inputs[k].raw();
            batch.out[j] = out[k].raw();
            batch.numel[j] = inputs[k].numel();
            batch.firstChunk[j + 1] =
                batch.firstChunk[j] +
                (inputs[k].numel() + kConvertChunk - 1) / kConvertChunk;
            if (packAligned({{batch.in[j], bytesOf(From)},
                             {batch.out[j], bytesOf(To)}}))
              batch.vec |= 1ull << j;
          }
          int64_t chunks = batch.firstChunk[batch.count];
          if (chunks == 0)
            continue;
          int64_t blocks = std::min<int64_t>(
              chunks, int64_t(multiprocessors(c.device.index)) * 8);
          convertListKernel<From, To>
              <<<unsigned(blocks), kThreads, 0, c.stream>>>(batch);
          GLIMMER_CUDA_LAUNCHED(c.op);
        }
      });
    });
  }
  return out;
}

} // namespace cuda
} // namespace glimmer_rt
