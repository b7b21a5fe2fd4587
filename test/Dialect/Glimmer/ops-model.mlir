// RUN: glimmer-opt %s -split-input-file | glimmer-opt -split-input-file | FileCheck %s
// RUN: glimmer-opt %s -split-input-file -mlir-print-op-generic | glimmer-opt -split-input-file | FileCheck %s

// Round-trip tests for the model, backward and optimizer ops of the glimmer
// dialect.

// embedding: a [V, D] table looked up with i64 and i32 ids of any rank.
// CHECK-LABEL: func.func @embedding
// CHECK: glimmer.embedding %{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
// CHECK: glimmer.embedding %{{.*}}, %{{.*}} : tensor<32x16xbf16>, tensor<5xi32> -> tensor<5x16xbf16>
func.func @embedding(%table: tensor<32x16xf32>, %ids: tensor<2x8xi64>, %table_bf16: tensor<32x16xbf16>, %ids32: tensor<5xi32>)
    -> (tensor<2x8x16xf32>, tensor<5x16xbf16>) {
  %0 = glimmer.embedding %table, %ids : tensor<32x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  %1 = glimmer.embedding %table_bf16, %ids32 : tensor<32x16xbf16>, tensor<5xi32> -> tensor<5x16xbf16>
  return %0, %1 : tensor<2x8x16xf32>, tensor<5x16xbf16>
}

// -----

// check_indices: the ids it returns, checked against a bound, with and
// without an ignored value (labels).
// CHECK-LABEL: func.func @check_indices
// CHECK: glimmer.check_indices %{{.*}} bound = 64 for "embedding" : tensor<2x8xi64>
// CHECK: glimmer.check_indices %{{.*}} bound = 64 for "cross_entropy" ignore_index = -100 : tensor<16xi32>
func.func @check_indices(%ids: tensor<2x8xi64>, %labels: tensor<16xi32>) -> (tensor<2x8xi64>, tensor<16xi32>) {
  %0 = glimmer.check_indices %ids bound = 64 for "embedding" : tensor<2x8xi64>
  %1 = glimmer.check_indices %labels bound = 64 for "cross_entropy" ignore_index = -100 : tensor<16xi32>
  return %0, %1 : tensor<2x8xi64>, tensor<16xi32>
}

// -----

// embedding_grad: scatter-add of [B, T, D] row gradients into a [V, D] table.
// CHECK-LABEL: func.func @embedding_grad
// CHECK: glimmer.embedding_grad %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<32x16xf32>
func.func @embedding_grad(%dy: tensor<2x8x16xf32>, %ids: tensor<2x8xi64>) -> tensor<32x16xf32> {
  %0 = glimmer.embedding_grad %dy, %ids : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<32x16xf32>
  return %0 : tensor<32x16xf32>
}

// -----

