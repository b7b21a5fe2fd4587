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
// Masks are functions of explicit positions and documents (see Kernels.h).
// Work is skipped per pair of tiles when no key of the key tile can be
// visible to any query of the query tile: min(key positions) > max(query
// positions) under causality, or disjoint document ranges. That is decided
// from per-tile statistics, never from tile indices, so it stays exact
// after a context-parallel permutation of the sequence.
//
// bf16 attention with an index-causal mask (causal without positions) or
// none, and no documents, runs in cuDNN's fused flash attention when the
// runtime is built with cuDNN (CudnnAttention.h) and cuDNN supports the
// shape; everything else runs here. Causal attention without positions
// reads the indices as positions (an iota made for the call).
//
// Two implementations:
//  * SIMT kernels for every type (f32 and bf16 compute in f32, f64 in f64)
//    and head dimensions up to 256 (buckets 32/64/128/256, zero-padded);
//  * tensor-core kernels (mma.sync, f32 accumulation) for bf16 and f32
//    (as 3xTF32, see below) with head dimensions up to 128 whose rows are
//    whole 16-byte chunks (multiples of 8 for bf16, of 4 for f32) and
//    16-byte aligned operands. Setting GLIMMER_CUDA_ATTENTION=simt in the
//    environment forces the SIMT kernels (f32 arithmetic throughout), =mma
//    these kernels instead of cuDNN's (for comparisons).
//
// As on the CPU, a query row with no visible key gets a zero output and
// lse = -inf, and no gradient. lse is f64 for f64 queries and f32 otherwise
// (bf16 queries included), as the op's verifier types it.
//
//===----------------------------------------------------------------------===//

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

