//===- Attention.cu - Flash attention forward and backward ----------------===//
//
// Masked scaled-dot-product attention with grouped-query heads, computed
// tile by tile without materializing the [Tq, Tk] score matrix:
//
//  * forward: one block per (batch, head, tile of queries) loops over key
//    tiles held in shared memory with an online softmax; it writes the
//    output and the row log-sum-exp (lse) that the backward pass reuses;
//  * backward: Delta_i = rowsum(dO * O) first, then one kernel for dQ (a
//    block per query tile, looping over key tiles) and one for dK/dV (a
//    block per key tile, looping over the query tiles of every query head
//    that shares the key/value head). P is recomputed from lse. No atomics:
//    every output element is owned by one thread, so results are
//    deterministic.
//
// Masks are functions of explicit positions, documents, blocks and a window
// (see Kernels.h). Work is skipped per pair of tiles when no key of the key
// tile can be visible to any query of the query tile: under causality,
// min(key positions) > max(query positions) while no query block (>= 0) of
// the query tile can be a key block of the key tile (disjoint block
// ranges), or max(key positions) <= min(query positions) - window; and
// disjoint document ranges. That is decided from per-tile statistics, never
// from tile indices, so it stays exact after a context-parallel permutation
// of the sequence.
//
// bf16 attention with an index-causal mask (causal without positions) or
// none, and no documents, blocks or window, runs in cuDNN's fused flash
// attention when the runtime is built with cuDNN (CudnnAttention.h) and
// cuDNN supports the shape; everything else runs here. Causal attention
// without positions reads the indices as positions (an iota made for the
// call). cuDNN reads and writes sequence-major tensors (AttentionLayout)
// in place through their strides; the kernels here read [B, H, T, D] only,
// so calls with such tensors that cuDNN does not take are transposed around
// them (detail::attentionTransposed).
//
// Two implementations, each in a fragment this file includes:
//  * SIMT kernels (AttentionSimt.inc) for every type (f32 and bf16 compute
//    in f32, f64 in f64) and head dimensions up to 256 (buckets
//    32/64/128/256, zero-padded);
//  * tensor-core kernels (AttentionMma.inc; mma.sync, f32 accumulation)
//    for bf16 and f32 (as 3xTF32) with head dimensions up to 128 whose
//    rows are whole 16-byte chunks (multiples of 8 for bf16, of 4 for
//    f32) and 16-byte aligned operands.
// Setting GLIMMER_CUDA_ATTENTION=simt in the environment forces the SIMT
// kernels (f32 arithmetic throughout), =mma the tensor-core kernels instead
// of cuDNN's (for comparisons).
//
// As on the CPU, a query row with no visible key gets a zero output and
// lse = -inf, and no gradient. lse is f64 for f64 queries and f32 otherwise
// (bf16 queries included), as the op's verifier types it.
//
//===----------------------------------------------------------------------===//

