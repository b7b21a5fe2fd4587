//===- TokenSeeds.cpp - Seeds of the batch and sequence splits ------------===//
//
// Phase 1 of the sharding engine for the data and context axes. Every value
// computed from integer inputs stays whole on every rank (propagation pins
// it); where it enters the model (the token ids of the embedding, the
// vision-gather indices, the queries' positions, the labels, a cast to
// float) a sharding constraint splits its batch over the data-parallel axes
// and its sequence over cp. Propagation carries the splits through the
// model from there, and the partitioner cuts each seeded value locally: no
// communication, since every rank holds it whole.
//
//===----------------------------------------------------------------------===//

#include "Seeds.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

/// Attention reads its keys' positions, document ids and block ids along the
/// whole sequence of its samples: they are cut to the samples only, by the
/// attention's own rule.
static bool isKeySide(OpOperand &use) {
  auto attention = dyn_cast<AttentionOp>(use.getOwner());
  if (!attention)
    return false;
  for (unsigned segment : {4u, 6u, 8u}) {
    auto [start, length] = attention.getODSOperandIndexAndLength(segment);
    if (length == 1 && use.getOperandNumber() == start)
      return true;
  }
  return false;
}

LogicalResult glimmer::detail::seedTokenSplits(func::FuncOp func,
                                               const TokenDims &roles,
                                               const TokenAxes &axes,
                                               FlatSymbolRefAttr mesh) {
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  DenseSet<Value> prep = computePrepValues(func);
  DenseMap<Value, Value> seeded;
  for (OpOperand *use : findPrepBoundaries(func, prep)) {
    if (isKeySide(*use))
      continue;
    Value v = use->get();
    auto it = seeded.find(v);
    if (it == seeded.end()) {
      SmallVector<SmallVector<StringRef, 2>> dims = tokenSplit(roles, v, axes);
      Value constrained;
      if (llvm::any_of(dims, [](const auto &a) { return !a.empty(); })) {
        if (Operation *def = v.getDefiningOp())
          b.setInsertionPointAfter(def);
        else
          b.setInsertionPointToStart(&func.getBody().front());
        auto c = ShardingConstraintOp::create(
            b, use->getOwner()->getLoc(), v, shardingOf(ctx, mesh, dims));
        c->setAttr(kTokenSplitAttr, b.getUnitAttr());
        constrained = c;
      }
      it = seeded.insert({v, constrained}).first;
    }
    if (it->second)
      use->set(it->second);
  }
  return success();
}

ShardingAttr
glimmer::detail::shardingOf(MLIRContext *ctx, FlatSymbolRefAttr mesh,
                            ArrayRef<SmallVector<StringRef, 2>> dims) {
  SmallVector<Attribute> list;
  for (const auto &axes : dims) {
    SmallVector<Attribute> names;
    for (StringRef a : axes)
      names.push_back(StringAttr::get(ctx, a));
    list.push_back(ArrayAttr::get(ctx, names));
  }
  return ShardingAttr::get(ctx, mesh, ArrayAttr::get(ctx, list),
                           ArrayAttr::get(ctx, {}));
}
