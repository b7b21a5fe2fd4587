// RUN: glimmer-opt %s -split-input-file -glimmer-fuse-residual-norms | FileCheck %s

// Autocast's f32 stream: a bf16 block output widened and added to the
// residual, then normalized to bf16. The add and the norm become one op
// that reads the bf16 addend as it is (its convert dropped) and returns
// the sum (the stream goes on) and the norm.
// CHECK-LABEL: func.func @f32_stream_bf16_branch
// CHECK-NEXT: %[[S:.*]], %[[Y:.*]] = glimmer.add_rms_norm %arg0, %arg1, %arg2 eps = 1.000000e-05 : tensor<2x8x16xbf16>, tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
// CHECK-NEXT: return %[[S]], %[[Y]]
func.func @f32_stream_bf16_branch(%h: tensor<2x8x16xbf16>, %x: tensor<2x8x16xf32>, %w: tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xbf16>) {
  %hf = glimmer.convert %h : tensor<2x8x16xbf16> to tensor<2x8x16xf32>
  %s = glimmer.add %x, %hf : tensor<2x8x16xf32>
  %y = glimmer.rms_norm %s, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
  return %s, %y : tensor<2x8x16xf32>, tensor<2x8x16xbf16>
}

// -----

// One type throughout (bf16 compute, or f32 programs); a second norm of the
// same sum (the backward's recomputation) reads the fused op's sum.
// CHECK-LABEL: func.func @same_type_and_a_recomputed_norm
// CHECK-NEXT: %[[S:.*]], %[[Y:.*]] = glimmer.add_rms_norm %arg0, %arg1, %arg2 eps = {{.*}} : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[E:.*]] = glimmer.exp %[[Y]]
// CHECK-NEXT: %[[Y2:.*]] = glimmer.rms_norm %[[S]], %arg2
// CHECK-NEXT: return %[[E]], %[[Y2]]
func.func @same_type_and_a_recomputed_norm(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>, %w: tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %s = glimmer.add %a, %b : tensor<4x8xbf16>
  %y = glimmer.rms_norm %s, %w eps = 1.0e-06 : tensor<4x8xbf16>, tensor<8xbf16>
  %e = glimmer.exp %y : tensor<4x8xbf16>
  %y2 = glimmer.rms_norm %s, %w eps = 1.0e-06 : tensor<4x8xbf16>, tensor<8xbf16>
  return %e, %y2 : tensor<4x8xbf16>, tensor<4x8xbf16>
}

// -----

// A widened addend that something else reads too: the fused op reads it
// narrow and the convert stays for its other reader.
// CHECK-LABEL: func.func @widened_addend_read_elsewhere
// CHECK-NEXT: %[[C:.*]] = glimmer.convert %arg0
// CHECK-NEXT: %[[S:.*]], %[[Y:.*]] = glimmer.add_rms_norm %arg0, %arg1, %arg2
// CHECK-NEXT: return %[[C]], %[[S]], %[[Y]]
func.func @widened_addend_read_elsewhere(%h: tensor<4x8xbf16>, %x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %hf = glimmer.convert %h : tensor<4x8xbf16> to tensor<4x8xf32>
  %s = glimmer.add %hf, %x : tensor<4x8xf32>
  %y = glimmer.rms_norm %s, %w eps = 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  return %hf, %s, %y : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// bf16 compute: the weight's bf16 copy is made right before the norm,
// after the add; nothing reads the sum in between, so the fused op stands
// at the norm.
// CHECK-LABEL: func.func @weight_cast_between
// CHECK-NEXT: %[[W:.*]] = glimmer.convert %arg2
// CHECK-NEXT: %[[S:.*]], %[[Y:.*]] = glimmer.add_rms_norm %arg0, %arg1, %[[W]]
// CHECK-NEXT: %[[E:.*]] = glimmer.exp %[[S]]
// CHECK-NEXT: return %[[E]], %[[Y]]
func.func @weight_cast_between(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>, %w: tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %s = glimmer.add %a, %b : tensor<4x8xbf16>
  %wb = glimmer.convert %w : tensor<8xf32> to tensor<8xbf16>
  %y = glimmer.rms_norm %s, %wb eps = 1.0e-05 : tensor<4x8xbf16>, tensor<8xbf16>
  %e = glimmer.exp %s : tensor<4x8xbf16>
  return %e, %y : tensor<4x8xbf16>, tensor<4x8xbf16>
}

// -----

// Left alone: a norm whose weight is computed after the add while the sum
// is read before the norm (the fused op can stand neither at the add nor
// at the norm) and a norm of a product.
// CHECK-LABEL: func.func @norms_left_alone
// CHECK: glimmer.add %arg0, %arg1
// CHECK: glimmer.exp
// CHECK: glimmer.rms_norm
// CHECK: glimmer.mul
// CHECK: glimmer.rms_norm
// CHECK-NOT: glimmer.add_rms_norm
func.func @norms_left_alone(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %w: tensor<8xf32>, %one: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = glimmer.add %a, %b : tensor<4x8xf32>
  %w1 = glimmer.add %w, %one : tensor<8xf32>
  %e = glimmer.exp %s : tensor<4x8xf32>
  %y = glimmer.rms_norm %s, %w1 eps = 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  %p = glimmer.mul %a, %b : tensor<4x8xf32>
  %z = glimmer.rms_norm %p, %w eps = 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  return %y, %z, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
