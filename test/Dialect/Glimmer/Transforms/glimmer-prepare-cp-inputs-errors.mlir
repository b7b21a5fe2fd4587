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