// linear with a bias: the optional operand and its type are printed.
// CHECK-LABEL: func.func @linear_with_bias
// CHECK: glimmer.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
func.func @linear_with_bias(%x: tensor<2x8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %0 = glimmer.linear %x, %w, %b : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

// linear without a bias, on a rank-1 input (no batch dimensions).
// CHECK-LABEL: func.func @linear_without_bias
// CHECK: glimmer.linear %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
// CHECK: glimmer.linear %{{.*}}, %{{.*}} : tensor<16xf32>, tensor<32x16xf32> -> tensor<32xf32>
func.func @linear_without_bias(%x: tensor<2x8x16xf32>, %w: tensor<32x16xf32>, %v: tensor<16xf32>)
    -> (tensor<2x8x32xf32>, tensor<32xf32>) {
  %0 = glimmer.linear %x, %w : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %1 = glimmer.linear %v, %w : tensor<16xf32>, tensor<32x16xf32> -> tensor<32xf32>
  return %0, %1 : tensor<2x8x32xf32>, tensor<32xf32>
}

// -----

// matmul: plain, transpose_rhs, transpose_lhs, and both flags.
// CHECK-LABEL: func.func @matmul_transpose_flags
// CHECK: glimmer.matmul %{{.*}}, %{{.*}} : tensor<4x8x16xf32>, tensor<4x16x32xf32> -> tensor<4x8x32xf32>
// CHECK: glimmer.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<4x8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
// CHECK: glimmer.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<4x16x8xf32>, tensor<4x16x32xf32> -> tensor<4x8x32xf32>
// CHECK: glimmer.matmul %{{.*}}, %{{.*}} transpose_lhs transpose_rhs : tensor<16x8xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
func.func @matmul_transpose_flags(%a: tensor<4x8x16xf32>, %b: tensor<4x16x32xf32>, %bt: tensor<4x32x16xf32>,
                                  %at: tensor<4x16x8xf32>, %a2t: tensor<16x8xf32>, %b2t: tensor<32x16xf32>)
    -> (tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<8x32xf32>) {
  %0 = glimmer.matmul %a, %b : tensor<4x8x16xf32>, tensor<4x16x32xf32> -> tensor<4x8x32xf32>
  %1 = glimmer.matmul %a, %bt transpose_rhs : tensor<4x8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
  %2 = glimmer.matmul %at, %b transpose_lhs : tensor<4x16x8xf32>, tensor<4x16x32xf32> -> tensor<4x8x32xf32>
  %3 = glimmer.matmul %a2t, %b2t transpose_lhs transpose_rhs : tensor<16x8xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  return %0, %1, %2, %3 : tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<8x32xf32>
}

// -----

// add_rms_norm: the sum takes rhs's type; lhs may be narrower (bf16 into
// an f32 stream) and the norm may write bf16.
// CHECK-LABEL: func.func @add_rms_norm
// CHECK: %[[S:[a-z_0-9]+]], %[[Y:[a-z_0-9]+]] = glimmer.add_rms_norm %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x8x16xbf16>, tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
// CHECK: glimmer.add_rms_norm %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
// CHECK: return %[[S]], %[[Y]]
func.func @add_rms_norm(%h: tensor<2x8x16xbf16>, %x: tensor<2x8x16xf32>, %w: tensor<16xf32>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xbf16>, tensor<2x8x16xf32>) {
  %s, %y = glimmer.add_rms_norm %h, %x, %w eps = 1.0e-05 : tensor<2x8x16xbf16>, tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
  %t, %z = glimmer.add_rms_norm %x, %x, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  return %s, %y, %z : tensor<2x8x16xf32>, tensor<2x8x16xbf16>, tensor<2x8x16xf32>
}

// -----

// rms_norm and its VJP (two results); eps is printed as an f64.
// CHECK-LABEL: func.func @rms_norm
// CHECK: glimmer.rms_norm %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK: %[[DX:[a-z_0-9]+]], %[[DW:[a-z_0-9]+]] = glimmer.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK: return %{{.*}}, %[[DX]], %[[DW]] : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>
func.func @rms_norm(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %dy: tensor<2x8x16xf32>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) {
  %y = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>
  %dx, %dw = glimmer.rms_norm_grad %dy, %x, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>
  return %y, %dx, %dw : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>
}

// -----

// layer_norm(+_grad, 3 results) on bf16; an inexact eps prints in full.
// CHECK-LABEL: func.func @layer_norm
// CHECK: glimmer.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 : tensor<2x8x16xbf16>, tensor<16xbf16>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = glimmer.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 : tensor<2x8x16xbf16>, tensor<16xbf16>
func.func @layer_norm(%x: tensor<2x8x16xbf16>, %w: tensor<16xbf16>, %b: tensor<16xbf16>, %dy: tensor<2x8x16xbf16>)
    -> (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<16xbf16>, tensor<16xbf16>) {
  %y = glimmer.layer_norm %x, %w, %b eps = 1.0e-06 : tensor<2x8x16xbf16>, tensor<16xbf16>
  %dx, %dw, %db = glimmer.layer_norm_grad %dy, %x, %w eps = 1.0e-06 : tensor<2x8x16xbf16>, tensor<16xbf16>
  return %y, %dx, %dw, %db : tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<16xbf16>, tensor<16xbf16>
}

// -----

// Mixed precision: norms of an f32 input with a bf16 result (after `->`)
// and their VJPs reading the bf16 cotangent (after `grad`); the input
// gradient keeps the input's type.
// CHECK-LABEL: func.func @norms_with_bf16_results
// CHECK: glimmer.rms_norm %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
// CHECK: glimmer.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32> grad tensor<2x8x16xbf16>
// CHECK: glimmer.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
// CHECK: glimmer.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32> grad tensor<2x8x16xbf16>
func.func @norms_with_bf16_results(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %dy: tensor<2x8x16xbf16>)
    -> (tensor<2x8x16xbf16>, tensor<2x8x16xf32>, tensor<2x8x16xbf16>, tensor<2x8x16xf32>) {
  %y = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
  %dx, %dw = glimmer.rms_norm_grad %dy, %x, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32> grad tensor<2x8x16xbf16>
  %z = glimmer.layer_norm %x, %w, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
  %ex, %ew, %eb = glimmer.layer_norm_grad %dy, %x, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32> grad tensor<2x8x16xbf16>
  return %y, %dx, %z, %ex : tensor<2x8x16xbf16>, tensor<2x8x16xf32>, tensor<2x8x16xbf16>, tensor<2x8x16xf32>
}

// -----

// rope: both pairing styles, and the inverse rotation (the VJP).
// CHECK-LABEL: func.func @rope_styles_and_inverse
// CHECK: glimmer.rope %{{.*}}, %{{.*}} theta = 1.000000e+04 style = interleaved : tensor<2x8x4x16xf32>, tensor<2x8xi64>
// CHECK: glimmer.rope %{{.*}}, %{{.*}} theta = 5.000000e+05 style = half : tensor<2x8x4x16xf32>, tensor<2x8xi64>
// CHECK: glimmer.rope %{{.*}}, %{{.*}} theta = 1.000000e+04 style = interleaved inverse : tensor<2x8x4x16xf32>, tensor<2x8xi64>
// CHECK: glimmer.rope %{{.*}}, %{{.*}} theta = 1.000000e+04 style = half inverse : tensor<2x8x4x16xf32>, tensor<2x8xi32>
func.func @rope_styles_and_inverse(%q: tensor<2x8x4x16xf32>, %pos: tensor<2x8xi64>, %pos32: tensor<2x8xi32>)
    -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) {
  %0 = glimmer.rope %q, %pos theta = 10000.0 style = interleaved : tensor<2x8x4x16xf32>, tensor<2x8xi64>
  %1 = glimmer.rope %q, %pos theta = 500000.0 style = half : tensor<2x8x4x16xf32>, tensor<2x8xi64>
  %2 = glimmer.rope %0, %pos theta = 10000.0 style = interleaved inverse : tensor<2x8x4x16xf32>, tensor<2x8xi64>
  %3 = glimmer.rope %1, %pos32 theta = 10000.0 style = half inverse : tensor<2x8x4x16xf32>, tensor<2x8xi32>
  return %0, %1, %2, %3 : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
}

