// RUN: glimmer-opt %s -glimmer-seed-sharding=tp-plan=%S/Inputs/tp-plan.json | FileCheck %s

// A plan file replaces the default plan: patterns over state_dict names,
// the first match (in sorted order) decides. wq is column-parallel with its
// bias, wo row-parallel (its bias stays replicated: it is added after the
// reduction), w1 replicated although the default plan would split it, and
// weights no pattern names stay replicated.
// CHECK-LABEL: func.func @plan_from_file
// CHECK-SAME: %arg1: tensor<32x32xf32> {glimmer.param = "layers.0.wq", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg2: tensor<32xf32> {glimmer.param = "layers.0.wq.bias", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}]>}
// CHECK-SAME: %arg3: tensor<32x32xf32> {glimmer.param = "layers.0.wo"
// CHECK-SAME: glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"tp"}]>}
// CHECK-SAME: %arg4: tensor<32xf32> {glimmer.param = "layers.0.wo.bias"}
// CHECK-SAME: %arg5: tensor<64x32xf32> {glimmer.param = "layers.0.w1"}
// CHECK-SAME: %arg6: tensor<64x32xf32> {glimmer.param = "other.w"})
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @plan_from_file(%x: tensor<8x32xf32>,
      %wq: tensor<32x32xf32> {glimmer.param = "layers.0.wq"}, %bq: tensor<32xf32> {glimmer.param = "layers.0.wq.bias"},
      %wo: tensor<32x32xf32> {glimmer.param = "layers.0.wo"}, %bo: tensor<32xf32> {glimmer.param = "layers.0.wo.bias"},
      %w1: tensor<64x32xf32> {glimmer.param = "layers.0.w1"}, %w: tensor<64x32xf32> {glimmer.param = "other.w"}) -> tensor<8x64xf32> {
    %q = glimmer.linear %x, %wq, %bq : tensor<8x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
    %o = glimmer.linear %q, %wo, %bo : tensor<8x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
    %h = glimmer.linear %o, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %g = glimmer.silu %h : tensor<8x64xf32>
    %z = glimmer.linear %o, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %y = glimmer.add %g, %z : tensor<8x64xf32>
    return %y : tensor<8x64xf32>
  }
}
