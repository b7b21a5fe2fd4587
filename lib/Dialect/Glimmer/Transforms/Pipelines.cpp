//===- Pipelines.cpp - The compile pipeline -------------------------------===//
//
// The one definition of the pass order, shared by glimmer-opt
// (--glimmer-train-pipeline, --glimmer-spmd-pipeline), glimmer-train and the
// Python module, so that a miscompile of either reduces with glimmer-opt.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Pipelines.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void glimmer::buildSpmdPipeline(OpPassManager &pm, llvm::StringRef layout,
                                llvm::StringRef tpPlan,
                                llvm::StringRef ppSplit) {
  GlimmerAttachSpmdOptions attach;
  attach.layout = layout.str();
  pm.addPass(createGlimmerAttachSpmd(attach));
  pm.addPass(createGlimmerMaterializeMesh());
  // The global view's own preparation: what needs the whole batch, then the
  // CP permutation of everything computed from integer inputs.
  pm.addPass(createGlimmerPrepareBatch());
  pm.addPass(createGlimmerPrepareCpInputs());
  // The sharding engine: seed (token splits, TP plan, SP), propagate, seed
  // the FSDP storage, partition. Each is a no-op when the layout splits
  // nothing.
  GlimmerSeedShardingOptions seed;
  seed.tpPlan = tpPlan.str();
  pm.addPass(createGlimmerSeedSharding(seed));
  pm.addPass(createGlimmerPropagateSharding());
  pm.addPass(createGlimmerShardParams());
  pm.addPass(createGlimmerPartition());
  // Pipeline stages last: each stage keeps the collectives of the other
  // axes that its ops carry.
  GlimmerSplitStagesOptions stages;
  stages.split = ppSplit.str();
  pm.addPass(createGlimmerSplitStages(stages));
  pm.addPass(createCanonicalizerPass());
}

void glimmer::buildPostAutodiffPipeline(OpPassManager &pm) {
  pm.addPass(createGlimmerReducePartials());
  // After autodiff, so that the gathers' VJPs (the gradients'
  // reduce_scatters) stay in the parameters' type.
  pm.addPass(createGlimmerNarrowGathers());
  pm.addPass(createCanonicalizerPass());
}

void glimmer::buildTrainPipeline(OpPassManager &pm,
                                 const TrainPipelineOptions &options) {
  // Recognition on the imported global view.
  pm.addNestedPass<func::FuncOp>(createGlimmerRecognizeVisionMerge());
  pm.addNestedPass<func::FuncOp>(createGlimmerRecognizeAttention());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  StringRef policy = mixedPrecisionPolicy(options.dtype);
  if (!policy.empty()) {
    GlimmerMixedPrecisionOptions precision;
    precision.policy = policy.str();
    pm.addPass(createGlimmerMixedPrecision(precision));
  }
  bool spmd = !options.spmd.empty();
  if (spmd)
    buildSpmdPipeline(pm, options.spmd, options.tpPlan, options.ppSplit);
  // Grouped-query attention reads its key/value heads unrepeated (on the
  // rank-local forward, so that the backward is grouped too).
  pm.addPass(createGlimmerFoldKvRepeat());
  pm.addPass(createCanonicalizerPass());
  if (options.train) {
    GlimmerAutodiffOptions ad;
    ad.optimizer = options.optimizer;
    ad.lr = options.lr;
    ad.beta1 = options.beta1;
    ad.beta2 = options.beta2;
    ad.eps = options.eps;
    ad.weightDecay = options.weightDecay;
    ad.maxNorm = options.maxNorm;
    pm.addPass(createGlimmerAutodiff(ad));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (spmd)
    buildPostAutodiffPipeline(pm);
  // bf16 gradients go to the optimizer as they are (it widens them).
  if (options.train)
    pm.addPass(createGlimmerNarrowGradients());
  // Last, on the final rank-local functions (forward and backward alike):
  // index-causal attention loses its iota positions, so that backends can
  // pick their dense causal kernels.
  pm.addPass(createGlimmerSimplifyAttentionMasks());
  pm.addPass(createCanonicalizerPass());
  // Then attention that cuDNN runs reads its operands as the projections
  // wrote them (no transposes around it).
  pm.addPass(createGlimmerFoldAttentionTransposes());
  // Activation checkpointing, on the final rank-local training functions:
  // each block's forward is computed again right before its backward
  // (what it keeps depends on the mode). No CSE may run after this or
  // rematerialization: it would merge the copies back.
  if (options.train && (options.ac != "none" || options.acBudget >= 0)) {
    GlimmerActivationCheckpointingOptions checkpointing;
    // A budget alone asks for budget mode; with another mode the pass
    // reports the conflict.
    checkpointing.mode = options.acBudget >= 0 && options.ac == "none"
                             ? std::string("budget")
                             : std::string(options.ac);
    checkpointing.budget = options.acBudget;
    pm.addPass(createGlimmerActivationCheckpointing(checkpointing));
  }
  // A training step recomputes cheap forward values in its backward
  // instead of keeping them.
  if (options.train && options.rematMinElements >= 0) {
    GlimmerRematerializeOptions remat;
    remat.minElements = options.rematMinElements;
    pm.addPass(createGlimmerRematerialize(remat));
  }
  // Residual adds join the RMS norms that read them (before fusion takes
  // the adds into elementwise kernels).
  pm.addPass(createGlimmerFuseResidualNorms());
  // Then elementwise chains become fusions (one kernel each on a GPU).
  pm.addPass(createGlimmerFuseElementwise());
  // Per-parameter updates and casts share launches.
  pm.addPass(createGlimmerMultiTensor());
  // Last: repeated layers become calls of one function each, so that the
  // generated C++ does not grow with depth.
  pm.addPass(createGlimmerOutlineLayers());
}

void glimmer::registerGlimmerPipelines() {
  PassPipelineRegistration<>(
      "glimmer-spmd-pipeline",
      "Global view -> per-rank program for the SPMD layout (--spmd= or the "
      "module's glimmer.spmd): attach the layout, materialize the mesh, "
      "prepare the batch and the CP inputs, then the sharding engine (seed "
      "the token splits and the TP plan, propagate, seed FSDP storage over "
      "(dp_shard, cp), partition), and cut pipeline stages",
      [](OpPassManager &pm) { buildSpmdPipeline(pm); });
  PassPipelineRegistration<TrainPipelineOptions>(
      "glimmer-train-pipeline",
      "The whole compile pipeline that glimmer-train and the Python module "
      "run on an imported module: recognition, mixed precision, the SPMD "
      "segment (with spmd=), autodiff (train=true), the post-autodiff "
      "passes and the optimizations, up to the rank-local program the EmitC "
      "lowering takes",
      buildTrainPipeline);
}
