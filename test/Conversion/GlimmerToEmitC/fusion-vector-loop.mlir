// RUN: glimmer-translate --emit-cpp --split-input-file %s | FileCheck %s

// A fused kernel computes eight elements per iteration of its vector loop:
// the operands read at the element's own index and the results move in
// 16-byte accesses; an operand read through an index map (here a
// transpose) keeps one read per element. The loop runs when those pointers
// are 16-byte aligned; the element loop after it serves the rest.
// CHECK-LABEL: glimmer_fused_0(const unsigned short *__restrict__ in0, const unsigned short *__restrict__ in1, unsigned short *__restrict__ out0) {
// CHECK-NEXT: if ((((unsigned long long)in0 | (unsigned long long)out0) & 15ULL) == 0ULL) {
// CHECK-NEXT: for (unsigned int t = (unsigned int)blockIdx.x * blockDim.x + threadIdx.x; t < 4u; t += (unsigned int)gridDim.x * blockDim.x) {
// CHECK-NEXT: const unsigned int i0 = t * 8u;
// CHECK-NEXT: const glimmer_fusion::Vec<unsigned short, 8> a0 = glimmer_fusion::loadVec<unsigned short, 8>(in0 + i0);
// CHECK-NEXT: glimmer_fusion::Vec<unsigned short, 8> r0;
// CHECK-NEXT: {
// CHECK-NEXT: const unsigned int [[E0:e[0-9]+]] = i0 + 0u;
// CHECK-NEXT: const float [[A0:v[0-9]+]] = glimmer_fusion::fromBf16(a0.v[0]);
// CHECK-NEXT: const unsigned int {{c[0-9]+}} = ([[E0]] / 8u);
// CHECK: const float [[B0:v[0-9]+]] = glimmer_fusion::fromBf16(in1[{{j[0-9]+}}]);
// CHECK: r0.v[0] = glimmer_fusion::toBf16(
// CHECK: const unsigned int {{e[0-9]+}} = i0 + 7u;
// CHECK-NEXT: fromBf16(a0.v[7]);
// CHECK: r0.v[7] = glimmer_fusion::toBf16(
// CHECK-NEXT: }
// CHECK-NEXT: glimmer_fusion::storeVec(out0 + i0, r0);
// CHECK-NEXT: }
// CHECK-NEXT: return;
// CHECK-NEXT: }
// CHECK-NEXT: for (unsigned int i = (unsigned int)blockIdx.x * blockDim.x + threadIdx.x; i < 32u;
// CHECK-NEXT: const float {{v[0-9]+}} = glimmer_fusion::fromBf16(in0[i]);
func.func @direct_and_transposed_operands(%x: tensor<4x8xbf16> {glimmer.input = "x"}, %y: tensor<8x4xbf16> {glimmer.input = "y"}) -> tensor<4x8xbf16> {
  %r = glimmer.fusion(%x, %y) : (tensor<4x8xbf16>, tensor<8x4xbf16>) -> tensor<4x8xbf16> {
  ^bb0(%a: tensor<4x8xbf16>, %b: tensor<8x4xbf16>):
    %bt = glimmer.transpose %b permutation = [1, 0] : tensor<8x4xbf16> -> tensor<4x8xbf16>
    %m = glimmer.mul %a, %bt : tensor<4x8xbf16>
    glimmer.yield %m : tensor<4x8xbf16>
  }
  return %r : tensor<4x8xbf16>
}

// -----

// An element count that is not a multiple of eight: the element loop only.
// CHECK-LABEL: glimmer_fused_0(const float *__restrict__ in0, float *__restrict__ out0) {
// CHECK-NEXT: for (unsigned int i = (unsigned int)blockIdx.x * blockDim.x + threadIdx.x; i < 6u;
// CHECK-NOT: loadVec
// CHECK: )glimmer_cuda");
func.func @odd_element_count(%x: tensor<2x3xf32> {glimmer.input = "x"}) -> tensor<2x3xf32> {
  %r = glimmer.fusion(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %e = glimmer.exp %a : tensor<2x3xf32>
    glimmer.yield %e : tensor<2x3xf32>
  }
  return %r : tensor<2x3xf32>
}

// -----

// Mixed widths: eight f32 operand elements (two 16-byte words) make eight
// bf16 results (one); the operand's alignment is checked as the result's.
// CHECK-LABEL: glimmer_fused_0(const float *__restrict__ in0, unsigned short *__restrict__ out0) {
// CHECK-NEXT: if ((((unsigned long long)in0 | (unsigned long long)out0) & 15ULL) == 0ULL) {
// CHECK: const glimmer_fusion::Vec<float, 8> a0 = glimmer_fusion::loadVec<float, 8>(in0 + i0);
// CHECK-NEXT: glimmer_fusion::Vec<unsigned short, 8> r0;
// CHECK: const float [[X:v[0-9]+]] = a0.v[0];
// CHECK-NEXT: const float [[C:v[0-9]+]] = glimmer_fusion::convertBf16((float)[[X]]);
// CHECK-NEXT: r0.v[0] = glimmer_fusion::toBf16([[C]]);
func.func @f32_operand_bf16_result(%x: tensor<16xf32> {glimmer.input = "x"}) -> tensor<16xbf16> {
  %r = glimmer.fusion(%x) : (tensor<16xf32>) -> tensor<16xbf16> {
  ^bb0(%a: tensor<16xf32>):
    %c = glimmer.convert %a : tensor<16xf32> to tensor<16xbf16>
    glimmer.yield %c : tensor<16xbf16>
  }
  return %r : tensor<16xbf16>
}
