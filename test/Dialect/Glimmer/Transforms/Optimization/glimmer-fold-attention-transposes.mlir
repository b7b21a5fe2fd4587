// RUN: glimmer-opt %s -split-input-file -glimmer-fold-attention-transposes | FileCheck %s

// The projections' [B, T, H, D] tensors go straight into attention, whose
// output a transpose brings back to [B, T, H, D]: every transpose goes.
// CHECK-LABEL: func.func @forward_all_sequence_major
// CHECK-NOT: glimmer.transpose
// CHECK: %[[O:.*]], %{{.*}} = glimmer.attention %arg0, %arg1, %arg2 causal scale = 2.500000e-01 {sequence_major = array<i1: true, true, true, true>} : tensor<1x8x4x16xbf16>, tensor<1x8x2x16xbf16> -> tensor<1x8x4x16xbf16>, tensor<1x4x8xf32>
// CHECK-NOT: glimmer.transpose
// CHECK: return %[[O]]
func.func @forward_all_sequence_major(%qs: tensor<1x8x4x16xbf16>, %ks: tensor<1x8x2x16xbf16>, %vs: tensor<1x8x2x16xbf16>) -> tensor<1x8x4x16xbf16> {
  %q = glimmer.transpose %qs permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
  %k = glimmer.transpose %ks permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
  %v = glimmer.transpose %vs permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
  %o, %lse = glimmer.attention %q, %k, %v causal scale = 0.25 : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
  %os = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<1x4x8x16xbf16> -> tensor<1x8x4x16xbf16>
  return %os : tensor<1x8x4x16xbf16>
}

// -----

// RoPE'd query and key arrive head-major (no transpose to drop): only the
// value and the output change layout, so value's type is spelled out.
// CHECK-LABEL: func.func @rope_query_key_stay_head_major
// CHECK: glimmer.attention %arg0, %arg1, %arg2 causal scale = 2.500000e-01 {sequence_major = array<i1: false, false, true, true>} : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x8x2x16xbf16> -> tensor<1x8x4x16xbf16>, tensor<1x4x8xf32>
// CHECK-NOT: glimmer.transpose
func.func @rope_query_key_stay_head_major(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %vs: tensor<1x8x2x16xbf16>) -> tensor<1x8x4x16xbf16> {
  %v = glimmer.transpose %vs permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
  %o, %lse = glimmer.attention %q, %k, %v causal scale = 0.25 : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
  %os = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<1x4x8x16xbf16> -> tensor<1x8x4x16xbf16>
  return %os : tensor<1x8x4x16xbf16>
}

// -----

// A training step: the backward reads the forward's operands and output
// and transposes its output gradient in and the operand gradients out. The
// output's head-major copy that the backward reads comes back as one
// transpose, which the backward's fold drops again: no transpose is left.
// CHECK-LABEL: func.func @forward_and_backward
// CHECK-NOT: glimmer.transpose
// CHECK: %[[O:.*]], %[[LSE:.*]] = glimmer.attention %arg0, %arg1, %arg2 causal scale = 2.500000e-01 {sequence_major = array<i1: true, true, true, true>}
// CHECK: glimmer.attention_grad %arg3, %arg0, %arg1, %arg2, %[[O]], %[[LSE]] causal scale = 2.500000e-01 {sequence_major = array<i1: true, true, true, true>} : tensor<1x8x4x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x4x8xf32>
// CHECK-NOT: glimmer.transpose
func.func @forward_and_backward(%qs: tensor<1x8x4x16xbf16>, %ks: tensor<1x8x2x16xbf16>, %vs: tensor<1x8x2x16xbf16>, %dos: tensor<1x8x4x16xbf16>) -> (tensor<1x8x4x16xbf16>, tensor<1x8x4x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>) {
  %q = glimmer.transpose %qs permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
  %k = glimmer.transpose %ks permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
  %v = glimmer.transpose %vs permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
  %o, %lse = glimmer.attention %q, %k, %v causal scale = 0.25 : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
  %os = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<1x4x8x16xbf16> -> tensor<1x8x4x16xbf16>
  %do = glimmer.transpose %dos permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
  %dq, %dk, %dv = glimmer.attention_grad %do, %q, %k, %v, %o, %lse causal scale = 0.25 : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x4x8xf32>
  %dqs = glimmer.transpose %dq permutation = [0, 2, 1, 3] : tensor<1x4x8x16xbf16> -> tensor<1x8x4x16xbf16>
  %dks = glimmer.transpose %dk permutation = [0, 2, 1, 3] : tensor<1x2x8x16xbf16> -> tensor<1x8x2x16xbf16>
  %dvs = glimmer.transpose %dv permutation = [0, 2, 1, 3] : tensor<1x2x8x16xbf16> -> tensor<1x8x2x16xbf16>
  return %os, %dqs, %dks, %dvs : tensor<1x8x4x16xbf16>, tensor<1x8x4x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>
}

