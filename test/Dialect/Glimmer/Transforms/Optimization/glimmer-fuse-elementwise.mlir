// RUN: glimmer-opt %s -split-input-file -glimmer-fuse-elementwise | FileCheck %s

// SwiGLU's gate: silu and mul between two GEMMs become one fusion whose
// inputs are the two projections; the GEMMs stay outside.
// CHECK-LABEL: func.func @swiglu_gate_fused
// CHECK: %[[G:.*]] = glimmer.linear
// CHECK: %[[U:.*]] = glimmer.linear
// CHECK: %[[H:.*]] = glimmer.fusion(%[[G]], %[[U]]) : (tensor<8x32xbf16>, tensor<8x32xbf16>) -> tensor<8x32xbf16>
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<8x32xbf16>, %[[B:.*]]: tensor<8x32xbf16>):
// CHECK-NEXT: %[[S:.*]] = glimmer.silu %[[A]]
// CHECK-NEXT: %[[M:.*]] = glimmer.mul %[[S]], %[[B]]
// CHECK-NEXT: glimmer.yield %[[M]]
// CHECK: glimmer.linear %[[H]]
func.func @swiglu_gate_fused(%x: tensor<8x16xbf16>, %wg: tensor<32x16xbf16>, %wu: tensor<32x16xbf16>, %wd: tensor<16x32xbf16>) -> tensor<8x16xbf16> {
  %g = glimmer.linear %x, %wg : tensor<8x16xbf16>, tensor<32x16xbf16> -> tensor<8x32xbf16>
  %u = glimmer.linear %x, %wu : tensor<8x16xbf16>, tensor<32x16xbf16> -> tensor<8x32xbf16>
  %s = glimmer.silu %g : tensor<8x32xbf16>
  %h = glimmer.mul %s, %u : tensor<8x32xbf16>
  %d = glimmer.linear %h, %wd : tensor<8x32xbf16>, tensor<16x32xbf16> -> tensor<8x16xbf16>
  return %d : tensor<8x16xbf16>
}

// -----

// Interleaved RoPE: the slices of the even and odd lanes, the products with
// cos and sin, the concat and the transpose to heads-first all go into one
// fusion that reads the projection and the (broadcast) tables.
// CHECK-LABEL: func.func @interleaved_rope_one_fusion
// CHECK-COUNT-1: glimmer.fusion
// CHECK-NOT: glimmer.fusion
// CHECK: glimmer.slice
// CHECK: glimmer.concat
// CHECK: glimmer.transpose
// CHECK: glimmer.yield
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @interleaved_rope_one_fusion(%q: tensor<1x8x2x8xf32>, %cos: tensor<1x8x1x4xf32>, %sin: tensor<1x8x1x4xf32>) -> tensor<1x2x8x8xf32> {
  %r = glimmer.reshape %q : tensor<1x8x2x8xf32> -> tensor<1x8x2x4x2xf32>
  %e5 = glimmer.slice %r start = [0, 0, 0, 0, 0] limit = [1, 8, 2, 4, 1] stride = [1, 1, 1, 1, 1] : tensor<1x8x2x4x2xf32> -> tensor<1x8x2x4x1xf32>
  %e = glimmer.reshape %e5 : tensor<1x8x2x4x1xf32> -> tensor<1x8x2x4xf32>
  %o5 = glimmer.slice %r start = [0, 0, 0, 0, 1] limit = [1, 8, 2, 4, 2] stride = [1, 1, 1, 1, 1] : tensor<1x8x2x4x2xf32> -> tensor<1x8x2x4x1xf32>
  %o = glimmer.reshape %o5 : tensor<1x8x2x4x1xf32> -> tensor<1x8x2x4xf32>
  %c = glimmer.broadcast_in_dim %cos dims = [0, 1, 2, 3] : tensor<1x8x1x4xf32> -> tensor<1x8x2x4xf32>
  %s = glimmer.broadcast_in_dim %sin dims = [0, 1, 2, 3] : tensor<1x8x1x4xf32> -> tensor<1x8x2x4xf32>
  %ec = glimmer.mul %e, %c : tensor<1x8x2x4xf32>
  %os = glimmer.mul %o, %s : tensor<1x8x2x4xf32>
  %re = glimmer.sub %ec, %os : tensor<1x8x2x4xf32>
  %es = glimmer.mul %e, %s : tensor<1x8x2x4xf32>
  %oc = glimmer.mul %o, %c : tensor<1x8x2x4xf32>
  %im = glimmer.add %es, %oc : tensor<1x8x2x4xf32>
  %re5 = glimmer.reshape %re : tensor<1x8x2x4xf32> -> tensor<1x8x2x4x1xf32>
  %im5 = glimmer.reshape %im : tensor<1x8x2x4xf32> -> tensor<1x8x2x4x1xf32>
  %cat = glimmer.concat %re5, %im5 dim = 4 : tensor<1x8x2x4x1xf32>, tensor<1x8x2x4x1xf32> -> tensor<1x8x2x4x2xf32>
  %flat = glimmer.reshape %cat : tensor<1x8x2x4x2xf32> -> tensor<1x8x2x8xf32>
  %t = glimmer.transpose %flat permutation = [0, 2, 1, 3] : tensor<1x8x2x8xf32> -> tensor<1x2x8x8xf32>
  return %t : tensor<1x2x8x8xf32>
}

