// RUN: glimmer-translate --emit-cpp %s | FileCheck %s

// argsort is one runtime call with the dimension and the direction;
// stop_gradient lowers to nothing (its result is its operand's variable).
// CHECK-LABEL: void forward(
// CHECK: glimmer_rt::Tensor [[I:v[0-9]+]] = glimmer_rt::argsort({{v[0-9]+}}, 1, true);
// CHECK-NOT: stop_gradient
// CHECK: glimmer_rt::argsort({{v[0-9]+}}, 0, false);
module {
  func.func @forward(%x: tensor<2x8xf32> {glimmer.input = "x"}) -> (tensor<2x8xi64>, tensor<2x8xi64>) {
    %0 = glimmer.argsort %x dim = 1 descending : tensor<2x8xf32> -> tensor<2x8xi64>
    %1 = glimmer.stop_gradient %x : tensor<2x8xf32>
    %2 = glimmer.argsort %1 dim = 0 : tensor<2x8xf32> -> tensor<2x8xi64>
    return %0, %2 : tensor<2x8xi64>, tensor<2x8xi64>
  }
}
