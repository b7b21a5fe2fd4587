// RUN: glimmer-opt %s -split-input-file -glimmer-propagate-sharding -verify-diagnostics

// Shardings name mesh axes: without @mesh there is nothing to propagate on.
// expected-error @+1 {{'glimmer-propagate-sharding' needs @mesh; run glimmer-materialize-mesh first}}
module {
  func.func @no_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}

// -----

// A seed on another mesh than the one propagation runs on.
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  glimmer.mesh @other = <["x"=2]>
  func.func @seed_on_other_mesh(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    // expected-error @+1 {{sharding refers to mesh @other, but propagation runs on @mesh}}
    %0 = glimmer.sharding_constraint %x <@other, [{"x"}, {}]> : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
