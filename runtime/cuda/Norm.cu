//===- Norm.cu - RMSNorm, LayerNorm and RoPE on the GPU -------------------===//
//
// Row kernels: one warp per row when the row is short (D <= 1024), one
// 256-thread block per row otherwise. Each row computes exactly the CPU
// kernel's formulas (two-pass mean/variance, 1 / sqrt rather than rsqrt) in
// the accumulation type: f32 for f32 and bf16, f64 for f64. Reductions within
// a row use a fixed shuffle tree, so results do not depend on scheduling.
//
// The parameter gradients (dw, db) sum over all rows. They are reduced
// deterministically and without atomics: the row kernel stores each row's
// statistics, a second kernel sums fixed chunks of rows per column into
// partials, and a third sums the partials in chunk order.
//
//===----------------------------------------------------------------------===//

#include "Checks.cuh"
#include "Common.cuh"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace glimmer_rt {
namespace cuda {
namespace {

/// The dtype of accumulation-type scratch tensors.
template <typename T>
DType accDType() {
  return std::is_same<acc_t<T>, double>::value ? DType::F64 : DType::F32;
}

/// Calls f(T{}, U{}) for a norm's input type and its result's (or its
/// gradient's cotangent's) type: the same, or f32 and bf16 (mixed
/// precision; detail::normResultType and requireNormGrad checked them).
template <typename F>
void dispatchNormTypes(const char *op, DType x, DType other, F &&f) {
  if (x != other) {
    f(float{}, bf16{});
    return;
  }
  dispatchFloat(op, x, [&](auto tag) {
    f(tag, tag);
    return 0;
  });
}

//===----------------------------------------------------------------------===//
// Row reductions
//===----------------------------------------------------------------------===//

constexpr int kRowWarps = kThreads / 32; // warps per block of a row kernel

// Square roots by explicit name: the backend's sqrt(Tensor) hides the
// math library's overloads inside this namespace.
__device__ __forceinline__ float sqrtOf(float v) { return sqrtf(v); }
__device__ __forceinline__ double sqrtOf(double v) { return ::sqrt(v); }

template <typename A>
__device__ __forceinline__ A warpSum(A v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Sum over the threads of a row: a warp (Block = false) or the whole
/// 256-thread block (Block = true, every thread must call it). Fixed order.
template <bool Block, typename A>
__device__ __forceinline__ A rowSum(A v, A *scratch) {
  v = warpSum(v);
  if (!Block)
    return v;
  __syncthreads(); // the previous call's readers are done with scratch
  if ((threadIdx.x & 31) == 0)
    scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  A total = 0;
  for (int w = 0; w < kRowWarps; ++w)
    total += scratch[w];
  return total;
}

/// Row loop geometry: with Block, the block's threads share a row;
/// otherwise every warp has its own row.
template <bool Block>
struct RowLoop {
  __device__ int64_t first() const {
    return Block ? int64_t(blockIdx.x)
                 : int64_t(blockIdx.x) * kRowWarps + (threadIdx.x >> 5);
  }
  __device__ int64_t step() const {
    return Block ? int64_t(gridDim.x) : int64_t(gridDim.x) * kRowWarps;
  }
  __device__ int lane() const {
    return Block ? int(threadIdx.x) : int(threadIdx.x & 31);
  }
  static constexpr int kWidth = Block ? kThreads : 32;
};

unsigned rowBlocks(int64_t rows, bool block) {
  int64_t b = block ? rows : (rows + kRowWarps - 1) / kRowWarps;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(b, 65535 * 16)));
}

bool useBlockRows(int64_t D) { return D > 1024; }

/// Launches a row kernel over `rows` rows of D elements: `kernelFor(block)`
/// is its instantiation for block rows (std::true_type) or warp rows
/// (std::false_type).
template <typename KernelFor, typename... Args>
void launchRows(const Ctx &c, int64_t rows, int64_t D, KernelFor kernelFor,
                Args... args) {
  bool block = useBlockRows(D);
  auto kernel =
      block ? kernelFor(std::true_type{}) : kernelFor(std::false_type{});
  kernel<<<rowBlocks(rows, block), kThreads, 0, c.stream>>>(args...);
  GLIMMER_CUDA_LAUNCHED(c.op);
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

__device__ __forceinline__ float addRn(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ __forceinline__ double addRn(double a, double b) {
  return __dadd_rn(a, b);
}

/// RMSNorm of the rows of x into y. With AddResidual, of sum = lhs + x
/// instead (lhs of x's type T, or bf16 for an f32 T), which it also writes:
/// the sum is rounded to T as the add's kernel rounds it and read back from
/// the thread's own store (in cache), so both results are the bits of the
/// add and the norm run apart. Without it, lhs and sum are unused.
template <typename L, typename T, typename O, bool Block, bool AddResidual>
__global__ void __launch_bounds__(kThreads)
    rmsNormKernel(T *__restrict__ sum, O *__restrict__ y,
                  const L *__restrict__ lhs, const T *__restrict__ x,
                  const T *__restrict__ w, int64_t rows, int64_t D,
                  double eps) {
  using A = acc_t<T>;
  __shared__ A scratch[kRowWarps];
  RowLoop<Block> loop;
  for (int64_t r = loop.first(); r < rows; r += loop.step()) {
    const T *row = (AddResidual ? sum : x) + r * D;
    A ss = 0;
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth) {
      if constexpr (AddResidual)
        st(sum + r * D + d, addRn(A(ld(lhs + r * D + d)), ld(x + r * D + d)));
      A v = ld(row + d);
      ss += v * v;
    }
    ss = rowSum<Block>(ss, scratch);
    A rstd = A(1) / sqrtOf(ss / A(D) + A(eps));
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth)
      st(y + r * D + d, ld(row + d) * rstd * ld(w + d));
  }
}

/// dx of RMSNorm and each row's rstd (for the dw reduction). g is of the
/// forward result's type G.
template <typename T, typename G, bool Block>
__global__ void __launch_bounds__(kThreads)
    rmsNormGradRows(T *__restrict__ dx, acc_t<T> *__restrict__ rstdOut,
                    const G *__restrict__ g, const T *__restrict__ x,
                    const T *__restrict__ w, int64_t rows, int64_t D,
                    double eps) {
  using A = acc_t<T>;
  __shared__ A scratch[kRowWarps];
  RowLoop<Block> loop;
  for (int64_t r = loop.first(); r < rows; r += loop.step()) {
    const T *row = x + r * D;
    const G *gr = g + r * D;
    A ss = 0, dot = 0; // dot = sum(g * w * x)
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth) {
      A v = ld(row + d);
      ss += v * v;
      dot += ld(gr + d) * ld(w + d) * v;
    }
    ss = rowSum<Block>(ss, scratch);
    dot = rowSum<Block>(dot, scratch);
    A rstd = A(1) / sqrtOf(ss / A(D) + A(eps));
    // dx = rstd * (g*w - x * rstd^2 * mean(g*w*x))
    A c = rstd * rstd * dot / A(D);
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth)
      st(dx + r * D + d, rstd * (ld(gr + d) * ld(w + d) - ld(row + d) * c));
    if (loop.lane() == 0)
      rstdOut[r] = rstd;
  }
}

