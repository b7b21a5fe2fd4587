func.func @forward(%x: tensor<4xf32> {glimmer.input = "x"}, %w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<f32> {
  %0 = glimmer.reduce sum %x dims = [0] : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
