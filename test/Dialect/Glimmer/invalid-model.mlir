// RUN: glimmer-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the glimmer dialect's model, backward and optimizer ops.

//===----------------------------------------------------------------------===//
// embedding, embedding_grad
//===----------------------------------------------------------------------===//

// The embedding table must be [V, D].
func.func @embedding_table_rank(%table: tensor<32xf32>, %ids: tensor<2x8xi64>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'glimmer.embedding' op expects a [V, D] table of rank 2, got 'tensor<32xf32>'}}
  %0 = glimmer.embedding %table, %ids : tensor<32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

// The looked-up rows keep the table's element type.
func.func @embedding_element_type(%table: tensor<32x16xf32>, %ids: tensor<2x8xi64>) -> tensor<2x8x16xbf16> {
  // expected-error @+1 {{'glimmer.embedding' op expects table and result to have the same element type, got 'f32' and 'bf16'}}
  %0 = glimmer.embedding %table, %ids : tensor<32x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xbf16>
  return %0 : tensor<2x8x16xbf16>
}

// -----

// The result is ids.shape + [D].
func.func @embedding_result_shape(%table: tensor<32x16xf32>, %ids: tensor<2x8xi64>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'glimmer.embedding' op expects result of shape [2, 8, 16], got [2, 8, 32]}}
  %0 = glimmer.embedding %table, %ids : tensor<32x16xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

// Embedding ids must be integers (ODS constraint).
func.func @embedding_float_ids(%table: tensor<32x16xf32>, %ids: tensor<2x8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'glimmer.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x8xf32>'}}
  %0 = glimmer.embedding %table, %ids : tensor<32x16xf32>, tensor<2x8xf32> -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

// The table gradient must be [V, D].
func.func @embedding_grad_result_rank(%dy: tensor<2x8x16xf32>, %ids: tensor<2x8xi64>) -> tensor<512xf32> {
  // expected-error @+1 {{'glimmer.embedding_grad' op expects a [V, D] result of rank 2, got 'tensor<512xf32>'}}
  %0 = glimmer.embedding_grad %dy, %ids : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<512xf32>
  return %0 : tensor<512xf32>
}

// -----

// The table gradient keeps the gradient's element type.
func.func @embedding_grad_element_type(%dy: tensor<2x8x16xf32>, %ids: tensor<2x8xi64>) -> tensor<32x16xf16> {
  // expected-error @+1 {{'glimmer.embedding_grad' op expects grad and result to have the same element type, got 'f32' and 'f16'}}
  %0 = glimmer.embedding_grad %dy, %ids : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<32x16xf16>
  return %0 : tensor<32x16xf16>
}

// -----

// The row gradients must be ids.shape + [D].
func.func @embedding_grad_grad_shape(%dy: tensor<2x8x8xf32>, %ids: tensor<2x8xi64>) -> tensor<32x16xf32> {
  // expected-error @+1 {{'glimmer.embedding_grad' op expects grad of shape [2, 8, 16], got [2, 8, 8]}}
  %0 = glimmer.embedding_grad %dy, %ids : tensor<2x8x8xf32>, tensor<2x8xi64> -> tensor<32x16xf32>
  return %0 : tensor<32x16xf32>
}

//===----------------------------------------------------------------------===//
// linear, matmul
//===----------------------------------------------------------------------===//

// -----

// linear on a scalar input.
func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<4x1xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'glimmer.linear' op expects an input of rank >= 1}}
  %0 = glimmer.linear %x, %w : tensor<f32>, tensor<4x1xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The weight must be [N, K].
func.func @linear_weight_rank(%x: tensor<2x16xf32>, %w: tensor<2x32x16xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'glimmer.linear' op expects an [N, K] weight of rank 2, got 'tensor<2x32x16xf32>'}}
  %0 = glimmer.linear %x, %w : tensor<2x16xf32>, tensor<2x32x16xf32> -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

// The weight is [N, K] (PyTorch layout), not [K, N].
func.func @linear_contraction_mismatch(%x: tensor<2x8x16xf32>, %w: tensor<16x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'glimmer.linear' op contraction mismatch: input has K = 16 but weight has K = 32}}
  %0 = glimmer.linear %x, %w : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

// Input and weight share an element type.
func.func @linear_element_type(%x: tensor<2x16xbf16>, %w: tensor<32x16xf32>) -> tensor<2x32xbf16> {
  // expected-error @+1 {{'glimmer.linear' op expects input and weight to have the same element type, got 'bf16' and 'f32'}}
  %0 = glimmer.linear %x, %w : tensor<2x16xbf16>, tensor<32x16xf32> -> tensor<2x32xbf16>
  return %0 : tensor<2x32xbf16>
}

// -----

// The bias is [N].
func.func @linear_bias_shape(%x: tensor<2x16xf32>, %w: tensor<32x16xf32>, %b: tensor<16xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'glimmer.linear' op expects bias of type 'tensor<32xf32>', got 'tensor<16xf32>'}}
  %0 = glimmer.linear %x, %w, %b : tensor<2x16xf32>, tensor<32x16xf32>, tensor<16xf32> -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

