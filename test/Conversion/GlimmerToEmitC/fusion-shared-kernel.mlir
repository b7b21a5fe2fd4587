// RUN: glimmer-translate --emit-cpp %s | FileCheck %s

// Regression: a kernel works on flat indices, so two fusions of different
// shapes can read alike (here a rescale over [2, 16, 1] and one over
// [32, 1], 32 elements each: a text norm's tokens on a CP rank and a vision
// norm's patches). They share the kernel, but each gets the function that
// runs its own ops at its own shapes (what the CPU runs); sharing that too
// ran the second fusion at the first one's shapes.
// CHECK: extern "C" __global__ void __launch_bounds__(256) glimmer_fused_0(
// CHECK-NOT: glimmer_fused_1(
// CHECK: static std::vector<glimmer_rt::Tensor> glimmer_fused_0_ops(
// CHECK: glimmer_rt::full(glimmer_rt::DType::F32, {2, 16, 1}, 2.0);
// CHECK: static std::vector<glimmer_rt::Tensor> glimmer_fused_0_ops_1(
// CHECK: glimmer_rt::full(glimmer_rt::DType::F32, {32, 1}, 2.0);
// CHECK-LABEL: void forward(
// CHECK: glimmer_rt::fused(glimmer_fused_kernels, 0, {{.*}}{2, 16, 1}}}, glimmer_fused_0_ops);
// CHECK: glimmer_rt::fused(glimmer_fused_kernels, 0, {{.*}}{32, 1}}}, glimmer_fused_0_ops_1);
// A third fusion with the first one's shapes reuses its function.
// CHECK: glimmer_rt::fused(glimmer_fused_kernels, 0, {{.*}}{2, 16, 1}}}, glimmer_fused_0_ops);
module {
  func.func @forward(%x: tensor<2x16x1xf32> {glimmer.input = "x"}, %y: tensor<32x1xf32> {glimmer.input = "y"}) -> (tensor<2x16x1xf32>, tensor<32x1xf32>, tensor<2x16x1xf32>) {
    %a = glimmer.fusion(%x) : (tensor<2x16x1xf32>) -> tensor<2x16x1xf32> {
    ^bb0(%v: tensor<2x16x1xf32>):
      %c = glimmer.constant dense<2.0> : tensor<2x16x1xf32>
      %m = glimmer.mul %v, %c : tensor<2x16x1xf32>
      glimmer.yield %m : tensor<2x16x1xf32>
    }
    %b = glimmer.fusion(%y) : (tensor<32x1xf32>) -> tensor<32x1xf32> {
    ^bb0(%v: tensor<32x1xf32>):
      %c = glimmer.constant dense<2.0> : tensor<32x1xf32>
      %m = glimmer.mul %v, %c : tensor<32x1xf32>
      glimmer.yield %m : tensor<32x1xf32>
    }
    %d = glimmer.fusion(%a) : (tensor<2x16x1xf32>) -> tensor<2x16x1xf32> {
    ^bb0(%v: tensor<2x16x1xf32>):
      %c = glimmer.constant dense<2.0> : tensor<2x16x1xf32>
      %m = glimmer.mul %v, %c : tensor<2x16x1xf32>
      glimmer.yield %m : tensor<2x16x1xf32>
    }
    return %a, %b, %d : tensor<2x16x1xf32>, tensor<32x1xf32>, tensor<2x16x1xf32>
  }
}
