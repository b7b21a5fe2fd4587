//===- VocabParallelHandlers.cpp - Vocab-parallel embedding and loss ------===//
//
// The two ops whose vocabulary tensor parallelism splits: the token
// embedding (table rows) and cross-entropy (the logits of a column-parallel
// output projection). Megatron's vocab-parallel embedding and cross-entropy,
// built from glimmer ops, so autodiff differentiates them as it does the
// rest of the partitioned program.
//
//===----------------------------------------------------------------------===//

#include "PartitionHandlers.h"

#include "glimmer/Dialect/Glimmer/IR/OpEmitter.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// Where a handler's collectives run: the mesh and the axes that split the
/// vocabulary, `groupSize` ranks in all.
struct VocabSplit {
  FlatSymbolRefAttr mesh;
  ArrayRef<StringRef> axes;
  int64_t groupSize;
};

ArrayAttr axesAttr(OpBuilder &b, const VocabSplit &split) {
  return b.getStrArrayAttr(split.axes);
}

/// This rank's first row of a vocabulary split into `rows`-row pieces: the
/// rank's piece of [0, rows, 2 * rows, ...], as an i64 scalar.
Value vocabOffset(OpEmitter &e, const VocabSplit &split, int64_t rows) {
  OpBuilder &b = e.b;
  auto i64 = b.getI64Type();
  SmallVector<int64_t> starts;
  for (int64_t r = 0; r < split.groupSize; ++r)
    starts.push_back(r * rows);
  auto all = RankedTensorType::get({split.groupSize}, i64);
  Value table = ConstantOp::create(
      b, e.loc, all,
      cast<ElementsAttr>(DenseElementsAttr::get(all, ArrayRef(starts))));
  Value mine = LocalShardOp::create(b, e.loc, RankedTensorType::get({1}, i64),
                                    table, split.mesh, axesAttr(b, split),
                                    b.getI64IntegerAttr(0));
  return e.reshape(mine, ArrayRef<int64_t>{});
}

/// `ids` checked against the whole vocabulary of `rows` rows per rank, with
/// the message of `op`'s unsharded kernel: the rank-local lookups clamp
/// indices into the rank's rows, so they cannot see one outside it.
Value checkedAgainstVocabulary(OpEmitter &e, Value ids, const VocabSplit &split,
                               int64_t rows, StringRef op,
                               IntegerAttr ignoreIndex = {}) {
  return CheckIndicesOp::create(e.b, e.loc, ids.getType(), ids,
                                e.b.getI64IntegerAttr(rows * split.groupSize),
                                e.b.getStringAttr(op), ignoreIndex);
}

/// A sum or max of `v` over the split's ranks.
Value allReduce(OpEmitter &e, ReductionKind kind, Value v,
                const VocabSplit &split) {
  return AllReduceOp::create(e.b, e.loc, v.getType(),
                             ReductionKindAttr::get(e.b.getContext(), kind), v,
                             split.mesh, axesAttr(e.b, split));
}

/// `ids` as rows of this rank's piece (`rows` rows from `offset`), clamped
/// into it, and where they fall inside it.
std::pair<Value, Value> localRows(OpEmitter &e, Value ids, Value offset,
                                  int64_t rows) {
  RankedTensorType type = tensorTypeOf(ids);
  Value rel = e.sub(ids, e.broadcastInDim(offset, type, {}));
  Value clamped =
      MinOp::create(e.b, e.loc, type,
                    MaxOp::create(e.b, e.loc, type, rel, e.intSplat(type, 0)),
                    e.intSplat(type, rows - 1));
  Value inside = e.compare(CompareDirection::EQ, clamped, rel);
  return {clamped, inside};
}

/// The embedding's rewrite: returns the rank's share of the lookup.
Value emitVocabParallelEmbedding(OpBuilder &b, EmbeddingOp op,
                                 const VocabSplit &split) {
  b.setInsertionPoint(op);
  OpEmitter e{b, op.getLoc()};
  int64_t rows = op.getTable().getType().getDimSize(0);
  Value ids =
      checkedAgainstVocabulary(e, op.getIds(), split, rows, "embedding");
  auto [local, inside] = localRows(e, ids, vocabOffset(e, split, rows), rows);
  op.getIdsMutable().assign(local);
  b.setInsertionPointAfter(op);
  Value y = op.getResult();
  RankedTensorType type = tensorTypeOf(y);
  Value keep =
      e.broadcastLeading(inside, cast<RankedTensorType>(getI1SameShape(type)));
  Value share = e.select(keep, y, e.zerosLike(y));
  y.replaceAllUsesExcept(share, share.getDefiningOp());
  return share;
}

