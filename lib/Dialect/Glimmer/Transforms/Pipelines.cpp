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
  pm.addPass(createGlimmerPrepareCpInputs());
  pm.addPass(createGlimmerPartitionTokens());
  // The sharding engine (tensor parallelism so far): seed, propagate,
  // partition. Each is a no-op without tp.
  GlimmerSeedShardingOptions seed;
  seed.tpPlan = tpPlan.str();
  pm.addPass(createGlimmerSeedSharding(seed));
  pm.addPass(createGlimmerPropagateSharding());
  pm.addPass(createGlimmerPartition());
  pm.addPass(createGlimmerShardParams());
  // Pipeline stages last: each stage keeps the collectives of the other
  // axes that its ops carry.
  GlimmerSplitStagesOptions stages;
  stages.split = ppSplit.str();
  pm.addPass(createGlimmerSplitStages(stages));
  pm.addPass(createCanonicalizerPass());
}

void glimmer::buildPostAutodiffPipeline(OpPassManager &pm) {
  pm.addPass(createGlimmerReducePartials());
  pm.addPass(createCanonicalizerPass());
}

void glimmer::registerGlimmerPipelines() {
  PassPipelineRegistration<>(
      "glimmer-spmd-pipeline",
      "Global view -> per-rank program for the SPMD layout (--spmd= or the "
      "module's glimmer.spmd): attach the layout, materialize the mesh, "
      "prepare CP inputs, shard the batch over dp and the sequence over cp, "
      "seed, propagate and partition tensor parallelism (sharding engine), "
      "shard parameters over (dp_shard, cp) (FSDP), cut pipeline stages",
      [](OpPassManager &pm) { buildSpmdPipeline(pm); });
}
