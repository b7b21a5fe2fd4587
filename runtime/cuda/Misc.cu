//===- Misc.cu - CUDA embedding, optimizer and multimodal kernels ---------===//
//
// embedding, embedding_grad, adamw_update, sgd_update, vision_bank_indices,
// vision_gather and vision_gather_grad on a GPU, with the CPU kernels'
// semantics and messages.
//
// Indices are checked where they are read, on the device: a kernel records
// the first offending position in an ErrorFlag and skips it, and the host
// reads the flag back after the launch (waiting for the stream) and throws
// the CPU's message for that position. Gathers move rows as the widest
// words their width and alignment allow. Gradient scatters accumulate with
// atomicAdd (in an f32 scratch for bf16, converted at the end), so their
// sums are not bitwise reproducible from run to run; everything else is.
//
//===----------------------------------------------------------------------===//

#include "../common/Messages.h"
#include "ElementwiseUtil.cuh"
#include "Vector.cuh"

#include <algorithm>
#include <limits>

namespace glimmer_rt {
namespace cuda {

using namespace util;

namespace {

/// Calls `f(I{})` with I the C++ type of an i32/i64 index tensor (checked
/// by the caller).
template <typename F>
auto dispatchIndex(DType dtype, F &&f) {
  if (dtype == DType::I64)
    return f(int64_t{});
  return f(int32_t{});
}

/// Flags positions whose index lies outside [lo, hi) (for rows of width 0,
/// where the gather kernels have nothing to launch over).
template <typename I>
__global__ void checkIndicesKernel(const I *idx, int64_t n, int64_t lo,
                                   int64_t hi, bool hasIgnore, int64_t ignore,
                                   unsigned long long *flag) {
  for (int64_t p = gridStart(); p < n; p += gridStride()) {
    int64_t k = idx[p];
    if ((k < lo || k >= hi) && !(hasIgnore && k == ignore))
      flagError(flag, p);
  }
}

/// f32 scratch -> bf16 result.
template <typename T>
__global__ void castKernel(const acc_t<T> *in, T *out, int64_t n) {
  for (int64_t i = gridStart(); i < n; i += gridStride())
    st(out + i, in[i]);
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

/// y[p, :] = table[ids[p], :] over rows of W words.
template <typename E, typename I>
__global__ void embeddingKernel(const E *table, const I *ids, E *y, int64_t n,
                                int64_t W, int64_t V,
                                unsigned long long *flag) {
  for (int64_t i = gridStart(); i < n; i += gridStride()) {
    int64_t p = i / W, w = i % W;
    int64_t id = ids[p];
    if (id < 0 || id >= V) {
      if (w == 0)
        flagError(flag, p);
      continue;
    }
    y[i] = table[id * W + w];
  }
}

/// out[ids[p], :] += grad[p, :] (out in the compute type).
template <typename T, typename I>
__global__ void embeddingGradKernel(const T *grad, const I *ids, acc_t<T> *out,
                                    int64_t n, int64_t D, int64_t V,
                                    unsigned long long *flag) {
  for (int64_t i = gridStart(); i < n; i += gridStride()) {
    int64_t p = i / D, d = i % D;
    int64_t id = ids[p];
    if (id < 0 || id >= V) {
      if (d == 0)
        flagError(flag, p);
      continue;
    }
    atomicAdd(out + id * D + d, acc_t<T>(ld(grad + i)));
  }
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// Round-to-nearest arithmetic that the compiler never contracts into an
/// FMA: the optimizers round after every operation, as the CPU's do, however
/// the compiler specializes their loops (it may contract the loop with a
/// grad_scale and the one without differently, which would make the update
/// with grad_scale differ in the last bit from the update of the
/// separately scaled gradient).
__device__ __forceinline__ float rnAdd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double rnAdd(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float rnSub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double rnSub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float rnMul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double rnMul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float rnDiv(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double rnDiv(double a, double b) { return __ddiv_rn(a, b); }

/// grad * scale rounded to T, as a separate mul kernel would store it.
template <typename T>
__device__ __forceinline__ acc_t<T> scaledGrad(acc_t<T> g, const T *scale) {
  if (!scale)
    return g;
  T r;
  st(&r, rnMul(g, ld(scale)));
  return ld(&r);
}

/// The scalars of one AdamW update (torch.optim.AdamW's single-tensor path,
/// in the CPU's order of operations).
template <typename A> struct AdamWScalars {
  double lr, beta1, beta2;
  bool decayOn;
  A decay, w1, b2, w2, e;
};

/// Element i: reads p, g, m, v at i and writes the updated three at i.
/// negStep and c2 are the step's bias corrections.
template <typename T, typename G>
__device__ __forceinline__ void
adamwElement(const T *P, const G *Gr, const T *S, const T *M, const T *V,
             T *oP, T *oM, T *oV, int64_t i, const AdamWScalars<acc_t<T>> &s,
             acc_t<T> negStep, acc_t<T> c2) {
  using A = acc_t<T>;
  A p = ld(P + i);
  A pi = s.decayOn ? rnMul(p, s.decay) : p;
  A g = scaledGrad(A(ld(Gr + i)), S), m = ld(M + i);
  // torch.lerp: start + w * (end - start) for w < 0.5, else
  // end - (end - start) * (1 - w).
  A mi = s.w1 < A(0.5) ? rnAdd(m, rnMul(s.w1, rnSub(g, m)))
                       : rnSub(g, rnMul(rnSub(g, m), rnSub(A(1), s.w1)));
  A vi = rnAdd(rnMul(A(ld(V + i)), s.b2), rnMul(rnMul(s.w2, g), g));
  A root;
  if constexpr (std::is_same_v<A, double>)
    root = ::sqrt(vi);
  else
    root = ::sqrtf(vi);
  A denom = rnAdd(rnDiv(root, c2), s.e);
  st(oP + i, rnAdd(pi, rnDiv(rnMul(negStep, mi), denom)));
  st(oM + i, mi);
  st(oV + i, vi);
}

/// The bias corrections depend on the step, which lives on the device: one
/// thread per block computes them in double (as Python floats).
/// Thread 0 of a block: the step's bias corrections, or `bad` for a step
/// below 1 (flagged by block 0).
template <typename A>
__device__ __forceinline__ void
adamwCorrections(const AdamWScalars<A> &s, const int64_t *step,
                 unsigned long long *flag, A &negStep, A &c2, bool &bad) {
  int64_t t = *step;
  bad = t < 1;
  if (bad) {
    if (blockIdx.x == 0)
      flagError(flag, 0);
  } else {
    double bc1 = 1 - ::pow(s.beta1, double(t));
    double bc2 = 1 - ::pow(s.beta2, double(t));
    negStep = A(-(s.lr / bc1));
    c2 = A(::sqrt(bc2));
  }
}

/// Packs j = from, from + stride, ... below `to` of kVec neighbouring
/// elements: one access per tensor and pack, each element updated by
/// adamwElement. The caller checked that the seven buffers are aligned.
template <typename T, typename G>
__device__ __forceinline__ void
adamwPacks(const T *P, const G *Gr, const T *S, const T *M, const T *V, T *oP,
           T *oM, T *oV, int64_t from, int64_t to, int64_t stride,
           const AdamWScalars<acc_t<T>> &s, acc_t<T> negStep, acc_t<T> c2) {
  using PT = ElemPack<sizeof(T)>;
  using PG = ElemPack<sizeof(G)>;
  for (int64_t j = from; j < to; j += stride) {
    PT p = reinterpret_cast<const PT *>(P)[j];
    PG g = reinterpret_cast<const PG *>(Gr)[j];
    PT m = reinterpret_cast<const PT *>(M)[j];
    PT v = reinterpret_cast<const PT *>(V)[j];
    PT rp, rm, rv;
#pragma unroll
    for (int u = 0; u < kVec; ++u)
      adamwElement(reinterpret_cast<const T *>(p.b),
                   reinterpret_cast<const G *>(g.b), S,
                   reinterpret_cast<const T *>(m.b),
                   reinterpret_cast<const T *>(v.b),
                   reinterpret_cast<T *>(rp.b), reinterpret_cast<T *>(rm.b),
                   reinterpret_cast<T *>(rv.b), u, s, negStep, c2);
    reinterpret_cast<PT *>(oP)[j] = rp;
    reinterpret_cast<PT *>(oM)[j] = rm;
    reinterpret_cast<PT *>(oV)[j] = rv;
  }
}

/// One tensor's update. With Vec, each thread moves kVec neighbouring
/// elements of each tensor per access (the grid covers n / kVec packs; the
/// n % kVec last elements one by one). G is T, or bf16 under an f32 T
/// (widened exactly by ld).
template <typename T, typename G, bool Vec>
__global__ void adamwKernel(const T *P, const G *Gr, const T *S, const T *M,
                            const T *V, const int64_t *step, T *oP, T *oM,
                            T *oV, int64_t n, AdamWScalars<acc_t<T>> s,
                            unsigned long long *flag) {
  using A = acc_t<T>;
  __shared__ A negStep, c2;
  __shared__ bool bad;
  if (threadIdx.x == 0)
    adamwCorrections(s, step, flag, negStep, c2, bad);
  __syncthreads();
  if (bad)
    return;
  int64_t first = 0;
  if constexpr (Vec) {
    int64_t vectors = n / kVec;
    adamwPacks(P, Gr, S, M, V, oP, oM, oV, gridStart(), vectors, gridStride(),
               s, negStep, c2);
    first = vectors * kVec;
  }
  for (int64_t i = first + gridStart(); i < n; i += gridStride())
    adamwElement(P, Gr, S, M, V, oP, oM, oV, i, s, negStep, c2);
}

/// Up to kAdamWBatch updates per launch, their pointers passed by value as
/// kernel parameters (about 2.4 KB): no table to copy to the device.
constexpr int kAdamWBatch = 32;
/// Elements per chunk, a multiple of kVec: a block updates a chunk of one
/// tensor at a time, so a launch spreads big and small tensors alike.
constexpr int64_t kAdamWChunk = int64_t(1) << 14;

template <typename T, typename G>
struct AdamWBatch {
  const T *p[kAdamWBatch];
  const G *g[kAdamWBatch];
  const T *m[kAdamWBatch];
  const T *v[kAdamWBatch];
  T *oP[kAdamWBatch];
  T *oM[kAdamWBatch];
  T *oV[kAdamWBatch];
  int64_t numel[kAdamWBatch];
  /// Tensor k's chunks are [firstChunk[k], firstChunk[k + 1]).
  int64_t firstChunk[kAdamWBatch + 1];
  /// Bit k: tensor k's seven buffers are aligned for kVec-element accesses.
  unsigned vec;
  int count;
};

/// A grid of blocks striding over the batch's chunks; each element is
/// updated by adamwElement, as adamwKernel does, so the bits are the same.
template <typename T, typename G>
__global__ void adamwListKernel(const __grid_constant__ AdamWBatch<T, G> batch,
                                const T *S, const int64_t *step,
                                AdamWScalars<acc_t<T>> s,
                                unsigned long long *flag) {
  using A = acc_t<T>;
  __shared__ A negStep, c2;
  __shared__ bool bad;
  if (threadIdx.x == 0)
    adamwCorrections(s, step, flag, negStep, c2, bad);
  __syncthreads();
  if (bad)
    return;
  int64_t chunks = batch.firstChunk[batch.count];
  for (int64_t b = blockIdx.x; b < chunks; b += gridDim.x) {
    int lo = chunkOwner(batch.firstChunk, batch.count, b);
    const T *P = batch.p[lo], *M = batch.m[lo], *V = batch.v[lo];
    const G *Gr = batch.g[lo];
    T *oP = batch.oP[lo], *oM = batch.oM[lo], *oV = batch.oV[lo];
    int64_t begin = (b - batch.firstChunk[lo]) * kAdamWChunk;
    int64_t end = begin + kAdamWChunk < batch.numel[lo] ? begin + kAdamWChunk
                                                        : batch.numel[lo];
    int64_t first = begin;
    if ((batch.vec >> lo) & 1u) {
      int64_t last = end / kVec;
      adamwPacks(P, Gr, S, M, V, oP, oM, oV, begin / kVec + threadIdx.x, last,
                 int64_t(blockDim.x), s, negStep, c2);
      first = last * kVec;
    }
    for (int64_t i = first + threadIdx.x; i < end; i += blockDim.x)
      adamwElement(P, Gr, S, M, V, oP, oM, oV, i, s, negStep, c2);
  }
}

/// torch.optim.SGD: g = g + wd * p; p = p + (-lr) * g.
template <typename T, typename G>
__global__ void sgdKernel(const T *P, const G *Gr, const T *S, T *out,
                          int64_t n, bool decayOn, acc_t<T> wd,
                          acc_t<T> negLr) {
  using A = acc_t<T>;
  for (int64_t i = gridStart(); i < n; i += gridStride()) {
    A p = ld(P + i), g = scaledGrad(A(ld(Gr + i)), S);
    if (decayOn)
      g = rnAdd(g, rnMul(wd, p));
    st(out + i, rnAdd(p, rnMul(negLr, g)));
  }
}

//===----------------------------------------------------------------------===//
// Multimodal
//===----------------------------------------------------------------------===//

/// One block scans the flattened tokens in steps of its size: a ballot per
/// warp counts the image tokens before each thread, and the running count
/// carries from step to step.
constexpr int kScanThreads = 1024;

template <typename I>
__global__ void bankIndicesKernel(const I *tokens, I *out, int64_t n,
                                  int64_t imageTokenId) {
  __shared__ int64_t warpCounts[kScanThreads / 32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t seen = 0;
  for (int64_t base = 0; base < n; base += kScanThreads) {
    int64_t i = base + threadIdx.x;
    bool hit = i < n && int64_t(tokens[i]) == imageTokenId;
    unsigned mask = __ballot_sync(0xffffffffu, hit);
    if (lane == 0)
      warpCounts[warp] = __popc(mask);
    __syncthreads();
    int64_t before = seen, total = seen;
    for (int w = 0; w < kScanThreads / 32; ++w) {
      if (w < warp)
        before += warpCounts[w];
      total += warpCounts[w];
    }
    before += __popc(mask & ((1u << lane) - 1u));
    if (i < n)
      out[i] = hit ? I(before) : I(-1);
    seen = total;
    __syncthreads(); // warpCounts is rewritten by the next step
  }
}

// The vision-gather kernels give each position's row to one warp: the row's
// source is decided once per row, and no thread divides its element index
// by the row length (a 64-bit division costs more than the copy it feeds).

/// dst[0, W) = src[0, W) by one warp. Each lane loads kCopyUnroll words
/// before it stores any: as far as the compiler knows dst may alias src, so
/// a plain loop would wait for every load before issuing the next, and a
/// warp would keep one 512-byte load in flight (73-85% of a device-to-device
/// copy's bandwidth; 79-103% with four words, 85-91% with eight: the last
/// rows drain with more in flight, docs/CudaBackend.md).
constexpr int kCopyUnroll = 8;
template <typename E>
__device__ __forceinline__ void warpCopyRow(E *dst, const E *src, int64_t W,
                                            int lane) {
  int64_t w = lane;
  for (; w + 32 * (kCopyUnroll - 1) < W; w += 32 * kCopyUnroll) {
    E r[kCopyUnroll];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u)
      r[u] = src[w + 32 * u];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u)
      dst[w + 32 * u] = r[u];
  }
  for (; w < W; w += 32)
    dst[w] = src[w];
}

/// dst[0, W) = all-zero bits (+0) by one warp.
template <typename E>
__device__ __forceinline__ void warpZeroRow(E *dst, int64_t W, int lane) {
#pragma unroll 4
  for (int64_t w = lane; w < W; w += 32)
    dst[w] = E{};
}

/// y[p, :] = idx[p] >= 0 ? bank[idx[p], :] : embeds[p, :] over rows of W
/// words; idx >= N is flagged.
template <typename E, typename I>
__global__ void visionGatherKernel(const E *embeds, const E *bank,
                                   const I *indices, E *y, int64_t positions,
                                   int64_t W, int64_t N,
                                   unsigned long long *flag) {
  const int lane = threadIdx.x & 31;
  for (int64_t p = gridStart() >> 5; p < positions; p += gridStride() >> 5) {
    int64_t k = indices[p];
    if (k >= N) {
      if (lane == 0)
        flagError(flag, p);
      continue;
    }
    warpCopyRow(y + p * W, k >= 0 ? bank + k * W : embeds + p * W, W, lane);
  }
}

// The bank's gradient without atomic additions: the first position that
// reads a bank row claims it (`owner`) and copies its gradient row there; a
// later reader marks the row shared. A second kernel then zeroes the rows
// nobody read and sums the shared ones (no vision model's merge makes any)
// in position order, as the CPU sums them, so the result does not depend on
// scheduling.
constexpr unsigned long long kNoOwner = ~0ull, kSharedRow = ~0ull - 1;

/// d_embeds[p, :] = idx[p] < 0 ? grad[p, :] : 0 over rows of W words, and
/// for idx[p] = k >= 0 position p's claim on bank row k in `owner` (all
/// kNoOwner before), with d_bank[k, :] = grad[p, :] when the claim is the
/// first; idx >= rows is flagged.
template <typename E, typename I>
__global__ void embedsGradKernel(const E *grad, const I *indices, E *de,
                                 E *db, unsigned long long *owner,
                                 int64_t positions, int64_t W, int64_t rows,
                                 unsigned long long *flag) {
  const int lane = threadIdx.x & 31;
  for (int64_t p = gridStart() >> 5; p < positions; p += gridStride() >> 5) {
    int64_t k = indices[p];
    if (k >= rows) {
      if (lane == 0)
        flagError(flag, p);
      continue;
    }
    const E *src = grad + p * W;
    E *dst = de + p * W;
    if (k < 0) {
      warpCopyRow(dst, src, W, lane);
      continue;
    }
    // Once a row has an owner it never returns to kNoOwner, so a failed
    // claim can mark it shared without racing a later successful one.
    bool first = false;
    if (lane == 0) {
      first = atomicCAS(owner + k, kNoOwner, (unsigned long long)p) == kNoOwner;
      if (!first)
        atomicExch(owner + k, kSharedRow);
    }
    warpZeroRow(dst, W, lane);
    if (__shfl_sync(0xffffffffu, first, 0))
      warpCopyRow(db + k * W, src, W, lane);
  }
}

/// The bank rows embedsGradKernel did not write: zeros for rows no position
/// reads (W words of E per row), and for a shared row the sum of grad[p, :]
/// over the positions p with idx[p] == k, in acc_t<T> in position order (D
/// elements of T per row).
template <typename T, typename E, typename I>
__global__ void bankGradKernel(const T *grad, const I *indices,
                               const unsigned long long *owner, T *db,
                               int64_t positions, int64_t rows, int64_t D,
                               int64_t W) {
  using A = acc_t<T>;
  constexpr int C = 4; // columns per lane and pass over the positions
  const int lane = threadIdx.x & 31;
  for (int64_t k = gridStart() >> 5; k < rows; k += gridStride() >> 5) {
    const unsigned long long o = owner[k];
    if (o == kNoOwner) {
      warpZeroRow(reinterpret_cast<E *>(db + k * D), W, lane);
    } else if (o == kSharedRow) {
      for (int64_t d0 = 0; d0 < D; d0 += 32 * C) {
        A acc[C] = {};
        for (int64_t p0 = 0; p0 < positions; p0 += 32) {
          int64_t p = p0 + lane;
          unsigned hits = __ballot_sync(
              0xffffffffu, p < positions && int64_t(indices[p]) == k);
          for (; hits; hits &= hits - 1) {
            const T *g = grad + (p0 + __ffs(hits) - 1) * D;
#pragma unroll
            for (int c = 0; c < C; ++c) {
              int64_t d = d0 + lane + 32 * c;
              if (d < D)
                acc[c] += ld(g + d);
            }
          }
        }
#pragma unroll
        for (int c = 0; c < C; ++c) {
          int64_t d = d0 + lane + 32 * c;
          if (d < D)
            st(db + k * D + d, acc[c]);
        }
      }
    }
  }
}

/// rows [B, T, D] and indices [B, T] (the CPU's checkTokenRows).
void checkTokenRows(const char *op, const Tensor &rows, const char *rowsName,
                    const Tensor &indices) {
  requireFloat(op, rows, rowsName);
  check(rows.rank() == 3, op,
        std::string("expects ") + rowsName + " [B, T, D], got " +
            rows.describe());
  requireInt(op, indices, "indices");
  requireShape(op, indices, "indices", {rows.dim(0), rows.dim(1)});
}

/// The CPU's message when a kernel flagged a bank index.
void checkBankFlag(const ErrorFlag &flag, const Tensor &indices,
                   int64_t bankRows) {
  flag.raise([indices, bankRows](int64_t p) {
    return "vision bank index " + std::to_string(readIndex(indices, p)) +
           " at position " + std::to_string(p) +
           " is out of range for a bank of " + std::to_string(bankRows) +
           " rows (more image tokens than image features?)";
  });
}

/// Scatter-add target: the result itself, or an f32 scratch for bf16.
template <typename T>
Tensor accumulator(const Ctx &c, Tensor &result) {
  if constexpr (std::is_same_v<acc_t<T>, T>)
    return result;
  else
    return Tensor::zeros(DType::F32, result.shape(), c.device);
}

/// Writes an f32 scratch back into its bf16 result.
template <typename T>
void finishAccumulator(const Ctx &c, const Tensor &acc, Tensor &result) {
  if constexpr (!std::is_same_v<acc_t<T>, T>)
    launch(c, result.numel(), castKernel<T>, acc.data<acc_t<T>>(),
           result.data<T>(), result.numel());
}

} // namespace

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

Tensor embedding(const Tensor &table, const Tensor &ids) {
  const char *op = "embedding";
  Ctx c(op, {&table, &ids});
  requireDefined(op, table, "table");
  requireRank(op, table, "a [V, D] table", 2);
  requireInt(op, ids, "ids");
  int64_t V = table.dim(0), D = table.dim(1);
  Shape outShape = ids.shape();
  outShape.push_back(D);
  Tensor y = c.empty(table.dtype(), outShape);
  int64_t positions = ids.numel();
  if (positions == 0)
    return y;
  ErrorFlag flag(c);
  size_t rowBytes = size_t(D) * dtypeSize(table.dtype());
  dispatchIndex(ids.dtype(), [&](auto itag) {
    using I = decltype(itag);
    if (rowBytes == 0) {
      launch(c, positions, checkIndicesKernel<I>, ids.data<I>(), positions,
             int64_t(0), V, false, int64_t(0), flag.get());
      return;
    }
    size_t w = widestWord(rowBytes, {table.raw(), y.raw()});
    int64_t W = int64_t(rowBytes / w);
    dispatchBytes(op, w, [&](auto etag) {
      using E = decltype(etag);
      launch(c, positions * W, embeddingKernel<E, I>, table.data<E>(),
             ids.data<I>(), y.data<E>(), positions * W, W, V, flag.get());
    });
  });
  flag.raise([ids, V](int64_t p) {
    return messages::idOutOfRange(readIndex(ids, p), p, V);
  });
  return y;
}

Tensor checkIndices(const Tensor &ids, int64_t bound, bool hasIgnore,
                    int64_t ignoreIndex, const char *op) {
  Ctx c(op, {&ids});
  requireInt(op, ids, hasIgnore ? "labels" : "ids");
  int64_t n = ids.numel();
  if (n == 0)
    return ids;
  ErrorFlag flag(c);
  dispatchIndex(ids.dtype(), [&](auto itag) {
    using I = decltype(itag);
    launch(c, n, checkIndicesKernel<I>, ids.data<I>(), n, int64_t(0), bound,
           hasIgnore, ignoreIndex, flag.get());
  });
  flag.raise([ids, bound, hasIgnore, ignoreIndex](int64_t p) {
    int64_t v = readIndex(ids, p);
    return hasIgnore ? messages::labelOutOfRange(v, p, bound, ignoreIndex)
                     : messages::idOutOfRange(v, p, bound);
  });
  return ids;
}

Tensor embeddingGrad(const Tensor &grad, const Tensor &ids,
                     int64_t numEmbeddings) {
  const char *op = "embedding_grad";
  Ctx c(op, {&grad, &ids});
  requireFloat(op, grad, "grad");
  requireInt(op, ids, "ids");
  check(numEmbeddings >= 0, op, "negative number of embeddings");
  check(grad.rank() == ids.rank() + 1, op,
        "expects grad of shape ids.shape + [D], got grad " + grad.describe() +
            " and ids " + ids.describe());
  int64_t D = grad.dim(-1);
  Shape expected = ids.shape();
  expected.push_back(D);
  requireShape(op, grad, "grad", expected);
  return dispatchFloat(op, grad.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor out = Tensor::zeros(grad.dtype(), {numEmbeddings, D}, c.device);
    int64_t positions = ids.numel();
    if (positions == 0)
      return out;
    Tensor acc = accumulator<T>(c, out);
    ErrorFlag flag(c);
    dispatchIndex(ids.dtype(), [&](auto itag) {
      using I = decltype(itag);
      if (D == 0)
        launch(c, positions, checkIndicesKernel<I>, ids.data<I>(), positions,
               int64_t(0), numEmbeddings, false, int64_t(0), flag.get());
      else
        launch(c, positions * D, embeddingGradKernel<T, I>, grad.data<T>(),
               ids.data<I>(), acc.data<acc_t<T>>(), positions * D, D,
               numEmbeddings, flag.get());
    });
    flag.raise([ids, numEmbeddings](int64_t p) {
      return messages::idOutOfRange(readIndex(ids, p), p, numEmbeddings);
    });
    finishAccumulator<T>(c, acc, out);
    return out;
  });
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

namespace {
/// Calls run(G()) with G the grad's element type: T, or bf16 under an f32
/// T (the optimizers' grad widened as it is loaded).
template <typename T, typename F> void withGradType(const Tensor &grad, F &&run) {
  if constexpr (std::is_same_v<T, float>) {
    if (grad.dtype() == DType::BF16)
      return run(bf16());
  }
  run(T());
}

template <typename T> const T *scaleOf(const Tensor &scale) {
  return scale.defined() ? scale.data<T>() : nullptr;
}
} // namespace

std::tuple<Tensor, Tensor, Tensor>
adamwUpdate(const Tensor &param, const Tensor &grad, const Tensor &expAvg,
            const Tensor &expAvgSq, const Tensor &step, double lr, double beta1,
            double beta2, double eps, double weightDecay,
            const Tensor &gradScale) {
  const char *op = "adamw_update";
  Ctx c(op, {&param, &grad, &expAvg, &expAvgSq, &step, &gradScale});
  requireFloat(op, param, "param");
  detail::checkAdamWOperands(op, param, grad, expAvg, expAvgSq, gradScale);
  detail::checkAdamWStep(op, step);
  detail::checkAdamWHyperparameters(op, beta1, beta2, eps);
  return dispatchFloat(op, param.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    // In place where the state is handed over (adamwElement reads each
    // element before it writes it).
    Tensor p = replacing(param), m = replacing(expAvg), v = replacing(expAvgSq);
    int64_t n = param.numel();
    ErrorFlag flag(c);
    AdamWScalars<A> s{lr,         beta1,     beta2,        weightDecay != 0,
                      A(1 - lr * weightDecay), A(1 - beta1), A(beta2),
                      A(1 - beta2), A(eps)};
    auto run = [&](auto gradTag) {
      using G = decltype(gradTag);
      const int t = int(sizeof(T));
      bool vec = n >= kVec &&
                 packAligned({{param.raw(), t}, {grad.raw(), int(sizeof(G))},
                              {expAvg.raw(), t}, {expAvgSq.raw(), t},
                              {p.raw(), t}, {m.raw(), t}, {v.raw(), t}});
      // At least one thread, so the step is checked for empty tensors too.
      // Every block computes the bias corrections (two double-precision
      // powers) before its loop: a grid of a few blocks per multiprocessor,
      // each striding over many elements, pays for them a few thousand
      // times instead of once per 256 elements.
      int64_t work = vec ? n / kVec : (n > 0 ? n : 1);
      int64_t blocks = std::min<int64_t>(
          blocksFor(work), int64_t(multiprocessors(c.device.index)) * 8);
      auto kernel = vec ? adamwKernel<T, G, true> : adamwKernel<T, G, false>;
      kernel<<<unsigned(blocks), kThreads, 0, c.stream>>>(
          param.data<T>(), grad.data<G>(), scaleOf<T>(gradScale),
          expAvg.data<T>(), expAvgSq.data<T>(), step.data<int64_t>(),
          p.data<T>(), m.data<T>(), v.data<T>(), n, s, flag.get());
      GLIMMER_CUDA_LAUNCHED(op);
    };
    withGradType<T>(grad, run);
    flag.raise([step](int64_t) {
      return "expects a 1-based step, got " + std::to_string(readIndex(step, 0));
    });
    return std::make_tuple(p, m, v);
  });
}

std::vector<Tensor> adamwUpdateList(
    const std::vector<Tensor> &params, const std::vector<Tensor> &grads,
    const std::vector<Tensor> &expAvgs, const std::vector<Tensor> &expAvgSqs,
    const Tensor &step, double lr, double beta1, double beta2, double eps,
    double weightDecay, const Tensor &gradScale) {
  size_t n = params.size();
  if (n == 0)
    return {};
  // Each update's operands are checked as adamw_update checks them, with
  // its messages; the list's tensors must share one device.
  const char *op = "adamw_update";
  const Tensor *where = firstOnGpu(params);
  for (size_t k = 0; k < n && !where->isCuda(); ++k)
    for (const Tensor *t : {&grads[k], &expAvgs[k], &expAvgSqs[k]})
      if (t->isCuda())
        where = t;
  Ctx c("adamw_update_list", {where, &step, &gradScale});
  for (size_t k = 0; k < n; ++k) {
    const Tensor &param = params[k];
    requireFloat(op, param, "param");
    detail::checkAdamWOperands(op, param, grads[k], expAvgs[k], expAvgSqs[k],
                               gradScale);
    for (const Tensor *t : {&param, &grads[k], &expAvgs[k], &expAvgSqs[k]})
      check(t->device() == c.device, op,
            "operands live on different devices (" + c.device.str() + " and " +
                t->device().str() + ")");
  }
  detail::checkAdamWStep(op, step);
  detail::checkAdamWHyperparameters(op, beta1, beta2, eps);
  std::vector<Tensor> out(3 * n);
  // The step check says what adamw_update's says.
  ErrorFlag flag(c, op);
  // The updates of one (param, grad) type pair share launches of up to
  // kAdamWBatch tensors.
  std::vector<bool> done(n, false);
  for (size_t first = 0; first < n; ++first) {
    if (done[first])
      continue;
    DType pt = params[first].dtype(), gt = grads[first].dtype();
    std::vector<size_t> group;
    for (size_t k = first; k < n; ++k)
      if (!done[k] && params[k].dtype() == pt && grads[k].dtype() == gt) {
        group.push_back(k);
        done[k] = true;
      }
    dispatchFloat(op, pt, [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      AdamWScalars<A> s{lr,
                        beta1,
                        beta2,
                        weightDecay != 0,
                        A(1 - lr * weightDecay),
                        A(1 - beta1),
                        A(beta2),
                        A(1 - beta2),
                        A(eps)};
      withGradType<T>(grads[first], [&](auto gradTag) {
        using G = decltype(gradTag);
        const int t = int(sizeof(T));
        for (size_t at = 0; at < group.size(); at += kAdamWBatch) {
          AdamWBatch<T, G> batch{};
          batch.count = int(std::min<size_t>(kAdamWBatch, group.size() - at));
          for (int j = 0; j < batch.count; ++j) {
            size_t k = group[at + size_t(j)];
            const Tensor &param = params[k];
            Tensor p = replacing(param), m = replacing(expAvgs[k]),
                   v = replacing(expAvgSqs[k]);
            batch.p[j] = param.data<T>();
            batch.g[j] = grads[k].data<G>();
            batch.m[j] = expAvgs[k].data<T>();
            batch.v[j] = expAvgSqs[k].data<T>();
            batch.oP[j] = p.data<T>();
            batch.oM[j] = m.data<T>();
            batch.oV[j] = v.data<T>();
            batch.numel[j] = param.numel();
            batch.firstChunk[j + 1] =
                batch.firstChunk[j] +
                (param.numel() + kAdamWChunk - 1) / kAdamWChunk;
            if (packAligned({{batch.p[j], t},
                             {batch.g[j], int(sizeof(G))},
                             {batch.m[j], t},
                             {batch.v[j], t},
                             {batch.oP[j], t},
                             {batch.oM[j], t},
                             {batch.oV[j], t}}))
              batch.vec |= 1u << j;
            out[k] = p;
            out[n + k] = m;
            out[2 * n + k] = v;
          }
          // At least one block, so the step is checked for empty tensors
          // too; at most a few per multiprocessor, each striding over
          // chunks (each block computes the bias corrections once).
          int64_t blocks =
              std::clamp<int64_t>(batch.firstChunk[batch.count], 1,
                                  int64_t(multiprocessors(c.device.index)) * 8);
          adamwListKernel<T, G><<<unsigned(blocks), kThreads, 0, c.stream>>>(
              batch, scaleOf<T>(gradScale), step.data<int64_t>(), s,
              flag.get());
          GLIMMER_CUDA_LAUNCHED(op);
        }
      });
      return 0;
    });
  }
  flag.raise([step](int64_t) {
    return "expects a 1-based step, got " + std::to_string(readIndex(step, 0));
  });
  return out;
}

Tensor sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                 double weightDecay, const Tensor &gradScale) {
  const char *op = "sgd_update";
  Ctx c(op, {&param, &grad, &gradScale});
  requireFloat(op, param, "param");
  detail::requireOptimizerGrad(op, grad, param, gradScale);
  return dispatchFloat(op, param.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    Tensor p = replacing(param); // in place where the parameter is handed over
    auto run = [&](auto gradTag) {
      using G = decltype(gradTag);
      launch(c, param.numel(), sgdKernel<T, G>, param.data<T>(),
             grad.data<G>(), scaleOf<T>(gradScale), p.data<T>(),
             param.numel(), weightDecay != 0, A(weightDecay), A(-lr));
    };
    withGradType<T>(grad, run);
    return p;
  });
}

//===----------------------------------------------------------------------===//
// Multimodal
//===----------------------------------------------------------------------===//

Tensor visionBankIndices(const Tensor &tokens, int64_t imageTokenId) {
  const char *op = "vision_bank_indices";
  Ctx c(op, {&tokens});
  requireInt(op, tokens, "tokens");
  Tensor out = c.empty(tokens.dtype(), tokens.shape());
  int64_t n = tokens.numel();
  if (n == 0)
    return out;
  dispatchIndex(tokens.dtype(), [&](auto tag) {
    using I = decltype(tag);
    bankIndicesKernel<I><<<1, kScanThreads, 0, c.stream>>>(
        tokens.data<I>(), out.data<I>(), n, imageTokenId);
    GLIMMER_CUDA_LAUNCHED(op);
  });
  return out;
}

Tensor visionGather(const Tensor &embeds, const Tensor &bank,
                    const Tensor &indices) {
  const char *op = "vision_gather";
  Ctx c(op, {&embeds, &bank, &indices});
  checkTokenRows(op, embeds, "embeds", indices);
  requireDefined(op, bank, "bank");
  requireRank(op, bank, "an [N, D] bank", 2);
  check(bank.dtype() == embeds.dtype(), op,
        "expects embeds and bank of the same type, got " + embeds.describe() +
            " and " + bank.describe());
  int64_t D = embeds.dim(2), N = bank.dim(0);
  check(bank.dim(1) == D, op,
        "bank rows have width " + std::to_string(bank.dim(1)) +
            " but embeddings have width " + std::to_string(D));
  Tensor y = c.empty(embeds.dtype(), embeds.shape());
  int64_t positions = indices.numel();
  if (positions == 0)
    return y;
  ErrorFlag flag(c);
  size_t rowBytes = size_t(D) * dtypeSize(embeds.dtype());
  dispatchIndex(indices.dtype(), [&](auto itag) {
    using I = decltype(itag);
    if (rowBytes == 0) {
      launch(c, positions, checkIndicesKernel<I>, indices.data<I>(), positions,
             std::numeric_limits<int64_t>::min(), N, false, int64_t(0),
             flag.get());
      return;
    }
    size_t w = widestWord(rowBytes, {embeds.raw(), bank.raw(), y.raw()});
    int64_t W = int64_t(rowBytes / w);
    dispatchBytes(op, w, [&](auto etag) {
      using E = decltype(etag);
      launch(c, positions * 32, visionGatherKernel<E, I>, embeds.data<E>(),
             bank.data<E>(), indices.data<I>(), y.data<E>(), positions, W, N,
             flag.get());
    });
  });
  checkBankFlag(flag, indices, N);
  return y;
}

std::tuple<Tensor, Tensor>
visionGatherGrad(const Tensor &grad, const Tensor &indices, int64_t bankRows) {
  const char *op = "vision_gather_grad";
  Ctx c(op, {&grad, &indices});
  checkTokenRows(op, grad, "grad", indices);
  check(bankRows >= 0, op, "negative number of bank rows");
  int64_t D = grad.dim(2);
  return dispatchFloat(op, grad.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor de = c.empty(grad.dtype(), grad.shape());
    int64_t positions = indices.numel();
    if (positions == 0)
      return std::make_tuple(de, Tensor::zeros(grad.dtype(), {bankRows, D},
                                                c.device));
    Tensor db = c.empty(grad.dtype(), {bankRows, D}); // every row written
    ErrorFlag flag(c);
    dispatchIndex(indices.dtype(), [&](auto itag) {
      using I = decltype(itag);
      if (D == 0) {
        launch(c, positions, checkIndicesKernel<I>, indices.data<I>(),
               positions, std::numeric_limits<int64_t>::min(), bankRows, false,
               int64_t(0), flag.get());
        return;
      }
      size_t rowBytes = size_t(D) * sizeof(T);
      size_t w = widestWord(rowBytes, {grad.raw(), de.raw(), db.raw()});
      int64_t W = int64_t(rowBytes / w);
      // One owner slot per bank row (at least one, so that the pointer is
      // valid when the bank is empty and no index may be claimed).
      Tensor owner = c.empty(DType::I64, {std::max<int64_t>(bankRows, 1)});
      GLIMMER_CUDA_CHECK(
          cudaMemsetAsync(owner.raw(), 0xff, owner.nbytes(), c.stream));
      auto *own = static_cast<unsigned long long *>(owner.raw());
      dispatchBytes(op, w, [&](auto etag) {
        using E = decltype(etag);
        launch(c, positions * 32, embedsGradKernel<E, I>,
               static_cast<const E *>(grad.raw()), indices.data<I>(),
               static_cast<E *>(de.raw()), static_cast<E *>(db.raw()), own,
               positions, W, bankRows, flag.get());
        launch(c, bankRows * 32, bankGradKernel<T, E, I>, grad.data<T>(),
               indices.data<I>(), static_cast<const unsigned long long *>(own),
               db.data<T>(), positions, bankRows, D, W);
      });
    });
    checkBankFlag(flag, indices, bankRows);
    return std::make_tuple(de, db);
  });
}

} // namespace cuda
} // namespace glimmer_rt