// -----

// A producer used after the fusion as well becomes a second result (the
// residual stream: the sum feeds the next norm and the next residual add).
// CHECK-LABEL: func.func @producer_used_later_is_a_result
// CHECK: %[[F:.*]]:2 = glimmer.fusion(%arg0, %arg1, %arg2) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: glimmer.yield %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: glimmer.rms_norm %[[F]]#0
// CHECK: return %[[F]]#1, %{{.*}}
func.func @producer_used_later_is_a_result(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %z: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %sum = glimmer.add %x, %y : tensor<4x8xf32>
  %out = glimmer.mul %sum, %z : tensor<4x8xf32>
  %n = glimmer.rms_norm %sum, %w eps = 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  return %out, %n : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A producer used by an op that comes before the group's last op cannot
// move there: it stays its own op (here alone, so it is no fusion at all).
// CHECK-LABEL: func.func @producer_used_earlier_stays_outside
// CHECK: %[[E:.*]] = glimmer.exp %arg0
// CHECK: glimmer.reduce sum %[[E]]
// CHECK: glimmer.fusion(%[[E]], %arg1)
func.func @producer_used_earlier_stays_outside(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %e = glimmer.exp %x : tensor<4x8xf32>
  %s = glimmer.reduce sum %e dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %m = glimmer.mul %e, %y : tensor<4x8xf32>
  %n = glimmer.neg %m : tensor<4x8xf32>
  return %n, %s : tensor<4x8xf32>, tensor<4xf32>
}

// -----

// A small value broadcast to the group's shape is computed once, outside:
// the cosine of [8, 1] positions is not recomputed for each of 64 columns.
// CHECK-LABEL: func.func @small_broadcast_source_stays_outside
// CHECK: %[[C:.*]] = glimmer.cos %arg1 : tensor<8x1xf32>
// CHECK: glimmer.fusion(%[[C]], %arg0)
// CHECK: glimmer.broadcast_in_dim
// CHECK-NOT: glimmer.cos
// CHECK: glimmer.yield
func.func @small_broadcast_source_stays_outside(%x: tensor<8x64xf32>, %p: tensor<8x1xf32>) -> tensor<8x64xf32> {
  %c = glimmer.cos %p : tensor<8x1xf32>
  %cb = glimmer.broadcast_in_dim %c dims = [0, 1] : tensor<8x1xf32> -> tensor<8x64xf32>
  %m = glimmer.mul %x, %cb : tensor<8x64xf32>
  %e = glimmer.exp %m : tensor<8x64xf32>
  return %e : tensor<8x64xf32>
}

// -----

// Integer ops, a lone op and a reshape feeding a GEMM are not fused; a
// conversion of integer positions to floats is.
// CHECK-LABEL: func.func @what_is_not_fused
// CHECK: glimmer.add %arg0, %arg0 : tensor<4x8xi64>
// CHECK: glimmer.fusion(%arg0)
// CHECK: glimmer.convert %{{.*}} : tensor<4x8xi64> to tensor<4x8xf32>
// CHECK: glimmer.sin
// CHECK: glimmer.yield
// CHECK: glimmer.exp %arg1
// CHECK-NOT: glimmer.fusion
func.func @what_is_not_fused(%i: tensor<4x8xi64>, %x: tensor<4x8xf32>) -> (tensor<4x8xi64>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = glimmer.add %i, %i : tensor<4x8xi64>
  %f = glimmer.convert %i : tensor<4x8xi64> to tensor<4x8xf32>
  %t = glimmer.sin %f : tensor<4x8xf32>
  %e = glimmer.exp %x : tensor<4x8xf32>
  return %s, %t, %e : tensor<4x8xi64>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A broadcast read by two groups at different places (RoPE's tables, by the
// forward and by the backward) is cheap to compute again: each fusion
// copies it and reads the small table; the broadcast itself goes.
// CHECK-LABEL: func.func @broadcast_copied_into_two_fusions
// CHECK-NOT: glimmer.broadcast_in_dim %arg1
// CHECK: %[[F1:.*]] = glimmer.fusion(%arg1, %arg0)
// CHECK: glimmer.broadcast_in_dim
// CHECK: glimmer.yield
// CHECK: %[[R:.*]] = glimmer.reduce sum %[[F1]]
// CHECK: glimmer.fusion(%arg1, %arg2)
// CHECK: glimmer.broadcast_in_dim
// CHECK: glimmer.yield
func.func @broadcast_copied_into_two_fusions(%x: tensor<8x16xf32>, %c: tensor<8x1xf32>, %g: tensor<8x16xf32>) -> (tensor<8xf32>, tensor<8x16xf32>) {
  %cb = glimmer.broadcast_in_dim %c dims = [0, 1] : tensor<8x1xf32> -> tensor<8x16xf32>
  %m = glimmer.mul %x, %cb : tensor<8x16xf32>
  %e = glimmer.exp %m : tensor<8x16xf32>
  %r = glimmer.reduce sum %e dims = [1] : tensor<8x16xf32> -> tensor<8xf32>
  %gm = glimmer.mul %g, %cb : tensor<8x16xf32>
  %n = glimmer.neg %gm : tensor<8x16xf32>
  return %r, %n : tensor<8xf32>, tensor<8x16xf32>
}

// -----

// A copied op that another, unfused op reads before the group stays for
// that reader (it cannot be a result: the reader comes first).
// CHECK-LABEL: func.func @copy_kept_for_earlier_reader
// CHECK: %[[T:.*]] = glimmer.transpose %arg0
// CHECK: glimmer.reduce sum %[[T]]
// CHECK: glimmer.fusion(%arg0, %arg1) : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK: glimmer.transpose
// CHECK: glimmer.yield
func.func @copy_kept_for_earlier_reader(%x: tensor<16x8xf32>, %y: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  %t = glimmer.transpose %x permutation = [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  %r = glimmer.reduce sum %t dims = [1] : tensor<8x16xf32> -> tensor<8xf32>
  %m = glimmer.mul %t, %y : tensor<8x16xf32>
  %e = glimmer.exp %m : tensor<8x16xf32>
  return %e, %r : tensor<8x16xf32>, tensor<8xf32>
}

// -----

// A fusion that copies an op reads that op's operand: a group formed later
// may take that operand in only as a result of its own shape. Here the
// transpose is copied into the exp's fusion (the reduce keeps it), so the
// exp it reads must stay readable there; in a group rooted at the
// transpose it would be a result of another shape, so it stays outside.
// CHECK-LABEL: func.func @copied_op_operand_stays_readable
// CHECK: %[[Y:.*]] = glimmer.exp %arg0 : tensor<4x8xf32>
// CHECK: %[[T:.*]] = glimmer.transpose %[[Y]]
// CHECK: glimmer.reduce sum %[[T]]
// CHECK: glimmer.fusion(%[[Y]], %arg1)
func.func @copied_op_operand_stays_readable(%x: tensor<4x8xf32>, %z: tensor<8x4xf32>) -> (tensor<8xf32>, tensor<8x4xf32>) {
  %y = glimmer.exp %x : tensor<4x8xf32>
  %c = glimmer.transpose %y permutation = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %r = glimmer.reduce sum %c dims = [1] : tensor<8x4xf32> -> tensor<8xf32>
  %m = glimmer.mul %c, %z : tensor<8x4xf32>
  %e = glimmer.exp %m : tensor<8x4xf32>
  return %r, %e : tensor<8xf32>, tensor<8x4xf32>
}

// -----

// SwiGLU's backward: two fusions of one shape read the same output gradient
// and gate projection a GEMM apart; they become one fusion with both
// results, at the first one's place, so each operand is read once.
// CHECK-LABEL: func.func @swiglu_backward_siblings_merged
// CHECK: %[[F:.*]]:2 = glimmer.fusion(%arg1, %arg0, %arg2) : (tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>) -> (tensor<8x32xbf16>, tensor<8x32xbf16>)
// CHECK: glimmer.silu
// CHECK: glimmer.sigmoid
// CHECK: glimmer.yield
// CHECK: glimmer.matmul %[[F]]#0, %arg3
// CHECK-NOT: glimmer.fusion
// CHECK: return %{{.*}}, %[[F]]#1
func.func @swiglu_backward_siblings_merged(%dy: tensor<8x32xbf16>, %g: tensor<8x32xbf16>, %u: tensor<8x32xbf16>, %w: tensor<32x16xbf16>) -> (tensor<8x16xbf16>, tensor<8x32xbf16>) {
  %s = glimmer.silu %g : tensor<8x32xbf16>
  %du = glimmer.mul %dy, %s : tensor<8x32xbf16>
  %dx = glimmer.matmul %du, %w : tensor<8x32xbf16>, tensor<32x16xbf16> -> tensor<8x16xbf16>
  %p = glimmer.mul %dy, %u : tensor<8x32xbf16>
  %sg = glimmer.sigmoid %g : tensor<8x32xbf16>
  %dg = glimmer.mul %p, %sg : tensor<8x32xbf16>
  return %dx, %dg : tensor<8x16xbf16>, tensor<8x32xbf16>
}

// -----

// Siblings too far apart stay separate: the second would compute its result
// early and hold it across the ops in between (here five GEMMs).
// CHECK-LABEL: func.func @siblings_far_apart_kept
// CHECK: glimmer.fusion(%arg0, %arg1)
// CHECK-COUNT-5: glimmer.matmul
// CHECK: glimmer.fusion(%arg0, %arg1)
func.func @siblings_far_apart_kept(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %e = glimmer.exp %a : tensor<8x8xf32>
  %m = glimmer.mul %e, %b : tensor<8x8xf32>
  %p1 = glimmer.matmul %m, %m : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %p2 = glimmer.matmul %p1, %m : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %p3 = glimmer.matmul %p2, %m : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %p4 = glimmer.matmul %p3, %m : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %p5 = glimmer.matmul %p4, %m : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %t = glimmer.tanh %a : tensor<8x8xf32>
  %n = glimmer.add %t, %b : tensor<8x8xf32>
  return %p5, %n : tensor<8x8xf32>, tensor<8x8xf32>
}
