//===- Passes.h - Glimmer passes --------------------------------*- C++ -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_H
#define GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace glimmer {

#define GEN_PASS_DECL
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"

/// The global-view -> per-rank part of the pipeline for the layout recorded
/// by (or set in) `layout` (empty: the thread's SpmdContext): attach the
/// layout, materialize the mesh, prepare CP inputs, shard the token-side
/// computation (batch over dp, sequence over cp), tensor and sequence
/// parallelism on the sharding engine (with the plan in `tpPlan`, a JSON
/// file, or the default plan), shard parameters (FSDP), cut pipeline stages
/// (at the split points `ppSplit`, or balanced).
void buildSpmdPipeline(mlir::OpPassManager &pm, llvm::StringRef layout = "",
                       llvm::StringRef tpPlan = "",
                       llvm::StringRef ppSplit = "");

/// What runs after autodiff on a partitioned program: per-rank partial
/// results are summed in the program (glimmer-reduce-partials).
void buildPostAutodiffPipeline(mlir::OpPassManager &pm);

/// Registers `glimmer-spmd-pipeline` (buildSpmdPipeline) with the pass
/// registry, for glimmer-opt.
void registerGlimmerPipelines();

/// The glimmer-mixed-precision policy that a `--dtype` value asks for:
/// "bf16" for bf16, "autocast" for bf16-autocast; empty for any other value
/// (f32 and f64 run without mixed precision).
llvm::StringRef mixedPrecisionPolicy(llvm::StringRef dtype);

} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_H
