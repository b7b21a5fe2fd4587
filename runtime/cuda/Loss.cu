//===- Loss.cu - Cross-entropy on the GPU ---------------------------------===//
//
// Summed cross-entropy over positions whose label is not ignore_index, and
// its gradient. Labels are validated first by a small kernel that records
// the first bad position in a device word; the host reads it back (one
// synchronization) and throws the CPU kernel's message, so a bad label never
// reaches the loss kernels and the error is raised before any other check
// that the CPU makes after the labels.
//
// Each row's log-sum-exp is a single pass (a running max and a rescaled sum
// per thread, merged by a fixed shuffle tree). The loss sum is
// deterministic: per-row losses go to a buffer that one block adds up in a
// fixed order, in double, and rounds once to the requested sum type.
//
//===----------------------------------------------------------------------===//

#include "../common/Messages.h"
#include "Checks.cuh"
#include "Common.cuh"
#include "ElementwiseUtil.cuh"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>

namespace glimmer_rt {
namespace cuda {
namespace {

/// Host-side checks of logits [..., V] float and labels [...] integer;
/// returns (rows, V). The label values are checked on the device.
std::pair<int64_t, int64_t> checkShapes(const char *op, const Tensor &logits,
                                        const Tensor &labels) {
  requireFloat(op, logits, "logits");
  check(logits.rank() >= 1, op, "expects logits of rank >= 1");
  requireInt(op, labels, "labels");
  Shape expected(logits.shape().begin(), logits.shape().end() - 1);
  requireShape(op, labels, "labels", expected);
  return {labels.numel(), logits.dim(-1)};
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Records the smallest position whose label is neither ignoreIndex nor in
/// [0, V) (the CPU reports the first one).
template <typename L>
__global__ void findBadLabel(unsigned long long *__restrict__ bad,
                             const L *__restrict__ labels, int64_t n, int64_t V,
                             int64_t ignoreIndex) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t label = labels[i];
    if (label != ignoreIndex && (label < 0 || label >= V))
      atomicMin(bad, (unsigned long long)i);
  }
}

template <typename A>
__device__ __forceinline__ A lowestOf();
template <>
__device__ __forceinline__ float lowestOf<float>() {
  return -FLT_MAX;
}
template <>
__device__ __forceinline__ double lowestOf<double>() {
  return -DBL_MAX;
}

__device__ __forceinline__ float expOf(float v) { return expf(v); }
__device__ __forceinline__ double expOf(double v) { return ::exp(v); }
__device__ __forceinline__ float logOf(float v) { return logf(v); }
__device__ __forceinline__ double logOf(double v) { return ::log(v); }

/// Merges running (max, sum of exp(x - max)) pairs.
template <typename A>
__device__ __forceinline__ void mergeLse(A &m, A &s, A m2, A s2) {
  A mm = m < m2 ? m2 : m;
  s = s * expOf(m - mm) + s2 * expOf(m2 - mm);
  m = mm;
}

constexpr int kRowWarps = kThreads / 32;

/// log(sum(exp(row))) over the threads of a row (a warp, or the whole block
/// with Block); the max starts at the lowest finite value, as on the CPU.
template <typename T, bool Block>
__device__ acc_t<T> rowLogSumExp(const T *__restrict__ row, int64_t V,
                                 acc_t<T> *scratchM, acc_t<T> *scratchS) {
  using A = acc_t<T>;
  const int width = Block ? kThreads : 32;
  const int lane = Block ? int(threadIdx.x) : int(threadIdx.x & 31);
  A m = lowestOf<A>(), s = 0;
  for (int64_t c = lane; c < V; c += width) {
    A x = ld(row + c);
    if (m < x) {
      s = s * expOf(m - x) + A(1);
      m = x;
    } else {
      s += expOf(x - m);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    A m2 = __shfl_xor_sync(0xffffffffu, m, o);
    A s2 = __shfl_xor_sync(0xffffffffu, s, o);
    mergeLse(m, s, m2, s2);
  }
  if (Block) {
    __syncthreads(); // the previous row's readers are done with scratch
    if ((threadIdx.x & 31) == 0) {
      scratchM[threadIdx.x >> 5] = m;
      scratchS[threadIdx.x >> 5] = s;
    }
    __syncthreads();
    m = scratchM[0];
    s = scratchS[0];
    for (int w = 1; w < kRowWarps; ++w)
      mergeLse(m, s, scratchM[w], scratchS[w]);
  }
  return m + logOf(s);
}

template <bool Block>
__device__ __forceinline__ int64_t firstRow() {
  return Block ? int64_t(blockIdx.x)
               : int64_t(blockIdx.x) * kRowWarps + (threadIdx.x >> 5);
}
template <bool Block>
__device__ __forceinline__ int64_t rowStep() {
  return Block ? int64_t(gridDim.x) : int64_t(gridDim.x) * kRowWarps;
}

/// loss[r] = logsumexp(row) - row[label] (0 for ignored rows). Labels are
/// valid here.
template <typename T, typename L, bool Block>
__global__ void __launch_bounds__(kThreads)
    rowLosses(acc_t<T> *__restrict__ loss, const T *__restrict__ logits,
              const L *__restrict__ labels, int64_t rows, int64_t V,
              int64_t ignoreIndex) {
  using A = acc_t<T>;
  __shared__ A scratchM[kRowWarps], scratchS[kRowWarps];
  for (int64_t r = firstRow<Block>(); r < rows; r += rowStep<Block>()) {
    int64_t label = labels[r];
    if (label == ignoreIndex) { // uniform over the row's threads
      if ((threadIdx.x & (Block ? kThreads - 1 : 31)) == 0)
        loss[r] = 0;
      continue;
    }
    const T *row = logits + r * V;
    A lse = rowLogSumExp<T, Block>(row, V, scratchM, scratchS);
    if ((threadIdx.x & (Block ? kThreads - 1 : 31)) == 0)
      loss[r] = lse - ld(row + label);
  }
}

constexpr int kSumThreads = 1024;

/// sum = the row losses added in a fixed order (in double), count = rows
/// whose label is not ignoreIndex. One block.
template <typename A, typename S, typename L>
__global__ void __launch_bounds__(kSumThreads)
    sumLosses(S *__restrict__ sum, int64_t *__restrict__ count,
              const A *__restrict__ loss, const L *__restrict__ labels,
              int64_t rows, int64_t ignoreIndex) {
  __shared__ double partial[kSumThreads / 32];
  __shared__ long long counts[kSumThreads / 32];
  double s = 0;
  long long n = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kSumThreads) {
    s += double(loss[r]);
    n += int64_t(labels[r]) != ignoreIndex ? 1 : 0;
  }
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    n += __shfl_xor_sync(0xffffffffu, n, o);
  }
  if ((threadIdx.x & 31) == 0) {
    partial[threadIdx.x >> 5] = s;
    counts[threadIdx.x >> 5] = n;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    long long totalCount = 0;
    for (int w = 0; w < kSumThreads / 32; ++w) {
      total += partial[w];
      totalCount += counts[w];
    }
    st(sum, acc_t<S>(total));
    *count = totalCount;
  }
}

/// dlogits = g * (softmax(row) - onehot(label)); zero rows where the label
/// is ignored. `g` is the scalar grad (read from the device when gPtr is set,
/// else gHost).
template <typename T, typename L, typename G, bool Block>
__global__ void __launch_bounds__(kThreads)
    crossEntropyGradRows(T *__restrict__ out, const T *__restrict__ logits,
                         const L *__restrict__ labels,
                         const G *__restrict__ gPtr, double gHost, int64_t rows,
                         int64_t V, int64_t ignoreIndex) {
  using A = acc_t<T>;
  __shared__ A scratchM[kRowWarps], scratchS[kRowWarps];
  const int width = Block ? kThreads : 32;
  const int lane = Block ? int(threadIdx.x) : int(threadIdx.x & 31);
  // As on the CPU: the grad as a double, rounded to the compute type.
  const A gs = A(gPtr ? double(ld(gPtr)) : gHost);
  for (int64_t r = firstRow<Block>(); r < rows; r += rowStep<Block>()) {
    int64_t label = labels[r];
    const T *row = logits + r * V;
    T *o = out + r * V;
    if (label == ignoreIndex) {
      for (int64_t c = lane; c < V; c += width)
        st(o + c, A(0));
      continue;
    }
    A lse = rowLogSumExp<T, Block>(row, V, scratchM, scratchS);
    for (int64_t c = lane; c < V; c += width)
      st(o + c, gs * (expOf(ld(row + c) - lse) - (c == label ? A(1) : A(0))));
  }
}

bool useBlockRows(int64_t V) { return V > 1024; }

unsigned rowBlocks(int64_t rows, bool block) {
  int64_t b = block ? rows : (rows + kRowWarps - 1) / kRowWarps;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(b, 65535 * 16)));
}

