// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -glimmer-prepare-cp-inputs -glimmer-partition-cp -verify-diagnostics
// Without a mesh declared the pass says which pass provides it.
// RUN: not glimmer-opt %S/Inputs/cp-without-mesh.mlir -glimmer-partition-cp 2>&1 | FileCheck %s --check-prefix=NOMESH
// NOMESH: error: 'glimmer-partition-cp' needs @mesh; run glimmer-materialize-mesh first

// A reduction over the sequence would need a collective the partitioner does
// not build: reported, not silently computed on a slice.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @reduce_over_sequence(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<2x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // expected-error @+1 {{'glimmer.reduce' op cannot be partitioned for context parallelism: a reduction across the sequence}}
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