template <typename T, typename O, bool Block>
__global__ void __launch_bounds__(kThreads)
    layerNormKernel(O *__restrict__ y, const T *__restrict__ x,
                    const T *__restrict__ w, const T *__restrict__ b,
                    int64_t rows, int64_t D, double eps) {
  using A = acc_t<T>;
  __shared__ A scratch[kRowWarps];
  RowLoop<Block> loop;
  for (int64_t r = loop.first(); r < rows; r += loop.step()) {
    const T *row = x + r * D;
    A mean = 0;
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth)
      mean += ld(row + d);
    mean = rowSum<Block>(mean, scratch) / A(D);
    A var = 0; // biased, two-pass
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth) {
      A v = ld(row + d) - mean;
      var += v * v;
    }
    var = rowSum<Block>(var, scratch) / A(D);
    A rstd = A(1) / sqrtOf(var + A(eps));
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth)
      st(y + r * D + d, (ld(row + d) - mean) * rstd * ld(w + d) + ld(b + d));
  }
}

/// dx of LayerNorm and each row's mean and rstd (for the dw/db reduction).
template <typename T, typename G, bool Block>
__global__ void __launch_bounds__(kThreads)
    layerNormGradRows(T *__restrict__ dx, acc_t<T> *__restrict__ meanOut,
                      acc_t<T> *__restrict__ rstdOut, const G *__restrict__ g,
                      const T *__restrict__ x, const T *__restrict__ w,
                      int64_t rows, int64_t D, double eps) {
  using A = acc_t<T>;
  __shared__ A scratch[kRowWarps];
  RowLoop<Block> loop;
  for (int64_t r = loop.first(); r < rows; r += loop.step()) {
    const T *row = x + r * D;
    const G *gr = g + r * D;
    A mean = 0;
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth)
      mean += ld(row + d);
    mean = rowSum<Block>(mean, scratch) / A(D);
    A var = 0;
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth) {
      A v = ld(row + d) - mean;
      var += v * v;
    }
    var = rowSum<Block>(var, scratch) / A(D);
    A rstd = A(1) / sqrtOf(var + A(eps));
    // dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w
    A sumGw = 0, sumGwXhat = 0;
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth) {
      A xhat = (ld(row + d) - mean) * rstd;
      A gw = ld(gr + d) * ld(w + d);
      sumGw += gw;
      sumGwXhat += gw * xhat;
    }
    sumGw = rowSum<Block>(sumGw, scratch);
    sumGwXhat = rowSum<Block>(sumGwXhat, scratch);
    A meanGw = sumGw / A(D), meanGwXhat = sumGwXhat / A(D);
    for (int64_t d = loop.lane(); d < D; d += loop.kWidth) {
      A xhat = (ld(row + d) - mean) * rstd;
      st(dx + r * D + d,
         rstd * (ld(gr + d) * ld(w + d) - meanGw - xhat * meanGwXhat));
    }
    if (loop.lane() == 0) {
      meanOut[r] = mean;
      rstdOut[r] = rstd;
    }
  }
}

