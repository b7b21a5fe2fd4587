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

// -----

// FSDP parameters, gathered whole in the forward and read again in the
// backward: each is gathered again right before the backward's use, so
// that between the passes only the pieces are held. An f32 piece (a
// function argument) is read as it is; a bf16 piece's copy (the parameter
// cast, a convert of the argument) is kept for the re-gather, not
// converted again. The gathers are bitwise the same op on the same piece.
// CHECK-LABEL: func.func @fsdp_params_gathered_again
// CHECK: %[[W:.*]] = glimmer.all_gather %arg1
// CHECK: %[[PB:.*]] = glimmer.convert %arg2
// CHECK: %[[V:.*]] = glimmer.all_gather %[[PB]]
// CHECK: glimmer.linear %arg0, %[[W]]
// CHECK: glimmer.linear %{{.*}}, %[[V]]
// CHECK: %[[W2:.*]] = glimmer.all_gather %arg1
// CHECK-NEXT: glimmer.matmul %{{.*}}, %[[W2]]
// CHECK-NOT: glimmer.convert
// CHECK: %[[V2:.*]] = glimmer.all_gather %[[PB]]
// CHECK-NEXT: glimmer.matmul %{{.*}}, %[[V2]]
// CHECK: return
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=1, "pp"=1]>
  func.func @fsdp_params_gathered_again(%x: tensor<4x8xf32>, %pw: tensor<4x8xf32>, %pv: tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
    %w = glimmer.all_gather %pw on @mesh ["dp_shard"] dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %pb = glimmer.convert %pv : tensor<4x8xf32> to tensor<4x8xbf16>
    %v = glimmer.all_gather %pb on @mesh ["dp_shard"] dim = 0 : tensor<4x8xbf16> -> tensor<8x8xbf16>
    %y = glimmer.linear %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %yb = glimmer.convert %y : tensor<4x8xf32> to tensor<4x8xbf16>
    %z = glimmer.linear %yb, %v : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
    %a = glimmer.exp %y : tensor<4x8xf32>
    %b = glimmer.exp %a : tensor<4x8xf32>
    %c = glimmer.exp %b : tensor<4x8xf32>
    %dx = glimmer.matmul %c, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %zb = glimmer.exp %z : tensor<4x8xbf16>
    %zc = glimmer.exp %zb : tensor<4x8xbf16>
    %zd = glimmer.exp %zc : tensor<4x8xbf16>
    %dz = glimmer.matmul %zd, %v : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
    return %dx, %dz : tensor<4x8xf32>, tensor<4x8xbf16>
  }
}
