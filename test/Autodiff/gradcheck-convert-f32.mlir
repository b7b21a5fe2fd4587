// RUN: glimmer-gradcheck %s --rtol=0.1 | FileCheck %s

// Gradient check of convert between f64 and f32 (the float -> float VJP rule,
// which converts the gradient back to the operand's element type).
//
// The tolerance is loose on purpose: the forward function rounds its argument
// to f32, so glimmer-gradcheck's central finite difference (step 1e-6 * |x|)
// sees a staircase of f32 ulps (2^-24 relative), which bounds its error by
// about 2^-23 / 2e-6 = 0.06 of the derivative. A wrong rule (a missing or
// mis-scaled gradient) is still off by far more than 0.1; the f64-only checks
// of convert are in gradcheck-elementwise.mlir at the default tolerance.

// convert f64 -> f32 -> f64: each convert's VJP converts the gradient back
// to the operand's type.
// CHECK: @convert_f32_round_trip: PASS
func.func @convert_f32_round_trip(%x: tensor<2x3xf64>) -> tensor<f64> {
  %f = glimmer.convert %x : tensor<2x3xf64> to tensor<2x3xf32>
  %y = glimmer.convert %f : tensor<2x3xf32> to tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.727, 0.468, -0.507], [0.982, 1.046, -0.78]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
