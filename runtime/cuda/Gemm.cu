//===- Gemm.cu - cuBLAS-backed linear, matmul and conv2d ------------------===//
//
// The contractions of the CUDA backend, all through cuBLAS: one handle per
// device (created on first use, never destroyed, like the device streams),
// bound to the device's stream before every call. Tensors are row-major, so
// C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T in cuBLAS's
// column-major view, which needs no copies.
//
// Precision: f32 GEMMs run in pedantic math mode with CUBLAS_COMPUTE_32F
// (never TF32), so they agree with an f32 CPU GEMM, unless allowTf32()
// (glimmer-run/glimmer-train --tf32): then CUBLAS_COMPUTE_32F_FAST_TF32,
// as PyTorch's allow_tf32; f64 uses
// CUBLAS_COMPUTE_64F; bf16 reads and writes bf16 and accumulates in f32
// (split-K reductions in f32 as well).
//
// bf16 GEMMs go through cuBLASLt (GemmLt.cpp): the algorithm its heuristic
// picks for the shape is kept per shape, a linear's bias is added in the
// GEMM's epilogue instead of being broadcast into the output first, and
// split-K partial sums may be reduced only in f32. GLIMMER_CUDA_GEMM=cublas
// keeps them on cublasGemmStridedBatchedEx below.
//
// conv2d lowers to im2col + GEMM: a "patch matrix" [images * pixels, C*KH*KW]
// holds one row per output pixel, so the forward pass is one strided-batched
// GEMM with the weight, and the weight gradient one GEMM whose contraction
// runs over all images and pixels. The input gradient is a GEMM into patch
// space followed by a gather (col2im) that sums each input element's
// contributions in a fixed order, so everything is deterministic.
//
//===----------------------------------------------------------------------===//

#include "Checks.cuh"
#include "Common.cuh"
#include "GemmLt.h"

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <mutex>

