// RUN: glimmer-opt %s -split-input-file -glimmer-autodiff -verify-diagnostics

// The reduce_scatter that differentiates a parameter's all_gather sums over
// dp_shard; a loss that is not a partial sum there is replicated over it, so
// that sum would count it once per rank.
module {
  glimmer.mesh @mesh = <["dp_replicate"=2, "dp_shard"=2, "cp"=1, "tp"=1, "pp"=1]>
  // expected-error @+1 {{glimmer-autodiff: the gradient of parameter 'w' is summed over 'dp_shard' by the reduce_scatter of its all_gather, but the loss is not a partial sum over 'dp_shard': a loss replicated there would be counted once per rank}}
  func.func @forward(%x: tensor<4xf32> {glimmer.input = "x"},
                     %w: tensor<2xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>})
      -> (tensor<f32> {glimmer.partial = ["dp_replicate"]}) {
    %g = glimmer.all_gather %w on @mesh ["dp_shard"] dim = 0 : tensor<2xf32> -> tensor<4xf32>
    %0 = glimmer.mul %x, %g : tensor<4xf32>
    %1 = glimmer.reduce sum %0 dims = [0] : tensor<4xf32> -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// The norm of sharded gradients sums over their shard axes on @mesh.
module {
  // expected-error @+1 {{glimmer-autodiff: sharded parameters and pipeline stages need @mesh for the gradient norm; run glimmer-materialize-mesh first}}
  func.func @forward(%w: tensor<2xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>}) -> tensor<f32> {
    %1 = glimmer.reduce sum %w dims = [0] : tensor<2xf32> -> tensor<f32>
    return %1 : tensor<f32>
  }
}
