// RUN: glimmer-gradcheck %s | FileCheck %s

// Gradient checks of the elementwise ops' VJP rules.
// Each function is checked by glimmer-gradcheck: every f64 argument gets
// seeded random values, glimmer-autodiff differentiates the scalar loss
// sum(op(...) * w) (w a non-uniform constant, so every output element
// contributes), and each gradient element is compared with a central
// finite difference.

// neg: d/dx (-x) = -1.
// CHECK: @neg: PASS
func.func @neg(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.neg %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.727, 0.468, -0.507], [0.982, 1.046, -0.78]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// exp: d/dx exp(x) = exp(x).
// CHECK: @exp: PASS
func.func @exp(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.exp %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.41, 0.843, -0.727], [0.55, 0.937, -1.24]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// log on x*x + 0.5 (positive): d/dx log(x) = 1/x.
// CHECK: @log: PASS
func.func @log(%x: tensor<2x3xf64>) -> tensor<f64> {
  %half = glimmer.constant dense<0.5> : tensor<2x3xf64>
  %xx = glimmer.mul %x, %x : tensor<2x3xf64>
  %p = glimmer.add %xx, %half : tensor<2x3xf64>
  %y = glimmer.log %p : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.401, 0.385, -0.855], [0.975, 0.7, -0.877]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// sqrt on x*x + 0.5 (positive): 1 / (2 sqrt(x)).
// CHECK: @sqrt: PASS
func.func @sqrt(%x: tensor<2x3xf64>) -> tensor<f64> {
  %half = glimmer.constant dense<0.5> : tensor<2x3xf64>
  %xx = glimmer.mul %x, %x : tensor<2x3xf64>
  %p = glimmer.add %xx, %half : tensor<2x3xf64>
  %y = glimmer.sqrt %p : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.732, 0.664, -0.452], [0.8, 1.148, -0.936]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// rsqrt on x*x + 0.5 (positive): -0.5 y^3.
// CHECK: @rsqrt: PASS
func.func @rsqrt(%x: tensor<2x3xf64>) -> tensor<f64> {
  %half = glimmer.constant dense<0.5> : tensor<2x3xf64>
  %xx = glimmer.mul %x, %x : tensor<2x3xf64>
  %p = glimmer.add %xx, %half : tensor<2x3xf64>
  %y = glimmer.rsqrt %p : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.269, 0.724, -0.899], [0.625, 0.746, -1.215]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// tanh: 1 - y^2.
