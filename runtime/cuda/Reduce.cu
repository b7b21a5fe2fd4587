//===- Reduce.cu - CUDA reductions, scans and softmax ---------------------===//
//
// reduce, cumsum, softmax and softmax_grad on a GPU, with the CPU kernels'
// semantics. Floating-point values accumulate in the compute type (f32 for
// bf16, the tensor's own type otherwise); integer sums wrap around in the
// tensor's type; max/min propagate NaN.
//
// Two layouts, chosen by whether the reduced (or scanned) elements are
// contiguous:
//  - rows: the innermost input dimension is reduced. A group of G threads
//    (a warp, or a whole block for long rows) owns one output, strides
//    over its elements with coalesced loads and combines with warp
//    shuffles in a fixed tree.
//  - columns: the innermost dimension is kept. One thread owns one output
//    and loops over the reduced elements; neighbouring threads read
//    neighbouring addresses.
// Reductions with too few outputs to fill the GPU are split: partial
// results over fixed chunks go to a scratch buffer that a second pass
// reduces. Every output is thus combined in an order fixed by the shapes
// alone: results are deterministic from run to run.
//
//===----------------------------------------------------------------------===//

#include "../common/Messages.h"
#include "ElementwiseUtil.cuh"

#include <algorithm>
#include <atomic>

namespace glimmer_rt {
namespace cuda {

using namespace util;

int util::multiprocessors(int device) {
  constexpr int kCached = 64;
  static std::atomic<int> cache[kCached];
  if (device >= 0 && device < kCached) {
    if (int n = cache[device].load(std::memory_order_relaxed))
      return n;
  }
  int n = 0;
  GLIMMER_CUDA_CHECK(
      cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  if (device >= 0 && device < kCached)
    cache[device].store(n, std::memory_order_relaxed);
  return n;
}

namespace {

__device__ __forceinline__ float mExp(float v) { return ::expf(v); }
__device__ __forceinline__ double mExp(double v) { return ::exp(v); }

/// Threads that keep every multiprocessor of `device` busy: below this
/// many independent outputs, long reductions are split.
int64_t residentThreads(int device) {
  return int64_t(multiprocessors(device)) * 2048;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <typename A>
DType dtypeOf() {
  if constexpr (std::is_same_v<A, double>)
    return DType::F64;
  else if constexpr (std::is_same_v<A, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<A, int64_t>)
    return DType::I64;
  else
    return DType::I32;
}

//===----------------------------------------------------------------------===//
// Group primitives (G = 32: one warp; G = kThreads: the whole block)
//===----------------------------------------------------------------------===//

template <Reduction K, typename A>
__device__ __forceinline__ A reduceInit() {
  if constexpr (K == Reduction::Sum)
    return A(0);
  else if constexpr (K == Reduction::Max)
    return std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity()
                                       : std::numeric_limits<A>::lowest();
  else
    return std::is_floating_point_v<A> ? std::numeric_limits<A>::infinity()
                                       : std::numeric_limits<A>::max();
}

/// The CPU's update `acc = op(acc, v)`; NaN is sticky for max/min.
template <Reduction K>
struct Combine {
  template <typename A>
  __device__ __forceinline__ A operator()(A acc, A v) const {
    if constexpr (K == Reduction::Sum)
      return wrapAdd(acc, v);
    else if constexpr (K == Reduction::Max)
      return (v > acc || isNan(v)) ? v : acc;
    else
      return (v < acc || isNan(v)) ? v : acc;
  }
};

/// std::max(m, v) as softmax uses it: NaN never wins.
struct MaxIgnoringNan {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return a < b ? b : a;
  }
};

/// Combines `v` over the G threads of a group; every thread gets the
/// result (a butterfly of a commutative op gives all lanes the same bits).
/// For G > 32 all threads of the block must call it.
template <int G, typename A, typename F>
__device__ __forceinline__ A groupAllReduce(A v, F f, A *smem) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  if constexpr (G == 32) {
    return v;
  } else {
    static_assert(G == kThreads, "a group is a warp or the whole block");
    int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0)
      smem[warp] = v;
    __syncthreads();
    A r = smem[0];
#pragma unroll
    for (int w = 1; w < G / 32; ++w)
      r = f(r, smem[w]);
    __syncthreads(); // smem is reused by the next call
    return r;
  }
}

/// Inclusive prefix sum (wrapping for integers) over the G threads of a
/// group in thread order; `total` gets the group's sum.
template <int G, typename A>
__device__ __forceinline__ A groupInclusiveScan(A v, A *smem, A &total) {
  int lane = threadIdx.x % 32;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    A n = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o)
      v = wrapAdd(n, v);
  }
  if constexpr (G == 32) {
    total = __shfl_sync(0xffffffffu, v, 31);
    return v;
  } else {
    static_assert(G == kThreads, "a group is a warp or the whole block");
    int warp = threadIdx.x / 32;
    if (lane == 31)
      smem[warp] = v;
    __syncthreads();
    A prefix = 0;
    total = 0;
#pragma unroll
    for (int w = 0; w < G / 32; ++w) {
      if (w < warp)
        prefix = wrapAdd(prefix, smem[w]);
      total = wrapAdd(total, smem[w]);
    }
    __syncthreads();
    return wrapAdd(prefix, v);
  }
}

