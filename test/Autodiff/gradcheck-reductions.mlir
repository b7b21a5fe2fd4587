// RUN: glimmer-gradcheck %s | FileCheck %s

// Gradient checks of the reductions' and cumsum's VJP rules.
// Each function is checked by glimmer-gradcheck: every f64 argument gets
// seeded random values, glimmer-autodiff differentiates the scalar loss
// sum(op(...) * w) (w a non-uniform constant, so every output element
// contributes), and each gradient element is compared with a central
// finite difference.

// reduce sum over dims [0, 2] without keep_dims: the gradient is reshaped
// to the keep-dims shape and broadcast back.
// CHECK: @reduce_sum: PASS
func.func @reduce_sum(%x: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = glimmer.reduce sum %x dims = [0, 2] : tensor<2x3x4xf64> -> tensor<3xf64>
  %lw = glimmer.constant dense<[0.727, 0.468, -0.507]> : tensor<3xf64>
  %wy = glimmer.mul %y, %lw : tensor<3xf64>
  %loss = glimmer.reduce sum %wy dims = [0] : tensor<3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// reduce sum over dim 1 with keep_dims.
// CHECK: @reduce_sum_keep_dims: PASS
func.func @reduce_sum_keep_dims(%x: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = glimmer.reduce sum %x dims = [1] keep_dims : tensor<2x3x4xf64> -> tensor<2x1x4xf64>
  %lw = glimmer.constant dense<[[[0.682, 0.746, -0.48, 0.71]], [[1.143, -1.027, 0.85, 0.537]]]> : tensor<2x1x4xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x1x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x1x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// reduce sum over every dimension to a scalar, then squared (so the
// scalar's gradient is not a constant).
// CHECK: @reduce_sum_all: PASS
func.func @reduce_sum_all(%x: tensor<2x3xf64>) -> tensor<f64> {
  %s = glimmer.reduce sum %x dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  %y = glimmer.mul %s, %s : tensor<f64>
  %lw = glimmer.constant dense<-0.74> : tensor<f64>
  %wy = glimmer.mul %y, %lw : tensor<f64>
  return %wy : tensor<f64>
}

// reduce max over dim 1: the gradient goes to the maximum.
// CHECK: @reduce_max: PASS
func.func @reduce_max(%x: tensor<3x4xf64>) -> tensor<f64> {
  %y = glimmer.reduce max %x dims = [1] : tensor<3x4xf64> -> tensor<3xf64>
  %lw = glimmer.constant dense<[0.401, 0.385, -0.855]> : tensor<3xf64>
  %wy = glimmer.mul %y, %lw : tensor<3xf64>
  %loss = glimmer.reduce sum %wy dims = [0] : tensor<3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// reduce min over dims [0, 2] with keep_dims.
// CHECK: @reduce_min_keep_dims: PASS
func.func @reduce_min_keep_dims(%x: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = glimmer.reduce min %x dims = [0, 2] keep_dims : tensor<2x3x4xf64> -> tensor<1x3x1xf64>
  %lw = glimmer.constant dense<[[[0.675], [0.4], [-0.577]]]> : tensor<1x3x1xf64>
  %wy = glimmer.mul %y, %lw : tensor<1x3x1xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<1x3x1xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// reduce max over a tensor holding x twice (concat): every maximum ties
// with its copy; amax semantics split the gradient evenly, so x gets it whole.
// CHECK: @reduce_max_ties: PASS
func.func @reduce_max_ties(%x: tensor<3x4xf64>) -> tensor<f64> {
  %xx = glimmer.concat %x, %x dim = 1 : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x8xf64>
  %y = glimmer.reduce max %xx dims = [1] : tensor<3x8xf64> -> tensor<3xf64>
  %lw = glimmer.constant dense<[0.732, 0.664, -0.452]> : tensor<3xf64>
  %wy = glimmer.mul %y, %lw : tensor<3xf64>
  %loss = glimmer.reduce sum %wy dims = [0] : tensor<3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// reduce min with ties (x twice along dim 0), over both dims.
// CHECK: @reduce_min_ties: PASS
func.func @reduce_min_ties(%x: tensor<3x4xf64>) -> tensor<f64> {
  %xx = glimmer.concat %x, %x dim = 0 : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<6x4xf64>
  %m = glimmer.reduce min %xx dims = [0, 1] : tensor<6x4xf64> -> tensor<f64>
  %y = glimmer.mul %m, %m : tensor<f64>
  %lw = glimmer.constant dense<0.5> : tensor<f64>
  %wy = glimmer.mul %y, %lw : tensor<f64>
  return %wy : tensor<f64>
}

// cumsum along dim 1: the reverse cumulative sum total - cumsum(g) + g.
// CHECK: @cumsum: PASS
func.func @cumsum(%x: tensor<3x5xf64>) -> tensor<f64> {
  %y = glimmer.cumsum %x dim = 1 : tensor<3x5xf64>
  %lw = glimmer.constant dense<[[0.748, -0.536, 0.469, 0.924, -1.099], [0.825, 0.946, -0.715, 0.699, 0.46], [-0.763, 1.15, 0.973, -0.857, 0.59]]> : tensor<3x5xf64>
  %wy = glimmer.mul %y, %lw : tensor<3x5xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<3x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// cumsum along dim 0 of a rank-3 tensor.
// CHECK: @cumsum_dim0: PASS
func.func @cumsum_dim0(%x: tensor<4x2x3xf64>) -> tensor<f64> {
  %y = glimmer.cumsum %x dim = 0 : tensor<4x2x3xf64>
  %lw = glimmer.constant dense<[[[0.72, -0.453, 0.518], [0.993, -1.032, 0.772]], [[1.027, -0.746, 0.61], [0.451, -0.854, 1.135]], [[0.885, -0.895, 0.668], [0.762, -0.49, 0.692]], [[1.137, -1.047, 0.85], [0.517, -0.845, 0.62]]]> : tensor<4x2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<4x2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<4x2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