namespace glimmer_rt {
namespace cuda {
namespace {

struct AttentionShape {
  int64_t B, Hq, Hkv, Tq, Tk, D;
};

AttentionShape checkAttention(const char *op, const Tensor &q, const Tensor &k,
                              const Tensor &v, const Tensor &qPositions,
                              const Tensor &kPositions,
                              const Tensor &qDocuments,
                              const Tensor &kDocuments, bool causal,
                              double scale) {
  requireFloat(op, q, "query");
  requireRank(op, q, "query [B, H, T, D]", 4);
  requireDefined(op, k, "key");
  requireRank(op, k, "key [B, H, T, D]", 4);
  requireLike(op, v, "value", k, "key");
  check(k.dtype() == q.dtype(), op,
        "expects query and key of the same type, got " + q.describe() +
            " and " + k.describe());
  AttentionShape s;
  s.B = q.dim(0);
  s.Hq = q.dim(1);
  s.Tq = q.dim(2);
  s.D = q.dim(3);
  s.Hkv = k.dim(1);
  s.Tk = k.dim(2);
  check(k.dim(0) == s.B && k.dim(3) == s.D, op,
        "key " + k.describe() + " does not match query batch and head size " +
            q.describe());
  check(s.Hkv > 0 && s.Hq % s.Hkv == 0, op,
        "query heads (" + std::to_string(s.Hq) +
            ") must be a multiple of key/value heads (" +
            std::to_string(s.Hkv) + ")");
  check(scale > 0, op, "expects scale > 0, got " + std::to_string(scale));
  check(qPositions.defined() == kPositions.defined(), op,
        "expects query and key positions together or neither");
  check(qDocuments.defined() == kDocuments.defined(), op,
        "expects query and key documents together or neither");
  if (qPositions.defined()) {
    requireInt(op, qPositions, "query positions");
    requireInt(op, kPositions, "key positions");
    requireShape(op, qPositions, "query positions", {s.B, s.Tq});
    requireShape(op, kPositions, "key positions", {s.B, s.Tk});
  }
  if (qDocuments.defined()) {
    requireInt(op, qDocuments, "query documents");
    requireInt(op, kDocuments, "key documents");
    requireShape(op, qDocuments, "query documents", {s.B, s.Tq});
    requireShape(op, kDocuments, "key documents", {s.B, s.Tk});
  }
  return s;
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
  Idx qPos, kPos, qDoc, kDoc;
  // Per tile: (min position, max position, min document, max document).
  const int64_t *qStats = nullptr, *kStats = nullptr;
  int64_t B = 0, Hq = 0, Hkv = 0, Tq = 0, Tk = 0, D = 0, group = 1;
  int64_t nQT = 0, nKT = 0;
  bool causal = false, docs = false;
  double scale = 1.0;
};

__device__ __forceinline__ bool allowed(bool causal, bool docs, int64_t qp,
                                        int64_t kp, int64_t qd, int64_t kd) {
  return (!causal || kp <= qp) && (!docs || kd == qd);
}

/// Whether some key of key tile kt may be visible to some query of query
/// tile qt (false only when provably none is).
template <typename T>
__device__ __forceinline__ bool tileVisible(const AttnArgs<T> &a, int64_t b,
                                            int64_t qt, int64_t kt) {
  if (!a.qStats)
    return true;
  const int64_t *qs = a.qStats + (b * a.nQT + qt) * 4;
  const int64_t *ks = a.kStats + (b * a.nKT + kt) * 4;
  if (a.causal && ks[0] > qs[1])
    return false;
  if (a.docs && (ks[2] > qs[3] || qs[2] > ks[3]))
    return false;
  return true;
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

/// Per tile of `tile` rows of each batch entry: min/max position and
/// min/max document over the tile's rows. One warp per tile.
__global__ void tileStatsKernel(int64_t *__restrict__ out, Idx pos, Idx doc,
                                bool hasPos, bool hasDoc, int64_t B, int64_t T,
                                int64_t tile, int64_t nTiles) {
  int64_t w = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  if (w >= B * nTiles)
    return;
  int64_t b = w / nTiles, t = w % nTiles;
  int64_t lo = std::numeric_limits<int64_t>::max(),
          hi = std::numeric_limits<int64_t>::min();
  int64_t dlo = lo, dhi = hi;
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
  }
  if (lane == 0) {
    int64_t *o = out + w * 4;
    o[0] = lo;
    o[1] = hi;
    o[2] = dlo;
    o[3] = dhi;
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

//===----------------------------------------------------------------------===//
// SIMT kernels
//===----------------------------------------------------------------------===//
//
// A block of 8 warps. In the forward and dQ kernels each warp owns R query
// rows of the block's tile and each lane KPL keys of the key tile (BK = 32 *
// KPL): row operands are read from shared memory as warp-wide broadcasts,
// key operands as conflict-free 16-byte vectors (rows padded by 16 bytes).
// P (or dS) goes through a per-warp shared buffer to the P V product, in
// which each lane owns DMAX / 32 output columns. The dK/dV kernel swaps the
// roles: warps own R keys, lanes own queries.

template <typename A, int N>
struct alignas(sizeof(A) * N) Pack {
  A v[N];
};

template <typename T, int DMAX>
struct Simt {
  using A = acc_t<T>;
  static constexpr bool kDouble = sizeof(A) == 8;
  static constexpr int W = 8;
  static constexpr int R =
      kDouble ? (DMAX >= 256 ? 2 : 4) : (DMAX >= 256 ? 4 : 8);
  static constexpr int KPL = (!kDouble && DMAX <= 64) ? 2 : 1;
  static constexpr int VW = 16 / int(sizeof(A)); // elements per 16 bytes
  static constexpr int LD = DMAX + VW;           // padded row stride
  static constexpr int BQ = R * W;               // rows owned by the warps
  static constexpr int BK = 32 * KPL;            // rows owned by the lanes
  static constexpr int CPL = DMAX / 32;          // output columns per lane
  static constexpr int CV = CPL < VW ? CPL : VW;
  static constexpr int NG = CPL / CV;
  static constexpr size_t kFwdSmem =
      size_t(BQ * LD + 2 * BK * LD + W * R * BK) * sizeof(A) +
      size_t(2 * BQ + 2 * BK) * 8;
  static constexpr size_t kBwdSmem =
      size_t(2 * BQ * LD + 2 * BK * LD + W * R * BK + 2 * BK) * sizeof(A) +
      size_t(2 * BQ + 2 * BK) * 8;
  // Blocks per SM that shared memory allows (228 KiB per SM, 1 KiB of it
  // reserved per block), capped at 2. Given to __launch_bounds__ so that
  // ptxas budgets registers for that occupancy, and no more.
  static constexpr int smemBlocks(size_t smem) {
    return (size_t(228) << 10) / (smem + 1024) >= 2 ? 2 : 1;
  }
  static constexpr int kFwdBlocks = smemBlocks(kFwdSmem);
  static constexpr int kBwdBlocks = smemBlocks(kBwdSmem);
};

constexpr int kSimtThreads = 256;

/// Rows [row0, row0 + ROWS) of a [nrows, D] matrix into shared memory
/// (stride LD), converted to the compute type and zero-padded.
template <typename T, int ROWS, int DMAX, int LD>
__device__ __forceinline__ void
loadRowsSimt(acc_t<T> *s, const T *g, int64_t row0, int64_t nrows, int64_t D) {
  for (int idx = threadIdx.x; idx < ROWS * DMAX; idx += kSimtThreads) {
    int r = idx / DMAX, d = idx % DMAX;
    int64_t row = row0 + r;
    s[r * LD + d] =
        (row < nrows && d < D) ? acc_t<T>(ld(g + row * D + d)) : acc_t<T>(0);
  }
}

/// s[i][kk] += dot(X row i, Y row lane + 32 kk) over DMAX columns; X rows
/// are broadcast, Y rows differ per lane.
template <typename A, int R, int KPL, int DMAX, int LD, int VW>
__device__ __forceinline__ void rowDots(A (&s)[R][KPL], const A *X, const A *Y,
                                        int lane) {
#pragma unroll 1
  for (int d = 0; d < DMAX; d += VW) {
    Pack<A, VW> y[KPL];
#pragma unroll
    for (int kk = 0; kk < KPL; ++kk)
      y[kk] =
          *reinterpret_cast<const Pack<A, VW> *>(Y + (lane + 32 * kk) * LD + d);
#pragma unroll
    for (int i = 0; i < R; ++i) {
      Pack<A, VW> x = *reinterpret_cast<const Pack<A, VW> *>(X + i * LD + d);
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk)
#pragma unroll
        for (int u = 0; u < VW; ++u)
          s[i][kk] += x.v[u] * y[kk].v[u];
    }
  }
}

/// acc[i][c] += sum_j P[i][j] * X[j][column c of the lane], j < NJ. P is
/// read PW entries at a time: wider broadcasts would hold R * PW values in
/// registers and push the kernels that accumulate two tiles into spills.
template <typename A, int R, int NJ, int LD, int CV, int NG, int PW>
__device__ __forceinline__ void accumulateRows(A (&acc)[R][CV * NG], const A *P,
                                               const A *X, int lane) {
#pragma unroll 2
  for (int j = 0; j < NJ; j += PW) {
    Pack<A, PW> p[R];
#pragma unroll
    for (int i = 0; i < R; ++i)
      p[i] = *reinterpret_cast<const Pack<A, PW> *>(P + i * NJ + j);
#pragma unroll
    for (int u = 0; u < PW; ++u)
#pragma unroll
      for (int g = 0; g < NG; ++g) {
        Pack<A, CV> x = *reinterpret_cast<const Pack<A, CV> *>(
            X + (j + u) * LD + g * 32 * CV + lane * CV);
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int c = 0; c < CV; ++c)
            acc[i][g * CV + c] += p[i].v[u] * x.v[c];
      }
  }
}

/// Stores the lane's columns of row `row` (scaled by `mul`), columns < D.
template <typename T, int CV, int NG>
__device__ __forceinline__ void storeRow(T *row, const acc_t<T> (&acc)[CV * NG],
                                         acc_t<T> mul, int64_t D, int lane) {
#pragma unroll
  for (int g = 0; g < NG; ++g)
#pragma unroll
    for (int c = 0; c < CV; ++c) {
      int64_t col = g * 32 * CV + lane * CV + c;
      if (col < D)
        st(row + col, acc[g * CV + c] * mul);
    }
}

template <typename T, int DMAX>
__global__ void __launch_bounds__(kSimtThreads, Simt<T, DMAX>::kFwdBlocks)
    attnFwdSimt(AttnArgs<T> a) {
  using C = Simt<T, DMAX>;
  using A = typename C::A;
  constexpr int R = C::R, KPL = C::KPL, VW = C::VW, LD = C::LD, BQ = C::BQ,
                BK = C::BK, CV = C::CV, NG = C::NG, CPL = C::CPL;
  extern __shared__ __align__(16) unsigned char smem[];
  A *Qs = reinterpret_cast<A *>(smem);
  A *Ks = Qs + BQ * LD, *Vs = Ks + BK * LD, *Ps = Vs + BK * LD;
  int64_t *qposS = reinterpret_cast<int64_t *>(Ps + C::W * R * BK);
  int64_t *qdocS = qposS + BQ, *kposS = qdocS + BQ, *kdocS = kposS + BK;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  // The last query tiles (the most keys under causality) start first.
  const int64_t BH = a.B * a.Hq, bid = blockIdx.x;
  const int64_t qt = a.nQT - 1 - bid / BH, bh = bid % BH;
  const int64_t b = bh / a.Hq, kvh = (bh % a.Hq) / a.group;
  const int64_t q0 = qt * BQ, D = a.D;
  const T *Qg = a.q + bh * a.Tq * D;
  const T *Kg = a.k + (b * a.Hkv + kvh) * a.Tk * D;
  const T *Vg = a.v + (b * a.Hkv + kvh) * a.Tk * D;

  loadRowsSimt<T, BQ, DMAX, LD>(Qs, Qg, q0, a.Tq, D);
  if (tid < BQ) {
    int64_t i = q0 + tid;
    bool in = i < a.Tq;
    qposS[tid] = a.causal && in ? a.qPos[b * a.Tq + i] : 0;
    qdocS[tid] = a.docs && in ? a.qDoc[b * a.Tq + i] : 0;
  }

  A o[R][CPL], m[R], l[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    m[i] = negInf<A>();
    l[i] = 0;
#pragma unroll
    for (int c = 0; c < CPL; ++c)
      o[i][c] = 0;
  }
  const A sc = A(a.scale);
  const A *Qw = Qs + warp * R * LD;
  A *Pw = Ps + warp * R * BK;

  for (int64_t kt = 0; kt < a.nKT; ++kt) {
    if (!tileVisible(a, b, qt, kt))
      continue;
    const int64_t k0 = kt * BK;
    __syncthreads(); // the previous tile is no longer read
    loadRowsSimt<T, BK, DMAX, LD>(Ks, Kg, k0, a.Tk, D);
    loadRowsSimt<T, BK, DMAX, LD>(Vs, Vg, k0, a.Tk, D);
    if (tid < BK) {
      int64_t j = k0 + tid;
      bool in = j < a.Tk;
      kposS[tid] = a.causal && in ? a.kPos[b * a.Tk + j] : 0;
      kdocS[tid] = a.docs && in ? a.kDoc[b * a.Tk + j] : 0;
    }
    __syncthreads();

    A s[R][KPL];
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk)
        s[i][kk] = 0;
    rowDots<A, R, KPL, DMAX, LD, VW>(s, Qw, Ks, lane);

#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int64_t qp = qposS[warp * R + i], qd = qdocS[warp * R + i];
      A mx = negInf<A>();
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) {
        int j = lane + 32 * kk;
        bool ok = k0 + j < a.Tk &&
                  allowed(a.causal, a.docs, qp, kposS[j], qd, kdocS[j]);
        s[i][kk] = ok ? sc * s[i][kk] : negInf<A>();
        mx = s[i][kk] > mx ? s[i][kk] : mx;
      }
      mx = warpMax(mx);
      A mNew = mx > m[i] ? mx : m[i];
      // A row with no visible key so far keeps m = -inf: subtract 0 then.
      A mUse = mNew == negInf<A>() ? A(0) : mNew;
      A alpha = expOf(m[i] - mUse);
      m[i] = mNew;
      A ps = 0;
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) {
        A p = expOf(s[i][kk] - mUse);
        Pw[i * BK + lane + 32 * kk] = p;
        ps += p;
      }
      l[i] = l[i] * alpha + ps;
#pragma unroll
      for (int c = 0; c < CPL; ++c)
        o[i][c] *= alpha;
    }
    __syncwarp();
    accumulateRows<A, R, BK, LD, CV, NG, 2>(o, Pw, Vs, lane);
  }

