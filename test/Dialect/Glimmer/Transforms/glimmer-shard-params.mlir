// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -glimmer-shard-params | FileCheck %s

// FSDP over dp_shard x cp (4 ranks): each parameter whose dim 0 divides by 4
// becomes the rank's piece of dim 0 and is all-gathered right before its
// first use (not at entry), once however many uses it has; the arguments
// carry glimmer.sharded_dim/glimmer.sharded_axes beside their names. Inputs
// and buffers are not parameters and stay as they are; a parameter nothing
// uses is still sharded (its optimizer state would be), with no gather.
// CHECK-LABEL: func.func @fsdp_dp_shard_cp
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {glimmer.input = "x"},
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<4x8xf32> {glimmer.param = "w1", glimmer.sharded_axes = ["dp_shard", "cp"], glimmer.sharded_dim = 0 : i64},
// CHECK-SAME: %[[W2:[a-z0-9]+]]: tensor<2x16xf32> {glimmer.param = "w2", glimmer.sharded_axes = ["dp_shard", "cp"], glimmer.sharded_dim = 0 : i64},
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<8xf32> {glimmer.buffer = "b"},
// CHECK-SAME: %{{.*}}: tensor<1x8xf32> {glimmer.param = "unused", glimmer.sharded_axes = ["dp_shard", "cp"], glimmer.sharded_dim = 0 : i64})
// CHECK-NEXT: %[[G1:.*]] = glimmer.all_gather %[[W1]] on @mesh ["dp_shard", "cp"] dim = 0 : tensor<4x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[H:.*]] = glimmer.linear %[[X]], %[[G1]] : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[G2:.*]] = glimmer.all_gather %[[W2]] on @mesh ["dp_shard", "cp"] dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[Y:.*]] = glimmer.linear %[[H]], %[[G2]] : tensor<2x4x16xf32>, tensor<8x16xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[Z:.*]] = glimmer.linear %[[H]], %[[G2]], %[[B]]
// CHECK-NOT: glimmer.all_gather
// CHECK: return
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">} {
  func.func @fsdp_dp_shard_cp(%x: tensor<2x4x8xf32> {glimmer.input = "x"}, %w1: tensor<16x8xf32> {glimmer.param = "w1"},
                              %w2: tensor<8x16xf32> {glimmer.param = "w2"}, %b: tensor<8xf32> {glimmer.buffer = "b"},
                              %u: tensor<4x8xf32> {glimmer.param = "unused"}) -> tensor<2x4x8xf32> {
    %h = glimmer.linear %x, %w1 : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %y = glimmer.linear %h, %w2 : tensor<2x4x16xf32>, tensor<8x16xf32> -> tensor<2x4x8xf32>
    %z = glimmer.linear %h, %w2, %b : tensor<2x4x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
    %r = glimmer.add %y, %z : tensor<2x4x8xf32>
    return %r : tensor<2x4x8xf32>
  }
}

// -----

// Without cp the group is dp_shard alone (only axes of degree > 1 are
// named); dp_replicate does not shard parameters (HSDP replicates the
// shards across it).
// CHECK-LABEL: func.func @fsdp_hsdp
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4x8xf32> {glimmer.param = "w", glimmer.sharded_axes = ["dp_shard"], glimmer.sharded_dim = 0 : i64}
// CHECK-NEXT: glimmer.all_gather %[[W]] on @mesh ["dp_shard"] dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2,dp_shard=2">} {
  func.func @fsdp_hsdp(%x: tensor<2x8xf32> {glimmer.input = "x"}, %w: tensor<8x8xf32> {glimmer.param = "w"}) -> tensor<2x8xf32> {
    %y = glimmer.linear %x, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// Without dp_shard there is no FSDP: parameters stay replicated (cp alone,
// and plain data parallelism, keep every parameter on every rank).
// CHECK-LABEL: func.func @no_dp_shard
// CHECK-SAME: %{{.*}}: tensor<8x8xf32> {glimmer.param = "w"})
// CHECK-NOT: glimmer.all_gather
module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2,cp=2">} {
  func.func @no_dp_shard(%x: tensor<2x8xf32> {glimmer.input = "x"}, %w: tensor<8x8xf32> {glimmer.param = "w"}) -> tensor<2x8xf32> {
    %y = glimmer.linear %x, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// Already sharded arguments are left alone, so running the pass twice does
// not shard twice.
// CHECK-LABEL: func.func @already_sharded
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4x8xf32> {glimmer.param = "w", glimmer.sharded_axes = ["dp_shard"], glimmer.sharded_dim = 0 : i64}
// CHECK-NEXT: glimmer.all_gather %[[W]] on @mesh ["dp_shard"] dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NOT: glimmer.all_gather
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=1, "pp"=1]>
  func.func @already_sharded(%x: tensor<2x8xf32> {glimmer.input = "x"}, %w: tensor<4x8xf32> {glimmer.param = "w", glimmer.sharded_axes = ["dp_shard"], glimmer.sharded_dim = 0 : i64}) -> tensor<2x8xf32> {
    %g = glimmer.all_gather %w on @mesh ["dp_shard"] dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %y = glimmer.linear %x, %g : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// Tensor-parallel pieces (from glimmer-partition) are FSDP-split further
// along the dimension tp splits, minor to tp: a column-parallel weight's rows
// and a row-parallel weight's columns. Each gathers back to its tp piece;
// the rank holds a quarter of each.
// CHECK-LABEL: func.func @tensor_parallel_pieces
// CHECK-SAME: %[[C:[a-z0-9]+]]: tensor<16x32xf32> {glimmer.param = "col", glimmer.sharded_axes = ["tp", "dp_shard"], glimmer.sharded_dim = 0 : i64}
// CHECK-SAME: %[[R:[a-z0-9]+]]: tensor<32x16xf32> {glimmer.param = "row", glimmer.sharded_axes = ["tp", "dp_shard"], glimmer.sharded_dim = 1 : i64}
// CHECK: glimmer.all_gather %[[C]] on @mesh ["dp_shard"] dim = 0 : tensor<16x32xf32> -> tensor<32x32xf32>
// CHECK: glimmer.all_gather %[[R]] on @mesh ["dp_shard"] dim = 1 : tensor<32x16xf32> -> tensor<32x32xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,tp=2">} {
  func.func @tensor_parallel_pieces(%x: tensor<2x32xf32> {glimmer.input = "x"},
      %col: tensor<32x32xf32> {glimmer.param = "col", glimmer.sharded_axes = ["tp"], glimmer.sharded_dim = 0 : i64},
      %row: tensor<32x32xf32> {glimmer.param = "row", glimmer.sharded_axes = ["tp"], glimmer.sharded_dim = 1 : i64}) -> tensor<2x32xf32> {
    %h = glimmer.linear %x, %col : tensor<2x32xf32>, tensor<32x32xf32> -> tensor<2x32xf32>
    %y = glimmer.linear %h, %row : tensor<2x32xf32>, tensor<32x32xf32> -> tensor<2x32xf32>
    return %y : tensor<2x32xf32>
  }
}
