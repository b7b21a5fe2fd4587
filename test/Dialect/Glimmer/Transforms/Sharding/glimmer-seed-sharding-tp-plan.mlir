// RUN: glimmer-opt %s -glimmer-seed-sharding=tp-plan=%S/Inputs/tp-plan.json | FileCheck %s

// A plan file replaces the default plan: patterns over state_dict names,
// the first match (in sorted order) decides. wq is column-parallel with its
// bias, wo row-parallel (its bias stays replicated: it is added after the
// reduction), w1 replicated although the default plan would split it, and
// weights no pattern names stay replicated. Embedding tables: "rowwise"
// splits the rows (vocab-parallel), "colwise" the hidden features; the
// output projection, replicated by the plan, keeps its logits whole.
// CHECK-LABEL: func.func @plan_from_file
// CHECK-SAME: %arg1: tensor<32x32xf32> {glimmer.param = "layers.0.wq", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg2: tensor<32xf32> {glimmer.param = "layers.0.wq.bias", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}]>}
// CHECK-SAME: %arg3: tensor<32x32xf32> {glimmer.param = "layers.0.wo"
// CHECK-SAME: glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"tp"}]>}
// CHECK-SAME: %arg4: tensor<32xf32> {glimmer.param = "layers.0.wo.bias"}
// CHECK-SAME: %arg5: tensor<64x32xf32> {glimmer.param = "layers.0.w1"}
// CHECK-SAME: %arg6: tensor<64x32xf32> {glimmer.param = "other.w"}
// CHECK-SAME: %arg7: tensor<64x32xf32> {glimmer.param = "tok_embeddings.weight", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg8: tensor<16x32xf32> {glimmer.param = "vision.pos_table", glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"tp"}]>}
// CHECK-SAME: %arg11: tensor<64x32xf32> {glimmer.param = "output.weight"},
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @plan_from_file(%x: tensor<8x32xf32>,
      %wq: tensor<32x32xf32> {glimmer.param = "layers.0.wq"}, %bq: tensor<32xf32> {glimmer.param = "layers.0.wq.bias"},
      %wo: tensor<32x32xf32> {glimmer.param = "layers.0.wo"}, %bo: tensor<32xf32> {glimmer.param = "layers.0.wo.bias"},
      %w1: tensor<64x32xf32> {glimmer.param = "layers.0.w1"}, %w: tensor<64x32xf32> {glimmer.param = "other.w"},
      %tok: tensor<64x32xf32> {glimmer.param = "tok_embeddings.weight"}, %pos: tensor<16x32xf32> {glimmer.param = "vision.pos_table"},
      %ids: tensor<8xi64> {glimmer.input = "tokens"}, %pids: tensor<8xi64> {glimmer.buffer = "vision.pos_ids"},
      %wout: tensor<64x32xf32> {glimmer.param = "output.weight"}, %labels: tensor<8xi64> {glimmer.input = "labels"}) -> (tensor<8x64xf32>, tensor<f32>) {
    %e = glimmer.embedding %tok, %ids : tensor<64x32xf32>, tensor<8xi64> -> tensor<8x32xf32>
    %p = glimmer.embedding %pos, %pids : tensor<16x32xf32>, tensor<8xi64> -> tensor<8x32xf32>
    %x1 = glimmer.add %e, %p : tensor<8x32xf32>
    %x2 = glimmer.add %x, %x1 : tensor<8x32xf32>
    %q = glimmer.linear %x2, %wq, %bq : tensor<8x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
    %o = glimmer.linear %q, %wo, %bo : tensor<8x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
    %h = glimmer.linear %o, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %g = glimmer.silu %h : tensor<8x64xf32>
    %z = glimmer.linear %o, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %y = glimmer.add %g, %z : tensor<8x64xf32>
    %logits = glimmer.linear %o, %wout : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<8x64xf32>, tensor<8xi64> -> tensor<f32>, tensor<i64>
    return %y, %sum : tensor<8x64xf32>, tensor<f32>
  }
}