// -----

// Bidirectional attention without positions, documents or causal mask.
// CHECK-LABEL: func.func @attention_plain
// CHECK: %{{.*}}, %{{.*}} = glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 2.500000e-01 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
func.func @attention_plain(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>)
    -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>) {
  %o, %lse = glimmer.attention %q, %k, %v scale = 0.25
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return %o, %lse : tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
}

// -----

// Sequence-major value and output ([B, T, H, D]): value's type follows
// key's, and in the VJP value's and output's follow lse's.
// CHECK-LABEL: func.func @attention_sequence_major
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale = 2.500000e-01 {sequence_major = array<i1: false, false, true, true>} : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x8x2x16xbf16> -> tensor<1x8x4x16xbf16>, tensor<1x4x8xf32>
// CHECK: glimmer.attention_grad {{.*}} causal scale = 2.500000e-01 {sequence_major = array<i1: false, false, true, true>} : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x4x8xf32>, tensor<1x8x2x16xbf16>, tensor<1x8x4x16xbf16>
// CHECK: glimmer.attention {{.*}} {sequence_major = array<i1: true, true, true, true>} : tensor<1x8x4x16xbf16>, tensor<1x8x2x16xbf16> -> tensor<1x8x4x16xbf16>, tensor<1x4x8xf32>
func.func @attention_sequence_major(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %vs: tensor<1x8x2x16xbf16>,
                                    %qs: tensor<1x8x4x16xbf16>, %ks: tensor<1x8x2x16xbf16>) -> (tensor<1x8x2x16xbf16>, tensor<1x8x4x16xbf16>) {
  %o, %lse = glimmer.attention %q, %k, %vs causal scale = 0.25 {sequence_major = array<i1: false, false, true, true>}
      : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x8x2x16xbf16> -> tensor<1x8x4x16xbf16>, tensor<1x4x8xf32>
  %dq, %dk, %dv = glimmer.attention_grad %o, %q, %k, %vs, %o, %lse causal scale = 0.25 {sequence_major = array<i1: false, false, true, true>}
      : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x4x8xf32>, tensor<1x8x2x16xbf16>, tensor<1x8x4x16xbf16>
  %o2, %lse2 = glimmer.attention %qs, %ks, %ks scale = 0.25 {sequence_major = array<i1: true, true, true, true>}
      : tensor<1x8x4x16xbf16>, tensor<1x8x2x16xbf16> -> tensor<1x8x4x16xbf16>, tensor<1x4x8xf32>
  return %dv, %o2 : tensor<1x8x2x16xbf16>, tensor<1x8x4x16xbf16>
}

