glimmer.mesh @mesh = <["cp"=2]>
func.func @forward(%w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<f32> {
  %0 = glimmer.local_shard %w on @mesh ["cp"] dim = 0 : tensor<4xf32> -> tensor<2xf32>
  %1 = glimmer.reduce sum %0 dims = [0] : tensor<2xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
