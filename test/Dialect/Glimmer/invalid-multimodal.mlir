// RUN: glimmer-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the glimmer dialect's multimodal (vision bank) and
// context-parallel ops.

//===----------------------------------------------------------------------===//
// vision_bank_indices
//===----------------------------------------------------------------------===//

// Tokens must be a [B, T] batch.
func.func @bank_indices_tokens_rank(%tokens: tensor<16xi64>) -> tensor<16xi64> {
  // expected-error @+1 {{'glimmer.vision_bank_indices' op expects [B, T] tokens of rank 2, got 'tensor<16xi64>'}}
  %0 = glimmer.vision_bank_indices %tokens image_token_id = 7 : tensor<16xi64>
  return %0 : tensor<16xi64>
}

// -----

// Token ids are integers (ODS constraint).
func.func @bank_indices_float_tokens(%tokens: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.vision_bank_indices' op operand #0 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x8xf32>'}}
  %0 = glimmer.vision_bank_indices %tokens image_token_id = 7 : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Indices have the tokens' type (ODS SameOperandsAndResultType).
func.func @bank_indices_result_type(%tokens: tensor<2x8xi64>) -> tensor<2x8xi32> {
  // expected-error @+1 {{'glimmer.vision_bank_indices' op requires the same type for all operands and results}}
  %0 = "glimmer.vision_bank_indices"(%tokens) <{image_token_id = 7 : i64}> : (tensor<2x8xi64>) -> tensor<2x8xi32>
  return %0 : tensor<2x8xi32>
}

//===----------------------------------------------------------------------===//
// vision_gather
//===----------------------------------------------------------------------===//

// -----

// Embeddings must be [B, T, D].
func.func @vision_gather_embeds_rank(%embeds: tensor<16x16xf32>, %bank: tensor<6x16xf32>, %idx: tensor<2x8xi64>) -> tensor<16x16xf32> {
  // expected-error @+1 {{'glimmer.vision_gather' op expects embeds [B, T, D] of rank 3, got 'tensor<16x16xf32>'}}
  %0 = glimmer.vision_gather %embeds, %bank, %idx : tensor<16x16xf32>, tensor<6x16xf32>, tensor<2x8xi64>
  return %0 : tensor<16x16xf32>
}

// -----

// Indices are [B, T] of the embeddings.
func.func @vision_gather_indices_shape(%embeds: tensor<2x8x16xf32>, %bank: tensor<6x16xf32>, %idx: tensor<2x4xi64>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'glimmer.vision_gather' op expects indices of shape [2, 8], got [2, 4]}}
  %0 = glimmer.vision_gather %embeds, %bank, %idx : tensor<2x8x16xf32>, tensor<6x16xf32>, tensor<2x4xi64>
  return %0 : tensor<2x8x16xf32>
}

// -----

// The bank must be [N, D] (images already flattened into rows).
func.func @vision_gather_bank_rank(%embeds: tensor<2x8x16xf32>, %bank: tensor<2x3x16xf32>, %idx: tensor<2x8xi64>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'glimmer.vision_gather' op expects an [N, D] bank of rank 2, got 'tensor<2x3x16xf32>'}}
  %0 = glimmer.vision_gather %embeds, %bank, %idx : tensor<2x8x16xf32>, tensor<2x3x16xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x16xf32>
}

// -----

// Bank rows must be as wide as the embeddings (no projection here).
func.func @vision_gather_width_mismatch(%embeds: tensor<2x8x16xf32>, %bank: tensor<6x32xf32>, %idx: tensor<2x8xi64>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'glimmer.vision_gather' op bank rows have width 32 but embeddings have width 16}}
  %0 = glimmer.vision_gather %embeds, %bank, %idx : tensor<2x8x16xf32>, tensor<6x32xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x16xf32>
}

// -----

// The bank has the embeddings' element type (no implicit cast).
func.func @vision_gather_element_type(%embeds: tensor<2x8x16xbf16>, %bank: tensor<6x16xf32>, %idx: tensor<2x8xi64>) -> tensor<2x8x16xbf16> {
  // expected-error @+1 {{'glimmer.vision_gather' op expects embeds and bank to have the same element type, got 'bf16' and 'f32'}}
  %0 = glimmer.vision_gather %embeds, %bank, %idx : tensor<2x8x16xbf16>, tensor<6x16xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x16xbf16>
}

//===----------------------------------------------------------------------===//
// vision_gather_grad
//===----------------------------------------------------------------------===//

// -----

// The output gradient must be [B, T, D].
func.func @vision_gather_grad_rank(%dy: tensor<16x16xf32>, %idx: tensor<2x8xi64>) -> tensor<6x16xf32> {
  // expected-error @+1 {{'glimmer.vision_gather_grad' op expects grad [B, T, D] of rank 3, got 'tensor<16x16xf32>'}}
  %de, %db = glimmer.vision_gather_grad %dy, %idx : tensor<16x16xf32>, tensor<2x8xi64> -> tensor<6x16xf32>
  return %db : tensor<6x16xf32>
}

// -----

// Indices are [B, T] of the gradient.
func.func @vision_gather_grad_indices_shape(%dy: tensor<2x8x16xf32>, %idx: tensor<16xi64>) -> tensor<6x16xf32> {
  // expected-error @+1 {{'glimmer.vision_gather_grad' op expects indices of shape [2, 8], got [16]}}
  %de, %db = glimmer.vision_gather_grad %dy, %idx : tensor<2x8x16xf32>, tensor<16xi64> -> tensor<6x16xf32>
  return %db : tensor<6x16xf32>
}

