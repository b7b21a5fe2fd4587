//===- AttentionLayout.h - Attention's sequence-major layouts ---*- C++ -*-===//
//
// Internal to the runtime: attention's tensors stored sequence-major
// ([B, T, H, D], AttentionLayout), for both backends' entry points.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_KERNELS_ATTENTIONLAYOUT_H
#define GLIMMER_RT_KERNELS_ATTENTIONLAYOUT_H

#include "glimmer_rt/Kernels.h"

#include <tuple>

namespace glimmer_rt::detail {

/// Attention's tensors in [B, H, T, D] terms: the sequence-major ones of a
/// layout viewed with dims 1 and 2 swapped (sharing storage; for shape and
/// type checks only, a view is not a transpose). Undefined ones stay so.
struct AttentionViews {
  Tensor q, k, v, grad, out;
};

/// Throws (as `op`) when a sequence-major tensor is not of rank 4.
AttentionViews attentionViews(const char *op, AttentionLayout layout,
                              const Tensor &q, const Tensor &k, const Tensor &v,
                              const Tensor &grad = Tensor(),
                              const Tensor &out = Tensor());
/// attention and attentionGrad for kernels that read [B, H, T, D] only:
/// `layout`'s sequence-major tensors transposed to head-major, the call
/// made with the default layout, its results transposed back.
std::tuple<Tensor, Tensor>
attentionTransposed(const Tensor &q, const Tensor &k, const Tensor &v,
                    const Tensor &qPositions, const Tensor &kPositions,
                    const Tensor &qDocuments, const Tensor &kDocuments,
                    const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
                    int64_t window, double scale, AttentionLayout layout);
std::tuple<Tensor, Tensor, Tensor> attentionGradTransposed(
    const Tensor &grad, const Tensor &q, const Tensor &k, const Tensor &v,
    const Tensor &out, const Tensor &lse, const Tensor &qPositions,
    const Tensor &kPositions, const Tensor &qDocuments,
    const Tensor &kDocuments, const Tensor &qBlocks, const Tensor &kBlocks,
    bool causal, int64_t window, double scale, AttentionLayout layout);

} // namespace glimmer_rt::detail

#endif // GLIMMER_RT_KERNELS_ATTENTIONLAYOUT_H
