// RUN: glimmer-translate --emit-cpp %s | FileCheck %s

// Each value's variable is released right after its last use, so a
// program's peak memory is that of its live values. Arguments (the frame
// holds them) and returned values are not released; a pvary aliases its
// input's variable, which is released after the alias's last use; a result
// nothing uses is released at once.
// CHECK-LABEL: void forward(
// CHECK: glimmer_rt::Tensor [[X:v[0-9]+]] = glimmer_rt::input(
// CHECK: glimmer_rt::Tensor [[E:v[0-9]+]] = glimmer_rt::exp([[X]]);
// CHECK-NEXT: glimmer_rt::Tensor [[DEAD:v[0-9]+]] = glimmer_rt::neg([[X]]);
// CHECK-NEXT: glimmer_rt::release([[DEAD]]);
// CHECK-NEXT: glimmer_rt::Tensor [[A:v[0-9]+]] = glimmer_rt::add([[E]], [[E]]);
// CHECK-NEXT: glimmer_rt::Tensor [[M:v[0-9]+]] = glimmer_rt::mul([[A]], [[E]]);
// CHECK-NEXT: glimmer_rt::release([[A]]);
// CHECK-NEXT: glimmer_rt::Tensor [[S:v[0-9]+]] = glimmer_rt::sub([[M]], [[E]]);
// CHECK-NEXT: glimmer_rt::release([[E]]);
// CHECK-NEXT: glimmer_rt::output({{.*}}, 0, [[S]]);
// CHECK-NEXT: glimmer_rt::output({{.*}}, 1, [[M]]);
// CHECK-NOT: release
// CHECK: return;
module {
  glimmer.mesh @mesh = <["tp"=2]>
  func.func @forward(%x: tensor<4xf32> {glimmer.input = "x"}) -> (tensor<4xf32>, tensor<4xf32>) {
    %e = glimmer.exp %x : tensor<4xf32>
    %dead = glimmer.neg %x : tensor<4xf32>
    %a = glimmer.add %e, %e : tensor<4xf32>
    %m = glimmer.mul %a, %e : tensor<4xf32>
    %ev = glimmer.pvary %e on @mesh ["tp"] : tensor<4xf32>
    %s = glimmer.sub %m, %ev : tensor<4xf32>
    return %s, %m : tensor<4xf32>, tensor<4xf32>
  }
}