#pragma unroll
  for (int i = 0; i < R; ++i) {
    A L = warpSum(l[i]); // lane partial sums of p
    int64_t qi = q0 + warp * R + i;
    if (qi < a.Tq) {
      A inv = L > 0 ? A(1) / L : A(0); // fully masked: zero output
      storeRow<T, CV, NG>(a.out + (bh * a.Tq + qi) * D, o[i], inv, D, lane);
      if (lane == 0)
        a.lseOut[bh * a.Tq + qi] = L > 0 ? m[i] + logOf(L) : negInf<A>();
    }
  }
}

/// dQ: per query tile, over the visible key tiles.
template <typename T, int DMAX>
__global__ void __launch_bounds__(kSimtThreads, Simt<T, DMAX>::kBwdBlocks)
    attnDqSimt(AttnArgs<T> a) {
  using C = Simt<T, DMAX>;
  using A = typename C::A;
  constexpr int R = C::R, KPL = C::KPL, VW = C::VW, LD = C::LD, BQ = C::BQ,
                BK = C::BK, CV = C::CV, NG = C::NG, CPL = C::CPL;
  extern __shared__ __align__(16) unsigned char smem[];
  A *Qs = reinterpret_cast<A *>(smem);
  A *Gs = Qs + BQ * LD, *Ks = Gs + BQ * LD, *Vs = Ks + BK * LD,
    *Ps = Vs + BK * LD;
  int64_t *qposS = reinterpret_cast<int64_t *>(Ps + C::W * R * BK + 2 * BK);
  int64_t *qdocS = qposS + BQ, *kposS = qdocS + BQ, *kdocS = kposS + BK;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int64_t BH = a.B * a.Hq, bid = blockIdx.x;
  const int64_t qt = a.nQT - 1 - bid / BH, bh = bid % BH;
  const int64_t b = bh / a.Hq, kvh = (bh % a.Hq) / a.group;
  const int64_t q0 = qt * BQ, D = a.D;
  const T *Kg = a.k + (b * a.Hkv + kvh) * a.Tk * D;
  const T *Vg = a.v + (b * a.Hkv + kvh) * a.Tk * D;

  loadRowsSimt<T, BQ, DMAX, LD>(Qs, a.q + bh * a.Tq * D, q0, a.Tq, D);
  loadRowsSimt<T, BQ, DMAX, LD>(Gs, a.dO + bh * a.Tq * D, q0, a.Tq, D);
  if (tid < BQ) {
    int64_t i = q0 + tid;
    bool in = i < a.Tq;
    qposS[tid] = a.causal && in ? a.qPos[b * a.Tq + i] : 0;
    qdocS[tid] = a.docs && in ? a.qDoc[b * a.Tq + i] : 0;
  }
  A lse[R], dlt[R], dq[R][CPL];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    int64_t qi = q0 + warp * R + i;
    lse[i] = qi < a.Tq ? a.lse[bh * a.Tq + qi] : negInf<A>();
    dlt[i] = qi < a.Tq ? a.delta[bh * a.Tq + qi] : A(0);
#pragma unroll
    for (int c = 0; c < CPL; ++c)
      dq[i][c] = 0;
  }
  const A sc = A(a.scale);
  const A *Qw = Qs + warp * R * LD, *Gw = Gs + warp * R * LD;
  A *Pw = Ps + warp * R * BK;

  for (int64_t kt = 0; kt < a.nKT; ++kt) {
    if (!tileVisible(a, b, qt, kt))
      continue;
    const int64_t k0 = kt * BK;
    __syncthreads();
    loadRowsSimt<T, BK, DMAX, LD>(Ks, Kg, k0, a.Tk, D);
    loadRowsSimt<T, BK, DMAX, LD>(Vs, Vg, k0, a.Tk, D);
    if (tid < BK) {
      int64_t j = k0 + tid;
      bool in = j < a.Tk;
      kposS[tid] = a.causal && in ? a.kPos[b * a.Tk + j] : 0;
      kdocS[tid] = a.docs && in ? a.kDoc[b * a.Tk + j] : 0;
    }
    __syncthreads();

    A s[R][KPL], dp[R][KPL];
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk)
        s[i][kk] = dp[i][kk] = 0;
    rowDots<A, R, KPL, DMAX, LD, VW>(s, Qw, Ks, lane);
    rowDots<A, R, KPL, DMAX, LD, VW>(dp, Gw, Vs, lane);
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int64_t qp = qposS[warp * R + i], qd = qdocS[warp * R + i];
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) {
        int j = lane + 32 * kk;
        // Fully masked rows (lse = -inf) get no gradient, as on the CPU.
        bool ok = k0 + j < a.Tk && lse[i] != negInf<A>() &&
                  allowed(a.causal, a.docs, qp, kposS[j], qd, kdocS[j]);
        A p = ok ? expOf(sc * s[i][kk] - lse[i]) : A(0);
        Pw[i * BK + j] = sc * (p * (dp[i][kk] - dlt[i]));
      }
    }
    __syncwarp();
    accumulateRows<A, R, BK, LD, CV, NG, 2>(dq, Pw, Ks, lane);
  }

#pragma unroll
  for (int i = 0; i < R; ++i) {
    int64_t qi = q0 + warp * R + i;
    if (qi < a.Tq)
      storeRow<T, CV, NG>(a.dq + (bh * a.Tq + qi) * D, dq[i], A(1), D, lane);
  }
}

