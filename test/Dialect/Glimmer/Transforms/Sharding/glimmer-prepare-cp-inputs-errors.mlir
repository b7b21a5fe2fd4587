// RUN: glimmer-opt %s -split-input-file -glimmer-prepare-cp-inputs -verify-diagnostics

// T = 12 is not divisible by 2 * cp = 8 chunks of the head-tail balancer.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=4">} {
  // expected-error @+1 {{sequence length 12 is not divisible by 8 (the head_tail balancer with cp = 4 needs 8 equal chunks)}}
  func.func @indivisible(%tokens: tensor<2x12xi64>, %table: tensor<16x4xf32>) -> tensor<2x12x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x12xi64> -> tensor<2x12x4xf32>
    return %e : tensor<2x12x4xf32>
  }
}

// -----

// The contiguous balancer needs only cp chunks.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=4,balancer=contiguous">} {
  func.func @contiguous_ok(%tokens: tensor<2x12xi64>, %table: tensor<16x4xf32>) -> tensor<2x12x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x12xi64> -> tensor<2x12x4xf32>
    return %e : tensor<2x12x4xf32>
  }
}

// -----

// No token ids to define the sequence.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  // expected-error @+1 {{cannot find the token ids}}
  func.func @no_tokens(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    return %x : tensor<2x8xf32>
  }
}

// -----

// expected-error @+1 {{'glimmer-prepare-cp-inputs' needs the SPMD layout recorded on the module}}
module {
}

// -----

// An op that adds activations to their transpose makes the batch and the
// sequence one index space: which dimension to permute cannot be told.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @batch_and_sequence_mixed(%tokens: tensor<4x4xi64>, %table: tensor<16x8xf32>) -> tensor<4x4x8xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x8xf32>, tensor<4x4xi64> -> tensor<4x4x8xf32>
    %t = glimmer.transpose %e permutation = [1, 0, 2] : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
    // expected-error @+1 {{'glimmer.add' op cannot be partitioned over cp: it combines the batch and the sequence of the token ids, so the sequence cannot be told apart}}
    %s = glimmer.add %e, %t : tensor<4x4x8xf32>
    return %s : tensor<4x4x8xf32>
  }
}

// -----

// A slice along the sequence depends on the tokens' order, which the
// permutation changes: reported, not silently computed on other tokens.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @slice_sequence(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<2x4x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.slice' op cannot be partitioned over cp: a slice along the sequence, whose order the load-balancing permutation changes}}
    %s = glimmer.slice %e start = [0, 0, 0] limit = [2, 4, 4] stride = [1, 1, 1] : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    return %s : tensor<2x4x4xf32>
  }
}

// -----

// Pairs of neighbouring tokens (a reshape that splits the sequence) are
// not neighbours after the permutation.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @pairs_of_tokens(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<2x4x8xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.reshape' op cannot be partitioned over cp: a reshape splits the sequence dimension, whose order the load-balancing permutation changes}}
    %p = glimmer.reshape %e : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
    return %p : tensor<2x4x8xf32>
  }
}

// -----

// Causal attention without positions masks by index: after the
// permutation the indices are not the tokens' positions.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @index_causal(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<2x1x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %q = glimmer.reshape %e : tensor<2x8x4xf32> -> tensor<2x1x8x4xf32>
    // expected-error @+1 {{'glimmer.attention' op cannot be partitioned over cp: causal attention without positions masks by the tokens' order, whose order the load-balancing permutation changes}}
    %o, %lse = glimmer.attention %q, %q, %q causal scale = 0.5 : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8xf32>
    return %o : tensor<2x1x8x4xf32>
  }
}

// -----

// A learned per-position table is not computed from integer inputs, so it
// is not permuted with the tokens it is added to.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @learned_positions(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>,
                               %positions: tensor<8x4xf32> {glimmer.param = "pos_embed"}) -> tensor<2x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.broadcast_in_dim' op cannot be partitioned over cp: argument #2 ('pos_embed') runs along the sequence (dimension 0) but is not computed from integer inputs, so it cannot follow the load-balancing permutation}}
    %p = glimmer.broadcast_in_dim %positions dims = [1, 2] : tensor<8x4xf32> -> tensor<2x8x4xf32>
    %s = glimmer.add %e, %p : tensor<2x8x4xf32>
    return %s : tensor<2x8x4xf32>
  }
}
