// The whole SPMD chain from a global-view program, then autodiff and the
// in-program reduction of partial sums, on a small VLM (a one-layer vision
// encoder, the vision merge, an LM head and the loss; T = 8, B = 2).
// RUN: glimmer-opt %s --spmd=dp_shard=2,cp=2 --glimmer-spmd-pipeline --glimmer-autodiff=optimizer=sgd --glimmer-reduce-partials --canonicalize | FileCheck %s --check-prefix=FSDP
// RUN: glimmer-opt %s --spmd=dp_replicate=2,cp=2 --glimmer-spmd-pipeline --glimmer-autodiff=optimizer=sgd --glimmer-reduce-partials --canonicalize | FileCheck %s --check-prefix=DDP
// RUN: glimmer-opt %s --spmd=microbatches=2 --glimmer-spmd-pipeline --glimmer-autodiff=optimizer=sgd --glimmer-reduce-partials --canonicalize | FileCheck %s --check-prefix=MICRO
// The default layout leaves the program global.
// RUN: glimmer-opt %s --glimmer-spmd-pipeline | FileCheck %s --check-prefix=NONE

// FSDP over dp_shard x cp (4 ranks): the layout is recorded and the mesh
// declared; every parameter is a quarter of dim 0, all-gathered before its
// use (the vision encoder's too: it runs on all images on every rank); the
// tokens are cut to the rank's sample and sequence slice; each sharded
// gradient comes from one reduce_scatter over dp_shard x cp, which sums it
// completely, so only the loss needs an all_reduce.
// FSDP: module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">}
// FSDP: glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
// FSDP-LABEL: func.func @grad_step
// FSDP-SAME: %[[IMG:[a-z0-9]+]]: tensor<3x4xf32> {glimmer.input = "images"}
// FSDP-SAME: %[[VENC:[a-z0-9]+]]: tensor<1x4xf32> {glimmer.param = "vision.proj", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}]>}
// FSDP-SAME: -> (tensor<f32>, tensor<1x4xf32> {glimmer.grad = "vision.proj", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}]>}, tensor<4x4xf32> {glimmer.grad = "emb", {{.*}}}, tensor<4x4xf32> {glimmer.grad = "head", {{.*}}})
// FSDP: %[[TP:.*]] = glimmer.cp_permute %arg0 dim = 1 cp = 2
// FSDP: glimmer.local_shard %[[TP]] on @mesh ["dp_shard"] dim = 0 : tensor<2x8xi64> -> tensor<1x8xi64>
// FSDP: %[[V:.*]] = glimmer.all_gather %[[VENC]] on @mesh ["dp_shard", "cp"] dim = 0 : tensor<1x4xf32> -> tensor<4x4xf32>
// FSDP-NEXT: %[[BANK:.*]] = glimmer.linear %[[IMG]], %[[V]] : tensor<3x4xf32>, tensor<4x4xf32> -> tensor<3x4xf32>
// FSDP: %[[IDX:.*]] = glimmer.vision_bank_indices %arg0
// FSDP-NOT: glimmer.all_gather
// FSDP: glimmer.vision_gather %{{.*}}, %[[BANK]], %{{.*}} : tensor<1x4x4xf32>, tensor<3x4xf32>, tensor<1x4xi64>
// FSDP: glimmer.reduce sum %{{.*}} dims = [0] : tensor<16xi64> -> tensor<i64>
// FSDP-DAG: %[[DHEAD:.*]] = glimmer.reduce_scatter sum %{{.*}} on @mesh ["dp_shard", "cp"] dim = 0 : tensor<16x4xf32> -> tensor<4x4xf32>
// FSDP-DAG: %[[DEMB:.*]] = glimmer.reduce_scatter sum %{{.*}} on @mesh ["dp_shard", "cp"] dim = 0 : tensor<16x4xf32> -> tensor<4x4xf32>
// FSDP-DAG: %[[DVENC:.*]] = glimmer.reduce_scatter sum %{{.*}} on @mesh ["dp_shard", "cp"] dim = 0 : tensor<4x4xf32> -> tensor<1x4xf32>
// FSDP: %[[LOSS:.*]] = glimmer.all_reduce sum %{{.*}} on @mesh ["dp_shard", "cp"] : tensor<f32>
// FSDP-NEXT: return %[[LOSS]], %[[DVENC]], %[[DEMB]], %[[DHEAD]]
// The optimizer updates the pieces; the norm sums their squares over the
// shard group once.
// FSDP-LABEL: func.func @apply_step
// FSDP: glimmer.all_reduce sum %{{.*}} on @mesh ["dp_shard", "cp"] : tensor<f32>
// FSDP-NOT: glimmer.all_reduce
// FSDP: glimmer.sqrt