/// dK and dV: per key tile (warps own keys, lanes own queries), over the
/// visible query tiles of every query head of the key/value head's group.
/// Here nKT counts key tiles of BQ rows and nQT query tiles of BK rows.
template <typename T, int DMAX>
__global__ void __launch_bounds__(kSimtThreads, Simt<T, DMAX>::kBwdBlocks)
    attnDkvSimt(AttnArgs<T> a) {
  using C = Simt<T, DMAX>;
  using A = typename C::A;
  constexpr int R = C::R, QPL = C::KPL, VW = C::VW, LD = C::LD, BKEY = C::BQ,
                BQRY = C::BK, CV = C::CV, NG = C::NG, CPL = C::CPL,
                PW = R * CPL >= 32 ? 1 : 2;
  extern __shared__ __align__(16) unsigned char smem[];
  A *Ks = reinterpret_cast<A *>(smem);
  A *Vs = Ks + BKEY * LD, *Qs = Vs + BKEY * LD, *Gs = Qs + BQRY * LD,
    *Ps = Gs + BQRY * LD;
  A *lseS = Ps + C::W * R * BQRY, *dltS = lseS + BQRY;
  int64_t *kposS = reinterpret_cast<int64_t *>(dltS + BQRY);
  int64_t *kdocS = kposS + BKEY, *qposS = kdocS + BKEY, *qdocS = qposS + BQRY;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int64_t BHkv = a.B * a.Hkv, bid = blockIdx.x;
  const int64_t kt = bid / BHkv, bkv = bid % BHkv, b = bkv / a.Hkv;
  const int64_t k0 = kt * BKEY, D = a.D;

  loadRowsSimt<T, BKEY, DMAX, LD>(Ks, a.k + bkv * a.Tk * D, k0, a.Tk, D);
  loadRowsSimt<T, BKEY, DMAX, LD>(Vs, a.v + bkv * a.Tk * D, k0, a.Tk, D);
  if (tid < BKEY) {
    int64_t j = k0 + tid;
    bool in = j < a.Tk;
    kposS[tid] = a.causal && in ? a.kPos[b * a.Tk + j] : 0;
    kdocS[tid] = a.docs && in ? a.kDoc[b * a.Tk + j] : 0;
  }
  A dk[R][CPL], dv[R][CPL];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int c = 0; c < CPL; ++c)
      dk[i][c] = dv[i][c] = 0;
  const A sc = A(a.scale);
  const A *Kw = Ks + warp * R * LD, *Vw = Vs + warp * R * LD;
  A *Pw = Ps + warp * R * BQRY;

  for (int64_t hh = 0; hh < a.group; ++hh) {
    const int64_t bh = b * a.Hq + (bkv % a.Hkv) * a.group + hh;
    const T *Qg = a.q + bh * a.Tq * D, *Gg = a.dO + bh * a.Tq * D;
    for (int64_t qt = 0; qt < a.nQT; ++qt) {
      if (!tileVisible(a, b, qt, kt))
        continue;
      const int64_t q0 = qt * BQRY;
      __syncthreads();
      loadRowsSimt<T, BQRY, DMAX, LD>(Qs, Qg, q0, a.Tq, D);
      loadRowsSimt<T, BQRY, DMAX, LD>(Gs, Gg, q0, a.Tq, D);
      if (tid < BQRY) {
        int64_t i = q0 + tid;
        bool in = i < a.Tq;
        lseS[tid] = in ? a.lse[bh * a.Tq + i] : negInf<A>();
        dltS[tid] = in ? a.delta[bh * a.Tq + i] : A(0);
        qposS[tid] = a.causal && in ? a.qPos[b * a.Tq + i] : 0;
        qdocS[tid] = a.docs && in ? a.qDoc[b * a.Tq + i] : 0;
      }
      __syncthreads();

      // P^T first; dP^T only after dV is updated, which keeps fewer values
      // live across the accumulation.
      A s[R][QPL];
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int qq = 0; qq < QPL; ++qq)
          s[i][qq] = 0;
      rowDots<A, R, QPL, DMAX, LD, VW>(s, Kw, Qs, lane);
#pragma unroll
      for (int i = 0; i < R; ++i) {
        const int64_t kp = kposS[warp * R + i], kd = kdocS[warp * R + i];
#pragma unroll
        for (int qq = 0; qq < QPL; ++qq) {
          int qi = lane + 32 * qq;
          A L = lseS[qi]; // -inf for rows past Tq and fully masked rows
          bool ok = L != negInf<A>() &&
                    allowed(a.causal, a.docs, qposS[qi], kp, qdocS[qi], kd);
          Pw[i * BQRY + qi] = ok ? expOf(sc * s[i][qq] - L) : A(0);
        }
      }
      __syncwarp();
      accumulateRows<A, R, BQRY, LD, CV, NG, PW>(dv, Pw, Gs, lane);
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int qq = 0; qq < QPL; ++qq)
          s[i][qq] = 0;
      rowDots<A, R, QPL, DMAX, LD, VW>(s, Vw, Gs, lane); // dP^T
      __syncwarp(); // every lane has read P before it is overwritten
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int qq = 0; qq < QPL; ++qq) {
          int qi = lane + 32 * qq;
          A p = Pw[i * BQRY + qi]; // the lane's own entry
          Pw[i * BQRY + qi] = sc * (p * (s[i][qq] - dltS[qi])); // dS^T
        }
      __syncwarp();
      accumulateRows<A, R, BQRY, LD, CV, NG, PW>(dk, Pw, Qs, lane);
    }
  }

#pragma unroll
  for (int i = 0; i < R; ++i) {
    int64_t j = k0 + warp * R + i;
    if (j < a.Tk) {
      storeRow<T, CV, NG>(a.dk + (bkv * a.Tk + j) * D, dk[i], A(1), D, lane);
      storeRow<T, CV, NG>(a.dv + (bkv * a.Tk + j) * D, dv[i], A(1), D, lane);
    }
  }
}

//===----------------------------------------------------------------------===//
// Tensor-core kernels (bf16, and f32 as 3xTF32)
//===----------------------------------------------------------------------===//
//
// Four warps; each owns 16 rows of the block's tile and computes with
// mma.sync, accumulating in f32. Operand tiles live in shared memory as
// row-major elements with rows padded by 16 bytes (conflict-free fragment
// loads) and are filled by cp.async, double-buffered across the loop. A
// score tile's accumulator fragments are the A operand of the next product
// (P V, dS K, P^T dO, dS^T Q).
//
// `Mma<E>` holds what depends on the element type E:
//  * bf16: m16n8k16 with bf16 operands, fragments by ldmatrix; P and dS are
//    rounded to bf16 before their products;
//  * f32: m16n8k8 with TF32 operands, each operand x split into
//    big = tf32(x) and small = tf32(x - big), and a * b computed as
//    a.small * b.big + a.big * b.small + a.big * b.big (3xTF32: the dropped
//    small * small term and the halves' rounding stay below 2^-21 of the
//    product, near f32's 2^-24, at tensor-core speed). PyTorch's f32
//    memory-efficient attention computes the same way.

namespace tc {

constexpr int kThreads = 128;

__device__ __forceinline__ uint32_t smemAddr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cpAsync16(void *dst, const void *src,
                                          bool valid) {
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smemAddr(dst)),
      "l"(src), "r"(valid ? 16 : 0)
      : "memory");
}
__device__ __forceinline__ void cpCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cpWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], const bf16 *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, "
               "[%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smemAddr(p))
               : "memory");
}
__device__ __forceinline__ void ldsm4t(uint32_t (&r)[4], const bf16 *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, "
               "%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smemAddr(p))
               : "memory");
}

/// c += a * b for one m16n8k16 bf16 tile.
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4],
                                    uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  uint32_t r;
  memcpy(&r, &v, sizeof(r));
  return r;
}

/// c += a * b for one m16n8k8 TF32 tile.
__device__ __forceinline__ void mmaTf32(float (&c)[4], const uint32_t (&a)[4],
                                        uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t toTf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

/// x as big + small, both TF32 (x - big is exact in f32).
struct Tf32Pair {
  uint32_t big, small;
};
__device__ __forceinline__ Tf32Pair splitTf32(float x) {
  uint32_t big = toTf32(x);
  return {big, toTf32(x - __uint_as_float(big))};
}

/// An A fragment of m16n8k8 (rows g, g+8; k slots t, t+4), split.
struct Tf32A {
  uint32_t big[4], small[4];
};
__device__ __forceinline__ Tf32A splitA(float a0, float a1, float a2,
                                        float a3) {
  Tf32A f;
  const float v[4] = {a0, a1, a2, a3};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    Tf32Pair p = splitTf32(v[i]);
    f.big[i] = p.big;
    f.small[i] = p.small;
  }
  return f;
}

/// c += a * b in 3xTF32, b's two k slots given as f32.
__device__ __forceinline__ void mma3(float (&c)[4], const Tf32A &a, float b0,
                                     float b1) {
  Tf32Pair x = splitTf32(b0), y = splitTf32(b1);
  mmaTf32(c, a.small, x.big, y.big);
  mmaTf32(c, a.big, x.small, y.small);
  mmaTf32(c, a.big, x.big, y.big);
}

template <typename E>
struct Mma;