// CHECK: @tanh: PASS
func.func @tanh(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.tanh %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.599, 0.36, -0.663], [1.05, 0.873, -0.757]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// erf: 2/sqrt(pi) exp(-x^2).
// CHECK: @erf: PASS
func.func @erf(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.erf %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.59, 0.82, -0.553], [0.618, 1.093, -1.132]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// sigmoid: s (1 - s).
// CHECK: @sigmoid: PASS
func.func @sigmoid(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.sigmoid %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.272, 0.527, -0.946], [0.81, 0.651, -1.054]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// silu: s (1 + x (1 - s)).
// CHECK: @silu: PASS
func.func @silu(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.silu %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.735, 0.485, -0.495], [0.968, 1.062, -0.79]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// relu: the gradient flows where x > 0.
// CHECK: @relu: PASS
func.func @relu(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.relu %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.392, 0.837, -0.747], [0.55, 0.917, -1.245]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// sin: cos(x).
// CHECK: @sin: PASS
func.func @sin(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.sin %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.42, 0.376, -0.838], [0.989, 0.713, -0.859]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// cos: -sin(x).
// CHECK: @cos: PASS
func.func @cos(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.cos %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.723, 0.683, -0.455], [0.78, 1.15, -0.956]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// gelu, exact (erf) form: Phi(x) + x phi(x).
// CHECK: @gelu: PASS
func.func @gelu(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.gelu %x : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.262, 0.706, -0.911], [0.64, 0.73, -1.204]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// gelu with the tanh approximation (PyTorch's formula differentiated exactly).
// CHECK: @gelu_tanh: PASS
func.func @gelu_tanh(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.gelu %x approximate = tanh : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.617, 0.366, -0.643], [1.049, 0.893, -0.753]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// add: both operands get the gradient.
// CHECK: @add: PASS
func.func @add(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.add %a, %b : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.571, 0.829, -0.57], [0.605, 1.08, -1.149]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// sub: g and -g.
// CHECK: @sub: PASS
func.func @sub(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.sub %a, %b : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.282, 0.507, -0.942], [0.83, 0.65, -1.034]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// mul: g*b and g*a.
// CHECK: @mul: PASS
func.func @mul(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.mul %a, %b : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.741, 0.504, -0.484], [0.952, 1.077, -0.802]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// div on a denominator b*b + 0.5: g/b and -g*a/b^2.
// CHECK: @div: PASS
func.func @div(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<f64> {
  %half = glimmer.constant dense<0.5> : tensor<2x3xf64>
  %bb = glimmer.mul %b, %b : tensor<2x3xf64>
  %d = glimmer.add %bb, %half : tensor<2x3xf64>
  %y = glimmer.div %a, %d : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.374, 0.83, -0.767], [0.553, 0.897, -1.248]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// max: the gradient goes to the selected operand.
// CHECK: @max: PASS
func.func @max(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.max %a, %b : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.439, 0.367, -0.821], [1.001, 0.727, -0.843]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// max(x, x): every element ties, each side gets half (PyTorch), so x gets the whole
// gradient; also max against a constant on the other operand.
// CHECK: @max_ties: PASS
func.func @max_ties(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y0 = glimmer.max %x, %x : tensor<2x3xf64>
  %c = glimmer.constant dense<[[0.1, -0.2, 0.3], [-0.4, 0.5, -0.6]]> : tensor<2x3xf64>
  %y1 = glimmer.max %y0, %c : tensor<2x3xf64>
  %y = glimmer.add %y0, %y1 : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.713, 0.702, -0.461], [0.76, 1.15, -0.976]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// min: the gradient goes to the selected operand.
// CHECK: @min: PASS
func.func @min(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<f64> {
  %y = glimmer.min %a, %b : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.256, 0.687, -0.921], [0.656, 0.716, -1.191]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// min(x, x): every element ties, each side gets half (PyTorch), so x gets the whole
// gradient; also min against a constant on the other operand.
// CHECK: @min_ties: PASS
func.func @min_ties(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y0 = glimmer.min %x, %x : tensor<2x3xf64>
  %c = glimmer.constant dense<[[0.1, -0.2, 0.3], [-0.4, 0.5, -0.6]]> : tensor<2x3xf64>
  %y1 = glimmer.min %y0, %c : tensor<2x3xf64>
  %y = glimmer.add %y0, %y1 : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.635, 0.374, -0.623], [1.046, 0.913, -0.751]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// pow with a positive base a*a + 0.5 and exponent b: both operands
// (d/da = b a^(b-1), d/db = y log(a)).
// CHECK: @pow: PASS
func.func @pow(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<f64> {
  %half = glimmer.constant dense<0.5> : tensor<2x3xf64>
  %aa = glimmer.mul %a, %a : tensor<2x3xf64>
  %p = glimmer.add %aa, %half : tensor<2x3xf64>
  %y = glimmer.pow %p, %b : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.551, 0.836, -0.588], [0.593, 1.065, -1.165]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// pow with a negative base and a constant integral exponent (3 and 2):
// only the base is trainable.
// CHECK: @pow_const_exponent: PASS
func.func @pow_const_exponent(%a: tensor<2x3xf64>) -> tensor<f64> {
  %e = glimmer.constant dense<[[3.0, 2.0, 3.0], [2.0, 3.0, 2.0]]> : tensor<2x3xf64>
  %y = glimmer.pow %a, %e : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.292, 0.489, -0.936], [0.85, 0.651, -1.014]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// select with a constant condition: select(c, g, 0) to on_true and
// select(c, 0, g) to on_false.
// CHECK: @select: PASS
func.func @select(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<f64> {
  %c = glimmer.constant dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>
  %y = glimmer.select %c, %a, %b : tensor<2x3xi1>, tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.746, 0.523, -0.474], [0.935, 1.091, -0.815]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// convert f64 -> f64 (the gradient passes through), and f64 -> i64 -> f64,
// which is piecewise constant: no gradient flows through the integer.
// The f64 -> f32 -> f64 round trip is in gradcheck-convert-f32.mlir.
// CHECK: @convert: PASS
func.func @convert(%x: tensor<2x3xf64>) -> tensor<f64> {
  %y0 = glimmer.convert %x : tensor<2x3xf64> to tensor<2x3xf64>
  %i = glimmer.convert %x : tensor<2x3xf64> to tensor<2x3xi64>
  %y1 = glimmer.convert %i : tensor<2x3xi64> to tensor<2x3xf64>
  %y2 = glimmer.mul %y1, %x : tensor<2x3xf64>
  %y = glimmer.add %y0, %y2 : tensor<2x3xf64>
  %lw = glimmer.constant dense<[[0.357, 0.822, -0.786], [0.556, 0.877, -1.25]]> : tensor<2x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