// Plain data parallelism with CP: parameters stay replicated; no collective
// feeds vision_gather; the valid-token count is taken on the full labels
// (no collective); every gradient, the vision encoder's included, is
// reduced exactly once, by one all_reduce over all token axes at the end.
// DDP-LABEL: func.func @grad_step
// DDP-SAME: %[[VENC:[a-z0-9]+]]: tensor<4x4xf32> {glimmer.param = "vision.proj"}
// DDP: glimmer.local_shard %{{.*}} on @mesh ["dp_replicate"] dim = 0 : tensor<2x8xi64> -> tensor<1x8xi64>
// DDP: %[[BANK:.*]] = glimmer.linear %{{.*}}, %[[VENC]] : tensor<3x4xf32>, tensor<4x4xf32> -> tensor<3x4xf32>
// DDP-NOT: glimmer.all_gather
// DDP: glimmer.vision_gather %{{.*}}, %[[BANK]], %{{.*}} : tensor<1x4x4xf32>, tensor<3x4xf32>, tensor<1x4xi64>
// DDP: glimmer.reduce sum %{{.*}} dims = [0] : tensor<16xi64> -> tensor<i64>
// DDP-NOT: glimmer.all_reduce
// DDP-NOT: glimmer.reduce_scatter
// DDP: %[[L:.*]] = glimmer.all_reduce sum %{{.*}} on @mesh ["dp_replicate", "cp"] : tensor<f32>
// DDP-NEXT: %[[DV:.*]] = glimmer.all_reduce sum %{{.*}} on @mesh ["dp_replicate", "cp"] : tensor<4x4xf32>
// DDP-NEXT: %[[DE:.*]] = glimmer.all_reduce sum %{{.*}} on @mesh ["dp_replicate", "cp"] : tensor<16x4xf32>
// DDP-NEXT: %[[DH:.*]] = glimmer.all_reduce sum %{{.*}} on @mesh ["dp_replicate", "cp"] : tensor<16x4xf32>
// DDP-NEXT: return %[[L]], %[[DV]], %[[DE]], %[[DH]]
// DDP-LABEL: func.func @apply_step
// DDP-NOT: glimmer.all_reduce
// DDP: return

// NONE: module attributes {glimmer.spmd = #glimmer.spmd<"">}
// NONE-NOT: glimmer.local_shard
// NONE-NOT: glimmer.all_gather
module {
  func.func @forward(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %labels: tensor<2x8xi64> {glimmer.input = "labels"},
                     %images: tensor<3x4xf32> {glimmer.input = "images"}, %venc: tensor<4x4xf32> {glimmer.param = "vision.proj"},
                     %table: tensor<16x4xf32> {glimmer.param = "emb"}, %head: tensor<16x4xf32> {glimmer.param = "head"}) -> tensor<f32> {
    %bank = glimmer.linear %images, %venc : tensor<3x4xf32>, tensor<4x4xf32> -> tensor<3x4xf32>
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 15 : tensor<2x8xi64>
    %h = glimmer.vision_gather %e, %bank, %idx : tensor<2x8x4xf32>, tensor<3x4xf32>, tensor<2x8xi64>
    %logits = glimmer.linear %h, %head : tensor<2x8x4xf32>, tensor<16x4xf32> -> tensor<2x8x16xf32>
    %lf = glimmer.reshape %logits : tensor<2x8x16xf32> -> tensor<16x16xf32>
    %lab = glimmer.reshape %labels : tensor<2x8xi64> -> tensor<16xi64>
    %sum, %count = glimmer.cross_entropy %lf, %lab ignore_index = -100 : tensor<16x16xf32>, tensor<16xi64> -> tensor<f32>, tensor<i64>
    %n = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %n : tensor<f32>
    return %loss : tensor<f32>
  }
}

// Two micro-batches (grad accumulation): one stage whose calls take the
// micro-batch index; integer inputs are prepared on the whole batch
// (vision-bank indices, the valid-token count over all 16 labels) and cut to
// the micro-batch's sample where they enter the model, so the model is
// compiled at the micro-batch's shape (B = 1); the vision encoder is the
// prologue, run once per step (its backward once, on the summed bank
// cotangent); nothing is communicated.
// MICRO-LABEL: func.func @prologue
// MICRO-SAME: {glimmer.input = "images"}
// MICRO-SAME: -> (tensor<3x4xf32> {glimmer.activation = 0 : i64}) attributes {glimmer.stage_prologue}
// MICRO: glimmer.linear
// MICRO-LABEL: func.func @prologue_grad
// MICRO-SAME: {glimmer.cotangent = 0 : i64}
// MICRO-SAME: -> (tensor<4x4xf32> {glimmer.grad = "vision.proj"})
// MICRO-LABEL: func.func @stage_0_grad
// MICRO-SAME: %[[MB:[a-z0-9]+]]: tensor<i64> {glimmer.microbatch}
// MICRO-SAME: %[[BANK:[a-z0-9]+]]: tensor<3x4xf32> {glimmer.prologue = 0 : i64}
// MICRO-SAME: -> (tensor<f32>, tensor<3x4xf32> {glimmer.prologue_grad = 0 : i64}, tensor<16x4xf32> {glimmer.grad = "emb"}, tensor<16x4xf32> {glimmer.grad = "head"})
// MICRO: %[[T:.*]] = glimmer.microbatch_slice %arg0[%[[MB]]] pieces = 2 dim = 0 : tensor<2x8xi64>, tensor<i64> -> tensor<1x8xi64>
// MICRO: glimmer.embedding %{{.*}}, %[[T]] : tensor<16x4xf32>, tensor<1x8xi64> -> tensor<1x8x4xf32>
// MICRO: %[[IDX:.*]] = glimmer.vision_bank_indices %arg0 image_token_id = 15 : tensor<2x8xi64>
// MICRO-NEXT: glimmer.microbatch_slice %[[IDX]][%[[MB]]] pieces = 2 dim = 0
// MICRO: glimmer.vision_gather %{{.*}}, %[[BANK]]
// MICRO: glimmer.reduce sum %{{.*}} dims = [0] : tensor<16xi64> -> tensor<i64>
// MICRO: glimmer.cross_entropy %{{.*}}, %{{.*}} ignore_index = -100 : tensor<1x8x16xf32>, tensor<1x8xi64>
// MICRO-NOT: glimmer.all_reduce
// MICRO: return
// MICRO-LABEL: func.func @apply_step_0
// MICRO-SAME: {glimmer.param = "vision.proj"}
// MICRO-NOT: glimmer.all_reduce
