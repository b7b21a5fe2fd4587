//===- AttentionLayout.cpp - Attention's sequence-major layouts -----------===//
//
// Part of the Glimmer runtime. See AttentionLayout.h.
//
//===----------------------------------------------------------------------===//

#include "AttentionLayout.h"
#include "Checks.h"

#include <string>

namespace glimmer_rt::detail {
namespace {
/// [B, T, H, D] <-> [B, H, T, D] (a copy) when `sequenceMajor`, else `t`.
Tensor swapHeads(const Tensor &t, bool sequenceMajor) {
  return sequenceMajor && t.defined() ? transpose(t, {0, 2, 1, 3}) : t;
}

/// The [B, H, T, D] view of a tensor stored as `sequenceMajor` says.
Tensor headMajorView(const char *op, const Tensor &t, const char *name,
                     bool sequenceMajor) {
  if (!sequenceMajor || !t.defined())
    return t;
  requireRank(op, t, (std::string(name) + " [B, T, H, D]").c_str(), 4);
  return t.view({t.dim(0), t.dim(2), t.dim(1), t.dim(3)});
}
} // namespace

AttentionViews attentionViews(const char *op, AttentionLayout layout,
                              const Tensor &q, const Tensor &k, const Tensor &v,
                              const Tensor &grad, const Tensor &out) {
  return {headMajorView(op, q, "query", layout.query),
          headMajorView(op, k, "key", layout.key),
          headMajorView(op, v, "value", layout.value),
          headMajorView(op, grad, "grad", layout.output),
          headMajorView(op, out, "output", layout.output)};
}

std::tuple<Tensor, Tensor>
attentionTransposed(const Tensor &q, const Tensor &k, const Tensor &v,
                    const Tensor &qPositions, const Tensor &kPositions,
                    const Tensor &qDocuments, const Tensor &kDocuments,
                    const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
                    int64_t window, double scale, AttentionLayout layout) {
  attentionViews("attention", layout, q, k, v);
  auto [out, lse] =
      attention(swapHeads(q, layout.query), swapHeads(k, layout.key),
                swapHeads(v, layout.value), qPositions, kPositions, qDocuments,
                kDocuments, qBlocks, kBlocks, causal, window, scale);
  return std::make_tuple(swapHeads(out, layout.output), lse);
}

std::tuple<Tensor, Tensor, Tensor> attentionGradTransposed(
    const Tensor &grad, const Tensor &q, const Tensor &k, const Tensor &v,
    const Tensor &out, const Tensor &lse, const Tensor &qPositions,
    const Tensor &kPositions, const Tensor &qDocuments,
    const Tensor &kDocuments, const Tensor &qBlocks, const Tensor &kBlocks,
    bool causal, int64_t window, double scale, AttentionLayout layout) {
  attentionViews("attention_grad", layout, q, k, v, grad, out);
  auto [dq, dk, dv] = attentionGrad(
      swapHeads(grad, layout.output), swapHeads(q, layout.query),
      swapHeads(k, layout.key), swapHeads(v, layout.value),
      swapHeads(out, layout.output), lse, qPositions, kPositions, qDocuments,
      kDocuments, qBlocks, kBlocks, causal, window, scale);
  return std::make_tuple(swapHeads(dq, layout.query), swapHeads(dk, layout.key),
                         swapHeads(dv, layout.value));
}

} // namespace glimmer_rt::detail