template <typename F>
auto dispatchLabels(DType dtype, F &&f) {
  if (dtype == DType::I64)
    return f(int64_t{});
  return f(int32_t{});
}

/// Throws the CPU kernel's message when a label is out of range (at once,
/// or at the step's end when checks are deferred: ErrorFlag).
void validateLabels(const Ctx &c, const Tensor &labels, int64_t V,
                    int64_t ignoreIndex) {
  int64_t n = labels.numel();
  if (n == 0)
    return;
  util::ErrorFlag flag(c);
  dispatchLabels(labels.dtype(), [&](auto tag) {
    using L = decltype(tag);
    unsigned blocks = std::min<unsigned>(blocksFor(n), 1024);
    findBadLabel<L><<<blocks, kThreads, 0, c.stream>>>(
        flag.get(), labels.data<L>(), n, V, ignoreIndex);
    GLIMMER_CUDA_LAUNCHED(c.op);
    return 0;
  });
  flag.raise([labels, V, ignoreIndex](int64_t bad) {
    return messages::labelOutOfRange(util::readIndex(labels, bad), bad, V,
                                     ignoreIndex);
  });
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::tuple<Tensor, Tensor> crossEntropy(const Tensor &logits,
                                        const Tensor &labels,
                                        int64_t ignoreIndex, DType sumDType) {
  const char *op = "cross_entropy";
  int64_t rows, V;
  std::tie(rows, V) = checkShapes(op, logits, labels);
  Ctx c(op, {&logits, &labels});
  validateLabels(c, labels, V, ignoreIndex);
  check(isFloatType(sumDType), op, "expects an f32, f64 or bf16 sum type");
  Tensor sum = c.empty(sumDType, {});
  Tensor count = c.empty(DType::I64, {});
  dispatchFloat(op, logits.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    Tensor loss =
        c.empty(std::is_same<A, double>::value ? DType::F64 : DType::F32,
                {std::max<int64_t>(rows, 1)});
    dispatchLabels(labels.dtype(), [&](auto ltag) {
      using L = decltype(ltag);
      if (rows > 0) {
        bool block = useBlockRows(V);
        auto kernel = block ? rowLosses<T, L, true> : rowLosses<T, L, false>;
        kernel<<<rowBlocks(rows, block), kThreads, 0, c.stream>>>(
            loss.data<A>(), logits.data<T>(), labels.data<L>(), rows, V,
            ignoreIndex);
        GLIMMER_CUDA_LAUNCHED(op);
      }
      dispatchFloat(op, sumDType, [&](auto stag) {
        using S = decltype(stag);
        sumLosses<A, S, L><<<1, kSumThreads, 0, c.stream>>>(
            sum.data<S>(), count.data<int64_t>(), loss.data<A>(),
            labels.data<L>(), rows, ignoreIndex);
        GLIMMER_CUDA_LAUNCHED(op);
        return 0;
      });
      return 0;
    });
    return 0;
  });
  return std::make_tuple(sum, count);
}

