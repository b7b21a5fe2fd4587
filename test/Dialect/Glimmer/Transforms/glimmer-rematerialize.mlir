// RUN: glimmer-opt %s -split-input-file -glimmer-rematerialize="min-gap=3 min-elements=16" | FileCheck %s
// RUN: glimmer-opt %s -split-input-file -glimmer-rematerialize | FileCheck %s --check-prefix=SMALL

// The SwiGLU product: recomputing it would read the gate and the up
// projection, twice the bytes it frees, so it is kept.
// CHECK-LABEL: func.func @activation_product_kept
// CHECK-COUNT-1: glimmer.mul
// CHECK-NOT: glimmer.mul
func.func @activation_product_kept(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = glimmer.silu %g : tensor<4x8xf32>
  %h = glimmer.mul %s, %u : tensor<4x8xf32>
  %y = glimmer.linear %h, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %a = glimmer.exp %y : tensor<4x8xf32>
  %b = glimmer.exp %a : tensor<4x8xf32>
  %c = glimmer.exp %b : tensor<4x8xf32>
  %d = glimmer.add %h, %c : tensor<4x8xf32>
  return %d, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A chain of unary ops of a value live at the late use: the late use gets a
// copy of the chain (the silu, used only by the neg, recomputed with it);
// the early use keeps the original.
// CHECK-LABEL: func.func @unary_chain_recomputed
// CHECK: %[[S:.*]] = glimmer.silu %arg0
// CHECK: %[[N:.*]] = glimmer.neg %[[S]]
// CHECK: glimmer.linear %[[N]], %arg1
// CHECK: %[[S2:.*]] = glimmer.silu %arg0
// CHECK-NEXT: %[[N2:.*]] = glimmer.neg %[[S2]]
// CHECK-NEXT: glimmer.add %[[N2]], %{{.*}}
// Values under min-elements are left alone by default.
// SMALL-LABEL: func.func @unary_chain_recomputed
// SMALL-COUNT-1: glimmer.silu
// SMALL-NOT: glimmer.silu
func.func @unary_chain_recomputed(%g: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = glimmer.silu %g : tensor<4x8xf32>
  %n = glimmer.neg %s : tensor<4x8xf32>
  %y = glimmer.linear %n, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %a = glimmer.exp %y : tensor<4x8xf32>
  %b = glimmer.exp %a : tensor<4x8xf32>
  %c = glimmer.exp %b : tensor<4x8xf32>
  %d = glimmer.add %n, %c : tensor<4x8xf32>
  return %d, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A transpose (the attention layout's copies) of a live value.
// CHECK-LABEL: func.func @transpose_recomputed
// CHECK: glimmer.transpose
// CHECK: glimmer.exp
// CHECK: glimmer.exp
// CHECK: glimmer.exp
// CHECK: %[[T2:.*]] = glimmer.transpose %arg0
// CHECK-NEXT: glimmer.add %[[T2]]
func.func @transpose_recomputed(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %t = glimmer.transpose %x permutation = [1, 0] : tensor<8x4xf32> -> tensor<4x8xf32>
  %e = glimmer.exp %t : tensor<4x8xf32>
  %a = glimmer.exp %e : tensor<4x8xf32>
  %b = glimmer.exp %a : tensor<4x8xf32>
  %d = glimmer.add %t, %b : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// An operand that dies before the late use and is not cheap to compute
// again (a GEMM's result) would have to live longer: the value is kept.
// CHECK-LABEL: func.func @operand_not_live_kept
// CHECK-COUNT-1: glimmer.neg
// CHECK-NOT: glimmer.neg
func.func @operand_not_live_kept(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %t = glimmer.linear %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %n = glimmer.neg %t : tensor<4x8xf32>
  %a = glimmer.exp %n : tensor<4x8xf32>
  %b = glimmer.exp %a : tensor<4x8xf32>
  %c = glimmer.exp %b : tensor<4x8xf32>
  %d = glimmer.add %n, %c : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// One far use: the op moves to it (the original has no use left and goes).
// The weight, under min-elements, does not count as a read.
// CHECK-LABEL: func.func @single_far_use_sunk
// CHECK: glimmer.exp
// CHECK: glimmer.exp
// CHECK: glimmer.exp
// CHECK: %[[R:.*]] = glimmer.rms_norm %arg0, %arg1
// CHECK-NEXT: glimmer.add %[[R]]
// CHECK-NOT: glimmer.rms_norm
func.func @single_far_use_sunk(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  %a = glimmer.exp %x : tensor<4x8xf32>
  %b = glimmer.exp %a : tensor<4x8xf32>
  %c = glimmer.exp %b : tensor<4x8xf32>
  %d = glimmer.add %r, %c : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Uses close together (under min-gap) keep the value.
// CHECK-LABEL: func.func @near_uses_kept
// CHECK-COUNT-1: glimmer.neg
// CHECK-NOT: glimmer.neg
func.func @near_uses_kept(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %n = glimmer.neg %x : tensor<4x8xf32>
  %a = glimmer.exp %n : tensor<4x8xf32>
  %d = glimmer.add %n, %a : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}