/// A grid-stride loop over units of work (rows) shared by groups of G
/// threads (G divides kThreads): this thread's group takes units first(),
/// first() + step(), ...; lane() is the thread's place in its group.
template <int G>
struct GroupLoop {
  static constexpr int kPerBlock = kThreads / G;
  __device__ int lane() const { return threadIdx.x % G; }
  __device__ int64_t first() const {
    return int64_t(blockIdx.x) * kPerBlock + threadIdx.x / G;
  }
  __device__ int64_t step() const { return int64_t(gridDim.x) * kPerBlock; }
};

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

/// Rows: unit u = o * splits + s reduces elements [s * chunk, (s + 1) *
/// chunk) of output o's R elements into y[u]. `kept` maps o, `red` maps r
/// to input offsets.
template <Reduction K, typename In, typename Out, int G>
__global__ void reduceRowsKernel(const In *x, Out *y, int64_t units,
                                 int64_t splits, int64_t chunk, int64_t R,
                                 DimMap<1> kept, DimMap<1> red) {
  using A = acc_t<In>;
  __shared__ A smem[kThreads / 32];
  GroupLoop<G> loop;
  int lane = loop.lane();
  for (int64_t u = loop.first(); u < units; u += loop.step()) {
    int64_t o = u / splits, s = u % splits;
    const In *base = x + offsetOf<int64_t>(kept, o);
    int64_t begin = s * chunk, end = begin + chunk < R ? begin + chunk : R;
    A acc = reduceInit<K, A>();
    if (red.rank <= 1) {
      int64_t step = red.rank ? red.stride[0][0] : 0;
      for (int64_t r = begin + lane; r < end; r += G)
        acc = Combine<K>()(acc, A(ld(base + r * step)));
    } else {
      for (int64_t r = begin + lane; r < end; r += G)
        acc = Combine<K>()(acc, A(ld(base + offsetOf<int64_t>(red, r))));
    }
    acc = groupAllReduce<G>(acc, Combine<K>(), smem);
    if (lane == 0)
      st(y + u, acc);
  }
}

/// Columns: thread t = s * O + o (neighbours own neighbouring outputs)
/// reduces chunk s of output o into y[o * splits + s].
template <Reduction K, typename T, typename Out>
__global__ void reduceColumnsKernel(const T *x, Out *y, int64_t O,
                                    int64_t splits, int64_t chunk, int64_t R,
                                    DimMap<1> kept, DimMap<1> red) {
  using A = acc_t<T>;
  for (int64_t t = gridStart(); t < O * splits; t += gridStride()) {
    int64_t o = t % O, s = t / O;
    const T *base = x + offsetOf<int64_t>(kept, o);
    int64_t begin = s * chunk, end = begin + chunk < R ? begin + chunk : R;
    A acc = reduceInit<K, A>();
    if (red.rank <= 1) {
      int64_t step = red.rank ? red.stride[0][0] : 0;
      for (int64_t r = begin; r < end; ++r)
        acc = Combine<K>()(acc, A(ld(base + r * step)));
    } else {
      for (int64_t r = begin; r < end; ++r)
        acc = Combine<K>()(acc, A(ld(base + offsetOf<int64_t>(red, r))));
    }
    st(y + o * splits + s, acc);
  }
}

