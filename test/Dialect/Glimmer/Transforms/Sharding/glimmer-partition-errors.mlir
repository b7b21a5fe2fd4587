// RUN: glimmer-opt %s -split-input-file -glimmer-partition -verify-diagnostics

// expected-error @+1 {{'glimmer-partition' needs @mesh; run glimmer-materialize-mesh first}}
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
}

// -----

// The runtime binds whole tensors or blocks of them, never partial sums.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=2, "pp"=1]>
  func.func @partial_argument(%x: tensor<8x32xf32>,
      // expected-error @+1 {{argument #1 is a partial sum; the runtime binds whole tensors or blocks of them}}
      %w: tensor<64x32xf32> {glimmer.param = "w", glimmer.sharding = #glimmer.sharding<@mesh, [{}, {}], partial = ["tp"]>}) -> tensor<8x64xf32> {
    %h = glimmer.linear %x, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    return %h : tensor<8x64xf32>
  }
}

// -----

// Splitting nothing but pipeline stages, there is nothing for the engine to
// partition: unchanged (glimmer-split-stages cuts the stages).
module attributes {glimmer.spmd = #glimmer.spmd<"pp=2">} {
  func.func @only_pipeline_stages(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}

// -----

// Split over cp, a cross-entropy's own count is this rank's tokens only
// (glimmer-prepare-batch replaces its uses with the count of the whole
// batch's labels; without that pass it would be used as the global one).
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=1, "pp"=1]>
  func.func @local_count_used(%logits: tensor<2x8x16xf32>, %labels: tensor<2x8xi64>) -> tensor<f32> {
    %l = glimmer.sharding_constraint %logits <@mesh, [{}, {"cp"}, {}]> {glimmer.token_split} : tensor<2x8x16xf32>
    %t = glimmer.sharding_constraint %labels <@mesh, [{}, {"cp"}]> {glimmer.token_split} : tensor<2x8xi64>
    // expected-error @+1 {{'glimmer.cross_entropy' op cannot be partitioned over cp: its token count is used, but it counts this rank's tokens only}}
    %sum, %count = glimmer.cross_entropy %l, %t ignore_index = -100 : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<f32>, tensor<i64>
    %n = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %n : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A partitioned argument cannot be partitioned again.
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @piece_partitioned_again(%x: tensor<8x32xf32>,
      // expected-error @+1 {{argument #1 is already a per-rank piece (glimmer.sharded)}}
      %w: tensor<32x32xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"tp"}, {}]>, glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x32xf32> {
    %h = glimmer.linear %x, %w : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
    return %h : tensor<8x32xf32>
  }
}