template <>
struct Mma<bf16> {
  /// acc[16 x 8 NT] += A[16 x DH] * Bt[8 NT x DH]^T; A and Bt row-major in
  /// shared memory with row stride LDS (Bt holds B's columns as rows).
  template <int DH, int NT, int LDS>
  static __device__ __forceinline__ void abt(float (&acc)[NT][4], const bf16 *A,
                                             const bf16 *Bt, int lane) {
    static_assert(NT % 2 == 0, "n tiles come in pairs");
#pragma unroll
    for (int kc = 0; kc < DH / 16; ++kc) {
      uint32_t af[4];
      ldsm4(af, A + ((lane & 7) + ((lane >> 3) & 1) * 8) * LDS + kc * 16 +
                    (lane >> 4) * 8);
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        uint32_t bfr[4];
        ldsm4(bfr, Bt + (np * 16 + (lane & 7) + (lane >> 4) * 8) * LDS +
                       kc * 16 + ((lane >> 3) & 1) * 8);
        mma(acc[2 * np], af, bfr[0], bfr[1]);
        mma(acc[2 * np + 1], af, bfr[2], bfr[3]);
      }
    }
  }

  /// acc[16 x 8 NT] += P[16 x 8 NK] * B[8 NK x 8 NT]; P as accumulator
  /// fragments (rounded to bf16 here), B row-major in shared memory.
  template <int NK, int NT, int LDS>
  static __device__ __forceinline__ void pb(float (&acc)[NT][4],
                                            const float (&p)[NK][4],
                                            const bf16 *B, int lane) {
    static_assert(NK % 2 == 0 && NT % 2 == 0, "tiles come in pairs");
#pragma unroll
    for (int kc = 0; kc < NK / 2; ++kc) {
      const uint32_t pa[4] = {pack(p[2 * kc][0], p[2 * kc][1]),
                              pack(p[2 * kc][2], p[2 * kc][3]),
                              pack(p[2 * kc + 1][0], p[2 * kc + 1][1]),
                              pack(p[2 * kc + 1][2], p[2 * kc + 1][3])};
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        uint32_t bfr[4];
        ldsm4t(bfr, B + (kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDS +
                        np * 16 + (lane >> 4) * 8);
        mma(acc[2 * np], pa, bfr[0], bfr[1]);
        mma(acc[2 * np + 1], pa, bfr[2], bfr[3]);
      }
    }
  }

  static __device__ __forceinline__ void storePair(bf16 *p, float a, float b) {
    *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(a, b);
  }
};

template <>
struct Mma<float> {
  /// As Mma<bf16>::abt. Fragment reads are conflict-free for row strides
  /// of 4 mod 32 words (lanes hit banks 4 g + t).
  template <int DH, int NT, int LDS>
  static __device__ __forceinline__ void abt(float (&acc)[NT][4],
                                             const float *A, const float *Bt,
                                             int lane) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int kc = 0; kc < DH / 8; ++kc) {
      const float *a = A + g * LDS + kc * 8 + t;
      Tf32A af = splitA(a[0], a[8 * LDS], a[4], a[8 * LDS + 4]);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const float *b = Bt + (nt * 8 + g) * LDS + kc * 8 + t;
        mma3(acc[nt], af, b[0], b[4]);
      }
    }
  }

  /// As Mma<bf16>::pb, P kept in f32 (split). An accumulator fragment holds
  /// columns 2t and 2t + 1 where an A fragment has k slots t and t + 4: the
  /// product sums over k in any order, so slot t takes column 2t, slot
  /// t + 4 column 2t + 1, and B's rows are read in that order (banks
  /// 8 t + g: conflict-free).
  ///
  /// The tensor cores' own additions do not round to nearest: over the
  /// hundreds of tiles a long sequence adds into acc, their error builds
  /// up (measured: dK 1.8e-5 off in norm over 1024 queries). So each call's
  /// products are summed in a fresh accumulator, added to acc with f32
  /// arithmetic.
  template <int NK, int NT, int LDS>
  static __device__ __forceinline__ void pb(float (&acc)[NT][4],
                                            const float (&p)[NK][4],
                                            const float *B, int lane) {
    const int g = lane >> 2, t = lane & 3;
    Tf32A af[NK];
#pragma unroll
    for (int kc = 0; kc < NK; ++kc)
      af[kc] = splitA(p[kc][0], p[kc][2], p[kc][1], p[kc][3]);
    const float *b = B + 2 * t * LDS + g;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      float part[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int kc = 0; kc < NK; ++kc)
        mma3(part, af[kc], b[kc * 8 * LDS + nt * 8],
             b[(kc * 8 + 1) * LDS + nt * 8]);
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[nt][e] += part[e];
    }
  }

  static __device__ __forceinline__ void storePair(float *p, float a, float b) {
    *reinterpret_cast<float2 *>(p) = make_float2(a, b);
  }
};

/// Elements per 16-byte chunk, and the padded row stride of a DH-wide tile.
template <typename E>
constexpr int kChunk = 16 / int(sizeof(E));
template <typename E, int DH>
constexpr int kLds = DH + kChunk<E>;

/// Rows [row0, row0 + ROWS) of a [nrows, D] matrix into shared memory
/// (stride kLds) by cp.async; missing rows and columns are zero-filled.
template <typename E, int ROWS, int DH>
__device__ __forceinline__ void loadRows(E *s, const E *g, int64_t row0,
                                         int64_t nrows, int64_t D) {
  constexpr int W = kChunk<E>, CH = DH / W, LDS = kLds<E, DH>;
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += kThreads) {
    int r = idx / CH, ch = idx % CH;
    int64_t row = row0 + r;
    bool valid = row < nrows && ch * W < D;
    cpAsync16(s + r * LDS + ch * W, valid ? g + row * D + ch * W : g, valid);
  }
}

template <typename T>
__device__ __forceinline__ int64_t nextVisibleKey(const AttnArgs<T> &a,
                                                  int64_t b, int64_t qt,
                                                  int64_t kt) {
  while (kt < a.nKT && !tileVisible(a, b, qt, kt))
    ++kt;
  return kt;
}

/// Stores an accumulator tile's two rows (times `mul`) as element pairs.
template <typename E, int NT>
__device__ __forceinline__ void storeTile(E *base, const float (&acc)[NT][4],
                                          int64_t row0, int64_t rows, int64_t D,
                                          float mul0, float mul1, int lane) {
  const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    int64_t row = row0 + g + rr * 8;
    if (row >= rows)
      continue;
    float mul = rr ? mul1 : mul0;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      int64_t col = nt * 8 + 2 * t4;
      if (col < D) // D is even: so is col, and col + 1 < D
        Mma<E>::storePair(base + row * D + col, acc[nt][2 * rr] * mul,
                          acc[nt][2 * rr + 1] * mul);
    }
  }
}

/// Tile sizes keep an f32 block's shared memory near a bf16 one's (two
/// blocks per SM at the wide head).
template <typename E, int DH>
struct Fwd {
  static constexpr bool kF32 = sizeof(E) == 4;
  static constexpr int BQ = 64, BK = kF32 && DH > 64 ? 32 : 64,
                       LDS = kLds<E, DH>;
  static constexpr size_t kSmem =
      size_t(BQ * LDS + 4 * BK * LDS) * sizeof(E) + size_t(4 * BK) * 8;
};

template <typename E, int DH>
__global__ void __launch_bounds__(kThreads) attnFwd(AttnArgs<E> a) {
  using C = Fwd<E, DH>;
  using M = Mma<E>;
  constexpr int BQ = C::BQ, BK = C::BK, LDS = C::LDS, NTD = DH / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  E *Qs = reinterpret_cast<E *>(smem);
  E *Ks = Qs + BQ * LDS, *Vs = Ks + 2 * BK * LDS; // two buffers each
  int64_t *kposS = reinterpret_cast<int64_t *>(Vs + 2 * BK * LDS);
  int64_t *kdocS = kposS + 2 * BK;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int64_t BH = a.B * a.Hq, bid = blockIdx.x;
  const int64_t qt = a.nQT - 1 - bid / BH, bh = bid % BH;
  const int64_t b = bh / a.Hq, kvh = (bh % a.Hq) / a.group;
  const int64_t q0 = qt * BQ, D = a.D;
  const E *Kg = a.k + (b * a.Hkv + kvh) * a.Tk * D;
  const E *Vg = a.v + (b * a.Hkv + kvh) * a.Tk * D;

  loadRows<E, BQ, DH>(Qs, a.q + bh * a.Tq * D, q0, a.Tq, D);
  cpCommit();
  int64_t qp[2], qd[2];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    int64_t i = q0 + warp * 16 + g + rr * 8;
    bool in = i < a.Tq;
    qp[rr] = a.causal && in ? a.qPos[b * a.Tq + i] : 0;
    qd[rr] = a.docs && in ? a.qDoc[b * a.Tq + i] : 0;
  }
  auto issue = [&](int64_t kt, int buf) {
    loadRows<E, BK, DH>(Ks + buf * BK * LDS, Kg, kt * BK, a.Tk, D);
    loadRows<E, BK, DH>(Vs + buf * BK * LDS, Vg, kt * BK, a.Tk, D);
    if (tid < BK) {
      int64_t j = kt * BK + tid;
      bool in = j < a.Tk;
      kposS[buf * BK + tid] = a.causal && in ? a.kPos[b * a.Tk + j] : 0;
      kdocS[buf * BK + tid] = a.docs && in ? a.kDoc[b * a.Tk + j] : 0;
    }
    cpCommit();
  };

  float o[NTD][4], m[2], l[2];
