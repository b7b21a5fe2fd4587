//===- LowerShapes.cpp - Shape, data-movement and gather ops --------------===//

#include "Lowering.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace glimmer;

std::optional<LogicalResult> OpLowering::lowerShapes() {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](ReshapeOp r) {
        return one(call(Kernel::reshape, r.getInput())
                       .ints(typeOf(r.getOutput()).getShape()));
      })
      .Case([&](TransposeOp t) {
        return one(
            call(Kernel::transpose, t.getInput()).ints(t.getPermutation()));
      })
      .Case([&](BroadcastInDimOp bc) {
        return one(call(Kernel::broadcastInDim, bc.getInput())
                       .ints(typeOf(bc.getOutput()).getShape())
                       .ints(bc.getDims()));
      })
      .Case([&](SliceOp s) {
        return one(call(Kernel::slice, s.getInput())
                       .ints(s.getStart())
                       .ints(s.getLimit())
                       .ints(s.getStride()));
      })
      .Case([&](ConcatOp c) {
        Value parts = listOf(c.getInputs());
        LogicalResult result =
            one(call(Kernel::concat).operand(parts).integer(c.getDim()));
        release(parts);
        return result;
      })
      .Case([&](PadOp p) {
        return one(call(Kernel::pad, p.getInput())
                       .ints(p.getLow())
                       .ints(p.getHigh())
                       .real(p.getValue()));
      })
      .Case([&](MicrobatchSliceOp m) {
        return one(call(Kernel::microbatchSlice, {m.getInput(), m.getIndex()})
                       .integer(m.getPieces())
                       .integer(m.getDim()));
      })
      .Case<CpPermuteOp, CpUnpermuteOp>([&](auto p) {
        return one(call(Kernel::cpPermute, p.getInput())
                       .integer(p.getDim())
                       .integer(p.getCp())
                       .literal(p.getBalancer() == Balancer::HeadTail
                                    ? "glimmer_rt::Balancer::HeadTail"
                                    : "glimmer_rt::Balancer::Contiguous")
                       .boolean(isa<CpUnpermuteOp>(op)));
      })
      .Default(std::nullopt);
}

std::optional<LogicalResult> OpLowering::lowerGathers() {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](EmbeddingOp e) {
        return one(call(Kernel::embedding, {e.getTable(), e.getIds()}));
      })
      .Case([&](EmbeddingGradOp e) {
        return one(call(Kernel::embeddingGrad, {e.getGrad(), e.getIds()})
                       .integer(typeOf(e.getOutput()).getDimSize(0)));
      })
      .Case([&](CheckIndicesOp c) {
        std::optional<int64_t> ignore = c.getIgnoreIndex();
        return one(call(Kernel::checkIndices, c.getIds())
                       .integer(c.getBound())
                       .boolean(ignore.has_value())
                       .integer(ignore.value_or(0))
                       .literal("\"" + c.getCheckedOp().str() + "\""));
      })
      .Case([&](VisionBankIndicesOp v) {
        return one(call(Kernel::visionBankIndices, v.getTokens())
                       .integer(v.getImageTokenId()));
      })
      .Case([&](VisionGatherOp v) {
        return one(call(Kernel::visionGather,
                        {v.getEmbeds(), v.getBank(), v.getIndices()}));
      })
      .Case([&](VisionGatherGradOp v) {
        return many(
            call(Kernel::visionGatherGrad, {v.getGrad(), v.getIndices()})
                .integer(typeOf(v.getBankGrad()).getDimSize(0)));
      })
      .Default(std::nullopt);
}