/// The cross-entropy's rewrite: returns the sum and the count.
std::pair<Value, Value> emitLossParallelCrossEntropy(OpBuilder &b,
                                                     CrossEntropyOp op,
                                                     const VocabSplit &split) {
  b.setInsertionPoint(op);
  OpEmitter e{b, op.getLoc()};
  auto sumType = cast<RankedTensorType>(op.getSum().getType());
  auto countType = cast<RankedTensorType>(op.getCount().getType());
  // In the loss's precision (autocast computes cross-entropy in f32 too).
  RankedTensorType logitsType = tensorTypeOf(op.getLogits());
  Value x =
      e.convert(op.getLogits(), logitsType.clone(sumType.getElementType()));
  RankedTensorType xType = tensorTypeOf(x);
  int64_t vocab = xType.getRank() - 1;
  int64_t rows = xType.getDimSize(vocab);
  Value labels = checkedAgainstVocabulary(
      e, op.getLabels(), split, rows, "cross_entropy", op.getIgnoreIndexAttr());
  RankedTensorType tokenType =
      tensorTypeOf(labels).clone(sumType.getElementType());
  // log-sum-exp over the whole vocabulary, shifted by the global maximum.
  Value localMax = e.reduce(ReductionKind::Max, x, {vocab});
  Value shift = allReduce(e, ReductionKind::Max, localMax, split);
  // The shift enters this rank's share of the exponentials: its cotangent
  // there is one rank's part.
  Value shiftShare = PvaryOp::create(b, e.loc, shift.getType(), shift,
                                     split.mesh, axesAttr(b, split));
  Value exps = e.exp(e.sub(x, e.broadcastLeading(shiftShare, xType)));
  Value localSum = e.reduceSum(exps, {vocab}, /*keepDims=*/false);
  Value total = allReduce(e, ReductionKind::Sum, localSum, split);
  Value lse = e.add(e.log(total), shift);

  // The label's logit, from the rank that holds its row.
  auto [row, inside] = localRows(e, labels, vocabOffset(e, split, rows), rows);
  RankedTensorType colsType = xType.clone(b.getI64Type());
  Value isLabel = e.compare(CompareDirection::EQ, e.iota(colsType, vocab),
                            e.broadcastLeading(row, colsType));
  Value localTarget =
      e.reduceSum(e.select(isLabel, x, e.zerosLike(x)), {vocab}, false);
  localTarget = e.select(inside, localTarget, e.zerosLike(localTarget));
  Value target = allReduce(e, ReductionKind::Sum, localTarget, split);

  // -log_softmax at the label, summed over the valid tokens, and their
  // count, as the op returns them.
  Value valid =
      e.compare(CompareDirection::NE, labels,
                e.intSplat(tensorTypeOf(labels), op.getIgnoreIndex()));
  Value losses = e.select(valid, e.sub(lse, target), e.zerosLike(lse));
  assert(tensorTypeOf(losses) == tokenType && "token losses in the sum's type");
  SmallVector<int64_t> tokens =
      llvm::to_vector(llvm::seq<int64_t>(0, tokenType.getRank()));
  Value lossSum = e.reduceSum(losses, tokens, false);
  Value ones =
      e.convert(valid, tensorTypeOf(labels).clone(countType.getElementType()));
  Value count = e.reduceSum(ones, tokens, false);
  op.getSum().replaceAllUsesWith(lossSum);
  op.getCount().replaceAllUsesWith(count);
  op.erase();
  return {lossSum, count};
}

} // namespace

void glimmer::detail::partitionVocabParallelEmbedding(
    PartitionedValues &values, EmbeddingOp op, ArrayRef<StringRef> axes) {
  Value y = op.getResult();
  Value share = emitVocabParallelEmbedding(
      values.builder(), op,
      {values.getMeshRef(), axes, axesSize(axes, values.getMesh())});
  values.set(share, values.globalType(y), values.layoutOf(y));
}

void glimmer::detail::partitionLossParallelCrossEntropy(
    PartitionedValues &values, CrossEntropyOp op, ArrayRef<StringRef> axes) {
  Value oldResults[] = {op.getSum(), op.getCount()};
  SmallVector<std::pair<Layout, RankedTensorType>> kept;
  for (Value r : oldResults)
    kept.push_back({values.layoutOf(r), values.globalType(r)});
  auto [sum, count] = emitLossParallelCrossEntropy(
      values.builder(), op,
      {values.getMeshRef(), axes, axesSize(axes, values.getMesh())});
  for (auto [v, k] : llvm::zip(SmallVector<Value>{sum, count}, kept))
    values.set(v, k.second, k.first);
  for (Value r : oldResults)
    values.forget(r);
}
