// RUN: glimmer-translate --emit-cpp %s | FileCheck %s

// A norm whose result is bf16 for an f32 input (mixed precision) passes
// the result type; one of its input's type keeps the runtime's default
// argument. Their VJPs read the cotangent's type from the tensor.
// CHECK-LABEL: void grad_step(
// CHECK: glimmer_rt::Tensor [[X:v[0-9]+]] = glimmer_rt::input(
// CHECK: glimmer_rt::Tensor [[W:v[0-9]+]] = glimmer_rt::input(
// CHECK: glimmer_rt::rmsNorm([[X]], [[W]], 1.0000000000000001e-05, glimmer_rt::DType::BF16);
// CHECK: glimmer_rt::rmsNorm([[X]], [[W]], 1.0000000000000001e-05);
// CHECK: glimmer_rt::layerNorm([[X]], [[W]], [[W]], 1.0000000000000001e-05, glimmer_rt::DType::BF16);
// CHECK: glimmer_rt::rmsNormGrad({{v[0-9]+}}, [[X]], [[W]], 1.0000000000000001e-05);
module {
  func.func @grad_step(%x: tensor<2x8xf32> {glimmer.input = "x"}, %w: tensor<8xf32> {glimmer.input = "w"}, %dy: tensor<2x8xbf16> {glimmer.input = "dy"})
      -> (tensor<2x8xbf16>, tensor<2x8xf32>, tensor<2x8xbf16>, tensor<2x8xf32>) {
    %y = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xbf16>
    %z = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<2x8xf32>, tensor<8xf32>
    %l = glimmer.layer_norm %x, %w, %w eps = 1.0e-05 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xbf16>
    %dx, %dw = glimmer.rms_norm_grad %dy, %x, %w eps = 1.0e-05 : tensor<2x8xf32>, tensor<8xf32> grad tensor<2x8xbf16>
    return %y, %z, %l, %dx : tensor<2x8xbf16>, tensor<2x8xf32>, tensor<2x8xbf16>, tensor<2x8xf32>
  }
}
