// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -glimmer-prepare-batch -glimmer-prepare-cp-inputs -glimmer-seed-sharding -glimmer-propagate-sharding -glimmer-partition -verify-diagnostics
// Without a mesh declared the engine's passes say which pass provides it.
// RUN: not glimmer-opt %S/Inputs/cp-without-mesh.mlir -glimmer-seed-sharding 2>&1 | FileCheck %s --check-prefix=NOMESH
// NOMESH: error: 'glimmer-seed-sharding' needs @mesh; run glimmer-materialize-mesh first

// A sum over the sequence outside the loss would leave a per-rank partial
// sum that the model uses as if it were whole: reported, not silently
// computed on a slice.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @reduce_over_sequence(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<2x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.reduce' op cannot be partitioned over cp: it sums over a dimension split over them (the batch or the sequence), and only the loss may be such a partial sum}}
    %s = glimmer.reduce sum %e dims = [1] : tensor<2x8x4xf32> -> tensor<2x4xf32>
    return %s : tensor<2x4xf32>
  }
}

// -----

// Using the per-rank partial loss for anything but scaling it.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @partial_misuse(%tokens: tensor<2x8xi64>, %labels: tensor<2x8xi64>, %table: tensor<16x16xf32>) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
    %lf = glimmer.reshape %e : tensor<2x8x16xf32> -> tensor<16x16xf32>
    %lab = glimmer.reshape %labels : tensor<2x8xi64> -> tensor<16xi64>
    %sum, %count = glimmer.cross_entropy %lf, %lab ignore_index = -100 : tensor<16x16xf32>, tensor<16xi64> -> tensor<f32>, tensor<i64>
    // expected-error @+1 {{uses a value that is a partial sum over cp; only scaling it (the loss) is supported}}
    %e2 = glimmer.exp %sum : tensor<f32>
    return %e2 : tensor<f32>
  }
}

// -----

// A reduction across the batch (e.g. a per-batch mean) would need the other
// ranks' samples.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  func.func @reduce_over_batch(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.reduce' op cannot be partitioned over dp_shard: it sums over a dimension split over them (the batch or the sequence), and only the loss may be such a partial sum}}
    %s = glimmer.reduce sum %e dims = [0] : tensor<2x8x4xf32> -> tensor<8x4xf32>
    return %s : tensor<8x4xf32>
  }
}

// -----

// Operands whose batch runs along different dimensions (samples against
// positions) cannot be combined elementwise: the op makes the batch and the
// sequence one index space.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  func.func @mixed_layouts(%tokens: tensor<4x4xi64>, %table: tensor<16x8xf32>) -> tensor<4x4x8xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x8xf32>, tensor<4x4xi64> -> tensor<4x4x8xf32>
    %t = glimmer.transpose %e permutation = [1, 0, 2] : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
    // expected-error @+1 {{'glimmer.add' op cannot be partitioned over dp_shard: it combines the batch and the sequence of the token ids, so neither can be split}}
    %s = glimmer.add %e, %t : tensor<4x4x8xf32>
    return %s : tensor<4x4x8xf32>
  }
}

// -----

// A loss whose tokens are split over cp but not over the batch (logits of
// one shared row broadcast over nothing) would be counted once per
// data-parallel rank.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">} {
  func.func @loss_not_split_over_batch(%tokens: tensor<2x8xi64>, %table: tensor<16x2xf32>) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x2xf32>, tensor<2x8xi64> -> tensor<2x8x2xf32>
    %first = glimmer.slice %tokens start = [0, 0] limit = [1, 8] stride = [1, 1] : tensor<2x8xi64> -> tensor<1x8xi64>
    %logits = glimmer.embedding %table, %first : tensor<16x2xf32>, tensor<1x8xi64> -> tensor<1x8x2xf32>
    // expected-error @+1 {{'glimmer.cross_entropy' op cannot be partitioned over dp_shard, cp: the loss is not split over every token axis}}
    %sum, %count = glimmer.cross_entropy %logits, %first ignore_index = -100 : tensor<1x8x2xf32>, tensor<1x8xi64> -> tensor<f32>, tensor<i64>
    return %sum : tensor<f32>
  }
}


// -----

// A trained value the same on every rank (a learned table broadcast over
// the batch) that the tokens' split would cut: each rank's gradient of it
// would be counted once per rank when the shares are summed.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  func.func @trained_value_cut_along_the_batch(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>,
                                               %per_sample: tensor<2x4xf32> {glimmer.param = "per_sample"}) -> tensor<2x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{cannot be partitioned over dp_shard: a value computed from trained parameters, the same on every rank there, would be cut along dimension 0 (each rank's gradient of it would then be counted once per rank)}}
    %b = glimmer.broadcast_in_dim %per_sample dims = [0, 2] : tensor<2x4xf32> -> tensor<2x8x4xf32>
    %s = glimmer.add %e, %b : tensor<2x8x4xf32>
    return %s : tensor<2x8x4xf32>
  }
}
