//===- Layers.h - A model's blocks, read off op locations -------*- C++ -*-===//
//
// The importer gives each op the module path it came from
// (`layers.3.attention.wq`). A block of the model (a decoder layer, a vision
// layer) is that path up to its first numbered component (`layers.3`,
// `vision.layers.0`). In a function, a block's ops come in runs: its forward,
// and in a training step its backward (and any recomputation). The passes
// that work per block (glimmer-outline-layers, glimmer-activation-
// checkpointing) read blocks and their runs here, so that they agree on
// what a block is.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_DIALECT_GLIMMER_TRANSFORMS_LAYERS_H
#define GLIMMER_DIALECT_GLIMMER_TRANSFORMS_LAYERS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace glimmer {

/// The module path the importer gave an op's location (the first name of a
/// fused location), or "".
llvm::StringRef modulePathOf(mlir::Location loc);

/// The block an op belongs to: its module path up to the first component
/// that is a number (`layers.3` of `layers.3.attention.wq`), or "" when it
/// has none.
llvm::StringRef layerOf(mlir::Operation *op);

/// A maximal run of one block's ops in a function body, with the runs of
/// at most `maxForeign` ops of no or another block between two of its own
/// taken in (values computed once and placed among a block's ops).
struct LayerSegment {
  llvm::StringRef layer;
  llvm::SmallVector<mlir::Operation *> ops;
};

/// The segments of `body` (its terminator excluded), in order. Ops for
/// which `ignore` returns true (constants, which canonicalization hoists
/// to the top with the location of their first user) count as no block's.
llvm::SmallVector<LayerSegment>
layerSegments(mlir::Block &body, unsigned maxForeign,
              llvm::function_ref<bool(mlir::Operation *)> ignore = nullptr);

/// A rough cost of computing `op` (multiply-adds of GEMMs, attention and
/// convolutions; the result's elements for anything else), by which
/// pipeline stages are balanced and activations chosen to be kept.
double estimatedCost(mlir::Operation *op);

} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_TRANSFORMS_LAYERS_H
