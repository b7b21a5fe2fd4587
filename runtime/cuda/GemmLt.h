//===- GemmLt.h - bf16 GEMMs through cuBLASLt -------------------*- C++ -*-===//
//
// Internal to the CUDA backend (Gemm.cu's GEMM operands, and its bf16
// products). cuBLASLt lets a GEMM add a linear's bias in its epilogue, and
// its heuristic, asked once per shape, is told how much workspace it may use
// and that split-K partial sums must be reduced in f32 (as the
// cublasGemmStridedBatchedEx path reduces them with
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_GEMMLT_H
#define GLIMMER_RT_CUDA_GEMMLT_H

#include <cuda_runtime.h>

#include <cstdint>

namespace glimmer_rt {
namespace cuda {

/// One operand of a GEMM: row-major element (r, c) of op(X) lives at
/// ptr[r * ld + c], or ptr[c * ld + r] when transposed; consecutive batch
/// entries are `stride` elements apart.
struct Operand {
  const void *ptr;
  bool transposed;
  int64_t ld;
  int64_t stride;
};

/// C[b] (= or +=) op(A[b]) op(B[b]) (+ bias on every row) for b < batch,
/// bf16, with C [M, N] row-major (leading dimension ldc, batch stride
/// strideC). Every size fits in an int; bias (N entries, or null) only with
/// batch 1 and !accumulate.
struct LtGemm {
  int64_t M, N, K;
  Operand a, b;
  void *c;
  int64_t ldc, strideC, batch;
  bool accumulate;
  const void *bias;
};

/// False when GLIMMER_CUDA_GEMM=cublas asks for the legacy path.
bool gemmLtEnabled();

/// Runs `g` on `stream` of `device`; false, having done nothing, when
/// cuBLASLt offers no algorithm for it (the caller falls back). Failures of
/// a call that was accepted throw, naming `op`.
bool gemmLt(const char *op, int device, cudaStream_t stream, const LtGemm &g);

} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_GEMMLT_H
