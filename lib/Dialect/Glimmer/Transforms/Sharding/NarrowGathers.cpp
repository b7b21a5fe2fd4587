//===- NarrowGathers.cpp - Gather values in the type they are read in -----===//
//
// Under mixed precision an FSDP parameter is stored as an f32 piece, gathered
// whole and only then rounded to bf16 for the compute that reads it: the
// all-gather moves twice the bytes it needs and the f32 copy of the whole
// parameter is allocated only to be converted. Rounding commutes with
// concatenation, so each rank rounds its piece first and the gather moves
// bf16: the same bits arrive, in half the traffic and memory.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERNARROWGATHERS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

/// The one narrower float type every user of `gather` converts it to, or
/// null when some user reads the gathered value itself (or converts it to
/// another type, or widens it).
Type commonNarrowing(AllGatherOp gather) {
  Type wide = cast<RankedTensorType>(gather.getType()).getElementType();
  Type narrow;
  for (Operation *user : gather->getUsers()) {
    auto convert = dyn_cast<ConvertOp>(user);
    if (!convert)
      return {};
    Type to = cast<RankedTensorType>(convert.getType()).getElementType();
    if (to == wide || !widensExactly(to, wide) || (narrow && to != narrow))
      return {};
    narrow = to;
  }
  return narrow;
}

struct NarrowGathersPass
    : glimmer::impl::GlimmerNarrowGathersBase<NarrowGathersPass> {
  void runOnOperation() override {
    SmallVector<AllGatherOp> gathers;
    getOperation()->walk([&](AllGatherOp g) { gathers.push_back(g); });
    for (AllGatherOp gather : gathers) {
      Type narrow = commonNarrowing(gather);
      if (!narrow)
        continue;
      OpBuilder b(gather);
      auto piece = cast<RankedTensorType>(gather.getInput().getType());
      Value rounded = ConvertOp::create(b, gather.getLoc(), piece.clone(narrow),
                                        gather.getInput());
      auto whole = cast<RankedTensorType>(gather.getType());
      auto narrowGather =
          AllGatherOp::create(b, gather.getLoc(), whole.clone(narrow), rounded,
                              gather.getMeshAttr(), gather.getAxesAttr(),
                              gather.getDimAttr(), gather.getInvariantAttr());
      for (Operation *user : llvm::make_early_inc_range(gather->getUsers())) {
        user->getResult(0).replaceAllUsesWith(narrowGather.getResult());
        user->erase();
      }
      gather->erase();
    }
  }
};

} // namespace
