//===- Pipelines.h - The compile pipeline ------------------------*- C++ -*-===//
//
// The pass order, defined once: the SPMD segment, the post-autodiff segment
// and the whole compile pipeline that glimmer-train, the Python module and
// glimmer-opt (--glimmer-train-pipeline) run.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PIPELINES_H
#define GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace glimmer {

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

/// The options of the whole compile pipeline, the same for glimmer-train
/// (its flags), the Python module and glimmer-opt
/// (`--glimmer-train-pipeline="spmd=cp=2 dtype=bf16"`).
struct TrainPipelineOptions
    : public mlir::PassPipelineOptions<TrainPipelineOptions> {
  Option<std::string> dtype{
      *this, "dtype",
      llvm::cl::desc("Compute precision: f32 and f64 as imported; bf16 or "
                     "bf16-autocast lower an f32 import to mixed precision"),
      llvm::cl::init("f32")};
  Option<std::string> spmd{
      *this, "spmd",
      llvm::cl::desc("Parallel layout (dp_shard=2,cp=2,...); empty: the "
                     "program stays unsharded"),
      llvm::cl::init("")};
  Option<std::string> tpPlan{
      *this, "tp-plan",
      llvm::cl::desc("Tensor-parallel plan (JSON file); empty: the default "
                     "plan read off the graph"),
      llvm::cl::init("")};
  Option<std::string> ppSplit{
      *this, "pp-split",
      llvm::cl::desc("Pipeline split points (first module path of each "
                     "stage after the first); empty: balanced by cost"),
      llvm::cl::init("")};
  Option<bool> train{
      *this, "train",
      llvm::cl::desc("Build @grad_step and @apply_step besides @forward"),
      llvm::cl::init(true)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("adamw or sgd"),
                                llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(1e-3)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"),
                       llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay; negative: torch.optim's default"),
      llvm::cl::init(-1)};
  Option<double> maxNorm{
      *this, "max-norm",
      llvm::cl::desc("Clip the global gradient norm to this (0: no clipping)"),
      llvm::cl::init(0)};
  Option<std::string> ac{
      *this, "ac",
      llvm::cl::desc("Activation checkpointing: none, full (each block keeps "
                     "its inputs and computes its forward again in its "
                     "backward) or selective (also keeps GEMM, attention and "
                     "collective results)"),
      llvm::cl::init("none")};
  Option<int64_t> acBudget{
      *this, "ac-budget",
      llvm::cl::desc("Activation checkpointing within a budget: the saved "
                     "activations each training function keeps, in bytes, "
                     "the most expensive to compute again per byte first; "
                     "negative: no budget"),
      llvm::cl::init(-1)};
  Option<int64_t> rematMinElements{
      *this, "remat-min-elements",
      llvm::cl::desc("Recompute cheap forward values of at least this many "
                     "elements in the backward; negative: none"),
      llvm::cl::init(65536)};
};

/// The whole compile pipeline, from an imported module to the rank-local
/// program the EmitC lowering takes: recognition, mixed precision, the SPMD
/// segment (buildSpmdPipeline, when `spmd` is set), autodiff, the
/// post-autodiff segment and the optimizations. The only definition of the
/// pass order: glimmer-train, Python and glimmer-opt all run this.
void buildTrainPipeline(mlir::OpPassManager &pm,
                        const TrainPipelineOptions &options);

/// Registers `glimmer-spmd-pipeline` (buildSpmdPipeline) and
/// `glimmer-train-pipeline` (buildTrainPipeline) with the pass registry, for
/// glimmer-opt.
void registerGlimmerPipelines();

} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PIPELINES_H