/// Launches the rows kernel with warp groups for short rows and block
/// groups for long ones.
template <Reduction K, typename In, typename Out>
void launchRows(const Ctx &c, const In *x, Out *y, int64_t units,
                int64_t splits, int64_t chunk, int64_t R, const DimMap<1> &kept,
                const DimMap<1> &red) {
  if (chunk >= 2048)
    launch(c, units * kThreads, reduceRowsKernel<K, In, Out, kThreads>, x, y,
           units, splits, chunk, R, kept, red);
  else
    launch(c, units * 32, reduceRowsKernel<K, In, Out, 32>, x, y, units, splits,
           chunk, R, kept, red);
}

/// Finishes a split reduction: partial [O, splits] -> y [O].
template <Reduction K, typename T>
void reducePartials(const Ctx &c, const acc_t<T> *partial, T *y, int64_t O,
                    int64_t splits) {
  DimMap<1> kept = makeDimMap<1>(c.op, {O}, {std::vector<int64_t>{splits}});
  DimMap<1> red = makeDimMap<1>(c.op, {splits}, {std::vector<int64_t>{1}});
  launchRows<K>(c, partial, y, O, 1, splits, splits, kept, red);
}

template <Reduction K, typename T>
void reduceImpl(const Ctx &c, const Tensor &x, Tensor &y, int64_t O, int64_t R,
                const DimMap<1> &kept, const DimMap<1> &red) {
  using A = acc_t<T>;
  const T *in = x.data<T>();
  T *out = y.data<T>();
  int64_t target = residentThreads(c.device.index);
  bool rows = red.rank > 0 && red.stride[0][0] == 1;
  // Split when the outputs alone leave the GPU idle and each chunk still
  // has enough elements to amortize its partial result.
  int64_t group = rows ? (R >= 2048 ? kThreads : 32) : 1;
  int64_t minChunk = group * 64;
  int64_t splits = 1;
  if (O * group < target && R > minChunk)
    splits = std::min(ceilDiv(target, O * group), ceilDiv(R, minChunk));
  int64_t chunk = ceilDiv(R, splits);
  splits = ceilDiv(R, chunk);
  if (splits == 1) {
    if (rows)
      launchRows<K>(c, in, out, O, 1, R, R, kept, red);
    else
      launch(c, O, reduceColumnsKernel<K, T, T>, in, out, O, int64_t(1), R, R,
             kept, red);
    return;
  }
  Tensor partial = c.empty(dtypeOf<A>(), {O, splits});
  if (rows)
    launchRows<K>(c, in, partial.data<A>(), O * splits, splits, chunk, R, kept,
                  red);
  else
    launch(c, O * splits, reduceColumnsKernel<K, T, A>, in, partial.data<A>(),
           O, splits, chunk, R, kept, red);
  reducePartials<K, T>(c, partial.data<A>(), out, O, splits);
}

//===----------------------------------------------------------------------===//
// sum_squares
//===----------------------------------------------------------------------===//

/// Up to kSumSqBatch inputs per launch, passed by value as kernel
/// parameters (about 1.5 KB): no table to copy to the device.
constexpr int kSumSqBatch = 64;
/// Elements per block of the first pass. The chunking depends on each
/// input's size alone, so the result does not depend on how inputs are
/// batched into launches.
constexpr int64_t kSumSqChunk = int64_t(1) << 16;

template <typename T> struct SumSqBatch {
  const T *data[kSumSqBatch];
  int64_t numel[kSumSqBatch];
  /// Input k's chunks are blocks [firstChunk[k], firstChunk[k + 1]).
  int64_t firstChunk[kSumSqBatch + 1];
  int count;
};

