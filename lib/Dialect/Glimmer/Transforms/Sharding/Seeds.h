//===- Seeds.h - The seed sources of glimmer-seed-sharding ------*- C++ -*-===//
//
// glimmer-seed-sharding writes the engine's seeds from three sources: the
// tensor-parallel plan (SeedSharding.cpp), the sequence-parallel residual
// stream (SeedSharding.cpp), and the splits of the batch and the sequence
// over the data and context axes (TokenSeeds.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_SEEDS_H
#define GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_SEEDS_H

#include "TokenInputs.h"

namespace glimmer::detail {

/// Constrains every value computed from integer inputs where the model
/// reads it (but for attention's key side) to its token split
/// (`tokenSplit`), with a `glimmer.sharding_constraint` marked
/// `glimmer.token_split`.
mlir::LogicalResult seedTokenSplits(mlir::func::FuncOp func,
                                    const TokenDims &roles,
                                    const TokenAxes &axes,
                                    mlir::FlatSymbolRefAttr mesh);

/// The sharding of per-dimension axes on `mesh`, with no partial axes.
ShardingAttr shardingOf(mlir::MLIRContext *ctx, mlir::FlatSymbolRefAttr mesh,
                        llvm::ArrayRef<llvm::SmallVector<llvm::StringRef, 2>> dims);

} // namespace glimmer::detail

#endif // GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_SEEDS_H
