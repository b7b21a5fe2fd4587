// RUN: glimmer-gradcheck %s | FileCheck %s

// Gradient checks of the shape ops' VJP rules.
// Each function is checked by glimmer-gradcheck: every f64 argument gets
// seeded random values, glimmer-autodiff differentiates the scalar loss
// sum(op(...) * w) (w a non-uniform constant, so every output element
// contributes), and each gradient element is compared with a central
// finite difference.

// reshape: the gradient is reshaped back.
// CHECK: @reshape: PASS
func.func @reshape(%x: tensor<2x6xf64>) -> tensor<f64> {
  %y = glimmer.reshape %x : tensor<2x6xf64> -> tensor<3x2x2xf64>
  %lw = glimmer.constant dense<[[[0.727, 0.468], [-0.507, 0.982]], [[1.046, -0.78], [1.01, 0.743]], [[-0.627, 0.45], [0.837, -1.14]]]> : tensor<3x2x2xf64>
  %wy = glimmer.mul %y, %lw : tensor<3x2x2xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<3x2x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// transpose by [2, 0, 1] (not its own inverse): the gradient is transposed
// by the inverse permutation [1, 2, 0].
// CHECK: @transpose: PASS
func.func @transpose(%x: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = glimmer.transpose %x permutation = [2, 0, 1] : tensor<2x3x4xf64> -> tensor<4x2x3xf64>
  %lw = glimmer.constant dense<[[[0.401, 0.385, -0.855], [0.975, 0.7, -0.877]], [[1.332, 0.564, -0.352], [0.7, 1.048, -0.836]], [[0.769, 1.224, -0.699], [0.425, 0.546, -1.015]], [[0.999, 0.76, -1.063], [0.75, 0.573, -0.457]]]> : tensor<4x2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<4x2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<4x2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// broadcast_in_dim with new dimensions (0 and 2) and a size-1 dimension
// expanded (operand dim 1 -> result dim 3): sum over all three, then reshape.
// CHECK: @broadcast_in_dim: PASS
func.func @broadcast_in_dim(%x: tensor<3x1xf64>) -> tensor<f64> {
  %y = glimmer.broadcast_in_dim %x dims = [1, 3] : tensor<3x1xf64> -> tensor<2x3x2x4xf64>
  %lw = glimmer.constant dense<[[[[0.59, 0.82, -0.553, 0.618], [1.093, -1.132, 0.872, 0.427]], [[-0.846, 0.71, 0.551, -0.954], [1.235, 0.985, -0.295, 0.768]], [[0.862, -0.59, 0.792, 1.237], [-1.147, 0.25, 0.617, -0.945]]], [[[0.72, 0.676, -1.138, 1.289], [0.313, -0.459, 0.923, 0.883]], [[-0.655, 0.98, 1.35, -0.456], [0.362, 0.806, -1.011, 0.74]], [[0.83, -1.304, 0.617, 0.366], [-0.643, 1.049, 0.893, -0.753]]]]> : tensor<2x3x2x4xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x2x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<2x3x2x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// broadcast_in_dim of a rank-0 tensor, and of a size-1 dimension kept at
// size 1 (nothing to sum there).
// CHECK: @broadcast_in_dim_scalar: PASS
func.func @broadcast_in_dim_scalar(%s: tensor<f64>, %x: tensor<1x3xf64>) -> tensor<f64> {
  %y0 = glimmer.broadcast_in_dim %s dims = [] : tensor<f64> -> tensor<1x3xf64>
  %y1 = glimmer.broadcast_in_dim %x dims = [0, 1] : tensor<1x3xf64> -> tensor<1x3xf64>
  %y = glimmer.mul %y0, %y1 : tensor<1x3xf64>
  %lw = glimmer.constant dense<[[0.571, 0.829, -0.57]]> : tensor<1x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<1x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<1x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// slice with stride 1 in both dimensions (interior window): the gradient
// is padded with zeros back to the operand shape.
// CHECK: @slice: PASS
func.func @slice(%x: tensor<4x5xf64>) -> tensor<f64> {
  %y = glimmer.slice %x start = [1, 0] limit = [3, 4] stride = [1, 1] : tensor<4x5xf64> -> tensor<2x4xf64>
  %lw = glimmer.constant dense<[[0.305, 0.78, -0.849, 0.582], [0.807, -1.242, 1.13, 0.25]]> : tensor<2x4xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// concat of three operands of different sizes along dimension 1 (one used
// twice): each gets its slice of the gradient.
// CHECK: @concat: PASS
func.func @concat(%a: tensor<2x1xf64>, %b: tensor<2x3xf64>, %c: tensor<2x2xf64>) -> tensor<f64> {
  %y = glimmer.concat %a, %b, %c, %a dim = 1 : tensor<2x1xf64>, tensor<2x3xf64>, tensor<2x2xf64>, tensor<2x1xf64> -> tensor<2x7xf64>
  %lw = glimmer.constant dense<[[-0.534, 0.841, 0.604, -0.584, 1.052, 1.177, -0.902], [0.374, 0.83, -0.767, 0.553, 0.897, -1.248, 1.039]]> : tensor<2x7xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x7xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x7xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// pad with a non-zero value and asymmetric low/high: the gradient is the
// interior slice.
// CHECK: @pad: PASS
func.func @pad(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.pad %x low = [1, 0] high = [0, 2] value = 1.5 : tensor<2x3xf64> -> tensor<3x5xf64>
  %lw = glimmer.constant dense<[[0.267, -0.721, 0.901, 0.627, -0.743], [1.213, 1.202, -0.261, 0.56, 0.95], [-0.776, 0.656, 1.087, -1.321, 0.356]]> : tensor<3x5xf64>
  %wy = glimmer.mul %y, %lw : tensor<3x5xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<3x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
