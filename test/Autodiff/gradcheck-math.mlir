// RUN: glimmer-gradcheck %s | FileCheck %s

// Gradient checks of the VJP rules of the trigonometric, hyperbolic,
// expm1/log1p, abs and rounding ops, as gradcheck-elementwise.mlir: the
// loss is sum(op(x) * w) with a non-uniform constant w, every gradient
// element compared with a central finite difference. Ops defined on part
// of the line take x mapped into their domain first.

// tan: 1 + tan(x)^2, on 0.5 tanh(x) (inside (-pi/2, pi/2)).
// CHECK: @tan: PASS
func.func @tan(%x: tensor<2x3xf64>) -> tensor<f64> {
  %t = glimmer.tanh %x : tensor<2x3xf64>
  %c = glimmer.constant dense<0.5> : tensor<2x3xf64>
  %a = glimmer.mul %t, %c : tensor<2x3xf64>
  %y = glimmer.tan %a : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.421, -0.530, -0.985], [0.886, 0.384, -1.104]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// asin: 1/sqrt(1 - x^2), on 0.9 tanh(x) (inside (-1, 1)).
// CHECK: @asin: PASS
func.func @asin(%x: tensor<2x3xf64>) -> tensor<f64> {
  %t = glimmer.tanh %x : tensor<2x3xf64>
  %c = glimmer.constant dense<0.9> : tensor<2x3xf64>
  %a = glimmer.mul %t, %c : tensor<2x3xf64>
  %y = glimmer.asin %a : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.689, -0.926, 0.949], [0.832, 1.111, 0.320]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// acos: -1/sqrt(1 - x^2), on 0.9 tanh(x).
// CHECK: @acos: PASS
func.func @acos(%x: tensor<2x3xf64>) -> tensor<f64> {
  %t = glimmer.tanh %x : tensor<2x3xf64>
  %c = glimmer.constant dense<0.9> : tensor<2x3xf64>
  %a = glimmer.mul %t, %c : tensor<2x3xf64>
  %y = glimmer.acos %a : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[-1.145, -0.918, 0.953], [-0.987, -0.798, 0.508]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// atan: 1/(1 + x^2).
// CHECK: @atan: PASS
func.func @atan(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.atan %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[-0.985, -1.134, 1.054], [-0.467, -0.409, -1.106]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// sinh: cosh(x).
// CHECK: @sinh: PASS
func.func @sinh(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.sinh %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.757, -0.573, -1.062], [0.830, -0.732, 0.673]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// cosh: sinh(x).
// CHECK: @cosh: PASS
func.func @cosh(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.cosh %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[-0.630, 0.378, -1.001], [0.633, -0.722, -0.933]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// asinh: 1/sqrt(x^2 + 1).
// CHECK: @asinh: PASS
func.func @asinh(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.asinh %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.882, 0.752, 0.993], [-0.664, -1.157, -0.713]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// acosh: 1/sqrt(x^2 - 1), on x*x + 1.5 (above 1).
// CHECK: @acosh: PASS
func.func @acosh(%x: tensor<2x3xf64>) -> tensor<f64> {
  %s = glimmer.mul %x, %x : tensor<2x3xf64>
  %c = glimmer.constant dense<1.5> : tensor<2x3xf64>
  %a = glimmer.add %s, %c : tensor<2x3xf64>
  %y = glimmer.acosh %a : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.893, 0.645, 0.767], [0.683, -0.733, 0.813]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// atanh: 1/(1 - x^2), on 0.9 tanh(x).
// CHECK: @atanh: PASS
func.func @atanh(%x: tensor<2x3xf64>) -> tensor<f64> {
  %t = glimmer.tanh %x : tensor<2x3xf64>
  %c = glimmer.constant dense<0.9> : tensor<2x3xf64>
  %a = glimmer.mul %t, %c : tensor<2x3xf64>
  %y = glimmer.atanh %a : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[-1.147, -0.736, 0.673], [-0.785, 0.712, 1.024]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// expm1: exp(x).
// CHECK: @expm1: PASS
func.func @expm1(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.expm1 %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.796, -1.075, 0.329], [0.375, -0.708, 0.525]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// log1p: 1/(1 + x), on x*x (above -1).
// CHECK: @log1p: PASS
func.func @log1p(%x: tensor<2x3xf64>) -> tensor<f64> {
  %s = glimmer.mul %x, %x : tensor<2x3xf64>
  %y = glimmer.log1p %s : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[1.018, 0.610, -0.451], [0.775, -0.891, -0.709]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// abs: sign(x).
// CHECK: @abs: PASS
func.func @abs(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.abs %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.747, -0.321, 0.609], [-0.533, 1.110, -1.169]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// floor: zero (piecewise constant; the finite difference is zero away from integers).
// CHECK: @floor: PASS
func.func @floor(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.floor %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[1.035, -0.503, 0.432], [-0.701, 0.790, -1.179]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// ceil: zero.
// CHECK: @ceil: PASS
func.func @ceil(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.ceil %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.501, -0.655, -0.894], [-0.353, 0.413, -1.088]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// trunc: zero.
// CHECK: @trunc: PASS
func.func @trunc(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.trunc %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.364, -0.579, -0.969], [0.808, 0.308, 0.832]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// round: zero.
// CHECK: @round: PASS
func.func @round(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.round %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[-1.166, 0.454, -0.640], [-0.389, -0.832, -0.394]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