constexpr int kColTile = 32, kColRows = 8; // column-partial block: 32 x 8

/// Per chunk of rows and per column: RMSNorm's sum(g * x * rstd) (Layer =
/// false), or LayerNorm's sum(g * xhat) and sum(g) (Layer = true), into
/// partial[chunk * D + d] (and partialB). Reads are coalesced along columns;
/// the 8 row-strided sums of a column are added in a fixed order.
template <typename T, typename G, bool Layer>
__global__ void __launch_bounds__(kColTile *kColRows)
    columnPartials(acc_t<T> *__restrict__ partialA,
                   acc_t<T> *__restrict__ partialB, const G *__restrict__ g,
                   const T *__restrict__ x, const acc_t<T> *__restrict__ mean,
                   const acc_t<T> *__restrict__ rstd, int64_t rows, int64_t D,
                   int64_t rowsPerChunk) {
  using A = acc_t<T>;
  __shared__ A sa[kColRows][kColTile], sb[kColRows][kColTile];
  int64_t col = int64_t(blockIdx.x) * kColTile + threadIdx.x;
  int64_t chunk = blockIdx.y;
  int64_t begin = chunk * rowsPerChunk;
  int64_t end = std::min(rows, begin + rowsPerChunk);
  A a = 0, b = 0;
  if (col < D)
    for (int64_t r = begin + threadIdx.y; r < end; r += kColRows) {
      A gv = ld(g + r * D + col), xv = ld(x + r * D + col);
      if (Layer) {
        a += gv * ((xv - mean[r]) * rstd[r]);
        b += gv;
      } else {
        a += gv * xv * rstd[r];
      }
    }
  sa[threadIdx.y][threadIdx.x] = a;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && col < D) {
    A ta = 0, tb = 0;
    for (int i = 0; i < kColRows; ++i) {
      ta += sa[i][threadIdx.x];
      tb += sb[i][threadIdx.x];
    }
    partialA[chunk * D + col] = ta;
    if (Layer)
      partialB[chunk * D + col] = tb;
  }
}

/// out[d] = sum over chunks of partial[chunk * D + d], in chunk order (zero
/// when there are no rows).
template <typename T>
__global__ void sumPartials(T *__restrict__ out,
                            const acc_t<T> *__restrict__ partial,
                            int64_t chunks, int64_t D) {
  for (int64_t d = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; d < D;
       d += int64_t(gridDim.x) * blockDim.x) {
    acc_t<T> s = 0;
    for (int64_t c = 0; c < chunks; ++c)
      s += partial[c * D + d];
    st(out + d, s);
  }
}