#pragma unroll
  for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      o[nt][e] = 0.f;
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    m[rr] = negInf<float>();
    l[rr] = 0.f;
  }
  const float sc = float(a.scale);

  int64_t kt = nextVisibleKey(a, b, qt, 0);
  if (kt < a.nKT)
    issue(kt, 0);
  int buf = 0;
  while (kt < a.nKT) {
    int64_t next = nextVisibleKey(a, b, qt, kt + 1);
    if (next < a.nKT) {
      issue(next, buf ^ 1);
      cpWait<1>();
    } else {
      cpWait<0>();
    }
    __syncthreads();

    float s[BK / 8][4];
#pragma unroll
    for (int nt = 0; nt < BK / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[nt][e] = 0.f;
    M::template abt<DH, BK / 8, LDS>(s, Qs + warp * 16 * LDS,
                                     Ks + buf * BK * LDS, lane);

    const int64_t k0 = kt * BK;
    const int64_t *kp = kposS + buf * BK, *kd = kdocS + buf * BK;
    float mx[2] = {negInf<float>(), negInf<float>()};
#pragma unroll
    for (int nt = 0; nt < BK / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int col = nt * 8 + 2 * t4 + (e & 1), rr = e >> 1;
        bool ok = k0 + col < a.Tk &&
                  allowed(a.causal, a.docs, qp[rr], kp[col], qd[rr], kd[col]);
        s[nt][e] = ok ? s[nt][e] * sc : negInf<float>();
        mx[rr] = fmaxf(mx[rr], s[nt][e]);
      }
    float mu[2], alpha[2];
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      mx[rr] = fmaxf(mx[rr], __shfl_xor_sync(0xffffffffu, mx[rr], 1));
      mx[rr] = fmaxf(mx[rr], __shfl_xor_sync(0xffffffffu, mx[rr], 2));
      float mNew = fmaxf(m[rr], mx[rr]);
      mu[rr] = mNew == negInf<float>() ? 0.f : mNew;
      alpha[rr] = __expf(m[rr] - mu[rr]);
      m[rr] = mNew;
    }
    float ls[2] = {0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < BK / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float p = __expf(s[nt][e] - mu[e >> 1]);
        s[nt][e] = p;
        ls[e >> 1] += p;
      }
#pragma unroll
    for (int rr = 0; rr < 2; ++rr)
      l[rr] = l[rr] * alpha[rr] + ls[rr];
#pragma unroll
    for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        o[nt][e] *= alpha[e >> 1];
    M::template pb<BK / 8, NTD, LDS>(o, s, Vs + buf * BK * LDS, lane);
    __syncthreads(); // everyone is done with `buf` before it is refilled
    buf ^= 1;
    kt = next;
  }
  cpWait<0>();

  float inv[2];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    float L = l[rr];
    L += __shfl_xor_sync(0xffffffffu, L, 1);
    L += __shfl_xor_sync(0xffffffffu, L, 2);
    inv[rr] = L > 0.f ? 1.f / L : 0.f;
    int64_t i = q0 + warp * 16 + g + rr * 8;
    if (t4 == 0 && i < a.Tq)
      a.lseOut[bh * a.Tq + i] = L > 0.f ? m[rr] + logf(L) : negInf<float>();
  }
  storeTile<E, NTD>(a.out + bh * a.Tq * D, o, q0 + warp * 16, a.Tq, D, inv[0],
                 inv[1], lane);
}

template <typename E, int DH>
struct Dq {
  static constexpr bool kF32 = sizeof(E) == 4;
  static constexpr int BQ = 64, BK = kF32 ? (DH > 64 ? 16 : 32) : 32,
                       LDS = kLds<E, DH>;
  static constexpr size_t kSmem =
      size_t(2 * BQ * LDS + 4 * BK * LDS) * sizeof(E) + size_t(4 * BK) * 8;
};

template <typename E, int DH>
__global__ void __launch_bounds__(kThreads) attnDq(AttnArgs<E> a) {
  using C = Dq<E, DH>;
  using M = Mma<E>;
  constexpr int BQ = C::BQ, BK = C::BK, LDS = C::LDS, NTD = DH / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  E *Qs = reinterpret_cast<E *>(smem);
  E *Gs = Qs + BQ * LDS, *Ks = Gs + BQ * LDS, *Vs = Ks + 2 * BK * LDS;
  int64_t *kposS = reinterpret_cast<int64_t *>(Vs + 2 * BK * LDS);
  int64_t *kdocS = kposS + 2 * BK;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int64_t BH = a.B * a.Hq, bid = blockIdx.x;
  const int64_t qt = a.nQT - 1 - bid / BH, bh = bid % BH;
  const int64_t b = bh / a.Hq, kvh = (bh % a.Hq) / a.group;
  const int64_t q0 = qt * BQ, D = a.D;
  const E *Kg = a.k + (b * a.Hkv + kvh) * a.Tk * D;
  const E *Vg = a.v + (b * a.Hkv + kvh) * a.Tk * D;

  loadRows<E, BQ, DH>(Qs, a.q + bh * a.Tq * D, q0, a.Tq, D);
  loadRows<E, BQ, DH>(Gs, a.dO + bh * a.Tq * D, q0, a.Tq, D);
  cpCommit();
  int64_t qp[2], qd[2];
  float lse[2], dlt[2];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    int64_t i = q0 + warp * 16 + g + rr * 8;
    bool in = i < a.Tq;
    qp[rr] = a.causal && in ? a.qPos[b * a.Tq + i] : 0;
    qd[rr] = a.docs && in ? a.qDoc[b * a.Tq + i] : 0;
    lse[rr] = in ? a.lse[bh * a.Tq + i] : negInf<float>();
    dlt[rr] = in ? a.delta[bh * a.Tq + i] : 0.f;
  }
  auto issue = [&](int64_t kt, int buf) {
    loadRows<E, BK, DH>(Ks + buf * BK * LDS, Kg, kt * BK, a.Tk, D);
    loadRows<E, BK, DH>(Vs + buf * BK * LDS, Vg, kt * BK, a.Tk, D);
    if (tid < BK) {
      int64_t j = kt * BK + tid;
      bool in = j < a.Tk;
      kposS[buf * BK + tid] = a.causal && in ? a.kPos[b * a.Tk + j] : 0;
      kdocS[buf * BK + tid] = a.docs && in ? a.kDoc[b * a.Tk + j] : 0;
    }
    cpCommit();
  };

  float dq[NTD][4];