// The result is [..., N].
func.func @linear_result_type(%x: tensor<2x16xf32>, %w: tensor<32x16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.linear' op expects result of type 'tensor<2x32xf32>', got 'tensor<2x16xf32>'}}
  %0 = glimmer.linear %x, %w : tensor<2x16xf32>, tensor<32x16xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

// matmul needs operands of equal rank.
func.func @matmul_rank_mismatch(%a: tensor<4x8x16xf32>, %b: tensor<16x32xf32>) -> tensor<4x8x32xf32> {
  // expected-error @+1 {{'glimmer.matmul' op expects operands of equal rank >= 2, got 'tensor<4x8x16xf32>' and 'tensor<16x32xf32>'}}
  %0 = glimmer.matmul %a, %b : tensor<4x8x16xf32>, tensor<16x32xf32> -> tensor<4x8x32xf32>
  return %0 : tensor<4x8x32xf32>
}

// -----

// matmul of vectors is not a matrix product.
func.func @matmul_rank_one(%a: tensor<16xf32>) -> tensor<f32> {
  // expected-error @+1 {{'glimmer.matmul' op expects operands of equal rank >= 2}}
  %0 = glimmer.matmul %a, %a : tensor<16xf32>, tensor<16xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Batch dimensions must match exactly (no broadcasting).
func.func @matmul_batch_mismatch(%a: tensor<4x8x16xf32>, %b: tensor<2x16x32xf32>) -> tensor<4x8x32xf32> {
  // expected-error @+1 {{'glimmer.matmul' op batch dimensions differ: [4] vs [2]}}
  %0 = glimmer.matmul %a, %b : tensor<4x8x16xf32>, tensor<2x16x32xf32> -> tensor<4x8x32xf32>
  return %0 : tensor<4x8x32xf32>
}

// -----

// Without transpose_rhs, rhs is [K, N]; a [N, K] rhs does not contract.
func.func @matmul_missing_transpose(%a: tensor<8x16xf32>, %b: tensor<32x16xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'glimmer.matmul' op contraction mismatch: lhs has K = 16 but rhs has K = 32}}
  %0 = glimmer.matmul %a, %b : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// matmul operands share an element type.
func.func @matmul_element_type(%a: tensor<8x16xf32>, %b: tensor<16x32xf16>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'glimmer.matmul' op expects lhs and rhs to have the same element type, got 'f32' and 'f16'}}
  %0 = glimmer.matmul %a, %b : tensor<8x16xf32>, tensor<16x32xf16> -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// transpose_lhs changes M: [K, M] x [K, N] -> [M, N].
func.func @matmul_result_type(%a: tensor<16x8xf32>, %b: tensor<16x32xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{'glimmer.matmul' op expects result of type 'tensor<8x32xf32>', got 'tensor<16x32xf32>'}}
  %0 = glimmer.matmul %a, %b transpose_lhs : tensor<16x8xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

//===----------------------------------------------------------------------===//
// rms_norm, layer_norm and their VJPs
//===----------------------------------------------------------------------===//

// -----

// Norms need a last dimension to normalise over.
func.func @rms_norm_scalar_input(%x: tensor<f32>, %w: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{'glimmer.rms_norm' op expects an input of rank >= 1}}
  %0 = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<f32>, tensor<1xf32>
  return %0 : tensor<f32>
}

// -----

// The norm weight is [D].
func.func @rms_norm_weight_shape(%x: tensor<2x8x16xf32>, %w: tensor<8xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'glimmer.rms_norm' op expects weight and bias of type 'tensor<16xf32>', got 'tensor<8xf32>'}}
  %0 = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<8xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

// eps must be positive.
func.func @rms_norm_zero_eps(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.rms_norm' op expects eps > 0, got 0}}
  %0 = glimmer.rms_norm %x, %w eps = 0.0 : tensor<2x16xf32>, tensor<16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

// add_rms_norm's lhs may be narrower than rhs (bf16 into f32), not wider.
func.func @add_rms_norm_wider_lhs(%a: tensor<2x16xf32>, %b: tensor<2x16xbf16>, %w: tensor<16xbf16>) -> tensor<2x16xbf16> {
  // expected-error @+1 {{'glimmer.add_rms_norm' op expects lhs of rhs's shape, of its type or of a narrower float type, got 'tensor<2x16xf32>' and 'tensor<2x16xbf16>'}}
  %s, %y = glimmer.add_rms_norm %a, %b, %w eps = 1.0e-05 : tensor<2x16xf32>, tensor<2x16xbf16>, tensor<16xbf16> -> tensor<2x16xbf16>
  return %y : tensor<2x16xbf16>
}

// -----

// add_rms_norm's addends have one shape (no broadcasting).
func.func @add_rms_norm_shapes(%a: tensor<1x16xf32>, %b: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.add_rms_norm' op expects lhs of rhs's shape, of its type or of a narrower float type, got 'tensor<1x16xf32>' and 'tensor<2x16xf32>'}}
  %s, %y = glimmer.add_rms_norm %a, %b, %w eps = 1.0e-05 : tensor<1x16xf32>, tensor<2x16xf32>, tensor<16xf32> -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// add_rms_norm's weight is [D] of the sum's type, and eps positive.
