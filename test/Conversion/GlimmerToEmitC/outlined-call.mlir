// RUN: glimmer-translate --emit-cpp %s | FileCheck %s

// An outlined layer (glimmer-outline-layers) becomes a static function with
// the frame convention and no C entry point. A call passes its operands in
// a list (the caller's own arguments by their index in its frame, so that
// none needs a variable; the other values in order), takes each result
// from the returned list and releases the lists, so no handle outlives the
// call.
// CHECK-LABEL: static void forward_layer0(glimmer_rt::Frame&
// CHECK: glimmer_rt::linear(
// CHECK: glimmer_rt::output(
// CHECK-NOT: glimmer_entry_forward_layer0
// CHECK-LABEL: void forward(glimmer_rt::Frame&
// CHECK: std::vector<glimmer_rt::Tensor> [[V:v[0-9]+]] = glimmer_rt::tensorList([[H:v[0-9]+]]);
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[IN:v[0-9]+]] = glimmer_rt::callInputs(v1, {-1, 1}, [[V]]);
// CHECK-NEXT: glimmer_rt::release([[V]]);
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[OUT:v[0-9]+]] = glimmer_rt::callFunction(forward_layer0, [[IN]]);
// CHECK-NEXT: glimmer_rt::release([[IN]]);
// CHECK-NEXT: glimmer_rt::Tensor [[Y:v[0-9]+]] = glimmer_rt::take([[OUT]], 0);
// CHECK-NEXT: glimmer_rt::release([[OUT]]);
// CHECK: glimmer_rt::output({{.*}}, 0, [[Y]]);
// CHECK: extern "C" void glimmer_entry_forward(
module {
  func.func private @forward_layer0(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
    %0 = glimmer.linear %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
  func.func @forward(%x: tensor<2x4xf32> {glimmer.input = "x"}, %w: tensor<4x4xf32> {glimmer.param = "w"}) -> tensor<2x4xf32> {
    %h = glimmer.exp %x : tensor<2x4xf32>
    %0 = call @forward_layer0(%h, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}
