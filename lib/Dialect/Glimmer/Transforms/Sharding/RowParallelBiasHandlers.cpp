//===- RowParallelBiasHandlers.cpp - A bias after the ranks' sum ----------===//
//
// A row-parallel projection's ranks each hold a partial product; its bias
// must be added once, after their sum, not by every rank. Each use adds it
// to the complete sum in the layout it wants, so under sp the sum is
// reduce-scattered and the bias added to the rank's piece.
//
//===----------------------------------------------------------------------===//

#include "PartitionHandlers.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

Value glimmer::detail::detachRowParallelBias(LinearOp op) {
  Value bias = op.getBias();
  op.getBiasMutable().clear();
  // Added to the complete sum, the bias is not a per-rank share.
  if (auto share = bias.getDefiningOp<PvaryOp>()) {
    bias = share.getInput();
    if (share->use_empty())
      share->erase();
  }
  return bias;
}

Value glimmer::detail::addRowParallelBias(PartitionedValues &values, Value sum,
                                          Value bias, const Layout &to,
                                          RankedTensorType global,
                                          Location loc) {
  OpBuilder &b = values.builder();
  // The bias follows the features (the last dimension) of the wanted
  // layout; everything else of it is replicated.
  auto biasType = cast<RankedTensorType>(bias.getType());
  Layout piece = Layout::replicated(1);
  piece.dims[0] = to.dims.back();
  Value local =
      values.reshard(bias, values.layoutOf(bias), piece, biasType, loc);
  // Added to a piece of the tokens (split over these axes), each rank's
  // cotangent of the bias is a share of the whole: pvary sums them.
  // (Over token axes cotangents are shares anyway.)
  Axes split;
  for (unsigned d = 0; d + 1 < to.dims.size(); ++d)
    for (StringRef a : to.dims[d])
      if (!isTokenAxis(a))
        split.push_back(a);
  if (!split.empty())
    local = PvaryOp::create(b, loc, local.getType(), local, values.getMeshRef(),
                            values.axesAttr(split));
  auto type = cast<RankedTensorType>(sum.getType());
  Value broadcast = BroadcastInDimOp::create(
      b, loc, type, local, b.getDenseI64ArrayAttr({type.getRank() - 1}));
  Value out = AddOp::create(b, loc, sum, broadcast);
  for (Value x : {broadcast, out})
    values.set(x, global, to);
  return out;
}