// -----

// Causal attention without positions: the indices are the positions.
// CHECK-LABEL: func.func @attention_index_causal
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale = 2.500000e-01 :
func.func @attention_index_causal(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>)
    -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>) {
  %o, %lse = glimmer.attention %q, %k, %k causal scale = 0.25
      : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return %o, %lse : tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
}

// -----

// attention with positions but no causal flag (positions carried, no mask).
// CHECK-LABEL: func.func @attention_positions_not_causal
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}, %{{.*}} : tensor<2x8xi64>, tensor<2x8xi64>) scale = 2.500000e-01 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
func.func @attention_positions_not_causal(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                                          %pos: tensor<2x8xi64>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>) {
  %o, %lse = glimmer.attention %q, %k, %v positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) scale = 0.25
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return %o, %lse : tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
}

// -----

// Causal GQA attention: 4 query heads share 2 key/value heads.
// CHECK-LABEL: func.func @attention_causal_gqa
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}, %{{.*}} : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 2.500000e-01 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
func.func @attention_causal_gqa(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>,
                                %pos: tensor<2x8xi64>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>) {
  %o, %lse = glimmer.attention %q, %k, %v positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.25
      : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return %o, %lse : tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
}

// -----

// A sliding window and bidirectional blocks (Gemma 3's sliding layer), with
// i32 block ids and Tk > Tq (gathered CP keys); its VJP carries both.
// CHECK-LABEL: func.func @attention_window_blocks
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}, %{{.*}} : tensor<2x4xi64>, tensor<2x8xi64>) blocks(%{{.*}}, %{{.*}} : tensor<2x4xi32>, tensor<2x8xi32>) causal window = 3 scale = 1.250000e-01 : tensor<2x4x4x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x4x16xf32>, tensor<2x4x4xf32>
// CHECK: glimmer.attention_grad {{.*}} blocks(%{{.*}}, %{{.*}} : tensor<2x4xi32>, tensor<2x8xi32>) causal window = 3 scale = 1.250000e-01
func.func @attention_window_blocks(%q: tensor<2x4x4x16xf32>, %k: tensor<2x4x8x16xf32>,
                                   %qpos: tensor<2x4xi64>, %kpos: tensor<2x8xi64>,
                                   %qb: tensor<2x4xi32>, %kb: tensor<2x8xi32>) -> tensor<2x4x4x16xf32> {
  %o, %lse = glimmer.attention %q, %k, %k positions(%qpos, %kpos : tensor<2x4xi64>, tensor<2x8xi64>) blocks(%qb, %kb : tensor<2x4xi32>, tensor<2x8xi32>) causal window = 3 scale = 0.125
      : tensor<2x4x4x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x4x16xf32>, tensor<2x4x4xf32>
  %dq, %dk, %dv = glimmer.attention_grad %o, %q, %k, %k, %o, %lse positions(%qpos, %kpos : tensor<2x4xi64>, tensor<2x8xi64>) blocks(%qb, %kb : tensor<2x4xi32>, tensor<2x8xi32>) causal window = 3 scale = 0.125
      : tensor<2x4x4x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x4xf32>
  return %dq : tensor<2x4x4x16xf32>
}

