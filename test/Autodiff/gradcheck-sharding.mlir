// RUN: glimmer-gradcheck %s | FileCheck %s

// Gradient check of sharding_constraint, whose VJP is the identity. The
// module-level mesh it refers to is carried into each checked function's
// module.

glimmer.mesh @mesh = <["dp"=1]>

// sharding_constraint: the VJP is the identity.
// CHECK: @sharding_constraint: PASS
func.func @sharding_constraint(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.sharding_constraint %x <@mesh, [{"dp"}, {}]> : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.727, 0.468, -0.507], [0.982, 1.046, -0.78]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