#pragma unroll
  for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      dq[nt][e] = 0.f;
  const float sc = float(a.scale);

  int64_t kt = nextVisibleKey(a, b, qt, 0);
  if (kt < a.nKT)
    issue(kt, 0);
  int buf = 0;
  while (kt < a.nKT) {
    int64_t next = nextVisibleKey(a, b, qt, kt + 1);
    if (next < a.nKT) {
      issue(next, buf ^ 1);
      cpWait<1>();
    } else {
      cpWait<0>();
    }
    __syncthreads();

    float s[BK / 8][4], dp[BK / 8][4];
#pragma unroll
    for (int nt = 0; nt < BK / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[nt][e] = dp[nt][e] = 0.f;
    M::template abt<DH, BK / 8, LDS>(s, Qs + warp * 16 * LDS,
                                     Ks + buf * BK * LDS, lane);
    M::template abt<DH, BK / 8, LDS>(dp, Gs + warp * 16 * LDS,
                                     Vs + buf * BK * LDS, lane);
    const int64_t k0 = kt * BK;
    const int64_t *kp = kposS + buf * BK, *kd = kdocS + buf * BK;
#pragma unroll
    for (int nt = 0; nt < BK / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int col = nt * 8 + 2 * t4 + (e & 1), rr = e >> 1;
        bool ok = k0 + col < a.Tk && lse[rr] != negInf<float>() &&
                  allowed(a.causal, a.docs, qp[rr], kp[col], qd[rr], kd[col]);
        float p = ok ? __expf(s[nt][e] * sc - lse[rr]) : 0.f;
        s[nt][e] = p * (dp[nt][e] - dlt[rr]); // dS (unscaled)
      }
    M::template pb<BK / 8, NTD, LDS>(dq, s, Ks + buf * BK * LDS, lane);
    __syncthreads();
    buf ^= 1;
    kt = next;
  }
  cpWait<0>();
  storeTile<E, NTD>(a.dq + bh * a.Tq * D, dq, q0 + warp * 16, a.Tq, D, sc, sc,
                 lane);
}

/// BQ: queries per tile (the key tile is 64 rows, 16 per warp).
/// BQ: queries per tile (the key tile is 64 rows, 16 per warp). Smaller
/// query tiles for wide heads and f32 keep dK, dV, S and dP in registers
/// and the shared memory near two blocks per SM.
template <typename E, int DH>
struct Dkv {
  static constexpr bool kF32 = sizeof(E) == 4;
  static constexpr int BK = 64, LDS = kLds<E, DH>,
                       BQ = (DH > 64 ? 32 : 64) / (kF32 ? 2 : 1);
  static constexpr size_t kSmem =
      size_t(2 * BK * LDS + 4 * BQ * LDS) * sizeof(E) +
      size_t(2 * BQ) * (8 + 8 + 4 + 4);
};

/// Here nKT counts key tiles of 64 rows and nQT query tiles of BQ rows.
template <typename E, int DH>
__global__ void __launch_bounds__(kThreads) attnDkv(AttnArgs<E> a) {
  using C = Dkv<E, DH>;
  using M = Mma<E>;
  constexpr int BK = C::BK, BQ = C::BQ, LDS = C::LDS, NTD = DH / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  E *Ks = reinterpret_cast<E *>(smem);
  E *Vs = Ks + BK * LDS, *Qs = Vs + BK * LDS, *Gs = Qs + 2 * BQ * LDS;
  int64_t *qposS = reinterpret_cast<int64_t *>(Gs + 2 * BQ * LDS);
  int64_t *qdocS = qposS + 2 * BQ;
  float *lseS = reinterpret_cast<float *>(qdocS + 2 * BQ);
  float *dltS = lseS + 2 * BQ;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int64_t BHkv = a.B * a.Hkv, bid = blockIdx.x;
  const int64_t kt = bid / BHkv, bkv = bid % BHkv, b = bkv / a.Hkv;
  const int64_t k0 = kt * BK, D = a.D;
  const int64_t headBase = b * a.Hq + (bkv % a.Hkv) * a.group;

  loadRows<E, BK, DH>(Ks, a.k + bkv * a.Tk * D, k0, a.Tk, D);
  loadRows<E, BK, DH>(Vs, a.v + bkv * a.Tk * D, k0, a.Tk, D);
  cpCommit();
  int64_t kp[2], kd[2];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    int64_t j = k0 + warp * 16 + g + rr * 8;
    bool in = j < a.Tk;
    kp[rr] = a.causal && in ? a.kPos[b * a.Tk + j] : 0;
    kd[rr] = a.docs && in ? a.kDoc[b * a.Tk + j] : 0;
  }
  // The work items are (query head of the group, query tile) pairs.
  const int64_t items = a.group * a.nQT;
  auto nextItem = [&](int64_t it) {
    while (it < items && !tileVisible(a, b, it % a.nQT, kt))
      ++it;
    return it;
  };
  auto issue = [&](int64_t it, int buf) {
    const int64_t bh = headBase + it / a.nQT, q0 = (it % a.nQT) * BQ;
    loadRows<E, BQ, DH>(Qs + buf * BQ * LDS, a.q + bh * a.Tq * D, q0, a.Tq, D);
    loadRows<E, BQ, DH>(Gs + buf * BQ * LDS, a.dO + bh * a.Tq * D, q0, a.Tq, D);
    if (tid < BQ) {
      int64_t i = q0 + tid;
      bool in = i < a.Tq;
      lseS[buf * BQ + tid] = in ? a.lse[bh * a.Tq + i] : negInf<float>();
      dltS[buf * BQ + tid] = in ? a.delta[bh * a.Tq + i] : 0.f;
      qposS[buf * BQ + tid] = a.causal && in ? a.qPos[b * a.Tq + i] : 0;
      qdocS[buf * BQ + tid] = a.docs && in ? a.qDoc[b * a.Tq + i] : 0;
    }
    cpCommit();
  };

  float dk[NTD][4], dv[NTD][4];
#pragma unroll
  for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      dk[nt][e] = dv[nt][e] = 0.f;
  const float sc = float(a.scale);

  int64_t it = nextItem(0);
  if (it < items)
    issue(it, 0);
  int buf = 0;
  while (it < items) {
    int64_t next = nextItem(it + 1);
    if (next < items) {
      issue(next, buf ^ 1);
      cpWait<1>();
    } else {
      cpWait<0>();
    }
    __syncthreads();

    const E *Qb = Qs + buf * BQ * LDS, *Gb = Gs + buf * BQ * LDS;
    float s[BQ / 8][4], dp[BQ / 8][4];
#pragma unroll
    for (int nt = 0; nt < BQ / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[nt][e] = dp[nt][e] = 0.f;
    // S^T = K Q^T and dP^T = V dO^T (rows: keys, columns: queries).
    M::template abt<DH, BQ / 8, LDS>(s, Ks + warp * 16 * LDS, Qb, lane);
    M::template abt<DH, BQ / 8, LDS>(dp, Vs + warp * 16 * LDS, Gb, lane);
    const float *L = lseS + buf * BQ, *dl = dltS + buf * BQ;
    const int64_t *qpS = qposS + buf * BQ, *qdS = qdocS + buf * BQ;
#pragma unroll
    for (int nt = 0; nt < BQ / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int col = nt * 8 + 2 * t4 + (e & 1), rr = e >> 1;
        bool ok = L[col] != negInf<float>() &&
                  allowed(a.causal, a.docs, qpS[col], kp[rr], qdS[col], kd[rr]);
        float p = ok ? __expf(s[nt][e] * sc - L[col]) : 0.f;
        s[nt][e] = p;
        dp[nt][e] = p * (dp[nt][e] - dl[col]); // dS^T (unscaled)
      }
    M::template pb<BQ / 8, NTD, LDS>(dv, s, Gb, lane);
    M::template pb<BQ / 8, NTD, LDS>(dk, dp, Qb, lane);
    __syncthreads();
    buf ^= 1;
    it = next;
  }
  cpWait<0>();
  storeTile<E, NTD>(a.dk + bkv * a.Tk * D, dk, k0 + warp * 16, a.Tk, D, sc, sc,
                 lane);
  storeTile<E, NTD>(a.dv + bkv * a.Tk * D, dv, k0 + warp * 16, a.Tk, D, 1.f, 1.f,
                 lane);
}

} // namespace tc

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Per-tile mask statistics of one side, or an undefined tensor when no
/// mask is present.
Tensor tileStats(const Ctx &c, const Tensor &pos, const Tensor &doc,
                 bool causal, int64_t B, int64_t T, int64_t tile) {
  bool docs = doc.defined();
  if (!causal && !docs)
    return Tensor();
  int64_t n = B * ceilDiv(T, tile);
  Tensor stats = c.empty(DType::I64, {std::max<int64_t>(n, 1), 4});
  if (n > 0) {
    int64_t threads = n * 32;
    unsigned blocks = unsigned(ceilDiv(threads, kThreads));
    tileStatsKernel<<<blocks, kThreads, 0, c.stream>>>(
        stats.data<int64_t>(), idxOf(pos), idxOf(doc), causal, docs, B, T, tile,
        ceilDiv(T, tile));
    GLIMMER_CUDA_LAUNCHED(c.op);
  }
  return stats;
}