// -----

// The bank gradient must be [N, D].
func.func @vision_gather_grad_bank_rank(%dy: tensor<2x8x16xf32>, %idx: tensor<2x8xi64>) -> tensor<96xf32> {
  // expected-error @+1 {{'glimmer.vision_gather_grad' op expects an [N, D] bank grad of rank 2, got 'tensor<96xf32>'}}
  %de, %db = glimmer.vision_gather_grad %dy, %idx : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<96xf32>
  return %db : tensor<96xf32>
}

// -----

// Bank gradient rows are as wide as the gradient.
func.func @vision_gather_grad_width_mismatch(%dy: tensor<2x8x16xf32>, %idx: tensor<2x8xi64>) -> tensor<6x8xf32> {
  // expected-error @+1 {{'glimmer.vision_gather_grad' op bank grad rows have width 8 but grad has width 16}}
  %de, %db = glimmer.vision_gather_grad %dy, %idx : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<6x8xf32>
  return %db : tensor<6x8xf32>
}

// -----

// The bank gradient keeps the gradient's element type.
func.func @vision_gather_grad_element_type(%dy: tensor<2x8x16xf32>, %idx: tensor<2x8xi64>) -> tensor<6x16xf16> {
  // expected-error @+1 {{'glimmer.vision_gather_grad' op expects grad and bank grad to have the same element type, got 'f32' and 'f16'}}
  %de, %db = glimmer.vision_gather_grad %dy, %idx : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<6x16xf16>
  return %db : tensor<6x16xf16>
}

// -----

// The embeddings gradient has the gradient's type (ODS AllTypesMatch).
func.func @vision_gather_grad_embeds_grad_type(%dy: tensor<2x8x16xf32>, %idx: tensor<2x8xi64>) -> tensor<2x8x16xbf16> {
  // expected-error @+1 {{'glimmer.vision_gather_grad' op failed to verify that all of {grad, embeds_grad} have same type}}
  %de, %db = "glimmer.vision_gather_grad"(%dy, %idx) : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> (tensor<2x8x16xbf16>, tensor<6x16xf32>)
  return %de : tensor<2x8x16xbf16>
}

//===----------------------------------------------------------------------===//
// cp_permute, cp_unpermute
//===----------------------------------------------------------------------===//

// -----

// head_tail needs 2*cp chunks: 6 is divisible by cp = 2 but not by 4.
func.func @cp_permute_head_tail_indivisible(%tokens: tensor<2x6xi64>) -> tensor<2x6xi64> {
  // expected-error @+1 {{'glimmer.cp_permute' op sequence length 6 (dimension 1) is not divisible by 4 (the head_tail balancer with cp = 2 needs 4 equal chunks)}}
  %0 = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = head_tail : tensor<2x6xi64>
  return %0 : tensor<2x6xi64>
}

// -----

// The contiguous balancer needs the sequence divisible by cp.
func.func @cp_permute_contiguous_indivisible(%x: tensor<2x4x7x16xf32>) -> tensor<2x4x7x16xf32> {
  // expected-error @+1 {{'glimmer.cp_permute' op sequence length 7 (dimension 2) is not divisible by 2 (the contiguous balancer with cp = 2 needs 2 equal chunks)}}
  %0 = glimmer.cp_permute %x dim = 2 cp = 2 balancer = contiguous : tensor<2x4x7x16xf32>
  return %0 : tensor<2x4x7x16xf32>
}

// -----

// cp_unpermute has the same divisibility rule.
func.func @cp_unpermute_indivisible(%tokens: tensor<2x12xi64>) -> tensor<2x12xi64> {
  // expected-error @+1 {{'glimmer.cp_unpermute' op sequence length 12 (dimension 1) is not divisible by 8 (the head_tail balancer with cp = 4 needs 8 equal chunks)}}
  %0 = glimmer.cp_unpermute %tokens dim = 1 cp = 4 balancer = head_tail : tensor<2x12xi64>
  return %0 : tensor<2x12xi64>
}

// -----

// The permuted dimension must exist.
func.func @cp_permute_dim_out_of_range(%tokens: tensor<2x8xi64>) -> tensor<2x8xi64> {
  // expected-error @+1 {{'glimmer.cp_permute' op dim 2 is out of range for rank 2}}
  %0 = glimmer.cp_permute %tokens dim = 2 cp = 2 balancer = head_tail : tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

// -----

// A context-parallel degree of zero.
func.func @cp_permute_zero_cp(%tokens: tensor<2x8xi64>) -> tensor<2x8xi64> {
  // expected-error @+1 {{'glimmer.cp_permute' op expects cp >= 1, got 0}}
  %0 = glimmer.cp_permute %tokens dim = 1 cp = 0 balancer = head_tail : tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

// -----

// A negative context-parallel degree on cp_unpermute.
func.func @cp_unpermute_negative_cp(%tokens: tensor<2x8xi64>) -> tensor<2x8xi64> {
  // expected-error @+1 {{'glimmer.cp_unpermute' op expects cp >= 1, got -2}}
  %0 = glimmer.cp_unpermute %tokens dim = 1 cp = -2 balancer = contiguous : tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

// -----

// An unknown balancer keyword.
func.func @cp_permute_unknown_balancer(%tokens: tensor<2x8xi64>) -> tensor<2x8xi64> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'balancer' [head_tail, contiguous]}}
  %0 = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = zigzag : tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}
