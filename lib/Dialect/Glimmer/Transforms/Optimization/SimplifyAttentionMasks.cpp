//===- SimplifyAttentionMasks.cpp - Drop positions a mask does not need ---===//
//
// Attention positions that cannot change the mask (non-causal attention
// without documents, or causal positions that are the sequence index on both
// sides) are dropped, so that kernels see from the call alone that the mask
// is index-causal or absent (the CUDA backend then runs cuDNN's fused flash
// attention). Positions permuted by context parallelism are no iota and stay.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERSIMPLIFYATTENTIONMASKS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

/// True when `positions` is 0, 1, ..., T-1 along the sequence of every row
/// of a [B, T] tensor.
bool isSequenceIndex(Value positions) {
  auto iota = positions.getDefiningOp<IotaOp>();
  auto type = dyn_cast<RankedTensorType>(positions.getType());
  return iota && type && type.getRank() == 2 && iota.getDim() == 1;
}

/// Drops the positions of `op` (attention or its VJP) when the mask does not
/// need them. The documents are never dropped.
template <typename AttentionLike> void simplify(AttentionLike op) {
  Value qPos = op.getQueryPositions(), kPos = op.getKeyPositions();
  if (!qPos || op.getQueryDocuments())
    return;
  bool unused = !op.getCausal();
  bool index = isSequenceIndex(qPos) && isSequenceIndex(kPos);
  if (!unused && !index)
    return;
  op.getQueryPositionsMutable().clear();
  op.getKeyPositionsMutable().clear();
}

struct SimplifyAttentionMasksPass
    : glimmer::impl::GlimmerSimplifyAttentionMasksBase<
          SimplifyAttentionMasksPass> {
  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      if (auto a = dyn_cast<AttentionOp>(op))
        simplify(a);
      else if (auto g = dyn_cast<AttentionGradOp>(op))
        simplify(g);
    });
  }
};

} // namespace