namespace glimmer_rt {
namespace cuda {
namespace {

//===----------------------------------------------------------------------===//
// cuBLAS handles and the GEMM wrapper
//===----------------------------------------------------------------------===//

constexpr int kMaxDevices = 64;

/// A device's handle and the lock that serializes binding it to the stream
/// and enqueueing a call (the calls only enqueue, so the lock is short).
struct HandleSlot {
  std::mutex mutex;
  cublasHandle_t handle = nullptr;
};

/// Never destroyed: handles of a static object may be used after main.
HandleSlot &handleSlot(int device) {
  static HandleSlot *slots = new HandleSlot[kMaxDevices];
  if (device < 0 || device >= kMaxDevices)
    throw RuntimeError("CUDA device index " + std::to_string(device) +
                       " is out of range");
  return slots[device];
}

void checkCublas(cublasStatus_t status, const char *op, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(op, std::string("cuBLAS error in ") + what + ": " +
                 cublasGetStatusString(status));
}

cudaDataType_t cudaType(DType t) {
  switch (t) {
  case DType::F64:
    return CUDA_R_64F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

const void *advance(const void *p, int64_t elements, size_t elemSize) {
  return static_cast<const char *>(p) + elements * int64_t(elemSize);
}

void fillBias(const Ctx &c, DType dtype, void *out, const void *bias, int64_t n,
              int64_t inner, int64_t channels);

/// C[b] (= or +=) op(A[b]) op(B[b]) for b < batch, with C [M, N] row-major
/// (leading dimension ldc, batch stride strideC) and contraction length K.
/// Sizes must be positive. Batches and rows beyond cuBLAS's int range are
/// split into several calls. `bias` (N entries of C's type, or null) is
/// added to every row of a single (batch 1, not accumulating) product.
void gemm(const Ctx &c, DType dtype, int64_t M, int64_t N, int64_t K,
          const Operand &A, const Operand &B, void *C, int64_t ldc,
          int64_t strideC, int64_t batch, bool accumulate,
          const void *bias = nullptr) {
  const char *op = c.op;
  const int64_t kIntMax = INT_MAX;
  check(N <= kIntMax && K <= kIntMax && A.ld <= kIntMax && B.ld <= kIntMax &&
            ldc <= kIntMax,
        op, "matrix dimensions exceed cuBLAS's 32-bit range");
  if (dtype == DType::BF16 && gemmLtEnabled() && M <= kIntMax &&
      batch <= kIntMax &&
      gemmLt(op, c.device.index, c.stream,
             LtGemm{M, N, K, A, B, C, ldc, strideC, batch, accumulate, bias}))
    return;
  if (bias) {
    // Without an epilogue: the bias broadcast into C, then C += A B.
    check(batch == 1 && ldc == N && !accumulate, op,
          "a bias needs a single product of its own");
    fillBias(c, dtype, C, bias, M * N, 1, N);
    accumulate = true;
  }
  size_t es = dtypeSize(dtype);
  cudaDataType_t type = cudaType(dtype);
  bool isDouble = dtype == DType::F64;
  bool tf32 = dtype == DType::F32 && allowTf32();
  cublasComputeType_t compute =
      isDouble ? CUBLAS_COMPUTE_64F
               : (tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  // f32 must not use TF32 (nor any reduced-precision path) unless asked:
  // pedantic mode. bf16 may use tensor cores but reduces split-K partials
  // in f32.
  cublasMath_t math =
      dtype == DType::BF16 || tf32
          ? cublasMath_t(CUBLAS_DEFAULT_MATH |
                         CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
          : CUBLAS_PEDANTIC_MATH;
  const float oneF = 1.0f, zeroF = 0.0f;
  const double oneD = 1.0, zeroD = 0.0;
  const void *alpha = isDouble ? static_cast<const void *>(&oneD)
                               : static_cast<const void *>(&oneF);
  const void *beta = accumulate
                         ? (isDouble ? static_cast<const void *>(&oneD)
                                     : static_cast<const void *>(&oneF))
                         : (isDouble ? static_cast<const void *>(&zeroD)
                                     : static_cast<const void *>(&zeroF));
  // Column-major view: C^T [N, M] = op(B)^T [N, K] * op(A)^T [K, M].
  cublasOperation_t opB = B.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opA = A.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;

  HandleSlot &slot = handleSlot(c.device.index);
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (!slot.handle)
    checkCublas(cublasCreate(&slot.handle), op, "cublasCreate");
  checkCublas(cublasSetStream(slot.handle, c.stream), op, "cublasSetStream");
  checkCublas(cublasSetMathMode(slot.handle, math), op, "cublasSetMathMode");

  const int64_t rowChunk = kIntMax, batchChunk = 65535;
  for (int64_t b0 = 0; b0 < batch; b0 += batchChunk) {
    int64_t nb = std::min(batchChunk, batch - b0);
    for (int64_t m0 = 0; m0 < M; m0 += rowChunk) {
      int64_t nm = std::min(rowChunk, M - m0);
      // Row m0 of op(A) and of C.
      const void *a =
          advance(A.ptr, b0 * A.stride + (A.transposed ? m0 : m0 * A.ld), es);
      const void *bp = advance(B.ptr, b0 * B.stride, es);
      void *cp = const_cast<void *>(advance(C, b0 * strideC + m0 * ldc, es));
      checkCublas(cublasGemmStridedBatchedEx(
                      slot.handle, opB, opA, int(N), int(nm), int(K), alpha, bp,
                      type, int(B.ld), (long long)B.stride, a, type, int(A.ld),
                      (long long)A.stride, beta, cp, type, int(ldc),
                      (long long)strideC, int(nb), compute,
                      CUBLAS_GEMM_DEFAULT),
                  op, "cublasGemmStridedBatchedEx");
    }
  }
}

//===----------------------------------------------------------------------===//
// Helper kernels
//===----------------------------------------------------------------------===//

/// y[i] = bias[(i / inner) % channels]: the bias broadcast that a GEMM with
/// beta = 1 then adds to (so the result is acc + bias, as on the CPU).
template <typename T>
__global__ void broadcastBias(T *__restrict__ y, const T *__restrict__ bias,
                              int64_t n, int64_t inner, int64_t channels) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = bias[(i / inner) % channels];
}

using ConvShape = detail::ConvShape;

/// Patch matrix of images [n0, n0 + images): row (n * OH + oh) * OW + ow,
/// column (c * KH + kh) * KW + kw; zero where the window leaves the input.
template <typename T>
__global__ void im2col(T *__restrict__ cols, const T *__restrict__ x,
                       ConvShape s, int64_t n0, int64_t images) {
  const int64_t ckk = s.C * s.KH * s.KW, P = s.OH * s.OW;
  const int64_t total = images * P * ckk;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t col = i % ckk, row = i / ckk;
    int64_t kw = col % s.KW, kh = (col / s.KW) % s.KH, ch = col / (s.KW * s.KH);
    int64_t ow = row % s.OW, oh = (row / s.OW) % s.OH, n = n0 + row / P;
    int64_t ih = oh * s.sh - s.ph + kh, iw = ow * s.sw - s.pw + kw;
    T v = T(0.0f);
    if (ih >= 0 && ih < s.H && iw >= 0 && iw < s.W)
      v = x[((n * s.C + ch) * s.H + ih) * s.W + iw];
    cols[i] = v;
  }
}

/// gt[o, n * P + p] = grad[n0 + n, o, p]: the output gradient of a chunk of
/// images with the channel first, so the weight gradient is one GEMM.
template <typename T>
__global__ void channelsFirst(T *__restrict__ gt, const T *__restrict__ grad,
                              int64_t O, int64_t P, int64_t n0,
                              int64_t images) {
  const int64_t total = O * images * P;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t p = i % P, n = (i / P) % images, o = i / (P * images);
    gt[i] = grad[((n0 + n) * O + o) * P + p];
  }
}

/// dx of images [n0, n0 + images) from the patch-space gradient: each input
/// element sums, in a fixed order (ascending kh, then kw), the patch entries
/// that read it. Only the taps with (ih + ph - kh) a multiple of the stride
/// read it, so kh starts at (ih + ph) mod sh and steps by sh (kw alike): a
/// patch embedding (kernel = stride) visits one tap instead of KH * KW.
template <typename T>
__global__ void col2im(T *__restrict__ dx, const T *__restrict__ dcols,
                       ConvShape s, int64_t n0, int64_t images) {
  const int64_t ckk = s.C * s.KH * s.KW, P = s.OH * s.OW;
  const int64_t total = images * s.C * s.H * s.W;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t iw = i % s.W, ih = (i / s.W) % s.H, ch = (i / (s.W * s.H)) % s.C,
            n = i / (s.W * s.H * s.C);
    acc_t<T> sum = 0;
    // th = ih + ph - kh >= 0 for the taps visited (ih + ph >= 0 always).
    for (int64_t kh = (ih + s.ph) % s.sh; kh < s.KH && kh <= ih + s.ph;
         kh += s.sh) {
      int64_t oh = (ih + s.ph - kh) / s.sh;
      if (oh >= s.OH)
        continue;
      for (int64_t kw = (iw + s.pw) % s.sw; kw < s.KW && kw <= iw + s.pw;
           kw += s.sw) {
        int64_t ow = (iw + s.pw - kw) / s.sw;
        if (ow >= s.OW)
          continue;
        sum += ld(dcols + (n * P + oh * s.OW + ow) * ckk +
                  (ch * s.KH + kh) * s.KW + kw);
      }
    }
    st(dx + (n0 * s.C * s.H * s.W + i), sum);
  }
}

void zeroFill(const Ctx &c, Tensor &t) {
  if (t.numel() > 0)
    GLIMMER_CUDA_CHECK(cudaMemsetAsync(t.raw(), 0, t.nbytes(), c.stream));
}

/// out[i] = bias[(i / inner) % channels] for i < n.
void fillBias(const Ctx &c, DType dtype, void *out, const void *bias, int64_t n,
              int64_t inner, int64_t channels) {
  if (n == 0)
    return;
  dispatchFloat(c.op, dtype, [&](auto tag) {
    using T = decltype(tag);
    broadcastBias<T><<<blocksFor(n), kThreads, 0, c.stream>>>(
        static_cast<T *>(out), static_cast<const T *>(bias), n, inner,
        channels);
    GLIMMER_CUDA_LAUNCHED(c.op);
    return 0;
  });
}

/// Every element of `out` from the bias, as above.
void fillBias(const Ctx &c, Tensor &out, const Tensor &bias, int64_t inner,
              int64_t channels) {
  fillBias(c, out.dtype(), out.raw(), bias.raw(), out.numel(), inner,
           channels);
}

ConvShape checkConv(const char *op, const Tensor &x, const Tensor &w,
                    const std::vector<int64_t> &stride,
                    const std::vector<int64_t> &padding) {
  requireFloat(op, x, "input");
  return detail::checkConv(op, x, w, stride, padding);
}

/// Images per im2col chunk: bounds the patch-matrix workspace.
int64_t imagesPerChunk(const ConvShape &s) {
  const int64_t kWorkspaceElements = int64_t(1) << 26;
  int64_t perImage =
      std::max<int64_t>(1, s.OH * s.OW * std::max(s.C * s.KH * s.KW, s.O));
  return std::max<int64_t>(1, std::min(s.N, kWorkspaceElements / perImage));
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

Tensor linear(const Tensor &x, const Tensor &w, const Tensor &bias) {
  const char *op = "linear";
  requireFloat(op, x, "input");
  detail::GemmDims dims = detail::checkLinear(op, x, w, bias);
  int64_t M = dims.M, K = dims.K, N = dims.N;
  Ctx c(op, {&x, &w, &bias});
  Tensor y = c.empty(x.dtype(), dims.outShape);
  if (M == 0 || N == 0)
    return y;
  if (K == 0) {
    if (bias.defined())
      fillBias(c, y, bias, 1, N);
    else
      zeroFill(c, y);
    return y;
  }
  // y [M, N] = x [M, K] * w^T (+ bias), w stored [N, K].
  gemm(c, x.dtype(), M, N, K, {x.raw(), false, K, 0}, {w.raw(), true, K, 0},
       y.raw(), N, 0, 1, false, bias.defined() ? bias.raw() : nullptr);
  return y;
}

Tensor matmul(const Tensor &a, const Tensor &b, bool transposeA,
              bool transposeB) {
  const char *op = "matmul";
  requireFloat(op, a, "lhs");
  detail::GemmDims dims = detail::checkMatmul(op, a, b, transposeA, transposeB);
  int64_t batches = dims.batches, M = dims.M, K = dims.K, N = dims.N;
  Ctx c(op, {&a, &b});
  Tensor y = c.empty(a.dtype(), dims.outShape);
  if (y.numel() == 0)
    return y;
  if (K == 0) {
    zeroFill(c, y);
    return y;
  }
  // Stored A is [M, K] (or [K, M] when transposed), B [K, N] (or [N, K]).
  gemm(c, a.dtype(), M, N, K, {a.raw(), transposeA, transposeA ? M : K, M * K},
       {b.raw(), transposeB, transposeB ? K : N, K * N}, y.raw(), N, M * N,
       batches, false);
  return y;
}

Tensor conv2d(const Tensor &x, const Tensor &w, const Tensor &bias,
              const std::vector<int64_t> &stride,
              const std::vector<int64_t> &padding) {
  const char *op = "conv2d";
  ConvShape s = checkConv(op, x, w, stride, padding);
  if (bias.defined()) {
    check(bias.dtype() == x.dtype(), op,
          "expects a bias of the input's type, got " + bias.describe());
    requireShape(op, bias, "bias", {s.O});
  }
  Ctx c(op, {&x, &w, &bias});
  Tensor y = c.empty(x.dtype(), {s.N, s.O, s.OH, s.OW});
  if (y.numel() == 0)
    return y;
  const int64_t P = s.OH * s.OW, ckk = s.C * s.KH * s.KW;
  if (bias.defined())
    fillBias(c, y, bias, P, s.O);
  else if (ckk == 0)
    zeroFill(c, y);
  if (ckk == 0)
    return y;
  int64_t chunk = imagesPerChunk(s);
  dispatchFloat(op, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor cols = c.empty(x.dtype(), {chunk * P, ckk});
    for (int64_t n0 = 0; n0 < s.N; n0 += chunk) {
      int64_t images = std::min(chunk, s.N - n0);
      im2col<T><<<blocksFor(images * P * ckk), kThreads, 0, c.stream>>>(
          cols.data<T>(), x.data<T>(), s, n0, images);
      GLIMMER_CUDA_LAUNCHED(op);
      // y[n] [O, P] = w [O, ckk] * cols[n]^T, cols[n] stored [P, ckk].
      gemm(c, x.dtype(), s.O, P, ckk, {w.raw(), false, ckk, 0},
           {cols.raw(), true, ckk, P * ckk}, y.data<T>() + n0 * s.O * P, P,
           s.O * P, images, bias.defined());
    }
    return 0;
  });
  return y;
}

std::tuple<Tensor, Tensor> conv2dGrad(const Tensor &grad, const Tensor &x,
                                      const Tensor &w,
                                      const std::vector<int64_t> &stride,
                                      const std::vector<int64_t> &padding) {
  const char *op = "conv2d_grad";
  ConvShape s = checkConv(op, x, w, stride, padding);
  requireDefined(op, grad, "grad");
  check(grad.dtype() == x.dtype(), op,
        "expects grad of the input's type, got " + grad.describe());
  requireShape(op, grad, "grad", {s.N, s.O, s.OH, s.OW});
  Ctx c(op, {&grad, &x, &w});
  Tensor dx = c.empty(x.dtype(), x.shape());
  Tensor dw = c.empty(w.dtype(), w.shape());
  const int64_t P = s.OH * s.OW, ckk = s.C * s.KH * s.KW;
  if (s.N == 0 || s.O == 0 || ckk == 0) { // no products: all-zero gradients
    zeroFill(c, dx);
    zeroFill(c, dw);
    return std::make_tuple(dx, dw);
  }
  int64_t chunk = imagesPerChunk(s);
  dispatchFloat(op, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor cols = c.empty(x.dtype(), {chunk * P, ckk});
    Tensor dcols = c.empty(x.dtype(), {chunk * P, ckk});
    Tensor gt = c.empty(x.dtype(), {s.O, chunk * P});
    for (int64_t n0 = 0; n0 < s.N; n0 += chunk) {
      int64_t images = std::min(chunk, s.N - n0), rows = images * P;
      im2col<T><<<blocksFor(rows * ckk), kThreads, 0, c.stream>>>(
          cols.data<T>(), x.data<T>(), s, n0, images);
      GLIMMER_CUDA_LAUNCHED(op);
      channelsFirst<T><<<blocksFor(s.O * rows), kThreads, 0, c.stream>>>(
          gt.data<T>(), grad.data<T>(), s.O, P, n0, images);
      GLIMMER_CUDA_LAUNCHED(op);
      // dw [O, ckk] (+)= gt [O, rows] * cols [rows, ckk].
      gemm(c, x.dtype(), s.O, ckk, rows, {gt.raw(), false, rows, 0},
           {cols.raw(), false, ckk, 0}, dw.raw(), ckk, 0, 1, n0 > 0);
      // dcols [rows, ckk] = gt^T * w [O, ckk].
      gemm(c, x.dtype(), rows, ckk, s.O, {gt.raw(), true, rows, 0},
           {w.raw(), false, ckk, 0}, dcols.raw(), ckk, 0, 1, false);
      if (int64_t n = images * s.C * s.H * s.W) {
        col2im<T><<<blocksFor(n), kThreads, 0, c.stream>>>(
            dx.data<T>(), dcols.data<T>(), s, n0, images);
        GLIMMER_CUDA_LAUNCHED(op);
      }
    }
    return 0;
  });
  return std::make_tuple(dx, dw);
}

} // namespace cuda
} // namespace glimmer_rt