func.func @add_rms_norm_weight(%a: tensor<2x16xf32>, %w: tensor<16xbf16>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.add_rms_norm' op expects weight and bias of type 'tensor<16xf32>', got 'tensor<16xbf16>'}}
  %s, %y = glimmer.add_rms_norm %a, %a, %w eps = 1.0e-05 : tensor<2x16xf32>, tensor<2x16xf32>, tensor<16xbf16> -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

func.func @add_rms_norm_eps(%a: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.add_rms_norm' op expects eps > 0, got 0}}
  %s, %y = glimmer.add_rms_norm %a, %a, %w eps = 0.0 : tensor<2x16xf32>, tensor<2x16xf32>, tensor<16xf32> -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// The VJP's weight must also be [D].
func.func @rms_norm_grad_weight_dtype(%x: tensor<2x16xf32>, %w: tensor<16xbf16>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.rms_norm_grad' op expects weight and bias of type 'tensor<16xf32>', got 'tensor<16xbf16>'}}
  %dx, %dw = glimmer.rms_norm_grad %x, %x, %w eps = 1.0e-05 : tensor<2x16xf32>, tensor<16xbf16>
  return %dx : tensor<2x16xf32>
}

// -----

// The VJP's gradient has the input's type, or bf16 for an f32 input: f16
// is neither.
func.func @rms_norm_grad_grad_type(%dy: tensor<2x16xf16>, %x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.rms_norm_grad' op expects grad of type 'tensor<2x16xf32>' (or bf16 of its shape for an f32 input), got 'tensor<2x16xf16>'}}
  %dx, %dw = glimmer.rms_norm_grad %dy, %x, %w eps = 1.0e-05 : tensor<2x16xf32>, tensor<16xf32> grad tensor<2x16xf16>
  return %dx : tensor<2x16xf32>
}

// -----

// A norm's result may be bf16 only for an f32 input (mixed precision), not
// f32 for a bf16 input.
func.func @rms_norm_widening_result(%x: tensor<2x16xbf16>, %w: tensor<16xbf16>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.rms_norm' op expects result of type 'tensor<2x16xbf16>' (or bf16 of its shape for an f32 input), got 'tensor<2x16xf32>'}}
  %0 = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<2x16xbf16>, tensor<16xbf16> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

// A bf16 result keeps the input's shape.
func.func @layer_norm_result_shape(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{'glimmer.layer_norm' op expects result of type 'tensor<2x16xf32>' (or bf16 of its shape for an f32 input), got 'tensor<4x8xbf16>'}}
  %0 = glimmer.layer_norm %x, %w, %w eps = 1.0e-05 : tensor<2x16xf32>, tensor<16xf32> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

// layer_norm's bias is [D] too.
func.func @layer_norm_bias_shape(%x: tensor<2x16xf32>, %w: tensor<2xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.layer_norm' op expects weight and bias of type 'tensor<16xf32>', got 'tensor<2xf32>'}}
  %0 = glimmer.layer_norm %x, %w, %w eps = 1.0e-05 : tensor<2x16xf32>, tensor<2xf32>
  return %0 : tensor<2x16xf32>
}

// -----

// A negative eps.
func.func @layer_norm_negative_eps(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.layer_norm' op expects eps > 0, got -1.000000e-05}}
  %0 = glimmer.layer_norm %x, %w, %w eps = -1.0e-05 : tensor<2x16xf32>, tensor<16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

// layer_norm_grad with a zero eps.
func.func @layer_norm_grad_zero_eps(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'glimmer.layer_norm_grad' op expects eps > 0, got 0}}
  %dx, %dw, %db = glimmer.layer_norm_grad %x, %x, %w eps = 0.0 : tensor<2x16xf32>, tensor<16xf32>
  return %dx : tensor<2x16xf32>
}

//===----------------------------------------------------------------------===//
// rope
//===----------------------------------------------------------------------===//

// -----

// rope needs a [B, T, H, D] input.
func.func @rope_input_rank(%x: tensor<2x8x16xf32>, %pos: tensor<2x8xi64>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'glimmer.rope' op expects a [B, T, H, D] input of rank 4, got 'tensor<2x8x16xf32>'}}
  %0 = glimmer.rope %x, %pos theta = 10000.0 style = half : tensor<2x8x16xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x16xf32>
}

// -----

// Features are rotated in pairs: the head dimension must be even.
func.func @rope_odd_head_dim(%x: tensor<2x8x4x15xf32>, %pos: tensor<2x8xi64>) -> tensor<2x8x4x15xf32> {
  // expected-error @+1 {{'glimmer.rope' op expects an even head dimension, got 15}}
  %0 = glimmer.rope %x, %pos theta = 10000.0 style = interleaved : tensor<2x8x4x15xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x4x15xf32>
}

// -----

// theta must be positive.
func.func @rope_zero_theta(%x: tensor<2x8x4x16xf32>, %pos: tensor<2x8xi64>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{'glimmer.rope' op expects theta > 0}}
  %0 = glimmer.rope %x, %pos theta = 0.0 style = interleaved : tensor<2x8x4x16xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x4x16xf32>
}

// -----

// Positions are [B, T].
func.func @rope_positions_shape(%x: tensor<2x8x4x16xf32>, %pos: tensor<8xi64>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{'glimmer.rope' op expects positions of shape [2, 8], got [8]}}
  %0 = glimmer.rope %x, %pos theta = 10000.0 style = half : tensor<2x8x4x16xf32>, tensor<8xi64>
  return %0 : tensor<2x8x4x16xf32>
}

// -----

// An unknown rope style keyword.
func.func @rope_unknown_style(%x: tensor<2x8x4x16xf32>, %pos: tensor<2x8xi64>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'style' [interleaved, half]}}
  %0 = glimmer.rope %x, %pos theta = 10000.0 style = neox : tensor<2x8x4x16xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x4x16xf32>
}

//===----------------------------------------------------------------------===//
// attention, attention_grad
//===----------------------------------------------------------------------===//

// -----

// The query must be [B, H, T, D].
func.func @attention_query_rank(%q: tensor<2x8x16xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects query [B, H, T, D] of rank 4, got 'tensor<2x8x16xf32>'}}
  %o, %lse = glimmer.attention %q, %k, %k scale = 0.25 : tensor<2x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x8x16xf32>, tensor<2x8xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// The key must be [B, H, T, D] as well.
func.func @attention_key_rank(%q: tensor<2x4x8x16xf32>, %k: tensor<2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects key [B, H, T, D] of rank 4, got 'tensor<2x8x16xf32>'}}
  %o, %lse = glimmer.attention %q, %k, %k scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Key and value share one shape (in their layouts).
func.func @attention_key_value_mismatch(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x8xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects value of type 'tensor<1x2x8x4xf32>', got 'tensor<1x2x8x8xf32>'}}
  %o, %lse = "glimmer.attention"(%q, %k, %v) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64}> : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8xf32>)
  return %o : tensor<1x2x8x4xf32>
}

