// RUN: glimmer-translate --emit-cpp %s | FileCheck %s

// Fusions become calls of glimmer_rt::fused with the program's fused-kernel
// table (one CUDA source before every function) and a function that runs
// the body's ops one by one (what the CPU runs). Two fusions whose kernels
// read alike share one kernel and one such function (here the second and
// the third); the input list is released after the call, results are taken
// out of the result list.
// CHECK: static glimmer_rt::FusedKernels glimmer_fused_kernels(R"glimmer_cuda(#include "FusionPrelude.cuh"
// bf16 in registers as floats: loaded exactly, arithmetic rounded as the
// elementwise kernels store it, converted with glimmer.convert's rounding;
// a second result is stored from the same loop.
// CHECK: extern "C" __global__ void __launch_bounds__(256) glimmer_fused_0(const unsigned short *__restrict__ in0, const float *__restrict__ in1, unsigned short *__restrict__ out0, unsigned short *__restrict__ out1) {
// First the vector loop (fusion-vector-loop.mlir has its cases), then the
// element loop.
// CHECK-NEXT: if ((((unsigned long long)in0 | (unsigned long long)out0 | (unsigned long long)out1) & 15ULL) == 0ULL) {
// CHECK: return;
// CHECK-NEXT: }
// CHECK-NEXT: for (unsigned int i = (unsigned int)blockIdx.x * blockDim.x + threadIdx.x; i < 8u; i += (unsigned int)gridDim.x * blockDim.x) {
// CHECK-NEXT: const float [[A:v[0-9]+]] = glimmer_fusion::fromBf16(in0[i]);
// The broadcast reads the [4] operand at the column.
// CHECK-NEXT: const unsigned int [[R:c[0-9]+]] = (i / 4u);
// CHECK-NEXT: const unsigned int [[C:c[0-9]+]] = ((i / 1u) % 4u);
// CHECK-NEXT: const unsigned int [[J:j[0-9]+]] = [[C]] * 1u;
// CHECK-NEXT: const float [[B:v[0-9]+]] = in1[[[J]]];
// CHECK-NEXT: const float [[BB:v[0-9]+]] = glimmer_fusion::convertBf16((float)[[B]]);
// CHECK-NEXT: const float [[BC:v[0-9]+]] = [[BB]];
// CHECK-NEXT: const float [[M:v[0-9]+]] = glimmer_fusion::roundBf16(__fmul_rn([[A]], [[BC]]));
// CHECK-NEXT: out0[i] = glimmer_fusion::toBf16([[M]]);
// CHECK-NEXT: const float [[S:v[0-9]+]] = glimmer_fusion::roundBf16(glimmer_fusion::Silu()([[M]]));
// CHECK-NEXT: out1[i] = glimmer_fusion::toBf16([[S]]);
// CHECK: glimmer_fused_1(
// pad: the fill unless the coordinate is in the operand; concat: the
// operand the coordinate falls in. A splat constant is an exact literal.
// CHECK: extern "C" __global__ void __launch_bounds__(256) glimmer_fused_2(const float *__restrict__ in0, float *__restrict__ out0) {
// CHECK: float [[P:s[0-9]+]] = __uint_as_float(3212836864u);
// CHECK-NEXT: if ((unsigned long long)(c{{[0-9]+}} - 1u) < 1ULL) {
// CHECK: __uint_as_float(1056964608u);
// CHECK: [[P]] = v{{[0-9]+}};
// CHECK-NEXT: }
// CHECK: float [[Q:s[0-9]+]];
// CHECK-NEXT: if (c{{[0-9]+}} < 1u) {
// CHECK: } else {
// CHECK: )glimmer_cuda");
// CHECK-NOT: glimmer_fused_3
// CHECK: static std::vector<glimmer_rt::Tensor> glimmer_fused_0_ops(const std::vector<glimmer_rt::Tensor>& [[IN:v[0-9]+]]) {
// CHECK-NEXT: glimmer_rt::Tensor [[X:v[0-9]+]] = glimmer_rt::element([[IN]], 0);
// CHECK-NEXT: glimmer_rt::Tensor [[W:v[0-9]+]] = glimmer_rt::element([[IN]], 1);
// CHECK-NEXT: glimmer_rt::Tensor [[WB:v[0-9]+]] = glimmer_rt::convert([[W]], glimmer_rt::DType::BF16);
// CHECK-NEXT: glimmer_rt::Tensor [[WBB:v[0-9]+]] = glimmer_rt::broadcastInDim([[WB]], {2, 4}, {1});
// CHECK-NEXT: glimmer_rt::Tensor [[MM:v[0-9]+]] = glimmer_rt::mul([[X]], [[WBB]]);
// CHECK-NEXT: glimmer_rt::Tensor [[SS:v[0-9]+]] = glimmer_rt::silu([[MM]]);
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[OUT:v[0-9]+]] = glimmer_rt::tensorList([[MM]], [[SS]]);
// CHECK-NEXT: return [[OUT]];
// CHECK: glimmer_fused_1_ops(
// The concat's part list is released after the concat.
// CHECK: glimmer_fused_2_ops(
// CHECK: [[PARTS:v[0-9]+]] = glimmer_rt::tensorList(
// CHECK-NEXT: glimmer_rt::concat([[PARTS]], 1);
// CHECK-NEXT: glimmer_rt::release([[PARTS]]);
// CHECK-LABEL: void forward(
// CHECK: std::vector<glimmer_rt::Tensor> [[L:v[0-9]+]] = glimmer_rt::inputList(v1, {0, 2});
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[F:v[0-9]+]] = glimmer_rt::fused(glimmer_fused_kernels, 0, [[L]], std::vector<glimmer_rt::FusedResult>{{[{][{]}}glimmer_rt::DType::BF16, {2, 4}}, {glimmer_rt::DType::BF16, {2, 4}}}, glimmer_fused_0_ops);
// CHECK-NEXT: glimmer_rt::release([[L]]);
// CHECK-NEXT: glimmer_rt::Tensor [[R0:v[0-9]+]] = glimmer_rt::take([[F]], 0);
// CHECK-NEXT: glimmer_rt::Tensor [[R1:v[0-9]+]] = glimmer_rt::take([[F]], 1);
// CHECK-NEXT: glimmer_rt::release([[R0]]);
// CHECK: glimmer_rt::fused(glimmer_fused_kernels, 1, {{.*}}, glimmer_fused_1_ops);
// CHECK: glimmer_rt::fused(glimmer_fused_kernels, 1, {{.*}}, glimmer_fused_1_ops);
// CHECK: glimmer_rt::fused(glimmer_fused_kernels, 2, {{.*}}, glimmer_fused_2_ops);
module {
  func.func @forward(%x: tensor<2x4xbf16> {glimmer.input = "x"}, %y: tensor<2x4xbf16> {glimmer.input = "y"}, %b: tensor<4xf32> {glimmer.input = "b"}) -> (tensor<2x4xbf16>, tensor<2x4xbf16>, tensor<2x4xbf16>, tensor<4x2xf32>) {
    %r:2 = glimmer.fusion(%x, %b) : (tensor<2x4xbf16>, tensor<4xf32>) -> (tensor<2x4xbf16>, tensor<2x4xbf16>) {
    ^bb0(%a: tensor<2x4xbf16>, %c: tensor<4xf32>):
      %cb = glimmer.convert %c : tensor<4xf32> to tensor<4xbf16>
      %bb = glimmer.broadcast_in_dim %cb dims = [1] : tensor<4xbf16> -> tensor<2x4xbf16>
      %m = glimmer.mul %a, %bb : tensor<2x4xbf16>
      %s = glimmer.silu %m : tensor<2x4xbf16>
      glimmer.yield %m, %s : tensor<2x4xbf16>, tensor<2x4xbf16>
    }
    %t = glimmer.fusion(%y, %b) : (tensor<2x4xbf16>, tensor<4xf32>) -> tensor<2x4xbf16> {
    ^bb0(%a: tensor<2x4xbf16>, %c: tensor<4xf32>):
      %cb = glimmer.convert %c : tensor<4xf32> to tensor<4xbf16>
      %bb = glimmer.broadcast_in_dim %cb dims = [1] : tensor<4xbf16> -> tensor<2x4xbf16>
      %m = glimmer.mul %a, %bb : tensor<2x4xbf16>
      %s = glimmer.silu %m : tensor<2x4xbf16>
      glimmer.yield %s : tensor<2x4xbf16>
    }
    %t2 = glimmer.fusion(%x, %b) : (tensor<2x4xbf16>, tensor<4xf32>) -> tensor<2x4xbf16> {
    ^bb0(%a: tensor<2x4xbf16>, %c: tensor<4xf32>):
      %cb = glimmer.convert %c : tensor<4xf32> to tensor<4xbf16>
      %bb = glimmer.broadcast_in_dim %cb dims = [1] : tensor<4xbf16> -> tensor<2x4xbf16>
      %m = glimmer.mul %a, %bb : tensor<2x4xbf16>
      %s = glimmer.silu %m : tensor<2x4xbf16>
      glimmer.yield %s : tensor<2x4xbf16>
    }
    %u = glimmer.fusion(%b) : (tensor<4xf32>) -> tensor<4x2xf32> {
    ^bb0(%c: tensor<4xf32>):
      %h = glimmer.constant dense<0.5> : tensor<4xf32>
      %e = glimmer.mul %c, %h : tensor<4xf32>
      %lo = glimmer.reshape %e : tensor<4xf32> -> tensor<4x1xf32>
      %p = glimmer.pad %lo low = [0, 1] high = [0, 0] value = -1.0 : tensor<4x1xf32> -> tensor<4x2xf32>
      %q = glimmer.concat %lo, %lo dim = 1 : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x2xf32>
      %z = glimmer.add %p, %q : tensor<4x2xf32>
      glimmer.yield %z : tensor<4x2xf32>
    }
    return %r#1, %t, %t2, %u : tensor<2x4xbf16>, tensor<2x4xbf16>, tensor<2x4xbf16>, tensor<4x2xf32>
  }
}