/// Block b: one chunk of one input, its squares summed into partial[b].
template <typename T>
__global__ void sumSquaresChunksKernel(SumSqBatch<T> batch,
                                       acc_t<T> *partial) {
  using A = acc_t<T>;
  __shared__ A smem[kThreads / 32];
  int64_t b = blockIdx.x;
  int lo = chunkOwner(batch.firstChunk, batch.count, b);
  const T *x = batch.data[lo];
  int64_t begin = (b - batch.firstChunk[lo]) * kSumSqChunk;
  int64_t end = begin + kSumSqChunk < batch.numel[lo] ? begin + kSumSqChunk
                                                       : batch.numel[lo];
  A acc = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    A v = ld(x + i);
    acc = acc + v * v;
  }
  acc = groupAllReduce<kThreads>(acc, Combine<Reduction::Sum>(), smem);
  if (threadIdx.x == 0)
    partial[b] = acc;
}

/// One block: warp w sums the chunk partials of inputs w, w + 8, ... into
/// sums[k] (lane-strided, then a fixed shuffle tree).
template <typename T>
__global__ void sumSquaresInputsKernel(SumSqBatch<T> batch,
                                       const acc_t<T> *partial,
                                       acc_t<T> *sums) {
  using A = acc_t<T>;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int k = warp; k < batch.count; k += kThreads / 32) {
    A acc = 0;
    for (int64_t c = batch.firstChunk[k] + lane; c < batch.firstChunk[k + 1];
         c += 32)
      acc = acc + partial[c];
    acc = groupAllReduce<32>(acc, Combine<Reduction::Sum>(), (A *)nullptr);
    if (lane == 0)
      sums[k] = acc;
  }
}

/// One thread: the inputs' sums added in order, rounded to T once.
template <typename T>
__global__ void sumSquaresTotalKernel(const acc_t<T> *sums, int64_t count,
                                      T *out) {
  acc_t<T> total = sums[0];
  for (int64_t k = 1; k < count; ++k)
    total = total + sums[k];
  st(out, total);
}

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

/// Rows of `len` contiguous elements: a group scans G elements at a time
/// and carries the running total.
template <typename T, int G>
__global__ void cumsumRowsKernel(const T *x, T *y, int64_t rows, int64_t len) {
  using A = acc_t<T>;
  __shared__ A smem[kThreads / 32];
  GroupLoop<G> loop;
  int lane = loop.lane();
  for (int64_t r = loop.first(); r < rows; r += loop.step()) {
    const T *in = x + r * len;
    T *out = y + r * len;
    A carry = 0;
    for (int64_t base = 0; base < len; base += G) {
      int64_t l = base + lane;
      A v = l < len ? A(ld(in + l)) : A(0);
      A total;
      v = groupInclusiveScan<G>(v, smem, total);
      if (l < len)
        st(out + l, wrapAdd(carry, v));
      carry = wrapAdd(carry, total);
    }
  }
}

/// [outer, len, inner] with inner > 1: one thread per (outer, inner)
/// column, sequential along len (the CPU's order).
template <typename T>
__global__ void cumsumColumnsKernel(const T *x, T *y, int64_t outer,
                                    int64_t len, int64_t inner) {
  using A = acc_t<T>;
  for (int64_t t = gridStart(); t < outer * inner; t += gridStride()) {
    int64_t base = t / inner * len * inner + t % inner;
    A acc = 0;
    for (int64_t l = 0; l < len; ++l) {
      acc = wrapAdd(acc, A(ld(x + base + l * inner)));
      st(y + base + l * inner, acc);
    }
  }
}

//===----------------------------------------------------------------------===//
// softmax and softmax_grad
//===----------------------------------------------------------------------===//

struct Sum {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return a + b;
  }
};

