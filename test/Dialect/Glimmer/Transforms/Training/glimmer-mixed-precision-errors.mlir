// RUN: glimmer-opt %s -split-input-file -glimmer-mixed-precision -verify-diagnostics
// RUN: not glimmer-opt %s -split-input-file -glimmer-mixed-precision=function=loss 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: error: glimmer-mixed-precision: no function @loss with a body
// A policy other than bf16 and autocast (every module of the file fails).
// RUN: not glimmer-opt %s -split-input-file -glimmer-mixed-precision=policy=fp8 2>&1 | FileCheck %s --check-prefix=POLICY
// POLICY: error: glimmer-mixed-precision: unknown policy 'fp8' (expected bf16 or autocast)

// No forward function.
// expected-error @+1 {{glimmer-mixed-precision: no function @forward with a body}}
module {
  func.func private @forward(tensor<4xf32>) -> tensor<f32>
}

// -----

// After autodiff the forward can no longer change precision alone.
// expected-error @+1 {{glimmer-mixed-precision: the module already has @grad_step; run this pass before glimmer-autodiff}}
module {
  func.func @forward(%w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<f32> {
    %s = glimmer.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
  func.func @grad_step(%w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<f32> {
    %s = glimmer.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// An f64 program (--dtype=f64).
module {
  // expected-error @+1 {{argument #0 of @forward is 'tensor<4xf64>'; glimmer-mixed-precision expects an f32 program (import with --dtype=f32)}}
  func.func @forward(%w: tensor<4xf64> {glimmer.param = "w"}) -> tensor<f64> {
    %s = glimmer.reduce sum %w dims = [0] : tensor<4xf64> -> tensor<f64>
    return %s : tensor<f64>
  }
}

// -----

// A result type other than f32.
module {
  // expected-error @+1 {{result #0 of @forward is 'tensor<bf16>'; glimmer-mixed-precision expects an f32 program (import with --dtype=f32)}}
  func.func @forward(%w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<bf16> {
    %c = glimmer.convert %w : tensor<4xf32> to tensor<4xbf16>
    %s = glimmer.reduce sum %c dims = [0] : tensor<4xbf16> -> tensor<bf16>
    return %s : tensor<bf16>
  }
}

// -----

// A forward the pass already rewrote (a bf16 value inside).
module {
  func.func @forward(%w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<f32> {
    // expected-error @+1 {{'glimmer.convert' op result #0 is 'tensor<4xbf16>'; glimmer-mixed-precision expects an f32 program (import with --dtype=f32)}}
    %c = glimmer.convert %w : tensor<4xf32> to tensor<4xbf16>
    %s = glimmer.reduce sum %c dims = [0] : tensor<4xbf16> -> tensor<bf16>
    %f = glimmer.convert %s : tensor<bf16> to tensor<f32>
    return %f : tensor<f32>
  }
}