// -----

// A sequence-major value is key's shape with heads and sequence exchanged:
// here it is head-major.
func.func @attention_sequence_major_value_shape(%q: tensor<1x2x8x4xbf16>, %v: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  // expected-error @+1 {{'glimmer.attention' op expects value of type 'tensor<1x8x2x4xbf16>', got 'tensor<1x2x8x4xbf16>'}}
  %o, %lse = glimmer.attention %q, %q, %v scale = 1.0 {sequence_major = array<i1: false, false, true, false>} : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xbf16>
}

// -----

// The flags name query, key, value and output: four of them.
func.func @attention_sequence_major_count(%q: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  // expected-error @+1 {{'glimmer.attention' op expects sequence_major to flag 4 tensors (query, key, value, output), got 3}}
  %o, %lse = glimmer.attention %q, %q, %q scale = 1.0 {sequence_major = array<i1: false, false, true>} : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xbf16>
}

// -----

// A sequence-major output is [B, Tq, Hq, D]; lse stays [B, Hq, Tq].
func.func @attention_sequence_major_output(%q: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  // expected-error @+1 {{'glimmer.attention' op expects output of type 'tensor<1x8x2x4xbf16>', got 'tensor<1x2x8x4xbf16>'}}
  %o, %lse = glimmer.attention %q, %q, %q scale = 1.0 {sequence_major = array<i1: false, false, false, true>} : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xbf16>
}

// -----

// The output gradient is laid out as the output (here both head-major
// while the flags say sequence-major).
func.func @attention_grad_sequence_major_grad(%q: tensor<1x2x8x4xbf16>, %lse: tensor<1x2x8xf32>) -> tensor<1x2x8x4xbf16> {
  // expected-error @+1 {{'glimmer.attention_grad' op expects grad of type 'tensor<1x8x2x4xbf16>', got 'tensor<1x2x8x4xbf16>'}}
  %dq, %dk, %dv = "glimmer.attention_grad"(%q, %q, %q, %q, %q, %lse) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64, sequence_major = array<i1: false, false, false, true>}> : (tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8xf32>) -> (tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>)
  return %dq : tensor<1x2x8x4xbf16>
}

// -----

// Query and key share an element type.
func.func @attention_element_type(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects query and key to have the same element type, got 'f32' and 'bf16'}}
  %o, %lse = glimmer.attention %q, %k, %k scale = 1.0 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Key batch and head size must match the query's.
func.func @attention_head_size_mismatch(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x8xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op key 'tensor<1x2x8x8xf32>' does not match query batch and head size 'tensor<1x2x8x4xf32>'}}
  %o, %lse = glimmer.attention %q, %k, %k scale = 1.0 : tensor<1x2x8x4xf32>, tensor<1x2x8x8xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// GQA: query heads must be a multiple of key/value heads.
func.func @attention_gqa_heads(%q: tensor<1x4x8x4xf32>, %k: tensor<1x3x8x4xf32>) -> tensor<1x4x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op query heads (4) must be a multiple of key/value heads (3)}}
  %o, %lse = glimmer.attention %q, %k, %k scale = 1.0 : tensor<1x4x8x4xf32>, tensor<1x3x8x4xf32> -> tensor<1x4x8x4xf32>, tensor<1x4x8xf32>
  return %o : tensor<1x4x8x4xf32>
}

// -----

// Zero key/value heads.
func.func @attention_zero_kv_heads(%q: tensor<1x4x8x4xf32>, %k: tensor<1x0x8x4xf32>) -> tensor<1x4x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op query heads (4) must be a multiple of key/value heads (0)}}
  %o, %lse = glimmer.attention %q, %k, %k scale = 1.0 : tensor<1x4x8x4xf32>, tensor<1x0x8x4xf32> -> tensor<1x4x8x4xf32>, tensor<1x4x8xf32>
  return %o : tensor<1x4x8x4xf32>
}

// -----

// scale must be positive.
func.func @attention_zero_scale(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects scale > 0, got 0}}
  %o, %lse = glimmer.attention %q, %q, %q scale = 0.0 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Query positions without key positions (generic form only).
func.func @attention_unpaired_positions(%q: tensor<1x2x8x4xf32>, %pos: tensor<1x8xi64>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects query and key positions together or neither}}
  %o, %lse = "glimmer.attention"(%q, %q, %q, %pos) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64}> : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x8xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8xf32>)
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Key documents without query documents (generic form only).
func.func @attention_grad_unpaired_documents(%x: tensor<1x2x8x4xf32>, %lse: tensor<1x2x8xf32>, %doc: tensor<1x8xi64>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention_grad' op expects query and key documents together or neither}}
  %dq, %dk, %dv = "glimmer.attention_grad"(%x, %x, %x, %x, %x, %lse, %doc) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0>, scale = 1.0 : f64}> : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>, tensor<1x8xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
  return %dq : tensor<1x2x8x4xf32>
}

// -----

// Key blocks without query blocks (generic form only).
func.func @attention_unpaired_blocks(%q: tensor<1x2x8x4xf32>, %blk: tensor<1x8xi64>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects query and key blocks together or neither}}
  %o, %lse = "glimmer.attention"(%q, %q, %q, %blk) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1>, scale = 1.0 : f64}> : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x8xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8xf32>)
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Blocks widen what causality hides: without causal they mean nothing.
func.func @attention_blocks_not_causal(%q: tensor<1x2x8x4xf32>, %blk: tensor<1x8xi64>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects blocks and a window only with causal attention}}
  %o, %lse = glimmer.attention %q, %q, %q blocks(%blk, %blk : tensor<1x8xi64>, tensor<1x8xi64>) scale = 0.5
      : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// A window of 0 keys.