#include "../kernels/AttentionLayout.h"
#include "Checks.cuh"
#include "Common.cuh"
#ifdef GLIMMER_RT_HAVE_CUDNN
#include "CudnnAttention.h"
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace glimmer_rt {
namespace cuda {
namespace {

using AttentionShape = detail::AttentionDims;

AttentionShape checkAttention(const char *op, const Tensor &q, const Tensor &k,
                              const Tensor &v, const Tensor &qPositions,
                              const Tensor &kPositions,
                              const Tensor &qDocuments,
                              const Tensor &kDocuments, const Tensor &qBlocks,
                              const Tensor &kBlocks, bool causal,
                              int64_t window, double scale) {
  requireFloat(op, q, "query");
  return detail::checkAttention(op, q, k, v, qPositions, kPositions, qDocuments,
                                kDocuments, qBlocks, kBlocks, causal, window,
                                scale);
}

/// lse is f64 for f64 queries, f32 otherwise (the op verifier's typing).
DType lseType(DType q) { return q == DType::F64 ? DType::F64 : DType::F32; }

//===----------------------------------------------------------------------===//
// Shared device pieces
//===----------------------------------------------------------------------===//

/// An i32 or i64 tensor on the device, read as int64_t.
struct Idx {
  const void *p = nullptr;
  bool wide = true;
  __device__ __forceinline__ int64_t operator[](int64_t i) const {
    return wide ? static_cast<const int64_t *>(p)[i]
                : int64_t(static_cast<const int32_t *>(p)[i]);
  }
};

Idx idxOf(const Tensor &t) {
  Idx r;
  if (t.defined()) {
    r.p = t.raw();
    r.wide = t.dtype() == DType::I64;
  }
  return r;
}

/// Everything a kernel needs. Tile counts are in the launched kernel's own
/// tiling; the statistics (when masks are present) were built with it.
template <typename T>
struct AttnArgs {
  const T *q = nullptr, *k = nullptr, *v = nullptr, *dO = nullptr;
  T *out = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr;
  acc_t<T> *lseOut = nullptr;
  const acc_t<T> *lse = nullptr, *delta = nullptr;
  Idx qPos, kPos, qDoc, kDoc, qBlk, kBlk;
  // Per tile: (min position, max position, min document, max document,
  // min block, max block), the blocks over the rows whose block is >= 0
  // (none: INT64_MAX, INT64_MIN).
  const int64_t *qStats = nullptr, *kStats = nullptr;
  int64_t B = 0, Hq = 0, Hkv = 0, Tq = 0, Tk = 0, D = 0, group = 1;
  int64_t nQT = 0, nKT = 0;
  bool causal = false, docs = false, blocks = false;
  int64_t window = 0; // > 0 only under causality
  double scale = 1.0;
};

constexpr int kStatsPerTile = 6;

/// The mask of Kernels.h for query (position qp, document qd, block qb) and
/// key (kp, kd, kb). Blocks and a window exist only under causality.
__device__ __forceinline__ bool allowed(bool causal, bool docs, bool blocks,
                                        int64_t window, int64_t qp, int64_t kp,
                                        int64_t qd, int64_t kd, int64_t qb,
                                        int64_t kb) {
  return (!docs || kd == qd) &&
         (!causal || ((kp <= qp || (blocks && qb >= 0 && qb == kb)) &&
                      (window <= 0 || qp - kp < window)));
}

/// Whether some key of key tile kt may be visible to some query of query
/// tile qt (false only when provably none is).
template <typename T>
__device__ __forceinline__ bool tileVisible(const AttnArgs<T> &a, int64_t b,
                                            int64_t qt, int64_t kt) {
  if (!a.qStats)
    return true;
  const int64_t *qs = a.qStats + (b * a.nQT + qt) * kStatsPerTile;
  const int64_t *ks = a.kStats + (b * a.nKT + kt) * kStatsPerTile;
  if (a.causal) {
    // Every key after every query, and no query block (>= 0) that may be a
    // key's: block ranges are empty (min > max) or disjoint.
    if (ks[0] > qs[1] && (!a.blocks || ks[4] > qs[5] || qs[4] > ks[5]))
      return false;
    // Every key `window` or more positions before every query.
    if (a.window > 0 && qs[0] - ks[1] >= a.window)
      return false;
  }
  if (a.docs && (ks[2] > qs[3] || qs[2] > ks[3]))
    return false;
  return true;
}

/// Whether every key of key tile kt (BK rows) is visible to every query of
/// query tile qt (BQ rows), both tiles whole: the kernels then leave out the
/// per-element mask, which was a large share of their instructions. Under
/// causality that is every key at or before every query (blocks only add
/// keys) and, with a window, within it; with documents, one document.
template <typename T>
__device__ __forceinline__ bool tileFull(const AttnArgs<T> &a, int64_t b,
                                         int64_t qt, int64_t kt, int64_t BQ,
                                         int64_t BK) {
  if ((qt + 1) * BQ > a.Tq || (kt + 1) * BK > a.Tk)
    return false;
  if (!a.qStats)
    return true; // no mask
  const int64_t *qs = a.qStats + (b * a.nQT + qt) * kStatsPerTile;
  const int64_t *ks = a.kStats + (b * a.nKT + kt) * kStatsPerTile;
  if (a.causal &&
      (ks[1] > qs[0] || (a.window > 0 && qs[1] - ks[0] >= a.window)))
    return false;
  return !a.docs || (qs[2] == qs[3] && ks[2] == ks[3] && qs[2] == ks[2]);
}

template <typename A>
__device__ __forceinline__ A negInf() {
  return -std::numeric_limits<A>::infinity();
}

__device__ __forceinline__ float expOf(float v) { return expf(v); }
__device__ __forceinline__ double expOf(double v) { return ::exp(v); }
__device__ __forceinline__ float logOf(float v) { return logf(v); }
__device__ __forceinline__ double logOf(double v) { return ::log(v); }

template <typename A>
__device__ __forceinline__ A warpSum(A v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename A>
__device__ __forceinline__ A warpMax(A v) {
  for (int o = 16; o > 0; o >>= 1) {
    A w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

/// Per tile of `tile` rows of each batch entry: min/max position, min/max
/// document and min/max block (over the rows whose block is >= 0) over the
/// tile's rows. One warp per tile.
__global__ void tileStatsKernel(int64_t *__restrict__ out, Idx pos, Idx doc,
                                Idx blk, bool hasPos, bool hasDoc, bool hasBlk,
                                int64_t B, int64_t T, int64_t tile,
                                int64_t nTiles) {
  int64_t w = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  if (w >= B * nTiles)
    return;
  int64_t b = w / nTiles, t = w % nTiles;
  int64_t lo = std::numeric_limits<int64_t>::max(),
          hi = std::numeric_limits<int64_t>::min();
  int64_t dlo = lo, dhi = hi, blo = lo, bhi = hi;
  int64_t end = std::min(T, (t + 1) * tile);
  for (int64_t r = t * tile + lane; r < end; r += 32) {
    if (hasPos) {
      int64_t p = pos[b * T + r];
      lo = p < lo ? p : lo;
      hi = p > hi ? p : hi;
    }
    if (hasDoc) {
      int64_t d = doc[b * T + r];
      dlo = d < dlo ? d : dlo;
      dhi = d > dhi ? d : dhi;
    }
    if (hasBlk) {
      int64_t k = blk[b * T + r];
      if (k >= 0) {
        blo = k < blo ? k : blo;
        bhi = k > bhi ? k : bhi;
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    int64_t x = __shfl_xor_sync(0xffffffffu, lo, o);
    lo = x < lo ? x : lo;
    x = __shfl_xor_sync(0xffffffffu, hi, o);
    hi = x > hi ? x : hi;
    x = __shfl_xor_sync(0xffffffffu, dlo, o);
    dlo = x < dlo ? x : dlo;
    x = __shfl_xor_sync(0xffffffffu, dhi, o);
    dhi = x > dhi ? x : dhi;
    x = __shfl_xor_sync(0xffffffffu, blo, o);
    blo = x < blo ? x : blo;
    x = __shfl_xor_sync(0xffffffffu, bhi, o);
    bhi = x > bhi ? x : bhi;
  }
  if (lane == 0) {
    int64_t *o = out + w * kStatsPerTile;
    o[0] = lo;
    o[1] = hi;
    o[2] = dlo;
    o[3] = dhi;
    o[4] = blo;
    o[5] = bhi;
  }
}

/// delta[row] = sum_d dO[row, d] * O[row, d], one warp per row.
template <typename T>
__global__ void attnDelta(acc_t<T> *__restrict__ delta, const T *__restrict__ g,
                          const T *__restrict__ o, int64_t rows, int64_t D) {
  using A = acc_t<T>;
  int64_t w = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  int64_t step = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = w; r < rows; r += step) {
    A s = 0;
    for (int64_t d = lane; d < D; d += 32)
      s += ld(g + r * D + d) * ld(o + r * D + d);
    s = warpSum(s);
    if (lane == 0)
      delta[r] = s;
  }
}

// The kernels: SIMT for every type, tensor cores for bf16 and f32.
#include "AttentionSimt.inc"
#include "AttentionMma.inc"

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Per-tile mask statistics of one side, or an undefined tensor when no
/// mask is present (blocks come only with causality).
Tensor tileStats(const Ctx &c, const Tensor &pos, const Tensor &doc,
                 const Tensor &blk, bool causal, int64_t B, int64_t T,
                 int64_t tile) {
  bool docs = doc.defined();
  if (!causal && !docs)
    return Tensor();
  int64_t n = B * ceilDiv(T, tile);
  Tensor stats = c.empty(DType::I64, {std::max<int64_t>(n, 1), kStatsPerTile});
  if (n > 0) {
    int64_t threads = n * 32;
    unsigned blocks = unsigned(ceilDiv(threads, kThreads));
    tileStatsKernel<<<blocks, kThreads, 0, c.stream>>>(
        stats.data<int64_t>(), idxOf(pos), idxOf(doc), idxOf(blk), causal, docs,
        blk.defined(), B, T, tile, ceilDiv(T, tile));
    GLIMMER_CUDA_LAUNCHED(c.op);
  }
  return stats;
}

/// The operands every kernel shares.
struct Operands {
  const Tensor &q, &k, &v, &qPos, &kPos, &qDoc, &kDoc, &qBlk, &kBlk;
  bool causal;
  int64_t window;
  double scale;
  AttentionShape s;
};

/// Whether the mask has blocks or a window: the tensor-core kernels with
/// those terms; the others compile without them.
bool extended(const Operands &o) { return o.qBlk.defined() || o.window > 0; }

/// Per-tile statistics of both sides for query tiles of qTile rows and key
/// tiles of kTile rows, set in `a` (kept alive by the returned tensors).
template <typename T>
std::pair<Tensor, Tensor> setTileStats(const Ctx &c, const Operands &o,
                                       AttnArgs<T> &a, int64_t qTile,
                                       int64_t kTile) {
  Tensor qs = tileStats(c, o.qPos, o.qDoc, o.qBlk, o.causal, a.B, a.Tq, qTile);
  Tensor ks = tileStats(c, o.kPos, o.kDoc, o.kBlk, o.causal, a.B, a.Tk, kTile);
  if (qs.defined()) {
    a.qStats = qs.data<int64_t>();
    a.kStats = ks.data<int64_t>();
  }
  return {qs, ks};
}

template <typename T>
AttnArgs<T> baseArgs(const Operands &o) {
  AttnArgs<T> a;
  a.q = o.q.data<T>();
  a.k = o.k.data<T>();
  a.v = o.v.data<T>();
  a.qPos = idxOf(o.qPos);
  a.kPos = idxOf(o.kPos);
  a.qDoc = idxOf(o.qDoc);
  a.kDoc = idxOf(o.kDoc);
  a.qBlk = idxOf(o.qBlk);
  a.kBlk = idxOf(o.kBlk);
  a.B = o.s.B;
  a.Hq = o.s.Hq;
  a.Hkv = o.s.Hkv;
  a.Tq = o.s.Tq;
  a.Tk = o.s.Tk;
  a.D = o.s.D;
  a.group = o.s.Hq / o.s.Hkv;
  a.causal = o.causal;
  a.docs = o.qDoc.defined();
  a.blocks = o.qBlk.defined();
  a.window = o.window;
  a.scale = o.scale;
  return a;
}

/// Launches `kernel` over `blocks` blocks with `smem` bytes of dynamic
/// shared memory (opting in above the default 48 KiB).
template <typename K, typename Args>
void launch(const Ctx &c, K kernel, int64_t blocks, int threads, size_t smem,
            const Args &args) {
  if (blocks <= 0)
    return;
  check(blocks <= int64_t(0x7fffffff), c.op, "too many blocks for one launch");
  GLIMMER_CUDA_CHECK(cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<unsigned(blocks), threads, smem, c.stream>>>(args);
  GLIMMER_CUDA_LAUNCHED(c.op);
}

bool forceSimt() {
  return attentionOverride() == AttentionOverride::Simt;
}

/// Whether the tensor-core kernels apply to elements of `bytes` bytes; their
/// head-dimension bucket. Rows are read in 16-byte chunks.
int tensorCoreBucket(const AttentionShape &s, size_t bytes,
                     std::initializer_list<const Tensor *> ops) {
  if (forceSimt() || s.D <= 0 || (s.D * int64_t(bytes)) % 16 != 0 ||
      s.D > 128)
    return 0;
  for (const Tensor *t : ops)
    if (!aligned16(*t))
      return 0;
  return s.D <= 64 ? 64 : 128;
}

constexpr int64_t kMaxHeadDim = 256;

void checkHeadDim(const char *op, int64_t D) {
  check(D <= kMaxHeadDim, op,
        "head dimension " + std::to_string(D) +
            " is larger than the GPU kernels support (" +
            std::to_string(kMaxHeadDim) + ")");
}

/// Calls f(std::integral_constant<int, DMAX>) for the SIMT head-dimension
/// bucket of D.
template <typename F>
void dispatchHeadDim(const char *op, int64_t D, F &&f) {
  if (D <= 32)
    f(std::integral_constant<int, 32>());
  else if (D <= 64)
    f(std::integral_constant<int, 64>());
  else if (D <= 128)
    f(std::integral_constant<int, 128>());
  else if (D <= 256)
    f(std::integral_constant<int, 256>());
  else
    checkHeadDim(op, D); // throws
}

template <typename T, int DMAX>
void forwardSimt(const Ctx &c, const Operands &o, Tensor &out, Tensor &lse) {
  using C = Simt<T, DMAX>;
  AttnArgs<T> a = baseArgs<T>(o);
  a.out = out.data<T>();
  a.lseOut = lse.data<acc_t<T>>();
  a.nQT = ceilDiv(a.Tq, C::BQ);
  a.nKT = ceilDiv(a.Tk, C::BK);
  auto stats = setTileStats(c, o, a, C::BQ, C::BK);
  launch(c, attnFwdSimt<T, DMAX>, a.nQT * a.B * a.Hq, kSimtThreads, C::kFwdSmem,
         a);
}

template <typename E, int DH>
void forwardTc(const Ctx &c, const Operands &o, Tensor &out, Tensor &lse) {
  using C = tc::Fwd<E, DH>;
  AttnArgs<E> a = baseArgs<E>(o);
  a.out = out.data<E>();
  a.lseOut = lse.data<float>();
  a.nQT = ceilDiv(a.Tq, C::BQ);
  a.nKT = ceilDiv(a.Tk, C::BK);
  auto stats = setTileStats(c, o, a, C::BQ, C::BK);
  auto kernel =
      extended(o) ? tc::attnFwd<E, DH, true> : tc::attnFwd<E, DH, false>;
  launch(c, kernel, a.nQT * a.B * a.Hq, tc::kThreads, C::kSmem, a);
}

/// Inputs of the backward kernels beyond the forward operands.
struct Grads {
  const Tensor &grad, &lse;
  Tensor &dq, &dk, &dv;
};

template <typename T>
Tensor computeDelta(const Ctx &c, const Tensor &grad, const Tensor &out,
                    int64_t rows, int64_t D) {
  Tensor delta =
      c.empty(std::is_same<acc_t<T>, double>::value ? DType::F64 : DType::F32,
              {std::max<int64_t>(rows, 1)});
  if (rows > 0) {
    unsigned blocks = unsigned(
        std::min<int64_t>(ceilDiv(rows * 32, kThreads), int64_t(65535) * 16));
    attnDelta<T><<<blocks, kThreads, 0, c.stream>>>(
        delta.data<acc_t<T>>(), grad.data<T>(), out.data<T>(), rows, D);
    GLIMMER_CUDA_LAUNCHED(c.op);
  }
  return delta;
}

template <typename T, int DMAX>
void backwardSimt(const Ctx &c, const Operands &o, const Grads &gr,
                  const Tensor &delta) {
  using C = Simt<T, DMAX>;
  AttnArgs<T> a = baseArgs<T>(o);
  a.dO = gr.grad.data<T>();
  a.lse = gr.lse.data<acc_t<T>>();
  a.delta = delta.data<acc_t<T>>();
  a.dq = gr.dq.data<T>();
  a.dk = gr.dk.data<T>();
  a.dv = gr.dv.data<T>();
  // dQ: query tiles of BQ rows, key tiles of BK rows.
  {
    AttnArgs<T> d = a;
    d.nQT = ceilDiv(a.Tq, C::BQ);
    d.nKT = ceilDiv(a.Tk, C::BK);
    auto stats = setTileStats(c, o, d, C::BQ, C::BK);
    launch(c, attnDqSimt<T, DMAX>, d.nQT * a.B * a.Hq, kSimtThreads,
           C::kBwdSmem, d);
  }
  // dK/dV: key tiles of BQ rows, query tiles of BK rows.
  {
    AttnArgs<T> d = a;
    d.nQT = ceilDiv(a.Tq, C::BK);
    d.nKT = ceilDiv(a.Tk, C::BQ);
    auto stats = setTileStats(c, o, d, C::BK, C::BQ);
    launch(c, attnDkvSimt<T, DMAX>, d.nKT * a.B * a.Hkv, kSimtThreads,
           C::kBwdSmem, d);
  }
}

template <typename E, int DH>
void backwardTc(const Ctx &c, const Operands &o, const Grads &gr,
                const Tensor &delta) {
  AttnArgs<E> a = baseArgs<E>(o);
  a.dO = gr.grad.data<E>();
  a.lse = gr.lse.data<float>();
  a.delta = delta.data<float>();
  a.dq = gr.dq.data<E>();
  a.dk = gr.dk.data<E>();
  a.dv = gr.dv.data<E>();
  {
    using C = tc::Dq<E, DH>;
    AttnArgs<E> d = a;
    d.nQT = ceilDiv(a.Tq, C::BQ);
    d.nKT = ceilDiv(a.Tk, C::BK);
    auto stats = setTileStats(c, o, d, C::BQ, C::BK);
    auto kernel =
        extended(o) ? tc::attnDq<E, DH, true> : tc::attnDq<E, DH, false>;
    launch(c, kernel, d.nQT * a.B * a.Hq, tc::kThreads, C::kSmem, d);
  }
  {
    using C = tc::Dkv<E, DH>;
    constexpr int BQ = C::BQ;
    AttnArgs<E> d = a;
    d.nQT = ceilDiv(a.Tq, BQ);
    d.nKT = ceilDiv(a.Tk, C::BK);
    auto stats = setTileStats(c, o, d, BQ, C::BK);
    auto kernel =
        extended(o) ? tc::attnDkv<E, DH, true> : tc::attnDkv<E, DH, false>;
    launch(c, kernel, d.nKT * a.B * a.Hkv, tc::kThreads, C::kSmem, d);
  }
}

/// The positions the kernels read: the operands', or for causal attention
/// without positions the indices 0..T-1 of each row (the op's meaning).
struct IndexPositions {
  IndexPositions(const Ctx &c, const AttentionShape &s, bool causal,
                 const Tensor &qPositions, const Tensor &kPositions)
      : q(qPositions), k(kPositions) {
    if (!causal || qPositions.defined())
      return;
    q = iota(c.device, DType::I64, {s.B, s.Tq}, 1);
    k = iota(c.device, DType::I64, {s.B, s.Tk}, 1);
  }
  Tensor q, k;
};

/// Why cuDNN's attention cannot take these masks ("" when it can): it runs
/// index-causal or unmasked attention only. Without cuDNN in the build,
/// that is the reason for every call.
std::string cudnnMaskReason(const Tensor &qPositions, const Tensor &qDocuments,
                            const Tensor &qBlocks, int64_t window) {
#ifndef GLIMMER_RT_HAVE_CUDNN
  (void)qPositions, (void)qDocuments, (void)qBlocks, (void)window;
  return "this runtime was built without cuDNN's attention (CMake found no "
         "cudnn.h, libcudnn or cudnn_frontend.h; see docs/CudaBackend.md)";
#else
  if (qPositions.defined())
    return "the mask has positions (cuDNN runs index-causal masks only)";
  if (qDocuments.defined())
    return "the mask has documents (cuDNN runs index-causal masks only)";
  if (qBlocks.defined())
    return "the mask has image blocks (cuDNN runs index-causal masks only)";
  if (window != 0)
    return "the mask has a sliding window (cuDNN runs index-causal masks "
           "only)";
  return "";
#endif
}

#ifdef GLIMMER_RT_HAVE_CUDNN
CudnnAttentionShape cudnnShape(const AttentionShape &s, bool causal,
                               double scale, AttentionLayout layout) {
  return {s.B, s.Hq, s.Hkv, s.Tq, s.Tk, s.D, causal, scale, layout};
}
#endif

/// The output's shape as stored: [B, Hq, Tq, D] or sequence-major.
Shape outputShape(const AttentionShape &s, AttentionLayout layout) {
  if (layout.output)
    return {s.B, s.Tq, s.Hq, s.D};
  return {s.B, s.Hq, s.Tq, s.D};
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::tuple<Tensor, Tensor>
attention(const Tensor &q, const Tensor &k, const Tensor &v,
          const Tensor &qPositions, const Tensor &kPositions,
          const Tensor &qDocuments, const Tensor &kDocuments,
          const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
          int64_t window, double scale, AttentionLayout layout) {
  const char *op = "attention";
  detail::AttentionViews h = detail::attentionViews(op, layout, q, k, v);
  AttentionShape s =
      checkAttention(op, h.q, h.k, h.v, qPositions, kPositions, qDocuments,
                     kDocuments, qBlocks, kBlocks, causal, window, scale);
  checkHeadDim(op, s.D);
  Ctx c(op, {&q, &k, &v, &qPositions, &kPositions, &qDocuments, &kDocuments,
             &qBlocks, &kBlocks});
  Tensor out = c.empty(q.dtype(), outputShape(s, layout));
  Tensor lse = c.empty(lseType(q.dtype()), {s.B, s.Hq, s.Tq});
  if (s.B * s.Hq * s.Tq == 0)
    return std::make_tuple(out, lse);
  std::string why = cudnnMaskReason(qPositions, qDocuments, qBlocks, window);
#ifdef GLIMMER_RT_HAVE_CUDNN
  if (why.empty() && cudnnAttentionForward(op, c.device.index, c.stream,
                                           cudnnShape(s, causal, scale, layout),
                                           q, k, v, out, lse, why)) {
    noteAttentionEngine(q.dtype(), "");
    return std::make_tuple(out, lse);
  }
#endif
  noteAttentionEngine(q.dtype(), why);
  // The kernels below read [B, H, T, D] only.
  if (layout.any()) {
    out = lse = Tensor(); // the call makes its own
    return detail::attentionTransposed(q, k, v, qPositions, kPositions,
                                       qDocuments, kDocuments, qBlocks, kBlocks,
                                       causal, window, scale, layout);
  }
  IndexPositions index(c, s, causal, qPositions, kPositions);
  Operands o{q,       k,       v,      index.q, index.k, qDocuments, kDocuments,
             qBlocks, kBlocks, causal, window,  scale,   s};
  dispatchFloat(op, q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same<T, double>::value) {
      int bucket = tensorCoreBucket(s, sizeof(T), {&q, &k, &v});
      if (bucket == 64)
        return forwardTc<T, 64>(c, o, out, lse), 0;
      if (bucket == 128)
        return forwardTc<T, 128>(c, o, out, lse), 0;
    }
    dispatchHeadDim(op, s.D, [&](auto dmax) {
      forwardSimt<T, decltype(dmax)::value>(c, o, out, lse);
    });
    return 0;
  });
  return std::make_tuple(out, lse);
}

std::tuple<Tensor, Tensor, Tensor>
attentionGrad(const Tensor &grad, const Tensor &q, const Tensor &k,
              const Tensor &v, const Tensor &out, const Tensor &lse,
              const Tensor &qPositions, const Tensor &kPositions,
              const Tensor &qDocuments, const Tensor &kDocuments,
              const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
              int64_t window, double scale, AttentionLayout layout) {
  const char *op = "attention_grad";
  detail::AttentionViews h =
      detail::attentionViews(op, layout, q, k, v, grad, out);
  AttentionShape s =
      checkAttention(op, h.q, h.k, h.v, qPositions, kPositions, qDocuments,
                     kDocuments, qBlocks, kBlocks, causal, window, scale);
  requireLike(op, h.grad, "grad", h.q, "query");
  requireLike(op, h.out, "output", h.q, "query");
  requireDefined(op, lse, "lse");
  check(lse.dtype() == lseType(q.dtype()), op,
        "expects lse in the query's precision (f32 for bf16 queries), got " +
            lse.describe());
  requireShape(op, lse, "lse", {s.B, s.Hq, s.Tq});
  checkHeadDim(op, s.D);
  Ctx c(op, {&grad, &q, &k, &v, &out, &lse, &qPositions, &kPositions,
             &qDocuments, &kDocuments, &qBlocks, &kBlocks});
  // Stored as q, k, v are (layouts included).
  Tensor dq = c.empty(q.dtype(), q.shape());
  Tensor dk = c.empty(k.dtype(), k.shape());
  Tensor dv = c.empty(v.dtype(), v.shape());
  // dK/dV exist (and are zero) even without queries, and dQ rows without
  // keys are zero: both come out of the kernels, which run whenever their
  // output has rows.
  if (dq.numel() == 0 && dk.numel() == 0)
    return std::make_tuple(dq, dk, dv);
  std::string why = dq.numel() == 0 || dk.numel() == 0
                        ? "no queries or no keys"
                        : cudnnMaskReason(qPositions, qDocuments, qBlocks,
                                          window);
#ifdef GLIMMER_RT_HAVE_CUDNN
  if (why.empty() &&
      cudnnAttentionBackward(op, c.device.index, c.stream,
                             cudnnShape(s, causal, scale, layout), grad, q, k,
                             v, out, lse, dq, dk, dv, why)) {
    noteAttentionEngine(q.dtype(), "");
    return std::make_tuple(dq, dk, dv);
  }
#endif
  noteAttentionEngine(q.dtype(), why);
  // The kernels below read [B, H, T, D] only.
  if (layout.any()) {
    dq = dk = dv = Tensor(); // the call makes its own
    return detail::attentionGradTransposed(
        grad, q, k, v, out, lse, qPositions, kPositions, qDocuments, kDocuments,
        qBlocks, kBlocks, causal, window, scale, layout);
  }
  IndexPositions index(c, s, causal, qPositions, kPositions);
  Operands o{q,       k,       v,      index.q, index.k, qDocuments, kDocuments,
             qBlocks, kBlocks, causal, window,  scale,   s};
  Grads gr{grad, lse, dq, dk, dv};
  dispatchFloat(op, q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor delta = computeDelta<T>(c, grad, out, s.B * s.Hq * s.Tq, s.D);
    if constexpr (!std::is_same<T, double>::value) {
      int bucket = tensorCoreBucket(s, sizeof(T), {&q, &k, &v, &grad});
      if (bucket == 64)
        return backwardTc<T, 64>(c, o, gr, delta), 0;
      if (bucket == 128)
        return backwardTc<T, 128>(c, o, gr, delta), 0;
    }
    dispatchHeadDim(op, s.D, [&](auto dmax) {
      backwardSimt<T, decltype(dmax)::value>(c, o, gr, delta);
    });
    return 0;
  });
  return std::make_tuple(dq, dk, dv);
}

} // namespace cuda
} // namespace glimmer_rt
