// RUN: glimmer-translate --emit-cpp %s | FileCheck %s

// sum_squares becomes one runtime call on a list of its inputs (here the
// function's arguments, read only here: moved out of the frame as one list); the list is
// released right after the call (it would otherwise hold every gradient
// until the function returns). The result's type is passed: a bf16 input
// (a gradient left in bf16 by glimmer-narrow-gradients) sums into f32.
// CHECK-LABEL: void apply_step(
// CHECK: std::vector<glimmer_rt::Tensor> [[L:v[0-9]+]] = glimmer_rt::takeInputList(v1, {0, 1});
// CHECK-NEXT: glimmer_rt::Tensor [[S:v[0-9]+]] = glimmer_rt::sumSquares([[L]], glimmer_rt::DType::F32);
// CHECK-NEXT: glimmer_rt::release([[L]]);
// CHECK: glimmer_rt::sqrt([[S]])
module {
  func.func @apply_step(%a: tensor<4x2xf32> {glimmer.input = "a"}, %b: tensor<3xbf16> {glimmer.input = "b"}) -> tensor<f32> {
    %s = glimmer.sum_squares %a, %b : tensor<4x2xf32>, tensor<3xbf16> -> tensor<f32>
    %n = glimmer.sqrt %s : tensor<f32>
    return %n : tensor<f32>
  }
}
