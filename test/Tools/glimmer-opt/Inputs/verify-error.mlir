func.func @f(%a: tensor<2x8xf32>) -> tensor<4x4xf32> {
  %0 = glimmer.transpose %a permutation = [1, 0] : tensor<2x8xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