// -----

// The backward's query gradient feeds RoPE's backward (not a transpose):
// query and its gradient stay head-major, the rest flips. A gradient
// whose operand came from a transpose but which goes elsewhere keeps its
// layout too (flipping would trade one transpose for another).
// CHECK-LABEL: func.func @backward_keeps_what_would_trade
// CHECK: glimmer.attention_grad %arg3, %arg0, %arg1, %arg2, %{{.*}}, %arg5 causal scale = 2.500000e-01 {sequence_major = array<i1: false, false, true, true>} : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x4x8xf32>, tensor<1x8x2x16xbf16>, tensor<1x8x4x16xbf16>
// CHECK: glimmer.transpose
// CHECK-NOT: glimmer.transpose
func.func @backward_keeps_what_would_trade(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %vs: tensor<1x8x2x16xbf16>, %dos: tensor<1x8x4x16xbf16>, %os: tensor<1x8x4x16xbf16>, %lse: tensor<1x4x8xf32>) -> (tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x8x2x16xbf16>) {
  %v = glimmer.transpose %vs permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
  %o = glimmer.transpose %os permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
  %do = glimmer.transpose %dos permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
  %dq, %dk, %dv = glimmer.attention_grad %do, %q, %k, %v, %o, %lse causal scale = 0.25 : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x4x8xf32>
  %dvs = glimmer.transpose %dv permutation = [0, 2, 1, 3] : tensor<1x2x8x16xbf16> -> tensor<1x8x2x16xbf16>
  %dks = glimmer.transpose %dk permutation = [0, 2, 1, 3] : tensor<1x2x8x16xbf16> -> tensor<1x8x2x16xbf16>
  %k2 = glimmer.add %dk, %k : tensor<1x2x8x16xbf16>
  return %dq, %k2, %dvs : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x8x2x16xbf16>
}

// -----

// A head-major user of the output besides the transpose: the output still
// flips (one transpose dropped), and that user reads one transpose back.
// CHECK-LABEL: func.func @head_major_user_gets_transpose_back
// CHECK: %[[O:.*]], %{{.*}} = glimmer.attention %arg0, %arg1, %arg2 scale = 2.500000e-01 {sequence_major = array<i1: false, false, false, true>} : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x8x4x16xbf16>, tensor<1x4x8xf32>
// CHECK: %[[BACK:.*]] = glimmer.transpose %[[O]] permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
// CHECK: %[[SUM:.*]] = glimmer.add %[[BACK]], %[[BACK]]
// CHECK: return %[[O]], %[[SUM]]
func.func @head_major_user_gets_transpose_back(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x16xbf16>) -> (tensor<1x8x4x16xbf16>, tensor<1x4x8x16xbf16>) {
  %o, %lse = glimmer.attention %q, %k, %v scale = 0.25 : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
  %os = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<1x4x8x16xbf16> -> tensor<1x8x4x16xbf16>
  %sum = glimmer.add %o, %o : tensor<1x4x8x16xbf16>
  return %os, %sum : tensor<1x8x4x16xbf16>, tensor<1x4x8x16xbf16>
}

// -----

// f32 attention and attention with positions run kernels that read
// head-major tensors: left as they are.
// CHECK-LABEL: func.func @not_cudnn_attention_kept
// CHECK: glimmer.transpose
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 2.500000e-01 :
// CHECK: glimmer.transpose
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} positions({{.*}}) causal scale = 2.500000e-01 :
func.func @not_cudnn_attention_kept(%qs: tensor<1x8x4x16xf32>, %ks: tensor<1x8x4x16xbf16>, %pos: tensor<1x8xi64>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xbf16>) {
  %q = glimmer.transpose %qs permutation = [0, 2, 1, 3] : tensor<1x8x4x16xf32> -> tensor<1x4x8x16xf32>
  %o, %lse = glimmer.attention %q, %q, %q scale = 0.25 : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
  %k = glimmer.transpose %ks permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
  %o2, %lse2 = glimmer.attention %k, %k, %k positions(%pos, %pos : tensor<1x8xi64>, tensor<1x8xi64>) causal scale = 0.25 : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
  return %o, %o2 : tensor<1x4x8x16xf32>, tensor<1x4x8x16xbf16>
}
