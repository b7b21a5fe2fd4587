// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -glimmer-prepare-cp-inputs -glimmer-partition-tokens -verify-diagnostics
// Without a mesh declared the pass says which pass provides it.
// RUN: not glimmer-opt %S/Inputs/cp-without-mesh.mlir -glimmer-partition-tokens 2>&1 | FileCheck %s --check-prefix=NOMESH
// NOMESH: error: 'glimmer-partition-tokens' needs @mesh; run glimmer-materialize-mesh first

// A reduction over the sequence would need a collective the partitioner does
// not build: reported, not silently computed on a slice.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @reduce_over_sequence(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<2x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.reduce' op cannot be partitioned over cp: a reduction across the sequence}}
    %s = glimmer.reduce sum %e dims = [1] : tensor<2x8x4xf32> -> tensor<2x4xf32>
    return %s : tensor<2x4xf32>
  }
}

// -----

// A slice along the sequence.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @slice_sequence(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<2x4x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{a slice along the sequence}}
    %s = glimmer.slice %e start = [0, 0, 0] limit = [2, 4, 4] stride = [1, 1, 1] : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    return %s : tensor<2x4x4xf32>
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

// The data-parallel degree must divide the batch: 3 samples over 2 ranks.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  // expected-error @+1 {{the batch of 3 samples cannot be split over dp_replicate×dp_shard = 2 ranks (1×2): the data-parallel degree must divide the batch size}}
  func.func @indivisible_batch(%tokens: tensor<3x8xi64>, %table: tensor<16x4xf32>) -> tensor<3x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<3x8xi64> -> tensor<3x8x4xf32>
    return %e : tensor<3x8x4xf32>
  }
}

// -----

// Both data-parallel axes count: 2 samples over 2 x 2 ranks.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2,dp_shard=2,cp=2">} {
  // expected-error @+1 {{the batch of 2 samples cannot be split over dp_replicate×dp_shard = 4 ranks (2×2)}}
  func.func @indivisible_hsdp_batch(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<2x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    return %e : tensor<2x8x4xf32>
  }
}

// -----

// Data parallelism needs the token ids to know the batch.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2">} {
  // expected-error @+1 {{'glimmer-partition-tokens': cannot find the token ids (a rank-2 integer argument used by glimmer.embedding) that define the batch and sequence to shard}}
  func.func @no_tokens(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    return %x : tensor<2x8xf32>
  }
}

// -----

// A reduction across the batch (e.g. a per-batch mean) would need the other
// ranks' samples.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  func.func @reduce_over_batch(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.reduce' op cannot be partitioned over dp_shard: a reduction across the batch}}
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

// The valid-token count is taken on the full labels before any cut, so the
// labels must come from integer inputs; labels computed from a float input
// cannot be counted there.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  func.func @labels_from_floats(%tokens: tensor<2x8xi64>, %scores: tensor<2x8xf32>, %table: tensor<16x2xf32>) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x2xf32>, tensor<2x8xi64> -> tensor<2x8x2xf32>
    %labels = glimmer.convert %scores : tensor<2x8xf32> to tensor<2x8xi64>
    // expected-error @+1 {{'glimmer.cross_entropy' op cannot be partitioned: its labels are not computed from integer inputs alone, so the global count of valid tokens cannot be taken on the full batch}}
    %sum, %count = glimmer.cross_entropy %e, %labels ignore_index = -100 : tensor<2x8x2xf32>, tensor<2x8xi64> -> tensor<f32>, tensor<i64>
    %n = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %n : tensor<f32>
    return %loss : tensor<f32>
  }
}