/// The operands every kernel shares.
struct Operands {
  const Tensor &q, &k, &v, &qPos, &kPos, &qDoc, &kDoc;
  bool causal;
  double scale;
  AttentionShape s;
};

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
  a.B = o.s.B;
  a.Hq = o.s.Hq;
  a.Hkv = o.s.Hkv;
  a.Tq = o.s.Tq;
  a.Tk = o.s.Tk;
  a.D = o.s.D;
  a.group = o.s.Hq / o.s.Hkv;
  a.causal = o.causal;
  a.docs = o.qDoc.defined();
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
  Tensor qs = tileStats(c, o.qPos, o.qDoc, o.causal, a.B, a.Tq, C::BQ);
  Tensor ks = tileStats(c, o.kPos, o.kDoc, o.causal, a.B, a.Tk, C::BK);
  if (qs.defined()) {
    a.qStats = qs.data<int64_t>();
    a.kStats = ks.data<int64_t>();
  }
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
  Tensor qs = tileStats(c, o.qPos, o.qDoc, o.causal, a.B, a.Tq, C::BQ);
  Tensor ks = tileStats(c, o.kPos, o.kDoc, o.causal, a.B, a.Tk, C::BK);
  if (qs.defined()) {
    a.qStats = qs.data<int64_t>();
    a.kStats = ks.data<int64_t>();
  }
  launch(c, tc::attnFwd<E, DH>, a.nQT * a.B * a.Hq, tc::kThreads, C::kSmem,
         a);
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
    Tensor qs = tileStats(c, o.qPos, o.qDoc, o.causal, a.B, a.Tq, C::BQ);
    Tensor ks = tileStats(c, o.kPos, o.kDoc, o.causal, a.B, a.Tk, C::BK);
    if (qs.defined()) {
      d.qStats = qs.data<int64_t>();
      d.kStats = ks.data<int64_t>();
    }
    launch(c, attnDqSimt<T, DMAX>, d.nQT * a.B * a.Hq, kSimtThreads,
           C::kBwdSmem, d);
  }
  // dK/dV: key tiles of BQ rows, query tiles of BK rows.
  {
    AttnArgs<T> d = a;
    d.nQT = ceilDiv(a.Tq, C::BK);
    d.nKT = ceilDiv(a.Tk, C::BQ);
    Tensor qs = tileStats(c, o.qPos, o.qDoc, o.causal, a.B, a.Tq, C::BK);
    Tensor ks = tileStats(c, o.kPos, o.kDoc, o.causal, a.B, a.Tk, C::BQ);
    if (qs.defined()) {
      d.qStats = qs.data<int64_t>();
      d.kStats = ks.data<int64_t>();
    }
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
    Tensor qs = tileStats(c, o.qPos, o.qDoc, o.causal, a.B, a.Tq, C::BQ);
    Tensor ks = tileStats(c, o.kPos, o.kDoc, o.causal, a.B, a.Tk, C::BK);
    if (qs.defined()) {
      d.qStats = qs.data<int64_t>();
      d.kStats = ks.data<int64_t>();
    }
    launch(c, tc::attnDq<E, DH>, d.nQT * a.B * a.Hq, tc::kThreads, C::kSmem,
           d);
  }
  {
    using C = tc::Dkv<E, DH>;
    constexpr int BQ = C::BQ;
    AttnArgs<E> d = a;
    d.nQT = ceilDiv(a.Tq, BQ);
    d.nKT = ceilDiv(a.Tk, C::BK);
    Tensor qs = tileStats(c, o.qPos, o.qDoc, o.causal, a.B, a.Tq, BQ);
    Tensor ks = tileStats(c, o.kPos, o.kDoc, o.causal, a.B, a.Tk, C::BK);
    if (qs.defined()) {
      d.qStats = qs.data<int64_t>();
      d.kStats = ks.data<int64_t>();
    }
    launch(c, tc::attnDkv<E, DH>, d.nKT * a.B * a.Hkv, tc::kThreads, C::kSmem,
           d);
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

#ifdef GLIMMER_RT_HAVE_CUDNN
CudnnAttentionShape cudnnShape(const AttentionShape &s, bool causal,
                               double scale) {
  return {s.B, s.Hq, s.Hkv, s.Tq, s.Tk, s.D, causal, scale};
}
#endif

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::tuple<Tensor, Tensor> attention(const Tensor &q, const Tensor &k,
                                     const Tensor &v, const Tensor &qPositions,
                                     const Tensor &kPositions,
                                     const Tensor &qDocuments,
                                     const Tensor &kDocuments, bool causal,
                                     double scale) {
  const char *op = "attention";
  AttentionShape s = checkAttention(op, q, k, v, qPositions, kPositions,
                                    qDocuments, kDocuments, causal, scale);
  checkHeadDim(op, s.D);
  Ctx c(op, {&q, &k, &v, &qPositions, &kPositions, &qDocuments, &kDocuments});
  Tensor out = c.empty(q.dtype(), q.shape());
  Tensor lse = c.empty(lseType(q.dtype()), {s.B, s.Hq, s.Tq});
  if (s.B * s.Hq * s.Tq == 0)
    return std::make_tuple(out, lse);
#ifdef GLIMMER_RT_HAVE_CUDNN
  if (!qPositions.defined() && !qDocuments.defined() &&
      cudnnAttentionForward(op, c.device.index, c.stream, cudnnShape(s, causal, scale),
                            q, k, v, out, lse))
    return std::make_tuple(out, lse);
#endif
  IndexPositions index(c, s, causal, qPositions, kPositions);
  Operands o{q,          k,          v,      index.q, index.k,
             qDocuments, kDocuments, causal, scale,   s};
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
              const Tensor &qDocuments, const Tensor &kDocuments, bool causal,
              double scale) {
  const char *op = "attention_grad";
  AttentionShape s = checkAttention(op, q, k, v, qPositions, kPositions,
                                    qDocuments, kDocuments, causal, scale);
  requireLike(op, grad, "grad", q, "query");
  requireLike(op, out, "output", q, "query");
  requireDefined(op, lse, "lse");
  check(lse.dtype() == lseType(q.dtype()), op,
        "expects lse in the query's precision (f32 for bf16 queries), got " +
            lse.describe());
  requireShape(op, lse, "lse", {s.B, s.Hq, s.Tq});
  checkHeadDim(op, s.D);
  Ctx c(op, {&grad, &q, &k, &v, &out, &lse, &qPositions, &kPositions,
             &qDocuments, &kDocuments});
  Tensor dq = c.empty(q.dtype(), q.shape());
  Tensor dk = c.empty(k.dtype(), k.shape());
  Tensor dv = c.empty(v.dtype(), v.shape());
  // dK/dV exist (and are zero) even without queries, and dQ rows without
  // keys are zero: both come out of the kernels, which run whenever their
  // output has rows.
  if (dq.numel() == 0 && dk.numel() == 0)
    return std::make_tuple(dq, dk, dv);
#ifdef GLIMMER_RT_HAVE_CUDNN
  if (dq.numel() > 0 && dk.numel() > 0 && !qPositions.defined() &&
      !qDocuments.defined() &&
      cudnnAttentionBackward(op, c.device.index, c.stream,
                             cudnnShape(s, causal, scale), grad, q, k, v, out,
                             lse, dq, dk, dv))
    return std::make_tuple(dq, dk, dv);
#endif
  IndexPositions index(c, s, causal, qPositions, kPositions);
  Operands o{q,          k,          v,      index.q, index.k,
             qDocuments, kDocuments, causal, scale,   s};
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
