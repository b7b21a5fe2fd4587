//===- Pipelines.cpp - The SPMD pass pipeline ----------------------------===//
//
// One definition of the pass sequence that turns a global-view program into
// per-rank programs, shared by glimmer-opt (--glimmer-spmd-pipeline) and
// the compile-then-train driver, so the two can never drift apart.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

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

void glimmer::registerGlimmerPipelines() {
  PassPipelineRegistration<>(
      "glimmer-spmd-pipeline",
      "Global view -> per-rank program for the SPMD layout (--spmd= or the "
      "module's glimmer.spmd): attach the layout, materialize the mesh, "
      "prepare the batch and the CP inputs, then the sharding engine (seed "
      "the token splits and the TP plan, propagate, seed FSDP storage over "
      "(dp_shard, cp), partition), and cut pipeline stages",
      [](OpPassManager &pm) { buildSpmdPipeline(pm); });
}