/// Chunking of the rows for the column partials: enough blocks to fill the
/// GPU, a pure function of the shape (so results are reproducible).
struct Chunking {
  int64_t chunks, rowsPerChunk;
};
Chunking chunkRows(int64_t rows, int64_t D) {
  if (rows == 0)
    return {0, 1};
  int64_t colTiles = (D + kColTile - 1) / kColTile;
  int64_t maxChunks = std::max<int64_t>(1, 4096 / colTiles);
  int64_t chunks = std::min<int64_t>((rows + 63) / 64, maxChunks);
  chunks = std::min<int64_t>(std::max<int64_t>(chunks, 1), 65535);
  int64_t per = (rows + chunks - 1) / chunks;
  return {(rows + per - 1) / per, per};
}

/// dw (and db) from the row statistics: partials then their ordered sum.
template <typename T, typename G, bool Layer>
void reduceColumns(const Ctx &c, Tensor &dw, Tensor *db, const Tensor &g,
                   const Tensor &x, const Tensor *mean, const Tensor &rstd,
                   int64_t rows, int64_t D) {
  using A = acc_t<T>;
  Chunking ch = chunkRows(rows, D);
  Tensor pa = c.empty(accDType<T>(), {std::max<int64_t>(ch.chunks, 1), D});
  Tensor pb = Layer
                  ? c.empty(accDType<T>(), {std::max<int64_t>(ch.chunks, 1), D})
                  : Tensor();
  if (ch.chunks > 0) {
    dim3 grid(unsigned((D + kColTile - 1) / kColTile), unsigned(ch.chunks));
    columnPartials<T, G, Layer><<<grid, dim3(kColTile, kColRows), 0, c.stream>>>(
        pa.data<A>(), Layer ? pb.data<A>() : nullptr, g.data<G>(), x.data<T>(),
        Layer ? mean->data<A>() : nullptr, rstd.data<A>(), rows, D,
        ch.rowsPerChunk);
    GLIMMER_CUDA_LAUNCHED(c.op);
  }
  sumPartials<T><<<blocksFor(D), kThreads, 0, c.stream>>>(
      dw.data<T>(), pa.data<A>(), ch.chunks, D);
  GLIMMER_CUDA_LAUNCHED(c.op);
  if (Layer) {
    sumPartials<T><<<blocksFor(D), kThreads, 0, c.stream>>>(
        db->data<T>(), pb.data<A>(), ch.chunks, D);
    GLIMMER_CUDA_LAUNCHED(c.op);
  }
}

/// RoPE: one thread per (row = b * T + t, pair i), rotating pair i of every
/// head of the row. The angle and its cosine and sine are computed in double
/// (as on the CPU) and rounded once to the compute type.
template <typename T, typename P>
__global__ void ropeKernel(T *__restrict__ y, const T *__restrict__ x,
                           const P *__restrict__ pos, int64_t rows, int64_t H,
                           int64_t D, double theta, bool interleaved,
                           bool inverse) {
  using A = acc_t<T>;
  const int64_t half = D / 2;
  const int64_t total = rows * half;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = idx % half, r = idx / half;
    double freq = ::pow(theta, -2.0 * double(i) / double(D));
    double angle = double(pos[r]) * freq;
    double sn, cs;
    ::sincos(angle, &sn, &cs);
    A c = A(cs), s = A(inverse ? -sn : sn);
    int64_t i0 = interleaved ? 2 * i : i;
    int64_t i1 = interleaved ? 2 * i + 1 : i + half;
    for (int64_t h = 0; h < H; ++h) {
      int64_t base = (r * H + h) * D;
      A x0 = ld(x + base + i0), x1 = ld(x + base + i1);
      st(y + base + i0, x0 * c - x1 * s);
      st(y + base + i1, x0 * s + x1 * c);
    }
  }
}

