//===- PartitionHandlers.h - Ops the partitioner rewrites -------*- C++ -*-===//
//
// The few ops whose per-rank code is not the op at local types (as XLA's
// SPMD partitioner has per-op handlers): glimmer-partition brings their
// operands to the sharding the rule asks for, then the handler rewrites the
// op. Each handler emits per-rank code (collectives included, with their
// pvary marks), so its results are final.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_PARTITIONHANDLERS_H
#define GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_PARTITIONHANDLERS_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "mlir/IR/Builders.h"

namespace glimmer::detail {

/// Where a handler's collectives run: the mesh and the axes that split the
/// vocabulary, `groupSize` ranks in all.
struct VocabSplit {
  mlir::FlatSymbolRefAttr mesh;
  llvm::ArrayRef<llvm::StringRef> axes;
  int64_t groupSize;
};

/// Vocab-parallel embedding: `op` already reads this rank's rows of the
/// table (`[V / groupSize, D]`) with the global ids. The ids become local
/// rows (clamped into range) and the output is zeroed where the row is
/// another rank's, so the result is this rank's share of the lookup, partial
/// over the split's axes. Returns that result; the op's other uses are
/// redirected to it.
mlir::Value partitionVocabParallelEmbedding(mlir::OpBuilder &b, EmbeddingOp op,
                                            const VocabSplit &split);

/// Loss-parallel cross-entropy: `op` reads this rank's slice of the logits'
/// vocabulary. Replaced by the per-rank computation: the ranks' maxima and
/// sums of exponentials give each token's log-sum-exp, the rank holding the
/// label gives its logit, so no rank holds the full logits. Returns the sum
/// and the count (complete over the split; the op is erased).
std::pair<mlir::Value, mlir::Value>
partitionLossParallelCrossEntropy(mlir::OpBuilder &b, CrossEntropyOp op,
                                  const VocabSplit &split);

} // namespace glimmer::detail

#endif // GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_PARTITIONHANDLERS_H
