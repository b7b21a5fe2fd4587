//===- CudnnAttention.h - cuDNN's fused flash attention ---------*- C++ -*-===//
//
// Internal to the CUDA backend. bf16 attention whose mask is index-causal
// (causal without positions: query i sees key j iff j <= i) or absent, with
// no documents, runs in cuDNN's fused flash attention (the cuDNN 9 graph
// API through cudnn-frontend): Hopper kernels that Attention.cu's own
// mma.sync kernels do not reach. Everything else (positions, documents,
// f32/f64, head sizes cuDNN refuses) stays on Attention.cu's kernels.
//
// Each call returns false, having done nothing, when cuDNN cannot run the
// shape (its support check fails once per shape and is remembered), so the
// caller falls back, with the reason in `why`; failures while running a
// supported plan throw.
// Operands are contiguous, each [B, H, T, D] or, as the shape's layout
// says, sequence-major [B, T, H, D] (given to cuDNN as strides); lse is
// [B, Hq, Tq]. dQ/dK/dV are written in full.
//
// The backward pass uses cuDNN's deterministic algorithm (dQ without
// atomics), so results stay bitwise reproducible as with Attention.cu.
// GLIMMER_CUDA_ATTENTION=mma (or =simt) keeps every call on Attention.cu's
// kernels (for comparisons).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_CUDNNATTENTION_H
#define GLIMMER_RT_CUDA_CUDNNATTENTION_H

#include "glimmer_rt/Kernels.h"
#include "glimmer_rt/Tensor.h"

#include <cuda_runtime.h>

#include <string>

namespace glimmer_rt {
namespace cuda {

/// Shapes as Attention.cu checked them: q [B, Hq, Tq, D], k/v [B, Hkv, Tk, D]
/// (logical dims; `layout` says which are stored sequence-major).
struct CudnnAttentionShape {
  int64_t B, Hq, Hkv, Tq, Tk, D;
  bool causal;
  double scale;
  AttentionLayout layout;
};

/// out [B, Hq, Tq, D] bf16 (stored as layout.output says) and lse
/// [B, Hq, Tq] f32 (natural log). grad and dq/dk/dv of the backward are
/// stored as out and q/k/v.
bool cudnnAttentionForward(const char *op, int device, cudaStream_t stream,
                           const CudnnAttentionShape &s, const Tensor &q,
                           const Tensor &k, const Tensor &v, Tensor &out,
                           Tensor &lse, std::string &why);

bool cudnnAttentionBackward(const char *op, int device, cudaStream_t stream,
                            const CudnnAttentionShape &s, const Tensor &grad,
                            const Tensor &q, const Tensor &k, const Tensor &v,
                            const Tensor &out, const Tensor &lse, Tensor &dq,
                            Tensor &dk, Tensor &dv, std::string &why);

} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_CUDNNATTENTION_H