Tensor crossEntropyGrad(const Tensor &grad, const Tensor &logits,
                        const Tensor &labels, int64_t ignoreIndex) {
  const char *op = "cross_entropy_grad";
  int64_t rows, V;
  std::tie(rows, V) = checkShapes(op, logits, labels);
  // A host scalar grad is allowed (the CPU kernel reads it with item()).
  bool gradOnDevice = grad.defined() && grad.isCuda();
  Ctx c(op, {&logits, &labels, gradOnDevice ? &grad : nullptr});
  validateLabels(c, labels, V, ignoreIndex);
  requireFloat(op, grad, "grad");
  check(grad.rank() == 0, op,
        "expects a scalar (rank-0) grad of the sum, got " + grad.describe());
  Tensor out = c.empty(logits.dtype(), logits.shape());
  if (out.numel() == 0)
    return out;
  double gHost = gradOnDevice ? 0.0 : grad.item();
  dispatchFloat(op, logits.dtype(), [&](auto tag) {
    using T = decltype(tag);
    dispatchLabels(labels.dtype(), [&](auto ltag) {
      using L = decltype(ltag);
      dispatchFloat(op, grad.dtype(), [&](auto gtag) {
        using G = decltype(gtag);
        bool block = useBlockRows(V);
        auto kernel = block ? crossEntropyGradRows<T, L, G, true>
                            : crossEntropyGradRows<T, L, G, false>;
        kernel<<<rowBlocks(rows, block), kThreads, 0, c.stream>>>(
            out.data<T>(), logits.data<T>(), labels.data<L>(),
            gradOnDevice ? grad.data<G>() : nullptr, gHost, rows, V,
            ignoreIndex);
        GLIMMER_CUDA_LAUNCHED(op);
        return 0;
      });
      return 0;
    });
    return 0;
  });
  return out;
}

} // namespace cuda
} // namespace glimmer_rt
