//===- FuseResidualNorms.cpp - Residual adds fused into their RMS norms ---===//
//
// A pre-norm decoder adds each block's output to the residual stream and
// normalizes the sum right away: as two kernels the sum is written, then
// read back by the norm. One kernel that adds and normalizes writes the
// sum and reads it only from its own cache lines, which matters most where
// the stream is f32 (autocast's precision): four bytes an element per norm.
// The fused op computes what the two ops did, so results keep their bits.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERFUSERESIDUALNORMS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

/// `v`'s narrower source when `v` widens it exactly (a bf16 branch widened
/// into an f32 stream), else null.
Value widenedFrom(Value v) {
  auto convert = v.getDefiningOp<ConvertOp>();
  if (!convert)
    return {};
  Type from =
      cast<RankedTensorType>(convert.getInput().getType()).getElementType();
  Type to = cast<RankedTensorType>(convert.getType()).getElementType();
  return from != to && widensExactly(from, to) ? convert.getInput() : Value();
}

/// Whether `v` is defined before `op` in `op`'s block (or is an argument).
bool availableAt(Value v, Operation *op) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == op->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

/// Where the fused op can stand: at the add when the norm's weight is
/// defined by then (a parameter), else at the norm when no other user of
/// the sum comes before it (mixed precision converts the weight right
/// before the norm); null when neither holds.
Operation *fusedPosition(AddOp add, RmsNormOp norm) {
  if (availableAt(norm.getWeight(), add))
    return add;
  for (Operation *user : add->getUsers())
    if (user != norm &&
        (user->getBlock() != norm->getBlock() || user->isBeforeInBlock(norm)))
      return nullptr;
  return norm;
}

void fuse(RmsNormOp norm) {
  auto add = norm.getInput().getDefiningOp<AddOp>();
  if (!add || add->getBlock() != norm->getBlock() ||
      !isa<FloatType>(cast<RankedTensorType>(add.getType()).getElementType()))
    return;
  Operation *at = fusedPosition(add, norm);
  if (!at)
    return;
  // The narrower operand is read as it is (the kernel widens it).
  Value lhs = add.getLhs(), rhs = add.getRhs();
  if (Value narrow = widenedFrom(lhs)) {
    lhs = narrow;
  } else if (Value narrow = widenedFrom(rhs)) {
    rhs = lhs;
    lhs = narrow;
  }
  OpBuilder b(at);
  auto fused =
      AddRmsNormOp::create(b, norm.getLoc(), rhs.getType(), norm.getType(), lhs,
                           rhs, norm.getWeight(), norm.getEpsAttr());
  Operation *convert = add.getLhs().getDefiningOp<ConvertOp>();
  Operation *convertR = add.getRhs().getDefiningOp<ConvertOp>();
  add.getOutput().replaceAllUsesWith(fused.getSum());
  norm.getOutput().replaceAllUsesWith(fused.getOutput());
  norm->erase();
  add->erase();
  if (convertR == convert)
    convertR = nullptr;
  for (Operation *c : {convert, convertR})
    if (c && c->use_empty())
      c->erase();
}

struct FuseResidualNormsPass
    : glimmer::impl::GlimmerFuseResidualNormsBase<FuseResidualNormsPass> {
  void runOnOperation() override {
    // Collected first; each is matched when it is reached, so that of the
    // norms reading one sum (a recomputation in the backward) only the
    // first takes the add.
    SmallVector<RmsNormOp> norms;
    getOperation()->walk([&](RmsNormOp n) { norms.push_back(n); });
    for (RmsNormOp norm : norms)
      fuse(norm);
  }
};

} // namespace
