//===- LocalShapeHandlers.cpp - Attributes that hold global shapes --------===//
//
// Most ops take their local shapes from their types alone; these also
// hold sizes of split dimensions in attributes, which become the rank's.
//
//===----------------------------------------------------------------------===//

#include "PartitionHandlers.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

void glimmer::detail::partitionSlice(PartitionedValues &values, SliceOp op) {
  SmallVector<int64_t> limit(op.getLimit());
  auto local = cast<RankedTensorType>(op.getInput().getType());
  for (auto [d, axes] : llvm::enumerate(values.layoutOf(op.getResult()).dims))
    if (!axes.empty())
      limit[d] = local.getDimSize(d);
  op.setLimit(limit);
}

void glimmer::detail::partitionConstant(PartitionedValues &values,
                                        ConstantOp op) {
  // A copy: the map grows below.
  Layout l = values.layoutOf(op.getResult());
  if (l.isReplicated())
    return;
  DenseElementsAttr value = cast<DenseElementsAttr>(op.getValue());
  auto type = cast<RankedTensorType>(op.getResult().getType());
  if (value.isSplat()) {
    op.setValueAttr(
        DenseElementsAttr::get(type, value.getSplatValue<Attribute>()));
    return;
  }
  // Keep the whole constant and cut this rank's piece.
  RankedTensorType global = values.globalType(op.getResult());
  op.getResult().setType(global);
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : op.getResult().getUses())
    uses.push_back(&use);
  values.builder().setInsertionPointAfter(op);
  Value piece =
      values.reshard(op.getResult(), Layout::replicated(global.getRank()), l,
                     global, op.getLoc());
  for (OpOperand *use : uses)
    use->set(piece);
  values.set(piece, global, l);
  values.setLayout(op.getResult(), Layout::replicated(global.getRank()));
}