func.func @attention_grad_empty_window(%x: tensor<1x2x8x4xf32>, %lse: tensor<1x2x8xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention_grad' op expects window > 0, got 0}}
  %dq, %dk, %dv = glimmer.attention_grad %x, %x, %x, %x, %x, %lse causal window = 0 scale = 0.5
      : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %dq : tensor<1x2x8x4xf32>
}

// -----

// Key blocks are [B, Tk].
func.func @attention_key_blocks_shape(%q: tensor<1x2x8x4xf32>, %qb: tensor<1x8xi64>, %kb: tensor<1x4xi64>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects key blocks of shape [1, 8], got [1, 4]}}
  %o, %lse = glimmer.attention %q, %q, %q blocks(%qb, %kb : tensor<1x8xi64>, tensor<1x4xi64>) causal scale = 0.5
      : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Query positions are [B, Tq].
func.func @attention_query_positions_shape(%q: tensor<1x2x8x4xf32>, %qpos: tensor<1x4xi64>, %kpos: tensor<1x8xi64>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects query positions of shape [1, 8], got [1, 4]}}
  %o, %lse = glimmer.attention %q, %q, %q positions(%qpos, %kpos : tensor<1x4xi64>, tensor<1x8xi64>) causal scale = 0.5
      : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Key positions are [B, Tk].
func.func @attention_key_positions_shape(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x8x4xf32>, %pos: tensor<1x4xi64>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects key positions of shape [1, 8], got [1, 4]}}
  %o, %lse = glimmer.attention %q, %k, %k positions(%pos, %pos : tensor<1x4xi64>, tensor<1x4xi64>) causal scale = 0.5
      : tensor<1x2x4x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x4x4xf32>, tensor<1x2x4xf32>
  return %o : tensor<1x2x4x4xf32>
}

// -----

// Query documents are [B, Tq].
func.func @attention_query_documents_shape(%q: tensor<1x2x8x4xf32>, %qdoc: tensor<2x8xi64>, %kdoc: tensor<1x8xi64>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects query documents of shape [1, 8], got [2, 8]}}
  %o, %lse = glimmer.attention %q, %q, %q documents(%qdoc, %kdoc : tensor<2x8xi64>, tensor<1x8xi64>) scale = 0.5
      : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Key documents are [B, Tk].
func.func @attention_key_documents_shape(%q: tensor<1x2x8x4xf32>, %qdoc: tensor<1x8xi64>, %kdoc: tensor<1x7xi64>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention' op expects key documents of shape [1, 8], got [1, 7]}}
  %o, %lse = glimmer.attention %q, %q, %q documents(%qdoc, %kdoc : tensor<1x8xi64>, tensor<1x7xi64>) scale = 0.5
      : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// The output has the query's type.
func.func @attention_output_type(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf16> {
  // expected-error @+1 {{'glimmer.attention' op expects output of type 'tensor<1x2x8x4xf32>', got 'tensor<1x2x8x4xf16>'}}
  %o, %lse = glimmer.attention %q, %q, %q scale = 0.5 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf16>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf16>
}

// -----

// The log-sum-exp of bf16 attention is f32, not bf16.
func.func @attention_lse_type(%q: tensor<1x2x8x4xbf16>) -> tensor<1x2x8xbf16> {
  // expected-error @+1 {{'glimmer.attention' op expects lse of type 'tensor<1x2x8xf32>', got 'tensor<1x2x8xbf16>'}}
  %o, %lse = glimmer.attention %q, %q, %q scale = 0.5 : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>, tensor<1x2x8xbf16>
  return %lse : tensor<1x2x8xbf16>
}

// -----

// attention_grad checks the forward log-sum-exp's shape.
func.func @attention_grad_lse_type(%x: tensor<1x2x8x4xf32>, %lse: tensor<1x8xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'glimmer.attention_grad' op expects lse of type 'tensor<1x2x8xf32>', got 'tensor<1x8xf32>'}}
  %dq, %dk, %dv = glimmer.attention_grad %x, %x, %x, %x, %x, %lse scale = 0.5 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x8xf32>
  return %dq : tensor<1x2x8x4xf32>
}


//===----------------------------------------------------------------------===//
// softmax, cross_entropy
//===----------------------------------------------------------------------===//

// -----

// softmax dimension beyond the rank.
func.func @softmax_dim_out_of_range(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.softmax' op dim 2 is out of range for rank 2}}
  %0 = glimmer.softmax %x dim = 2 : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// softmax_grad dimension beyond the rank.
func.func @softmax_grad_dim_out_of_range(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.softmax_grad' op dim 5 is out of range for rank 2}}
  %0 = glimmer.softmax_grad %x, %x dim = 5 : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// cross_entropy needs a class dimension.
func.func @cross_entropy_scalar_logits(%logits: tensor<f32>, %labels: tensor<i64>) -> tensor<f32> {
  // expected-error @+1 {{'glimmer.cross_entropy' op expects logits of rank >= 1}}
  %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<f32>, tensor<i64> -> tensor<f32>, tensor<i64>
  return %sum : tensor<f32>
}

// -----

// Labels are the logits' shape without the class dimension.
func.func @cross_entropy_labels_shape(%logits: tensor<2x8x32xf32>, %labels: tensor<2x8x32xi64>) -> tensor<f32> {
  // expected-error @+1 {{'glimmer.cross_entropy' op expects labels of shape [2, 8], got [2, 8, 32]}}
  %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x8x32xf32>, tensor<2x8x32xi64> -> tensor<f32>, tensor<i64>
  return %sum : tensor<f32>
}

// -----

// The summed loss and the count are scalars.
func.func @cross_entropy_non_scalar_sum(%logits: tensor<2x8x32xf32>, %labels: tensor<2x8xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{'glimmer.cross_entropy' op expects scalar (rank-0) sum and count}}
  %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<2xf32>, tensor<i64>
  return %sum : tensor<2xf32>
}

// -----

// The token count is i64 (ODS constraint).
func.func @cross_entropy_count_type(%logits: tensor<2x8x32xf32>, %labels: tensor<2x8xi64>) -> tensor<i32> {
  // expected-error @+1 {{'glimmer.cross_entropy' op result #1 must be statically shaped tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>, tensor<i32>
  return %count : tensor<i32>
}

// -----

// cross_entropy_grad takes the gradient of the scalar sum.
func.func @cross_entropy_grad_non_scalar_grad(%dsum: tensor<1xf32>, %logits: tensor<2x8x32xf32>, %labels: tensor<2x8xi64>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'glimmer.cross_entropy_grad' op expects a scalar (rank-0) grad of the sum}}
  %0 = glimmer.cross_entropy_grad %dsum, %logits, %labels ignore_index = -100 : tensor<1xf32>, tensor<2x8x32xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x32xf32>
}