/// y = exp(x - max) / sum(exp(x - max)) over rows of `len` contiguous
/// elements.
template <typename T, int G>
__global__ void softmaxRowsKernel(const T *x, T *y, int64_t rows, int64_t len) {
  using A = acc_t<T>;
  __shared__ A smem[kThreads / 32];
  GroupLoop<G> loop;
  int lane = loop.lane();
  for (int64_t r = loop.first(); r < rows; r += loop.step()) {
    const T *in = x + r * len;
    T *out = y + r * len;
    A m = -std::numeric_limits<A>::infinity();
    for (int64_t l = lane; l < len; l += G)
      m = MaxIgnoringNan()(m, ld(in + l));
    m = groupAllReduce<G>(m, MaxIgnoringNan(), smem);
    A sum = 0;
    for (int64_t l = lane; l < len; l += G)
      sum += mExp(ld(in + l) - m);
    sum = groupAllReduce<G>(sum, Sum(), smem);
    for (int64_t l = lane; l < len; l += G)
      st(out + l, mExp(ld(in + l) - m) / sum);
  }
}

/// [outer, len, inner] with inner > 1: one thread per column.
template <typename T>
__global__ void softmaxColumnsKernel(const T *x, T *y, int64_t outer,
                                     int64_t len, int64_t inner) {
  using A = acc_t<T>;
  for (int64_t t = gridStart(); t < outer * inner; t += gridStride()) {
    int64_t base = t / inner * len * inner + t % inner;
    A m = -std::numeric_limits<A>::infinity();
    for (int64_t l = 0; l < len; ++l)
      m = MaxIgnoringNan()(m, ld(x + base + l * inner));
    A sum = 0;
    for (int64_t l = 0; l < len; ++l)
      sum += mExp(ld(x + base + l * inner) - m);
    for (int64_t l = 0; l < len; ++l)
      st(y + base + l * inner, mExp(ld(x + base + l * inner) - m) / sum);
  }
}

/// dx = y * (grad - sum(grad * y)) over contiguous rows.
template <typename T, int G>
__global__ void softmaxGradRowsKernel(const T *g, const T *s, T *dx,
                                      int64_t rows, int64_t len) {
  using A = acc_t<T>;
  __shared__ A smem[kThreads / 32];
  GroupLoop<G> loop;
  int lane = loop.lane();
  for (int64_t r = loop.first(); r < rows; r += loop.step()) {
    int64_t base = r * len;
    A dot = 0;
    for (int64_t l = lane; l < len; l += G)
      dot += ld(g + base + l) * ld(s + base + l);
    dot = groupAllReduce<G>(dot, Sum(), smem);
    for (int64_t l = lane; l < len; l += G)
      st(dx + base + l, ld(s + base + l) * (ld(g + base + l) - dot));
  }
}

template <typename T>
__global__ void softmaxGradColumnsKernel(const T *g, const T *s, T *dx,
                                         int64_t outer, int64_t len,
                                         int64_t inner) {
  using A = acc_t<T>;
  for (int64_t t = gridStart(); t < outer * inner; t += gridStride()) {
    int64_t base = t / inner * len * inner + t % inner;
    A dot = 0;
    for (int64_t l = 0; l < len; ++l)
      dot += ld(g + base + l * inner) * ld(s + base + l * inner);
    for (int64_t l = 0; l < len; ++l) {
      int64_t k = base + l * inner;
      st(dx + k, ld(s + k) * (ld(g + k) - dot));
    }
  }
}

/// Rows longer than this get a whole block each, shorter ones a warp.
constexpr int64_t kBlockRow = 1024;

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