/// A forward norm's result: of `out`'s type and x's shape, its rows of D
/// elements written by launch(T{}, O{}, y, rows) for x's type T and the
/// result's O (nothing to launch when x has no rows).
template <typename Launch>
Tensor normRows(const Ctx &c, const Tensor &x, int64_t D, DType out,
                Launch launch) {
  Tensor y = c.empty(out, x.shape());
  int64_t rows = D ? x.numel() / D : 0;
  if (rows == 0)
    return y;
  dispatchNormTypes(c.op, x.dtype(), out, [&](auto tag, auto outTag) {
    launch(tag, outTag, y, rows);
  });
  return y;
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

Tensor rmsNorm(const Tensor &x, const Tensor &w, double eps, DType out) {
  const char *op = "rms_norm";
  requireFloat(op, x, "input");
  int64_t D = detail::checkNorm(op, x, {{&w, "weight"}}, eps);
  Ctx c(op, {&x, &w});
  return normRows(
      c, x, D, out, [&](auto tag, auto outTag, Tensor &y, int64_t rows) {
        using T = decltype(tag);
        using O = decltype(outTag);
        launchRows(
            c, rows, D,
            [](auto block) {
              return rmsNormKernel<T, T, O, decltype(block)::value, false>;
            },
            static_cast<T *>(nullptr), y.data<O>(),
            static_cast<const T *>(nullptr), x.data<T>(), w.data<T>(), rows, D,
            eps);
      });
}

std::tuple<Tensor, Tensor> addRmsNorm(const Tensor &lhs, const Tensor &rhs,
                                      const Tensor &w, double eps, DType out) {
  const char *op = "add_rms_norm";
  requireFloat(op, rhs, "rhs");
  detail::requireResidualAddend(op, lhs, rhs);
  int64_t D = detail::checkNorm(op, rhs, {{&w, "weight"}}, eps);
  Ctx c(op, {&lhs, &rhs, &w});
  Tensor sum = c.empty(rhs.dtype(), rhs.shape());
  Tensor y = c.empty(out, rhs.shape());
  int64_t rows = D ? rhs.numel() / D : 0;
  if (rows == 0)
    return {sum, y};
  dispatchNormTypes(op, rhs.dtype(), out, [&](auto tag, auto outTag) {
    using T = decltype(tag);
    using O = decltype(outTag);
    auto launch = [&](auto lhsTag) {
      using L = decltype(lhsTag);
      launchRows(
          c, rows, D,
          [](auto block) {
            return rmsNormKernel<L, T, O, decltype(block)::value, true>;
          },
          sum.data<T>(), y.data<O>(), lhs.data<L>(), rhs.data<T>(), w.data<T>(),
          rows, D, eps);
    };
    // A narrower lhs is bf16 into f32 (requireResidualAddend).
    if constexpr (std::is_same<T, float>::value)
      if (lhs.dtype() == DType::BF16)
        return launch(bf16{});
    launch(T{});
  });
  return {sum, y};
}

std::tuple<Tensor, Tensor> rmsNormGrad(const Tensor &grad, const Tensor &x,
                                       const Tensor &w, double eps) {
  const char *op = "rms_norm_grad";
  requireFloat(op, x, "input");
  int64_t D = detail::checkNorm(op, x, {{&w, "weight"}}, eps);
  detail::requireNormGrad(op, grad, x);
  Ctx c(op, {&grad, &x, &w});
  Tensor dx = c.empty(x.dtype(), x.shape());
  Tensor dw = c.empty(x.dtype(), {D});
  if (D == 0)
    return std::make_tuple(dx, dw);
  int64_t rows = x.numel() / D;
  dispatchNormTypes(op, x.dtype(), grad.dtype(), [&](auto tag, auto gradTag) {
    using T = decltype(tag);
    using G = decltype(gradTag);
    using A = acc_t<T>;
    Tensor rstd = c.empty(accDType<T>(), {std::max<int64_t>(rows, 1)});
    if (rows > 0)
      launchRows(
          c, rows, D,
          [](auto block) {
            return rmsNormGradRows<T, G, decltype(block)::value>;
          },
          dx.data<T>(), rstd.data<A>(), grad.data<G>(), x.data<T>(),
          w.data<T>(), rows, D, eps);
    reduceColumns<T, G, false>(c, dw, nullptr, grad, x, nullptr, rstd, rows, D);
  });
  return std::make_tuple(dx, dw);
}

Tensor layerNorm(const Tensor &x, const Tensor &w, const Tensor &b, double eps,
                 DType out) {
  const char *op = "layer_norm";
  requireFloat(op, x, "input");
  int64_t D = detail::checkNorm(op, x, {{&w, "weight"}, {&b, "bias"}}, eps);
  Ctx c(op, {&x, &w, &b});
  return normRows(
      c, x, D, out, [&](auto tag, auto outTag, Tensor &y, int64_t rows) {
        using T = decltype(tag);
        using O = decltype(outTag);
        launchRows(
            c, rows, D,
            [](auto block) {
              return layerNormKernel<T, O, decltype(block)::value>;
            },
            y.data<O>(), x.data<T>(), w.data<T>(), b.data<T>(), rows, D, eps);
      });
}

std::tuple<Tensor, Tensor, Tensor> layerNormGrad(const Tensor &grad,
                                                 const Tensor &x,
                                                 const Tensor &w, double eps) {
  const char *op = "layer_norm_grad";
  requireFloat(op, x, "input");
  int64_t D = detail::checkNorm(op, x, {{&w, "weight"}}, eps);
  detail::requireNormGrad(op, grad, x);
  Ctx c(op, {&grad, &x, &w});
  Tensor dx = c.empty(x.dtype(), x.shape());
  Tensor dw = c.empty(x.dtype(), {D});
  Tensor db = c.empty(x.dtype(), {D});
  if (D == 0)
    return std::make_tuple(dx, dw, db);
  int64_t rows = x.numel() / D;
  dispatchNormTypes(op, x.dtype(), grad.dtype(), [&](auto tag, auto gradTag) {
    using T = decltype(tag);
    using G = decltype(gradTag);
    using A = acc_t<T>;
    Tensor mean = c.empty(accDType<T>(), {std::max<int64_t>(rows, 1)});
    Tensor rstd = c.empty(accDType<T>(), {std::max<int64_t>(rows, 1)});
    if (rows > 0)
      launchRows(
          c, rows, D,
          [](auto block) {
            return layerNormGradRows<T, G, decltype(block)::value>;
          },
          dx.data<T>(), mean.data<A>(), rstd.data<A>(), grad.data<G>(),
          x.data<T>(), w.data<T>(), rows, D, eps);
    reduceColumns<T, G, true>(c, dw, &db, grad, x, &mean, rstd, rows, D);
  });
  return std::make_tuple(dx, dw, db);
}

Tensor rope(const Tensor &x, const Tensor &positions, double theta,
            RopeStyle style, bool inverse) {
  const char *op = "rope";
  requireFloat(op, x, "input");
  requireRank(op, x, "a [B, T, H, D] input", 4);
  int64_t B = x.dim(0), T_ = x.dim(1), H = x.dim(2), D = x.dim(3);
  check(D % 2 == 0, op,
        "expects an even head dimension, got " + std::to_string(D));
  check(theta > 0, op, "expects theta > 0");
  requireInt(op, positions, "positions");
  requireShape(op, positions, "positions", {B, T_});
  check(style == RopeStyle::Interleaved || style == RopeStyle::Half, op,
        "unknown rope style");
  Ctx c(op, {&x, &positions});
  Tensor y = c.empty(x.dtype(), x.shape());
  int64_t rows = B * T_, work = rows * (D / 2);
  if (y.numel() == 0 || work == 0)
    return y;
  bool interleaved = style == RopeStyle::Interleaved;
  dispatchFloat(op, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (positions.dtype() == DType::I64)
      ropeKernel<T, int64_t><<<blocksFor(work), kThreads, 0, c.stream>>>(
          y.data<T>(), x.data<T>(), positions.data<int64_t>(), rows, H, D,
          theta, interleaved, inverse);
    else
      ropeKernel<T, int32_t><<<blocksFor(work), kThreads, 0, c.stream>>>(
          y.data<T>(), x.data<T>(), positions.data<int32_t>(), rows, H, D,
          theta, interleaved, inverse);
    GLIMMER_CUDA_LAUNCHED(op);
    return 0;
  });
  return y;
}

} // namespace cuda
} // namespace glimmer_rt
