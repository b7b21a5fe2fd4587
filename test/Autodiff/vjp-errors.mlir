// RUN: glimmer-opt %s -split-input-file -verify-diagnostics --glimmer-autodiff="optimizer=sgd lr=0.1"

// Cases the VJP rules do not support fail with a diagnostic on the op.

// A strided slice on the path from a parameter to the loss.
func.func @forward(%x: tensor<6xf64> {glimmer.param = "x"}) -> tensor<f64> {
  // expected-error @below {{'glimmer.slice' op no VJP rule for strided slices}}
  %0 = glimmer.slice %x start = [0] limit = [6] stride = [2] : tensor<6xf64> -> tensor<3xf64>
  %1 = glimmer.reduce sum %0 dims = [0] : tensor<3xf64> -> tensor<f64>
  return %1 : tensor<f64>
}

// -----

// The loss depends on attention's log-sum-exp.
func.func @forward(%q: tensor<1x1x2x4xf64> {glimmer.param = "q"}) -> tensor<f64> {
  // expected-error @below {{'glimmer.attention' op the lse result of attention is not differentiable}}
  %o, %lse = glimmer.attention %q, %q, %q scale = 0.5 : tensor<1x1x2x4xf64>, tensor<1x1x2x4xf64> -> tensor<1x1x2x4xf64>, tensor<1x1x2xf64>
  %1 = glimmer.reduce sum %lse dims = [0, 1, 2] : tensor<1x1x2xf64> -> tensor<f64>
  return %1 : tensor<f64>
}