// -----

// Causal attention with i32 document ids and Tk > Tq (gathered CP keys).
// CHECK-LABEL: func.func @attention_documents_causal
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}, %{{.*}} : tensor<2x4xi64>, tensor<2x8xi64>) documents(%{{.*}}, %{{.*}} : tensor<2x4xi32>, tensor<2x8xi32>) causal scale = 1.250000e-01 : tensor<2x4x4x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x4x16xf32>, tensor<2x4x4xf32>
func.func @attention_documents_causal(%q: tensor<2x4x4x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                                      %qpos: tensor<2x4xi64>, %kpos: tensor<2x8xi64>,
                                      %qdoc: tensor<2x4xi32>, %kdoc: tensor<2x8xi32>)
    -> (tensor<2x4x4x16xf32>, tensor<2x4x4xf32>) {
  %o, %lse = glimmer.attention %q, %k, %v positions(%qpos, %kpos : tensor<2x4xi64>, tensor<2x8xi64>)
      documents(%qdoc, %kdoc : tensor<2x4xi32>, tensor<2x8xi32>) causal scale = 0.125
      : tensor<2x4x4x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x4x16xf32>, tensor<2x4x4xf32>
  return %o, %lse : tensor<2x4x4x16xf32>, tensor<2x4x4xf32>
}

// -----

// Documents without positions (document mask only, not causal).
// CHECK-LABEL: func.func @attention_documents_only
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} documents(%{{.*}}, %{{.*}} : tensor<1x8xi64>, tensor<1x8xi64>) scale = 1.000000e+00 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
func.func @attention_documents_only(%q: tensor<1x2x8x4xf32>, %doc: tensor<1x8xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8xf32>) {
  %o, %lse = glimmer.attention %q, %q, %q documents(%doc, %doc : tensor<1x8xi64>, tensor<1x8xi64>) scale = 1.0
      : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o, %lse : tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
}

// -----

// bf16 attention keeps its log-sum-exp in f32; f64 attention in f64.
// CHECK-LABEL: func.func @attention_lse_element_type
// CHECK: glimmer.attention {{.*}} : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>, tensor<1x2x8xf32>
// CHECK: glimmer.attention {{.*}} : tensor<1x2x8x4xf64>, tensor<1x2x8x4xf64> -> tensor<1x2x8x4xf64>, tensor<1x2x8xf64>
func.func @attention_lse_element_type(%q: tensor<1x2x8x4xbf16>, %d: tensor<1x2x8x4xf64>)
    -> (tensor<1x2x8xf32>, tensor<1x2x8xf64>) {
  %o, %lse = glimmer.attention %q, %q, %q scale = 0.5
      : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>, tensor<1x2x8xf32>
  %o2, %lse2 = glimmer.attention %d, %d, %d scale = 0.5
      : tensor<1x2x8x4xf64>, tensor<1x2x8x4xf64> -> tensor<1x2x8x4xf64>, tensor<1x2x8xf64>
  return %lse, %lse2 : tensor<1x2x8xf32>, tensor<1x2x8xf64>
}

// -----

// attention_grad with causal GQA masking (same masking operands as forward).
// CHECK-LABEL: func.func @attention_grad_causal_gqa
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = glimmer.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}, %{{.*}} : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 2.500000e-01 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8xf32>
func.func @attention_grad_causal_gqa(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>,
                                     %v: tensor<2x2x8x16xf32>, %o: tensor<2x4x8x16xf32>, %lse: tensor<2x4x8xf32>,
                                     %pos: tensor<2x8xi64>)
    -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  %dq, %dk, %dv = glimmer.attention_grad %do, %q, %k, %v, %o, %lse
      positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.25
      : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8xf32>
  return %dq, %dk, %dv : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}