// -----

// cross_entropy_grad checks the labels like the forward.
func.func @cross_entropy_grad_labels_shape(%dsum: tensor<f32>, %logits: tensor<2x8x32xf32>, %labels: tensor<16xi64>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'glimmer.cross_entropy_grad' op expects labels of shape [2, 8], got [16]}}
  %0 = glimmer.cross_entropy_grad %dsum, %logits, %labels ignore_index = -100 : tensor<f32>, tensor<2x8x32xf32>, tensor<16xi64>
  return %0 : tensor<2x8x32xf32>
}

//===----------------------------------------------------------------------===//
// conv2d, conv2d_grad
//===----------------------------------------------------------------------===//

// -----

// conv2d needs an NCHW input.
func.func @conv2d_input_rank(%img: tensor<3x16x16xf32>, %w: tensor<32x3x4x4xf32>) -> tensor<32x4x4xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op expects an NCHW input of rank 4, got 'tensor<3x16x16xf32>'}}
  %0 = glimmer.conv2d %img, %w stride = [4, 4] padding = [0, 0] : tensor<3x16x16xf32>, tensor<32x3x4x4xf32> -> tensor<32x4x4xf32>
  return %0 : tensor<32x4x4xf32>
}

// -----

// conv2d needs an OIHW weight.
func.func @conv2d_weight_rank(%img: tensor<2x3x16x16xf32>, %w: tensor<32x48xf32>) -> tensor<2x32x4x4xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op expects an OIHW weight of rank 4, got 'tensor<32x48xf32>'}}
  %0 = glimmer.conv2d %img, %w stride = [4, 4] padding = [0, 0] : tensor<2x3x16x16xf32>, tensor<32x48xf32> -> tensor<2x32x4x4xf32>
  return %0 : tensor<2x32x4x4xf32>
}

// -----

// Strides and paddings come in (H, W) pairs.
func.func @conv2d_stride_count(%img: tensor<2x3x16x16xf32>, %w: tensor<32x3x4x4xf32>) -> tensor<2x32x4x4xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op expects 2 strides and 2 paddings}}
  %0 = glimmer.conv2d %img, %w stride = [4] padding = [0, 0] : tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32> -> tensor<2x32x4x4xf32>
  return %0 : tensor<2x32x4x4xf32>
}

// -----

// A zero stride.
func.func @conv2d_zero_stride(%img: tensor<2x3x16x16xf32>, %w: tensor<32x3x4x4xf32>) -> tensor<2x32x4x4xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op expects positive strides and non-negative padding}}
  %0 = glimmer.conv2d %img, %w stride = [0, 4] padding = [0, 0] : tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32> -> tensor<2x32x4x4xf32>
  return %0 : tensor<2x32x4x4xf32>
}

// -----

// Negative padding.
func.func @conv2d_negative_padding(%img: tensor<2x3x16x16xf32>, %w: tensor<32x3x4x4xf32>) -> tensor<2x32x4x4xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op expects positive strides and non-negative padding}}
  %0 = glimmer.conv2d %img, %w stride = [4, 4] padding = [0, -1] : tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32> -> tensor<2x32x4x4xf32>
  return %0 : tensor<2x32x4x4xf32>
}

// -----

// Input channels must match the weight's.
func.func @conv2d_channel_mismatch(%img: tensor<2x1x16x16xf32>, %w: tensor<32x3x4x4xf32>) -> tensor<2x32x4x4xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op input has 1 channels but weight expects 3}}
  %0 = glimmer.conv2d %img, %w stride = [4, 4] padding = [0, 0] : tensor<2x1x16x16xf32>, tensor<32x3x4x4xf32> -> tensor<2x32x4x4xf32>
  return %0 : tensor<2x32x4x4xf32>
}

// -----

// Input and weight share an element type.
func.func @conv2d_element_type(%img: tensor<2x3x16x16xbf16>, %w: tensor<32x3x4x4xf32>) -> tensor<2x32x4x4xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op expects input and weight to have the same element type, got 'bf16' and 'f32'}}
  %0 = glimmer.conv2d %img, %w stride = [4, 4] padding = [0, 0] : tensor<2x3x16x16xbf16>, tensor<32x3x4x4xf32> -> tensor<2x32x4x4xf32>
  return %0 : tensor<2x32x4x4xf32>
}

// -----

// A kernel larger than the (padded) image.
func.func @conv2d_kernel_too_large(%img: tensor<1x3x4x4xf32>, %w: tensor<8x3x5x5xf32>) -> tensor<1x8x1x1xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op kernel is larger than the padded input}}
  %0 = glimmer.conv2d %img, %w stride = [1, 1] padding = [0, 0] : tensor<1x3x4x4xf32>, tensor<8x3x5x5xf32> -> tensor<1x8x1x1xf32>
  return %0 : tensor<1x8x1x1xf32>
}

