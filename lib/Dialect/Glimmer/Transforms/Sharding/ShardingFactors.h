//===- ShardingFactors.h - Mesh axes on an op's factors ---------*- C++ -*-===//
//
// The two steps propagation and partitioning share: reading which mesh axes
// split each factor of an op's sharding rule off its values' shardings, and
// projecting factor axes back onto a value's dimensions.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_TRANSFORMS_SHARDINGFACTORS_H
#define GLIMMER_LIB_TRANSFORMS_SHARDINGFACTORS_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerAttrs.h"
#include "glimmer/Dialect/Glimmer/IR/ShardingRule.h"

#include <optional>

namespace glimmer::detail {

using Axes = llvm::SmallVector<llvm::StringRef, 2>;

/// The axes of one dimension split over its factors `fs`, major to minor:
/// an axis goes to the current factor while its size divides what is left
/// of it, and a minor factor is reached only once the major one is split
/// completely. nullopt when the axes do not fit.
std::optional<llvm::SmallVector<Axes>>
splitOverFactors(llvm::ArrayRef<llvm::StringRef> axes,
                 llvm::ArrayRef<unsigned> fs, const ShardingRule &rule,
                 MeshAttr mesh);

/// The axes of each dimension of `tensor` given the axes of each factor:
/// the factors' axes in order, continuing past a factor only when it is
/// split completely.
llvm::SmallVector<Axes> projectFactors(const ShardingRule &rule,
                                       const ShardingRule::TensorFactors &tensor,
                                       llvm::ArrayRef<Axes> factorAxes,
                                       MeshAttr mesh);

/// Whether `axis` splits the tokens (dp_replicate, dp_shard, cp): over these
/// axes each rank's loss is a share of the whole, a partial sum.
bool isTokenAxis(llvm::StringRef axis);

/// The product of the axes' sizes.
int64_t axesSize(llvm::ArrayRef<llvm::StringRef> axes, MeshAttr mesh);

} // namespace glimmer::detail

#endif // GLIMMER_LIB_TRANSFORMS_SHARDINGFACTORS_H
