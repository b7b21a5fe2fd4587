// softmax_grad is a backward op: it has no VJP (no double backward).
func.func @forward(%w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<f32> {
  %y = glimmer.softmax %w dim = 0 : tensor<4xf32>
  %g = glimmer.exp %w : tensor<4xf32>
  %1 = glimmer.softmax_grad %g, %y dim = 0 : tensor<4xf32>
  %2 = glimmer.reduce sum %1 dims = [0] : tensor<4xf32> -> tensor<f32>
  return %2 : tensor<f32>
}