// -----

// The bias is [O].
func.func @conv2d_bias_type(%img: tensor<2x3x16x16xf32>, %w: tensor<32x3x4x4xf32>, %b: tensor<3xf32>) -> tensor<2x32x4x4xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op expects bias of type 'tensor<32xf32>', got 'tensor<3xf32>'}}
  %0 = glimmer.conv2d %img, %w, %b stride = [4, 4] padding = [0, 0] : tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>, tensor<3xf32> -> tensor<2x32x4x4xf32>
  return %0 : tensor<2x32x4x4xf32>
}

// -----

// The output spatial size is (H + 2p - k) / s + 1.
func.func @conv2d_result_type(%img: tensor<2x3x16x16xf32>, %w: tensor<32x3x4x4xf32>) -> tensor<2x32x16x16xf32> {
  // expected-error @+1 {{'glimmer.conv2d' op expects result of type 'tensor<2x32x4x4xf32>', got 'tensor<2x32x16x16xf32>'}}
  %0 = glimmer.conv2d %img, %w stride = [4, 4] padding = [0, 0] : tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32> -> tensor<2x32x16x16xf32>
  return %0 : tensor<2x32x16x16xf32>
}

// -----

// conv2d_grad's output gradient must have the forward output's type.
func.func @conv2d_grad_grad_type(%dy: tensor<2x32x8x8xf32>, %img: tensor<2x3x16x16xf32>, %w: tensor<32x3x4x4xf32>) -> tensor<2x3x16x16xf32> {
  // expected-error @+1 {{'glimmer.conv2d_grad' op expects grad of type 'tensor<2x32x4x4xf32>', got 'tensor<2x32x8x8xf32>'}}
  %dx, %dw = glimmer.conv2d_grad %dy, %img, %w stride = [4, 4] padding = [0, 0] : tensor<2x32x8x8xf32>, tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>
  return %dx : tensor<2x3x16x16xf32>
}

// -----

// conv2d_grad shares the forward's attribute checks.
func.func @conv2d_grad_padding_count(%dy: tensor<2x32x4x4xf32>, %img: tensor<2x3x16x16xf32>, %w: tensor<32x3x4x4xf32>) -> tensor<2x3x16x16xf32> {
  // expected-error @+1 {{'glimmer.conv2d_grad' op expects 2 strides and 2 paddings}}
  %dx, %dw = glimmer.conv2d_grad %dy, %img, %w stride = [4, 4] padding = [0, 0, 0] : tensor<2x32x4x4xf32>, tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>
  return %dx : tensor<2x3x16x16xf32>
}

//===----------------------------------------------------------------------===//
// adamw_update, sgd_update
//===----------------------------------------------------------------------===//

// -----

// The gradient has the parameter's shape ...
func.func @adamw_grad_other_shape(%p: tensor<16xf32>, %g: tensor<8xf32>, %step: tensor<i64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op expects grad of the param's type 'tensor<16xf32>' (or in bf16 for an f32 param), got 'tensor<8xf32>'}}
  %p1, %m1, %v1 = glimmer.adamw_update %p, %g, %p, %p, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<8xf32>, tensor<i64>
  return %p1 : tensor<16xf32>
}

// -----

// ... and its type, or bf16 under an f32 parameter only (an f32 gradient of
// a bf16 parameter would be narrowed).
func.func @sgd_grad_wider_than_param(%p: tensor<16xbf16>, %g: tensor<16xf32>) -> tensor<16xbf16> {
  // expected-error @+1 {{'glimmer.sgd_update' op expects grad of the param's type 'tensor<16xbf16>' (or in bf16 for an f32 param), got 'tensor<16xf32>'}}
  %p1 = glimmer.sgd_update %p, %g lr = 0.1 weight_decay = 0.0 : tensor<16xbf16>, tensor<16xf32>
  return %p1 : tensor<16xbf16>
}

// -----

// grad_scale is one scalar, not a tensor of scales.
func.func @adamw_grad_scale_not_scalar(%p: tensor<16xf32>, %step: tensor<i64>, %s: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op expects grad_scale of type 'tensor<f32>', got 'tensor<16xf32>'}}
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step grad_scale(%s : tensor<16xf32>) lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
  return %p1 : tensor<16xf32>
}

// -----

// grad_scale has the parameter's element type (an f32 coefficient of a
// bf16 parameter is converted first).
func.func @sgd_grad_scale_other_type(%p: tensor<16xbf16>, %s: tensor<f32>) -> tensor<16xbf16> {
  // expected-error @+1 {{'glimmer.sgd_update' op expects grad_scale of type 'tensor<bf16>', got 'tensor<f32>'}}
  %p1 = glimmer.sgd_update %p, %p grad_scale(%s : tensor<f32>) lr = 0.1 weight_decay = 0.0 : tensor<16xbf16>, tensor<16xbf16>
  return %p1 : tensor<16xbf16>
}

// -----

// The step count is a scalar.
func.func @adamw_step_not_scalar(%p: tensor<16xf32>, %step: tensor<1xi64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op expects a scalar (rank-0) step}}
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<1xi64>
  return %p1 : tensor<16xf32>
}

// -----

// The step count is i64 (ODS constraint).
func.func @adamw_step_element_type(%p: tensor<16xf32>, %step: tensor<f32>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op operand #4 must be statically shaped tensor of 64-bit signless integer values, but got 'tensor<f32>'}}
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<f32>
  return %p1 : tensor<16xf32>
}

// -----

// beta1 = 1 leaves the first moment frozen.
func.func @adamw_beta1_one(%p: tensor<16xf32>, %step: tensor<i64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op expects beta1 in [0, 1), got 1}}
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step lr = 1.0e-03
      beta1 = 1.0 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
  return %p1 : tensor<16xf32>
}

