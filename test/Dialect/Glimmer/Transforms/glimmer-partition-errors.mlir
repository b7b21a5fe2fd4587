// RUN: glimmer-opt %s -split-input-file -glimmer-partition -verify-diagnostics

// expected-error @+1 {{'glimmer-partition' needs @mesh; run glimmer-materialize-mesh first}}
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
}

// -----

// The runtime holds one split dimension per argument: a weight split on
// both dimensions (TP x FSDP, 2-D) is refused.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=2, "pp"=1]>
  func.func @two_dimensional_weight(%x: tensor<8x32xf32>,
      // expected-error @+1 {{argument #1 is sharded on more than one dimension or partial; the runtime holds one split dimension per argument}}
      %w: tensor<64x32xf32> {glimmer.param = "w", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {"dp_shard"}]>}) -> tensor<8x64xf32> {
    %h = glimmer.linear %x, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    return %h : tensor<8x64xf32>
  }
}

// -----

// Without tp there is nothing for the engine to partition: unchanged (the
// batch and sequence splits are glimmer-partition-tokens' work).
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @no_tensor_parallelism(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}
