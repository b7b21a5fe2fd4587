// RUN: glimmer-opt %s -split-input-file -glimmer-prepare-batch -verify-diagnostics

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

// Micro-batches must divide each data-parallel rank's samples.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,microbatches=3">} {
  // expected-error @+1 {{the batch of 4 samples cannot be cut into 3 micro-batches on each of the 2 data-parallel ranks: 'microbatches' (--grad-accum) must divide the batch per data-parallel rank (2)}}
  func.func @indivisible_microbatches(%tokens: tensor<4x8xi64>, %table: tensor<16x4xf32>) -> tensor<4x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<4x8xi64> -> tensor<4x8x4xf32>
    return %e : tensor<4x8x4xf32>
  }
}

// -----

// Splitting the batch needs the token ids to know which dimension it is.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2">} {
  // expected-error @+1 {{'glimmer-prepare-batch': cannot find the token ids (a rank-2 integer argument used by glimmer.embedding) that define the batch and sequence to split}}
  func.func @no_tokens(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    return %x : tensor<2x8xf32>
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

// -----

// A reduction across the batch (a per-batch mean) would be taken over one
// micro-batch only.
module attributes {glimmer.spmd = #glimmer.spmd<"microbatches=2">} {
  func.func @reduce_over_batch(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.reduce' op cannot be cut into 2 micro-batches: it reduces across the batch}}
    %s = glimmer.reduce sum %e dims = [0] : tensor<2x8x4xf32> -> tensor<8x4xf32>
    return %s : tensor<8x4xf32>
  }
}

// -----

// A float input with the batch's size reaches the model whole: only values
// computed from integer inputs are cut to the micro-batch.
module attributes {glimmer.spmd = #glimmer.spmd<"microbatches=2">} {
  func.func @float_input_with_the_batch(%tokens: tensor<2x8xi64>, %mask: tensor<2x8x4xf32>, %table: tensor<16x4xf32>) -> tensor<2x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.mul' op cannot be cut into 2 micro-batches: argument #1 brings the whole batch into the model (only values computed from integer inputs are cut to the micro-batch)}}
    %m = glimmer.mul %e, %mask : tensor<2x8x4xf32>
    return %m : tensor<2x8x4xf32>
  }
}

// -----

// expected-error @+1 {{'glimmer-prepare-batch' needs the SPMD layout recorded on the module}}
module {
}
