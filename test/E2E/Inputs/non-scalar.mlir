func.func @forward(%w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<4xf32> {
  %0 = glimmer.exp %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
