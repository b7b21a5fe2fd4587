// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -glimmer-shard-params | FileCheck %s --check-prefix=SEED
// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -glimmer-shard-params -glimmer-partition | FileCheck %s --check-prefix=PART

// FSDP over dp_shard x cp (4 ranks). The seed: each parameter whose dim 0
// divides by 4 is stored split over the group on dim 0, and a constraint
// with the sharding it is computed with (whole) goes right before its first
// use (not at entry), once however many uses it has. Inputs and buffers are
// not parameters and stay as they are; a parameter nothing uses is still
// stored split (its optimizer state is), with no constraint.
// SEED-LABEL: func.func @fsdp_dp_shard_cp
// SEED-SAME: %[[W1:[a-z0-9]+]]: tensor<16x8xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}]>}
// SEED-SAME: %[[W2:[a-z0-9]+]]: tensor<8x16xf32> {glimmer.param = "w2", glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}]>}
// SEED-SAME: %[[B:[a-z0-9]+]]: tensor<8xf32> {glimmer.buffer = "b"}
// SEED-SAME: %{{.*}}: tensor<4x8xf32> {glimmer.param = "unused", glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}]>})
// SEED-NEXT: %[[C1:.*]] = glimmer.sharding_constraint %[[W1]] <@mesh, [{}, {}]> : tensor<16x8xf32>
// SEED-NEXT: %[[H:.*]] = glimmer.linear %{{.*}}, %[[C1]]
// SEED-NEXT: %[[C2:.*]] = glimmer.sharding_constraint %[[W2]] <@mesh, [{}, {}]> : tensor<8x16xf32>
// SEED-NEXT: glimmer.linear %[[H]], %[[C2]]
// SEED-NEXT: glimmer.linear %[[H]], %[[C2]], %[[B]]
// SEED-NOT: glimmer.sharding_constraint
// The partitioner makes the arguments the rank's pieces and each constraint
// the all-gather of the piece.
// PART-LABEL: func.func @fsdp_dp_shard_cp
// PART-SAME: (%[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {glimmer.input = "x"},
// PART-SAME: %[[W1:[a-z0-9]+]]: tensor<4x8xf32> {glimmer.param = "w1", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}]>},
// PART-SAME: %[[W2:[a-z0-9]+]]: tensor<2x16xf32> {glimmer.param = "w2", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}]>},
// PART-SAME: %[[B:[a-z0-9]+]]: tensor<8xf32> {glimmer.buffer = "b"},
// PART-SAME: %{{.*}}: tensor<1x8xf32> {glimmer.param = "unused", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}]>})
// PART-NEXT: %[[G1:.*]] = glimmer.all_gather %[[W1]] on @mesh ["dp_shard", "cp"] dim = 0 : tensor<4x8xf32> -> tensor<16x8xf32>
// PART-NEXT: %[[H:.*]] = glimmer.linear %[[X]], %[[G1]] : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
// PART-NEXT: %[[G2:.*]] = glimmer.all_gather %[[W2]] on @mesh ["dp_shard", "cp"] dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// PART-NEXT: %[[Y:.*]] = glimmer.linear %[[H]], %[[G2]] : tensor<2x4x16xf32>, tensor<8x16xf32> -> tensor<2x4x8xf32>
// PART-NEXT: %[[Z:.*]] = glimmer.linear %[[H]], %[[G2]], %[[B]]
// PART-NOT: glimmer.all_gather
// PART: return
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
// SEED-LABEL: func.func @fsdp_hsdp
// SEED-SAME: %{{.*}}: tensor<8x8xf32> {glimmer.param = "w", glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {}]>}
// PART-LABEL: func.func @fsdp_hsdp
// PART-SAME: %[[W:[a-z0-9]+]]: tensor<4x8xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}, {}]>}
// PART-NEXT: glimmer.all_gather %[[W]] on @mesh ["dp_shard"] dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2,dp_shard=2">} {
  func.func @fsdp_hsdp(%x: tensor<2x8xf32> {glimmer.input = "x"}, %w: tensor<8x8xf32> {glimmer.param = "w"}) -> tensor<2x8xf32> {
    %y = glimmer.linear %x, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// Without dp_shard there is no FSDP: parameters stay replicated (cp alone,
// and plain data parallelism, keep every parameter on every rank).
// SEED-LABEL: func.func @no_dp_shard
// SEED-SAME: %{{.*}}: tensor<8x8xf32> {glimmer.param = "w"})
// SEED-NOT: glimmer.sharding_constraint
module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2,cp=2">} {
  func.func @no_dp_shard(%x: tensor<2x8xf32> {glimmer.input = "x"}, %w: tensor<8x8xf32> {glimmer.param = "w"}) -> tensor<2x8xf32> {
    %y = glimmer.linear %x, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// A storage split already given over the group's axes (a user's: here the
// columns) is kept, not split again, and the parameter is gathered back to
// what it is computed with.
// SEED-LABEL: func.func @storage_given
// SEED-SAME: %{{.*}}: tensor<8x8xf32> {glimmer.param = "w", glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"dp_shard"}]>}
// SEED-NEXT: glimmer.sharding_constraint %arg1 <@mesh, [{}, {}]>
// PART-LABEL: func.func @storage_given
// PART-SAME: %[[W:[a-z0-9]+]]: tensor<8x4xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{}, {"dp_shard"}]>}
// PART-NEXT: glimmer.all_gather %[[W]] on @mesh ["dp_shard"] dim = 1 : tensor<8x4xf32> -> tensor<8x8xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=1, "pp"=1]>
  func.func @storage_given(%x: tensor<2x8xf32> {glimmer.input = "x"}, %w: tensor<8x8xf32> {glimmer.param = "w", glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"dp_shard"}]>}) -> tensor<2x8xf32> {
    %y = glimmer.linear %x, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// Tensor-parallel weights (as propagation leaves them) are stored split on
// dimension 0 too, minor to tp where tp splits it: a column-parallel
// weight's rows over tp x dp_shard, a row-parallel weight's columns over tp
// and its rows over dp_shard (2-D). Each gathers back to its tp piece (over
// dp_shard only); the rank holds a quarter of each.
// SEED-LABEL: func.func @tensor_parallel_pieces
// SEED-SAME: {glimmer.param = "col", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp", "dp_shard"}, {}]>}
// SEED-SAME: {glimmer.param = "row", glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {"tp"}]>}
// SEED: glimmer.sharding_constraint %arg1 <@mesh, [{"tp"}, {}]>
// SEED: glimmer.sharding_constraint %arg2 <@mesh, [{}, {"tp"}]>
// PART-LABEL: func.func @tensor_parallel_pieces
// PART-SAME: %[[C:[a-z0-9]+]]: tensor<8x32xf32> {glimmer.param = "col", glimmer.sharded = #glimmer.sharding<@mesh, [{"tp", "dp_shard"}, {}]>}
// PART-SAME: %[[R:[a-z0-9]+]]: tensor<16x16xf32> {glimmer.param = "row", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}, {"tp"}]>}
// PART: glimmer.all_gather %[[C]] on @mesh ["dp_shard"] dim = 0 : tensor<8x32xf32> -> tensor<16x32xf32>
// PART: glimmer.all_gather %[[R]] on @mesh ["dp_shard"] dim = 0 : tensor<16x16xf32> -> tensor<32x16xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=2, "pp"=1]>
  func.func @tensor_parallel_pieces(%x: tensor<2x32xf32> {glimmer.input = "x"},
      %col: tensor<32x32xf32> {glimmer.param = "col", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %row: tensor<32x32xf32> {glimmer.param = "row", glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<2x32xf32> {
    %h = glimmer.linear %x, %col : tensor<2x32xf32>, tensor<32x32xf32> -> tensor<2x32xf32>
    %y = glimmer.linear %h, %row : tensor<2x32xf32>, tensor<32x32xf32> -> tensor<2x32xf32>
    return %y : tensor<2x32xf32>
  }
}
