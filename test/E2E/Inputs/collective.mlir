glimmer.mesh @mesh = <["pp"=2]>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = glimmer.ppermute %x on @mesh "pp" pairs = [0, 1, 1, 0] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
