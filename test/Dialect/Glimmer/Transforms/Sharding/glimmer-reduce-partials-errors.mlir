// RUN: glimmer-opt %s -split-input-file -glimmer-reduce-partials -verify-diagnostics

// A partial result needs the mesh its all-reduce names.
module {
  // expected-error @below {{result #0 is a partial sum but the module has no @mesh; run glimmer-materialize-mesh first}}
  func.func @partial_without_mesh(%loss: tensor<f32>)
      -> (tensor<f32> {glimmer.partial = ["cp"]}) {
    return %loss : tensor<f32>
  }
}