Tensor reduce(Reduction kind, const Tensor &x, const std::vector<int64_t> &dims,
              bool keepDims) {
  const char *op = "reduce";
  Ctx c(op, {&x});
  requireDefined(op, x, "input");
  check(!dims.empty(), op, "expects at least one dimension to reduce");
  std::vector<bool> reduced(size_t(x.rank()), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    requireDim(op, dims[i], x.rank());
    check(i == 0 || dims[i] > dims[i - 1], op,
          "expects dims sorted and unique, got " + shapeString(dims));
    reduced[size_t(dims[i])] = true;
  }
  check(kind == Reduction::Sum || kind == Reduction::Max ||
            kind == Reduction::Min,
        op, "unknown reduction");
  Shape outShape;
  int64_t R = 1;
  // Kept and reduced dimensions (outermost first) with their input strides.
  std::vector<int64_t> inStrides = stridesOf(x.shape());
  std::vector<int64_t> keptSizes, keptStrides, redSizes, redStrides;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (reduced[size_t(d)]) {
      R *= x.dim(d);
      redSizes.push_back(x.dim(d));
      redStrides.push_back(inStrides[size_t(d)]);
      if (keepDims)
        outShape.push_back(1);
    } else {
      keptSizes.push_back(x.dim(d));
      keptStrides.push_back(inStrides[size_t(d)]);
      outShape.push_back(x.dim(d));
    }
  }
  check(kind == Reduction::Sum || R > 0 || numElements(outShape) == 0, op,
        "max/min over an empty dimension of " + x.describe());
  requireNumeric(op, x, "input");
  Tensor y = c.empty(x.dtype(), outShape);
  int64_t O = y.numel();
  if (O == 0)
    return y;
  if (R == 0) { // sums of nothing
    fillValue(c, y, 0.0);
    return y;
  }
  DimMap<1> kept = makeDimMap<1>(op, keptSizes, {keptStrides});
  DimMap<1> red = makeDimMap<1>(op, redSizes, {redStrides});
  dispatchNumeric(op, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    switch (kind) {
    case Reduction::Sum:
      return reduceImpl<Reduction::Sum, T>(c, x, y, O, R, kept, red);
    case Reduction::Max:
      return reduceImpl<Reduction::Max, T>(c, x, y, O, R, kept, red);
    case Reduction::Min:
      return reduceImpl<Reduction::Min, T>(c, x, y, O, R, kept, red);
    }
  });
  return y;
}

/// Queues the first two passes of sum_squares over inputs [first, last),
/// all of element type T, whose chunks start at partial + chunkBase and
/// whose sums go to sums + first; returns the number of chunks.
template <typename T>
int64_t sumSquaresBatches(const Ctx &c, const std::vector<Tensor> &inputs,
                          int64_t first, int64_t last, acc_t<T> *partial,
                          acc_t<T> *sums) {
  int64_t chunkBase = 0;
  for (; first < last; first += kSumSqBatch) {
    SumSqBatch<T> batch{};
    batch.count = int(std::min<int64_t>(kSumSqBatch, last - first));
    for (int k = 0; k < batch.count; ++k) {
      const Tensor &t = inputs[size_t(first + k)];
      batch.data[k] = t.data<T>();
      batch.numel[k] = t.numel();
      batch.firstChunk[k + 1] =
          batch.firstChunk[k] +
          std::max<int64_t>(1, ceilDiv(t.numel(), kSumSqChunk));
    }
    int64_t blocks = batch.firstChunk[batch.count];
    sumSquaresChunksKernel<T><<<unsigned(blocks), kThreads, 0, c.stream>>>(
        batch, partial + chunkBase);
    GLIMMER_CUDA_LAUNCHED(c.op);
    sumSquaresInputsKernel<T><<<1, kThreads, 0, c.stream>>>(
        batch, partial + chunkBase, sums + first);
    GLIMMER_CUDA_LAUNCHED(c.op);
    chunkBase += blocks;
  }
  return chunkBase;
}

Tensor sumSquares(const std::vector<Tensor> &inputs, DType result) {
  const char *op = "sum_squares";
  std::string bad = messages::badSumSquaresInputs(inputs, result);
  check(bad.empty(), op, bad);
  Ctx c(op, {firstOnGpu(inputs)});
  for (size_t k = 0; k < inputs.size(); ++k)
    check(inputs[k].device() == c.device, op,
          "operands live on different devices (" + c.device.str() + " and " +
              inputs[k].device().str() + ")");
  return dispatchFloat(op, result, [&](auto tag) {
    using R = decltype(tag);
    using A = acc_t<R>;
    int64_t count = int64_t(inputs.size()), chunks = 0;
    for (const Tensor &t : inputs)
      chunks += std::max<int64_t>(1, ceilDiv(t.numel(), kSumSqChunk));
    Tensor partial = c.empty(dtypeOf<A>(), {chunks});
    Tensor sums = c.empty(dtypeOf<A>(), {count});
    // Runs of inputs of one type share launches; a bf16 input under an f32
    // result is widened as it is loaded (acc_t<bf16> is float), so each
    // input's sum is that of its f32 values.
    int64_t chunkBase = 0;
    for (int64_t first = 0; first < count;) {
      DType t = inputs[size_t(first)].dtype();
      int64_t last = first;
      while (last < count && inputs[size_t(last)].dtype() == t)
        ++last;
      if (t == result)
        chunkBase += sumSquaresBatches<R>(c, inputs, first, last,
                                          partial.data<A>() + chunkBase,
                                          sums.data<A>());
      else if constexpr (std::is_same_v<R, float>)
        chunkBase += sumSquaresBatches<bf16>(c, inputs, first, last,
                                             partial.data<A>() + chunkBase,
                                             sums.data<A>());
      first = last;
    }
    Tensor y = c.empty(result, {});
    sumSquaresTotalKernel<R><<<1, 1, 0, c.stream>>>(sums.data<A>(), count,
                                                    y.data<R>());
    GLIMMER_CUDA_LAUNCHED(op);
    return y;
  });
}

