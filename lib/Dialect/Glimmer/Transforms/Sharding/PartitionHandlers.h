//===- PartitionHandlers.h - Ops the partitioner rewrites -------*- C++ -*-===//
//
// The ops whose per-rank code is not the op at local types (as XLA's SPMD
// partitioner has per-op handlers), one file per family. glimmer-partition
// brings their operands to the sharding the rule asks for and gives their
// results local types, then the handler rewrites the op (a sequence-parallel
// constraint, which has no rule step, is handled instead). Each handler
// emits per-rank code (collectives included, with their pvary marks) and
// records the layouts of the values it makes, so its results are final.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_PARTITIONHANDLERS_H
#define GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_PARTITIONHANDLERS_H

#include "PartitionedValues.h"

namespace glimmer::detail {

//===----------------------------------------------------------------------===//
// Sequence parallelism (SequenceParallelHandlers.cpp)
//===----------------------------------------------------------------------===//

/// A sequence-parallel constraint steers propagation and cuts the residual
/// stream, but never gathers: its operand is cut to the constraint's
/// sharding where that refines the held split, and kept elsewhere. The
/// consumers reshard what they read (a column-parallel projection gathers
/// its input itself, so that the gather's VJP sums the ranks' shares).
void partitionSequenceParallelConstraint(PartitionedValues &values,
                                         ShardingConstraintOp op);

//===----------------------------------------------------------------------===//
// Row-parallel biases (RowParallelBiasHandlers.cpp)
//===----------------------------------------------------------------------===//

/// A row-parallel projection (its result partial) would add its bias once
/// per rank: the bias is taken off the op and returned, for each use to add
/// once to the complete sum (addRowParallelBias).
mlir::Value detachRowParallelBias(LinearOp op);

/// `sum`, a row-parallel projection's complete result in the layout `to` a
/// use wants (global type `global`), plus its `bias`: to a piece of the
/// tokens under sp, through pvary (each rank's cotangent of the bias is
/// then a share).
mlir::Value addRowParallelBias(PartitionedValues &values, mlir::Value sum,
                               mlir::Value bias, const Layout &to,
                               mlir::RankedTensorType global,
                               mlir::Location loc);

//===----------------------------------------------------------------------===//
// Attributes that hold global shapes (LocalShapeHandlers.cpp)
//===----------------------------------------------------------------------===//

/// A slice's limits along split dimensions become the local sizes.
void partitionSlice(PartitionedValues &values, SliceOp op);

/// A split constant: a splat is rebuilt at its local type; any other keeps
/// its whole value, and its uses read the rank's piece, cut from it.
void partitionConstant(PartitionedValues &values, ConstantOp op);

//===----------------------------------------------------------------------===//
// The vocabulary (VocabParallelHandlers.cpp)
//===----------------------------------------------------------------------===//

/// Vocab-parallel embedding: `op` already reads this rank's rows of the
/// table (`[V / n, D]`, n the ranks of `axes`) with the global ids. The ids
/// become local rows (clamped into range) and the output is zeroed where the
/// row is another rank's, so the result is this rank's share of the lookup,
/// partial over `axes`; the op's other uses read that share.
void partitionVocabParallelEmbedding(PartitionedValues &values, EmbeddingOp op,
                                     llvm::ArrayRef<llvm::StringRef> axes);

/// Loss-parallel cross-entropy: `op` reads this rank's slice of the logits'
/// vocabulary, split over `axes`. Replaced by the per-rank computation: the
/// ranks' maxima and sums of exponentials give each token's log-sum-exp,
/// the rank holding the label gives its logit, so no rank holds the full
/// logits. The sum and the count are complete over the split; the op is
/// erased.
void partitionLossParallelCrossEntropy(PartitionedValues &values,
                                       CrossEntropyOp op,
                                       llvm::ArrayRef<llvm::StringRef> axes);

} // namespace glimmer::detail

#endif // GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_PARTITIONHANDLERS_H
