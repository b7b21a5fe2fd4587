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
