//===- LowerLayers.cpp - Linear algebra, norms and attention --------------===//

#include "Lowering.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace glimmer;

std::optional<LogicalResult> OpLowering::lowerLinearAlgebra() {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](LinearOp l) {
        return one(call(Kernel::linear, {l.getInput(), l.getWeight()})
                       .optional(map(l.getBias())));
      })
      .Case([&](MatmulOp m) {
        return one(call(Kernel::matmul, {m.getLhs(), m.getRhs()})
                       .boolean(m.getTransposeLhs())
                       .boolean(m.getTransposeRhs()));
      })
      .Case([&](Conv2dOp c) {
        return one(call(Kernel::conv2d, {c.getInput(), c.getWeight()})
                       .optional(map(c.getBias()))
                       .ints(c.getStride())
                       .ints(c.getPadding()));
      })
      .Case([&](Conv2dGradOp c) {
        return many(
            call(Kernel::conv2dGrad, {c.getGrad(), c.getInput(), c.getWeight()})
                .ints(c.getStride())
                .ints(c.getPadding()));
      })
      .Default(std::nullopt);
}

// A norm's call: its tensors, eps, then (forward norms) the result's element
// type where it is not the normalized value's.
std::optional<LogicalResult> OpLowering::lowerNorms() {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](RmsNormOp n) {
        return one(call(Kernel::rmsNorm, {n.getInput(), n.getWeight()})
                       .real(n.getEps())
                       .resultTypeIfNot(n.getInput(), n.getOutput()));
      })
      .Case([&](AddRmsNormOp n) {
        return many(
            call(Kernel::addRmsNorm, {n.getLhs(), n.getRhs(), n.getWeight()})
                .real(n.getEps())
                .resultTypeIfNot(n.getSum(), n.getOutput()));
      })
      .Case([&](RmsNormGradOp n) {
        return many(call(Kernel::rmsNormGrad,
                         {n.getGrad(), n.getInput(), n.getWeight()})
                        .real(n.getEps()));
      })
      .Case([&](LayerNormOp n) {
        return one(
            call(Kernel::layerNorm, {n.getInput(), n.getWeight(), n.getBias()})
                .real(n.getEps())
                .resultTypeIfNot(n.getInput(), n.getOutput()));
      })
      .Case([&](LayerNormGradOp n) {
        return many(call(Kernel::layerNormGrad,
                         {n.getGrad(), n.getInput(), n.getWeight()})
                        .real(n.getEps()));
      })
      .Default(std::nullopt);
}

namespace {

/// Attention's arguments after its tensors, the same for its gradient: the
/// optional positions, documents and blocks of queries and keys, causality,
/// window, scale and layout.
template <typename AttentionLike>
RuntimeCall attentionArguments(OpLowering &l, RuntimeCall c, AttentionLike a) {
  Value masks[] = {a.getQueryPositions(), a.getKeyPositions(),
                   a.getQueryDocuments(), a.getKeyDocuments(),
                   a.getQueryBlocks(),    a.getKeyBlocks()};
  for (Value mask : masks)
    c.optional(l.map(mask));
  c.boolean(a.getCausal())
      .integer(a.getWindow().value_or(0))
      .real(a.getScale())
      .attentionLayout(a);
  return c;
}

} // namespace

std::optional<LogicalResult> OpLowering::lowerAttention() {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](RopeOp r) {
        return one(call(Kernel::rope, {r.getInput(), r.getPositions()})
                       .real(r.getTheta())
                       .literal(r.getStyle() == RopeStyle::Half
                                    ? "glimmer_rt::RopeStyle::Half"
                                    : "glimmer_rt::RopeStyle::Interleaved")
                       .boolean(r.getInverse()));
      })
      .Case([&](AttentionOp a) {
        return many(attentionArguments(
            *this,
            call(Kernel::attention, {a.getQuery(), a.getKey(), a.getValue()}),
            a));
      })
      .Case([&](AttentionGradOp a) {
        return many(
            attentionArguments(*this,
                               call(Kernel::attentionGrad,
                                    {a.getGrad(), a.getQuery(), a.getKey(),
                                     a.getValue(), a.getOutput(), a.getLse()}),
                               a));
      })
      .Default(std::nullopt);
}