Tensor cumsum(const Tensor &x, int64_t dim) {
  const char *op = "cumsum";
  Ctx c(op, {&x});
  requireDefined(op, x, "input");
  requireDim(op, dim, x.rank());
  requireNumeric(op, x, "input");
  Around a = around(x.shape(), dim);
  return dispatchNumeric(op, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = c.empty(x.dtype(), x.shape());
    if (y.numel() == 0)
      return y;
    int64_t rows = a.outer;
    if (a.inner != 1)
      launch(c, a.outer * a.inner, cumsumColumnsKernel<T>, x.data<T>(),
             y.data<T>(), a.outer, a.len, a.inner);
    else if (a.len > kBlockRow)
      launch(c, rows * kThreads, cumsumRowsKernel<T, kThreads>, x.data<T>(),
             y.data<T>(), rows, a.len);
    else
      launch(c, rows * 32, cumsumRowsKernel<T, 32>, x.data<T>(), y.data<T>(),
             rows, a.len);
    return y;
  });
}

Tensor softmax(const Tensor &x, int64_t dim) {
  const char *op = "softmax";
  Ctx c(op, {&x});
  requireFloat(op, x, "input");
  requireDim(op, dim, x.rank());
  Around a = around(x.shape(), dim);
  return dispatchFloat(op, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = c.empty(x.dtype(), x.shape());
    if (y.numel() == 0)
      return y;
    if (a.inner != 1)
      launch(c, a.outer * a.inner, softmaxColumnsKernel<T>, x.data<T>(),
             y.data<T>(), a.outer, a.len, a.inner);
    else if (a.len > kBlockRow)
      launch(c, a.outer * kThreads, softmaxRowsKernel<T, kThreads>, x.data<T>(),
             y.data<T>(), a.outer, a.len);
    else
      launch(c, a.outer * 32, softmaxRowsKernel<T, 32>, x.data<T>(),
             y.data<T>(), a.outer, a.len);
    return y;
  });
}

Tensor softmaxGrad(const Tensor &grad, const Tensor &y, int64_t dim) {
  const char *op = "softmax_grad";
  Ctx c(op, {&grad, &y});
  requireFloat(op, y, "output value");
  requireLike(op, grad, "grad", y, "output value");
  requireDim(op, dim, y.rank());
  Around a = around(y.shape(), dim);
  return dispatchFloat(op, y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor dx = c.empty(y.dtype(), y.shape());
    if (dx.numel() == 0)
      return dx;
    const T *g = grad.data<T>(), *s = y.data<T>();
    if (a.inner != 1)
      launch(c, a.outer * a.inner, softmaxGradColumnsKernel<T>, g, s,
             dx.data<T>(), a.outer, a.len, a.inner);
    else if (a.len > kBlockRow)
      launch(c, a.outer * kThreads, softmaxGradRowsKernel<T, kThreads>, g, s,
             dx.data<T>(), a.outer, a.len);
    else
      launch(c, a.outer * 32, softmaxGradRowsKernel<T, 32>, g, s, dx.data<T>(),
             a.outer, a.len);
    return dx;
  });
}

} // namespace cuda
} // namespace glimmer_rt