// -----

// A negative beta2.
func.func @adamw_beta2_negative(%p: tensor<16xf32>, %step: tensor<i64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op expects beta2 in [0, 1), got -5.000000e-01}}
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = -0.5 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
  return %p1 : tensor<16xf32>
}

// -----

// A zero eps.
func.func @adamw_zero_eps(%p: tensor<16xf32>, %step: tensor<i64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op expects eps > 0, got 0}}
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 0.0 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
  return %p1 : tensor<16xf32>
}

// -----

// adamw_update_list pairs its four lists by index: as many of each ...
func.func @adamw_list_lengths(%p: tensor<16xf32>, %step: tensor<i64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update_list' op expects as many grads, exp_avgs and exp_avg_sqs as params, got 2 params, 1 grads, 2 exp_avgs and 2 exp_avg_sqs}}
  %r:6 = "glimmer.adamw_update_list"(%p, %p, %p, %p, %p, %p, %p, %step) <{beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, operandSegmentSizes = array<i32: 2, 1, 2, 2, 1, 0>, weight_decay = 0.000000e+00 : f64}>
      : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i64>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %r#0 : tensor<16xf32>
}

// -----

// ... at least one ...
func.func @adamw_list_empty(%step: tensor<i64>) {
  // expected-error @+1 {{'glimmer.adamw_update_list' op expects at least one param}}
  "glimmer.adamw_update_list"(%step) <{beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, operandSegmentSizes = array<i32: 0, 0, 0, 0, 1, 0>, weight_decay = 0.000000e+00 : f64}> : (tensor<i64>) -> ()
  return
}

// -----

// ... and each update checked as adamw_update checks it.
func.func @adamw_list_grad_shape(%p: tensor<16xf32>, %g: tensor<8xf32>, %step: tensor<i64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update_list' op expects grad of the param's type 'tensor<16xf32>' (or in bf16 for an f32 param), got 'tensor<8xf32>'}}
  %p1:2, %m1:2, %v1:2 = glimmer.adamw_update_list (%p, %p), (%p, %g), (%p, %p), (%p, %p), %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : (tensor<16xf32>, tensor<16xf32>), (tensor<16xf32>, tensor<8xf32>), tensor<i64>
  return %p1#0 : tensor<16xf32>
}

// -----

// convert_list converts into one element type ...
func.func @convert_list_two_types(%a: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'glimmer.convert_list' op expects every result in one element type, got result #1 of type 'tensor<4xf64>' after 'bf16'}}
  %c:2 = glimmer.convert_list %a, %a : tensor<4xf32>, tensor<4xf32> to tensor<4xbf16>, tensor<4xf64>
  return %c#0 : tensor<4xbf16>
}

// -----

// ... keeping each input's shape ...
func.func @convert_list_shape(%a: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'glimmer.convert_list' op expects result #1 of input #1's shape, got 'tensor<2xbf16>' for 'tensor<4xf32>'}}
  %c:2 = glimmer.convert_list %a, %a : tensor<4xf32>, tensor<4xf32> to tensor<4xbf16>, tensor<2xbf16>
  return %c#0 : tensor<4xbf16>
}

// -----

// ... with a result for every input, ...
func.func @convert_list_count(%a: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'glimmer.convert_list' op expects a result per input, got 2 inputs and 1 results}}
  %c = glimmer.convert_list %a, %a : tensor<4xf32>, tensor<4xf32> to tensor<4xbf16>
  return %c : tensor<4xbf16>
}

// -----

// ... and at least one.
func.func @convert_list_empty() {
  // expected-error @+1 {{'glimmer.convert_list' op expects at least one input}}
  "glimmer.convert_list"() : () -> ()
  return
}

// -----

// A negative learning rate.
func.func @adamw_negative_lr(%p: tensor<16xf32>, %step: tensor<i64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op expects lr >= 0, got -1.000000e-03}}
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step lr = -1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
  return %p1 : tensor<16xf32>
}

// -----

// A negative weight decay.
func.func @adamw_negative_weight_decay(%p: tensor<16xf32>, %step: tensor<i64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op expects weight_decay >= 0, got -1.000000e-02}}
  %p1, %m1, %v1 = glimmer.adamw_update %p, %p, %p, %p, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = -0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
  return %p1 : tensor<16xf32>
}

// -----

// Parameter and moments share one type (ODS AllTypesMatch).
func.func @adamw_moment_type(%p: tensor<16xf32>, %m: tensor<16xbf16>, %step: tensor<i64>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.adamw_update' op failed to verify that all of {param, exp_avg, exp_avg_sq, new_param, new_exp_avg, new_exp_avg_sq} have same type}}
  %p1, %m1, %v1 = "glimmer.adamw_update"(%p, %p, %m, %p, %step) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, lr = 1.0e-03 : f64, weight_decay = 0.0 : f64}>
      : (tensor<16xf32>, tensor<16xf32>, tensor<16xbf16>, tensor<16xf32>, tensor<i64>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %p1 : tensor<16xf32>
}

// -----

// A negative SGD learning rate.
func.func @sgd_negative_lr(%p: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.sgd_update' op expects lr >= 0, got -1.000000e-01}}
  %0 = glimmer.sgd_update %p, %p lr = -0.1 weight_decay = 0.0 : tensor<16xf32>, tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// A NaN weight decay is rejected.
func.func @sgd_nan_weight_decay(%p: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'glimmer.sgd_update' op expects weight_decay >= 0, got nan}}
  %0 = glimmer.sgd_update %p, %p lr = 0.1 weight_decay = 0x7FF8000000000000 : tensor<16xf32>, tensor<16xf32>
  return %0 : tensor<16xf32>
}
