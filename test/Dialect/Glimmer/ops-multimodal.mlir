// RUN: glimmer-opt %s -split-input-file | glimmer-opt -split-input-file | FileCheck %s
// RUN: glimmer-opt %s -split-input-file -mlir-print-op-generic | glimmer-opt -split-input-file | FileCheck %s

// Round-trip tests for the multimodal (vision bank) and context-parallel ops
// of the glimmer dialect.

// vision_bank_indices on i64 and i32 token ids (result type = operand type).
// CHECK-LABEL: func.func @vision_bank_indices
// CHECK: %[[I:.*]] = glimmer.vision_bank_indices %{{.*}} image_token_id = 7 : tensor<2x8xi64>
// CHECK: glimmer.vision_bank_indices %{{.*}} image_token_id = 151655 : tensor<1x16xi32>
// CHECK: return %[[I]], %{{.*}} : tensor<2x8xi64>, tensor<1x16xi32>
func.func @vision_bank_indices(%tokens: tensor<2x8xi64>, %tokens32: tensor<1x16xi32>) -> (tensor<2x8xi64>, tensor<1x16xi32>) {
  %0 = glimmer.vision_bank_indices %tokens image_token_id = 7 : tensor<2x8xi64>
  %1 = glimmer.vision_bank_indices %tokens32 image_token_id = 151655 : tensor<1x16xi32>
  return %0, %1 : tensor<2x8xi64>, tensor<1x16xi32>
}

// -----

// A negative image_token_id is a legal (if unusual) attribute value.
// CHECK-LABEL: func.func @vision_bank_indices_negative_id
// CHECK: glimmer.vision_bank_indices %{{.*}} image_token_id = -1 : tensor<2x8xi64>
func.func @vision_bank_indices_negative_id(%tokens: tensor<2x8xi64>) -> tensor<2x8xi64> {
  %0 = glimmer.vision_bank_indices %tokens image_token_id = -1 : tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

// -----

// The dialect's canonical example: bank indices feeding vision_gather.
// CHECK-LABEL: func.func @vision_gather
// CHECK: %[[IDX:.*]] = glimmer.vision_bank_indices %{{.*}} image_token_id = 7 : tensor<2x8xi64>
// CHECK: glimmer.vision_gather %{{.*}}, %{{.*}}, %[[IDX]] : tensor<2x8x16xf32>, tensor<6x16xf32>, tensor<2x8xi64>
func.func @vision_gather(%tokens: tensor<2x8xi64>, %embeds: tensor<2x8x16xf32>, %bank: tensor<6x16xf32>) -> tensor<2x8x16xf32> {
  %idx = glimmer.vision_bank_indices %tokens image_token_id = 7 : tensor<2x8xi64>
  %0 = glimmer.vision_gather %embeds, %bank, %idx : tensor<2x8x16xf32>, tensor<6x16xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x16xf32>
}

// -----

// vision_gather on bf16 with i32 indices and an empty bank (no image tokens).
// CHECK-LABEL: func.func @vision_gather_empty_bank
// CHECK: glimmer.vision_gather %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x8xbf16>, tensor<0x8xbf16>, tensor<1x4xi32>
func.func @vision_gather_empty_bank(%embeds: tensor<1x4x8xbf16>, %bank: tensor<0x8xbf16>, %idx: tensor<1x4xi32>) -> tensor<1x4x8xbf16> {
  %0 = glimmer.vision_gather %embeds, %bank, %idx : tensor<1x4x8xbf16>, tensor<0x8xbf16>, tensor<1x4xi32>
  return %0 : tensor<1x4x8xbf16>
}

// -----

// vision_gather_grad: embeddings grad (type of grad) and explicit bank grad.
// CHECK-LABEL: func.func @vision_gather_grad
// CHECK: %[[DE:[a-z_0-9]+]], %[[DB:[a-z_0-9]+]] = glimmer.vision_gather_grad %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<6x16xf32>
// CHECK: return %[[DE]], %[[DB]] : tensor<2x8x16xf32>, tensor<6x16xf32>
func.func @vision_gather_grad(%dy: tensor<2x8x16xf32>, %idx: tensor<2x8xi64>) -> (tensor<2x8x16xf32>, tensor<6x16xf32>) {
  %de, %db = glimmer.vision_gather_grad %dy, %idx : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<6x16xf32>
  return %de, %db : tensor<2x8x16xf32>, tensor<6x16xf32>
}

// -----

// cp_permute / cp_unpermute with the head_tail balancer (8 = 2 * 2 * cp).
// CHECK-LABEL: func.func @cp_permute_head_tail
// CHECK: %[[P:.*]] = glimmer.cp_permute %{{.*}} dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
// CHECK: glimmer.cp_unpermute %[[P]] dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
func.func @cp_permute_head_tail(%tokens: tensor<2x8xi64>) -> tensor<2x8xi64> {
  %p = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
  %t = glimmer.cp_unpermute %p dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
  return %t : tensor<2x8xi64>
}

// -----

// The contiguous balancer only needs divisibility by cp (6 by 3, not by 6).
// CHECK-LABEL: func.func @cp_permute_contiguous
// CHECK: glimmer.cp_permute %{{.*}} dim = 2 cp = 3 balancer = contiguous : tensor<2x4x6x16xf32>
// CHECK: glimmer.cp_unpermute %{{.*}} dim = 2 cp = 3 balancer = contiguous : tensor<2x4x6x16xf32>
func.func @cp_permute_contiguous(%x: tensor<2x4x6x16xf32>) -> tensor<2x4x6x16xf32> {
  %p = glimmer.cp_permute %x dim = 2 cp = 3 balancer = contiguous : tensor<2x4x6x16xf32>
  %t = glimmer.cp_unpermute %p dim = 2 cp = 3 balancer = contiguous : tensor<2x4x6x16xf32>
  return %t : tensor<2x4x6x16xf32>
}

// -----

// cp = 1 is a valid degenerate layout (head_tail needs 2 chunks).
// CHECK-LABEL: func.func @cp_permute_cp_one
// CHECK: glimmer.cp_permute %{{.*}} dim = 0 cp = 1 balancer = head_tail : tensor<2xf32>
func.func @cp_permute_cp_one(%x: tensor<2xf32>) -> tensor<2xf32> {
  %p = glimmer.cp_permute %x dim = 0 cp = 1 balancer = head_tail : tensor<2xf32>
  return %p : tensor<2xf32>
}