// -----

// attention_grad without masking operands, and with documents.
// CHECK-LABEL: func.func @attention_grad_plain_and_documents
// CHECK: glimmer.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale = 5.000000e-01 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
// CHECK: glimmer.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} documents(%{{.*}}, %{{.*}} : tensor<1x8xi64>, tensor<1x8xi64>) scale = 5.000000e-01 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
func.func @attention_grad_plain_and_documents(%x: tensor<1x2x8x4xf32>, %lse: tensor<1x2x8xf32>, %doc: tensor<1x8xi64>)
    -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %dq, %dk, %dv = glimmer.attention_grad %x, %x, %x, %x, %x, %lse scale = 0.5
      : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  %dq2, %dk2, %dv2 = glimmer.attention_grad %x, %x, %x, %x, %x, %lse documents(%doc, %doc : tensor<1x8xi64>, tensor<1x8xi64>) scale = 0.5
      : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %dq, %dq2 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// softmax and its VJP along the last dimension.
// CHECK-LABEL: func.func @softmax
// CHECK: glimmer.softmax %{{.*}} dim = 1 : tensor<2x8xf32>
// CHECK: glimmer.softmax_grad %{{.*}}, %{{.*}} dim = 1 : tensor<2x8xf32>
func.func @softmax(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = glimmer.softmax %x dim = 1 : tensor<2x8xf32>
  %dx = glimmer.softmax_grad %dy, %y dim = 1 : tensor<2x8xf32>
  return %dx : tensor<2x8xf32>
}

// -----

// cross_entropy (sum and count) and cross_entropy_grad (VJP of the sum).
// CHECK-LABEL: func.func @cross_entropy
// CHECK: %{{.*}}, %{{.*}} = glimmer.cross_entropy %{{.*}}, %{{.*}} ignore_index = -100 : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>, tensor<i64>
// CHECK: glimmer.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index = -100 : tensor<f32>, tensor<2x8x32xf32>, tensor<2x8xi64>
func.func @cross_entropy(%logits: tensor<2x8x32xf32>, %labels: tensor<2x8xi64>, %dsum: tensor<f32>)
    -> (tensor<f32>, tensor<i64>, tensor<2x8x32xf32>) {
  %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100
      : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>, tensor<i64>
  %dl = glimmer.cross_entropy_grad %dsum, %logits, %labels ignore_index = -100
      : tensor<f32>, tensor<2x8x32xf32>, tensor<2x8xi64>
  return %sum, %count, %dl : tensor<f32>, tensor<i64>, tensor<2x8x32xf32>
}

// -----

// cross_entropy on rank-1 logits, rank-0 labels, non-negative ignore_index.
// CHECK-LABEL: func.func @cross_entropy_single_position
// CHECK: glimmer.cross_entropy %{{.*}}, %{{.*}} ignore_index = 0 : tensor<32xf32>, tensor<i32> -> tensor<f32>, tensor<i64>
func.func @cross_entropy_single_position(%logits: tensor<32xf32>, %label: tensor<i32>) -> (tensor<f32>, tensor<i64>) {
  %sum, %count = glimmer.cross_entropy %logits, %label ignore_index = 0
      : tensor<32xf32>, tensor<i32> -> tensor<f32>, tensor<i64>
  return %sum, %count : tensor<f32>, tensor<i64>
}

// -----

// conv2d as a ViT patch embedding (stride = kernel) with a bias.
// CHECK-LABEL: func.func @conv2d_with_bias
// CHECK: glimmer.conv2d %{{.*}}, %{{.*}}, %{{.*}} stride = [4, 4] padding = [0, 0] : tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>, tensor<32xf32> -> tensor<2x32x4x4xf32>
func.func @conv2d_with_bias(%img: tensor<2x3x16x16xf32>, %w: tensor<32x3x4x4xf32>, %b: tensor<32xf32>) -> tensor<2x32x4x4xf32> {
  %0 = glimmer.conv2d %img, %w, %b stride = [4, 4] padding = [0, 0]
      : tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>, tensor<32xf32> -> tensor<2x32x4x4xf32>
  return %0 : tensor<2x32x4x4xf32>
}

