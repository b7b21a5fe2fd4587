// RUN: glimmer-opt %s -split-input-file -glimmer-split-stages -verify-diagnostics
// Split points (on a pp=2 module): one per stage after the first, each
// naming a decoder layer after layer 0.
// RUN: not glimmer-opt %S/Inputs/split-stages-two-layers.mlir -glimmer-split-stages=split=layers.3 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: pipeline split point 'layers.3' names no decoder layer (they are layers.0 ... layers.1)
// RUN: not glimmer-opt %S/Inputs/split-stages-two-layers.mlir -glimmer-split-stages=split=layers.1,layers.1 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: the pipeline split 'layers.1,layers.1' names 2 split points, but pp = 2 stages need 1
// RUN: not glimmer-opt %S/Inputs/split-stages-two-layers.mlir -glimmer-split-stages=split=layers.0 2>&1 | FileCheck %s --check-prefix=FIRST
// FIRST: pipeline split point 'layers.0' does not start a new stage: split points must name increasing layers after layers.0, so that every stage has a layer
// RUN: not glimmer-opt %S/Inputs/split-stages-two-layers.mlir -glimmer-split-stages=split=blocks.1 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: pipeline split point 'blocks.1' names no decoder layer (they are layers.0 ... layers.1)
// Split points without pipeline parallelism.
// RUN: not glimmer-opt %S/Inputs/split-stages-no-pp.mlir -glimmer-split-stages=split=layers.1 2>&1 | FileCheck %s --check-prefix=NOPP
// NOPP: split points ('layers.1') need pipeline parallelism (pp > 1)

// More stages than decoder layers.
module attributes {glimmer.spmd = #glimmer.spmd<"pp=4">} {
  // expected-error @+1 {{pp = 4 pipeline stages but the model has 2 decoder layers (layers.0 ... layers.1): every stage needs at least one layer}}
  func.func @forward(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %emb: tensor<16x4xf32> {glimmer.param = "emb"},
                     %w0: tensor<4x4xf32> {glimmer.param = "layers.0.w"}, %w1: tensor<4x4xf32> {glimmer.param = "layers.1.w"}) -> tensor<f32> {
    %e = glimmer.embedding %emb, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %h0 = glimmer.linear %e, %w0 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %h1 = glimmer.linear %h0, %w1 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %r = glimmer.reduce sum %h1 dims = [0, 1, 2] : tensor<2x8x4xf32> -> tensor<f32>
    return %r : tensor<f32>
  }
}

// -----

// No decoder layers after the token embedding.
module attributes {glimmer.spmd = #glimmer.spmd<"pp=2">} {
  // expected-error @+1 {{'glimmer-split-stages': found no decoder layers to split into 2 pipeline stages (parameters named <prefix>.<N>.… read after the token embedding)}}
  func.func @forward(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %emb: tensor<16x4xf32> {glimmer.param = "emb"},
                     %w: tensor<4x4xf32> {glimmer.param = "proj.weight"}) -> tensor<f32> {
    %e = glimmer.embedding %emb, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %h = glimmer.linear %e, %w : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %r = glimmer.reduce sum %h dims = [0, 1, 2] : tensor<2x8x4xf32> -> tensor<f32>
    return %r : tensor<f32>
  }
}

// -----

// No function to split.
// expected-error @+1 {{'glimmer-split-stages': no function @forward to split}}
module attributes {glimmer.spmd = #glimmer.spmd<"pp=2">} {
}