// -----

// conv2d without a bias, with padding and unequal strides (rounding down).
// CHECK-LABEL: func.func @conv2d_without_bias
// CHECK: glimmer.conv2d %{{.*}}, %{{.*}} stride = [1, 2] padding = [1, 1] : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x4xf32>
func.func @conv2d_without_bias(%img: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x4xf32> {
  %0 = glimmer.conv2d %img, %w stride = [1, 2] padding = [1, 1]
      : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x4xf32>
  return %0 : tensor<1x4x8x4xf32>
}

// -----

// conv2d_grad returns the input and weight gradients.
// CHECK-LABEL: func.func @conv2d_grad
// CHECK: %{{.*}}, %{{.*}} = glimmer.conv2d_grad %{{.*}}, %{{.*}}, %{{.*}} stride = [4, 4] padding = [0, 0] : tensor<2x32x4x4xf32>, tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>
func.func @conv2d_grad(%dy: tensor<2x32x4x4xf32>, %img: tensor<2x3x16x16xf32>, %w: tensor<32x3x4x4xf32>)
    -> (tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>) {
  %dx, %dw = glimmer.conv2d_grad %dy, %img, %w stride = [4, 4] padding = [0, 0]
      : tensor<2x32x4x4xf32>, tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>
  return %dx, %dw : tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>
}

// -----

// adamw_update; f64 hyper-parameters print exactly (0.999 needs 17 digits).
// CHECK-LABEL: func.func @adamw_update
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = glimmer.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 0.99899999999999999 eps = 1.000000e-08 weight_decay = 1.000000e-02 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
func.func @adamw_update(%p: tensor<16xf32>, %g: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>, %step: tensor<i64>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %p1, %m1, %v1 = glimmer.adamw_update %p, %g, %m, %v, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
  return %p1, %m1, %v1 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// The optimizers with gradient clipping's coefficient inside the update.
// CHECK-LABEL: func.func @optimizers_grad_scale
// CHECK: glimmer.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} grad_scale(%{{.*}} : tensor<f32>) lr = 1.000000e-03
// CHECK: glimmer.sgd_update %{{.*}}, %{{.*}} grad_scale(%{{.*}} : tensor<f32>) lr = 1.000000e-01
func.func @optimizers_grad_scale(%p: tensor<16xf32>, %step: tensor<i64>, %s: tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step grad_scale(%s : tensor<f32>) lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
  %p2 = glimmer.sgd_update %p, %p grad_scale(%s : tensor<f32>) lr = 0.1 weight_decay = 0.0 : tensor<16xf32>, tensor<16xf32>
  return %p1, %p2 : tensor<16xf32>, tensor<16xf32>
}

// -----

// adamw_update_list: several updates with one step, grad_scale and set of
// hyperparameters (a bf16 gradient among them); exp_avgs, exp_avg_sqs and
// the results take the params' types.
// CHECK-LABEL: func.func @adamw_update_list
// CHECK: %{{.*}}:2, %{{.*}}:2, %{{.*}}:2 = glimmer.adamw_update_list(%{{.*}}, %{{.*}}), (%{{.*}}, %{{.*}}), (%{{.*}}, %{{.*}}), (%{{.*}}, %{{.*}}), %{{.*}} grad_scale(%{{.*}} : tensor<f32>) lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 0.99899999999999999 eps = 1.000000e-08 weight_decay = 1.000000e-02 : (tensor<16xf32>, tensor<2x3xf32>), (tensor<16xbf16>, tensor<2x3xf32>), tensor<i64>
func.func @adamw_update_list(%p: tensor<16xf32>, %g: tensor<16xbf16>, %q: tensor<2x3xf32>, %step: tensor<i64>, %s: tensor<f32>)
    -> (tensor<16xf32>, tensor<2x3xf32>, tensor<16xf32>, tensor<2x3xf32>) {
  %p1:2, %m1:2, %v1:2 = glimmer.adamw_update_list(%p, %q), (%g, %q), (%p, %q), (%p, %q), %step grad_scale(%s : tensor<f32>)
      lr = 1.0e-03 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01
      : (tensor<16xf32>, tensor<2x3xf32>), (tensor<16xbf16>, tensor<2x3xf32>), tensor<i64>
  return %p1#0, %p1#1, %v1#0, %m1#1 : tensor<16xf32>, tensor<2x3xf32>, tensor<16xf32>, tensor<2x3xf32>
}

// -----

// convert_list: several conversions into one element type.
// CHECK-LABEL: func.func @convert_list
// CHECK: %{{.*}}:2 = glimmer.convert_list %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf64> to tensor<4x8xbf16>, tensor<8xbf16>
func.func @convert_list(%a: tensor<4x8xf32>, %b: tensor<8xf64>) -> (tensor<4x8xbf16>, tensor<8xbf16>) {
  %c:2 = glimmer.convert_list %a, %b : tensor<4x8xf32>, tensor<8xf64> to tensor<4x8xbf16>, tensor<8xbf16>
  return %c#0, %c#1 : tensor<4x8xbf16>, tensor<8xbf16>
}

// -----

// The optimizers with a bf16 gradient of an f32 parameter (widened inside
// the update).
// CHECK-LABEL: func.func @optimizers_bf16_grad
// CHECK: glimmer.adamw_update {{.*}} : tensor<16xf32>, tensor<16xbf16>, tensor<i64>
// CHECK: glimmer.sgd_update {{.*}} : tensor<16xf32>, tensor<16xbf16>
func.func @optimizers_bf16_grad(%p: tensor<16xf32>, %g: tensor<16xbf16>, %step: tensor<i64>) -> (tensor<16xf32>, tensor<16xf32>) {
  %p1, %m1, %v1 = glimmer.adamw_update %p, %g, %p, %p, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xbf16>, tensor<i64>
  %p2 = glimmer.sgd_update %p, %g lr = 0.1 weight_decay = 0.0 : tensor<16xf32>, tensor<16xbf16>
  return %p1, %p2 : tensor<16xf32>, tensor<16xf32>
}

// -----

// adamw_update edge values: beta1 = 0, lr = 0 and no weight decay.
// CHECK-LABEL: func.func @adamw_update_zero_edges
// CHECK: glimmer.adamw_update {{.*}} lr = 0.000000e+00 beta1 = 0.000000e+00 beta2 = 0.000000e+00 eps = 1.000000e+00 weight_decay = 0.000000e+00 : tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<i64>
func.func @adamw_update_zero_edges(%p: tensor<4x4xbf16>, %step: tensor<i64>) -> tensor<4x4xbf16> {
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step lr = 0.0
      beta1 = 0.0 beta2 = 0.0 eps = 1.0 weight_decay = 0.0 : tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<i64>
  return %p1 : tensor<4x4xbf16>
}

// -----

// sgd_update: plain step without weight decay, and with weight decay.
// CHECK-LABEL: func.func @sgd_update
// CHECK: glimmer.sgd_update %{{.*}}, %{{.*}} lr = 1.000000e-01 weight_decay = 0.000000e+00 : tensor<16xf32>, tensor<16xf32>
// CHECK: glimmer.sgd_update %{{.*}}, %{{.*}} lr = 1.000000e-01 weight_decay = 5.000000e-01 : tensor<16xf32>, tensor<16xf32>
func.func @sgd_update(%p: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
  %p1 = glimmer.sgd_update %p, %g lr = 0.1 weight_decay = 0.0 : tensor<16xf32>, tensor<16xf32>
  %p2 = glimmer.sgd_update %p1, %g lr = 0.1 weight_decay = 0.5 : tensor<16xf32>, tensor<16xf32>
  return %p2 : tensor<16xf32>
}
