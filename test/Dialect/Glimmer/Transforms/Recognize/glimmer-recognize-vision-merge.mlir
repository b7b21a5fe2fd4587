// RUN: glimmer-opt %s -split-input-file -glimmer-recognize-vision-merge -canonicalize | FileCheck %s

// The torchtitan-style merge as the importer emits it: mask flattened, cast,
// prefix-summed, reshaped back, minus one, clamped, gathered, selected.
// CHECK-LABEL: func.func @cumsum_index_gather
// CHECK-SAME: (%[[TOK:.*]]: tensor<2x8xi64>, %[[EMB:.*]]: tensor<2x8x4xf32>, %[[BANK:.*]]: tensor<6x4xf32>)
// CHECK: %[[IDX:.*]] = glimmer.vision_bank_indices %[[TOK]] image_token_id = 7 : tensor<2x8xi64>
// CHECK: %[[OUT:.*]] = glimmer.vision_gather %[[EMB]], %[[BANK]], %[[IDX]]
// CHECK-NOT: glimmer.cumsum
// CHECK-NOT: glimmer.select
// CHECK: return %[[OUT]]
func.func @cumsum_index_gather(%tokens: tensor<2x8xi64>, %embeds: tensor<2x8x4xf32>, %bank: tensor<6x4xf32>) -> tensor<2x8x4xf32> {
  %img = glimmer.constant dense<7> : tensor<2x8xi64>
  %m = glimmer.compare eq, %tokens, %img : tensor<2x8xi64>
  %f = glimmer.reshape %m : tensor<2x8xi1> -> tensor<16xi1>
  %l = glimmer.convert %f : tensor<16xi1> to tensor<16xi64>
  %c = glimmer.cumsum %l dim = 0 : tensor<16xi64>
  %r = glimmer.reshape %c : tensor<16xi64> -> tensor<2x8xi64>
  %one = glimmer.constant dense<1> : tensor<i64>
  %oneb = glimmer.broadcast_in_dim %one dims = [] : tensor<i64> -> tensor<2x8xi64>
  %i = glimmer.sub %r, %oneb : tensor<2x8xi64>
  %zero = glimmer.constant dense<0> : tensor<2x8xi64>
  %j = glimmer.max %i, %zero : tensor<2x8xi64>
  %rows = glimmer.embedding %bank, %j : tensor<6x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %m3 = glimmer.reshape %m : tensor<2x8xi1> -> tensor<2x8x1xi1>
  %mb = glimmer.broadcast_in_dim %m3 dims = [0, 1, 2] : tensor<2x8x1xi1> -> tensor<2x8x4xi1>
  %out = glimmer.select %mb, %rows, %embeds : tensor<2x8x4xi1>, tensor<2x8x4xf32>
  return %out : tensor<2x8x4xf32>
}

// -----

// Mixed precision: bf16 vision rows widened into f32 text embeddings (the
// residual stream's type). The gather reads the bank widened instead (the
// same values, fewer elements).
// CHECK-LABEL: func.func @widened_bf16_rows
// CHECK-SAME: (%[[TOK:.*]]: tensor<1x4xi64>, %[[EMB:.*]]: tensor<1x4x2xf32>, %[[BANK:.*]]: tensor<2x2xbf16>)
// CHECK: %[[WIDE:.*]] = glimmer.convert %[[BANK]] : tensor<2x2xbf16> to tensor<2x2xf32>
// CHECK: %[[IDX:.*]] = glimmer.vision_bank_indices %[[TOK]] image_token_id = 5
// CHECK: glimmer.vision_gather %[[EMB]], %[[WIDE]], %[[IDX]] : tensor<1x4x2xf32>, tensor<2x2xf32>, tensor<1x4xi64>
// CHECK-NOT: glimmer.select
func.func @widened_bf16_rows(%tokens: tensor<1x4xi64>, %embeds: tensor<1x4x2xf32>, %bank: tensor<2x2xbf16>) -> tensor<1x4x2xf32> {
  %img = glimmer.constant dense<5> : tensor<1x4xi64>
  %m = glimmer.compare eq, %tokens, %img : tensor<1x4xi64>
  %f = glimmer.reshape %m : tensor<1x4xi1> -> tensor<4xi1>
  %l = glimmer.convert %f : tensor<4xi1> to tensor<4xi64>
  %c = glimmer.cumsum %l dim = 0 : tensor<4xi64>
  %r = glimmer.reshape %c : tensor<4xi64> -> tensor<1x4xi64>
  %one = glimmer.constant dense<1> : tensor<1x4xi64>
  %i = glimmer.sub %r, %one : tensor<1x4xi64>
  %zero = glimmer.constant dense<0> : tensor<1x4xi64>
  %j = glimmer.max %i, %zero : tensor<1x4xi64>
  %rows = glimmer.embedding %bank, %j : tensor<2x2xbf16>, tensor<1x4xi64> -> tensor<1x4x2xbf16>
  %wide = glimmer.convert %rows : tensor<1x4x2xbf16> to tensor<1x4x2xf32>
  %m3 = glimmer.reshape %m : tensor<1x4xi1> -> tensor<1x4x1xi1>
  %mb = glimmer.broadcast_in_dim %m3 dims = [0, 1, 2] : tensor<1x4x1xi1> -> tensor<1x4x2xi1>
  %out = glimmer.select %mb, %wide, %embeds : tensor<1x4x2xi1>, tensor<1x4x2xf32>
  return %out : tensor<1x4x2xf32>
}

// -----

// The masked_scatter form: the mask was unsqueezed and expanded, the prefix
// sum is of a cast before the flatten, the constant is a flat splat.
// CHECK-LABEL: func.func @masked_scatter_form
// CHECK: glimmer.vision_bank_indices %arg0 image_token_id = 3
// CHECK: glimmer.vision_gather %arg1, %arg2
// CHECK-NOT: glimmer.select
func.func @masked_scatter_form(%tokens: tensor<1x6xi64>, %embeds: tensor<1x6x2xf32>, %bank: tensor<2x2xf32>) -> tensor<1x6x2xf32> {
  %img = glimmer.constant dense<3> : tensor<1x6xi64>
  %m = glimmer.compare eq, %tokens, %img : tensor<1x6xi64>
  %m3 = glimmer.reshape %m : tensor<1x6xi1> -> tensor<1x6x1xi1>
  %mb = glimmer.broadcast_in_dim %m3 dims = [0, 1, 2] : tensor<1x6x1xi1> -> tensor<1x6x2xi1>
  %rowmask = glimmer.reshape %m3 : tensor<1x6x1xi1> -> tensor<1x6xi1>
  %l = glimmer.convert %rowmask : tensor<1x6xi1> to tensor<1x6xi64>
  %f = glimmer.reshape %l : tensor<1x6xi64> -> tensor<6xi64>
  %c = glimmer.cumsum %f dim = 0 : tensor<6xi64>
  %one = glimmer.constant dense<1> : tensor<6xi64>
  %s = glimmer.sub %c, %one : tensor<6xi64>
  %i = glimmer.reshape %s : tensor<6xi64> -> tensor<1x6xi64>
  %zero = glimmer.constant dense<0> : tensor<1x6xi64>
  %j = glimmer.max %i, %zero : tensor<1x6xi64>
  %rows = glimmer.embedding %bank, %j : tensor<2x2xf32>, tensor<1x6xi64> -> tensor<1x6x2xf32>
  %out = glimmer.select %mb, %rows, %embeds : tensor<1x6x2xi1>, tensor<1x6x2xf32>
  return %out : tensor<1x6x2xf32>
}

// -----

// A per-sample prefix sum (cumsum over the sequence of [B, T]) numbers each
// sample's images from zero: that is not the flattened-batch bank layout, so
// nothing is rewritten.
// CHECK-LABEL: func.func @per_sample_cumsum_is_not_rewritten
// CHECK-NOT: glimmer.vision_gather
// CHECK: glimmer.select
func.func @per_sample_cumsum_is_not_rewritten(%tokens: tensor<2x8xi64>, %embeds: tensor<2x8x4xf32>, %bank: tensor<6x4xf32>) -> tensor<2x8x4xf32> {
  %img = glimmer.constant dense<7> : tensor<2x8xi64>
  %m = glimmer.compare eq, %tokens, %img : tensor<2x8xi64>
  %l = glimmer.convert %m : tensor<2x8xi1> to tensor<2x8xi64>
  %c = glimmer.cumsum %l dim = 1 : tensor<2x8xi64>
  %one = glimmer.constant dense<1> : tensor<2x8xi64>
  %i = glimmer.sub %c, %one : tensor<2x8xi64>
  %zero = glimmer.constant dense<0> : tensor<2x8xi64>
  %j = glimmer.max %i, %zero : tensor<2x8xi64>
  %rows = glimmer.embedding %bank, %j : tensor<6x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %m3 = glimmer.reshape %m : tensor<2x8xi1> -> tensor<2x8x1xi1>
  %mb = glimmer.broadcast_in_dim %m3 dims = [0, 1, 2] : tensor<2x8x1xi1> -> tensor<2x8x4xi1>
  %out = glimmer.select %mb, %rows, %embeds : tensor<2x8x4xi1>, tensor<2x8x4xf32>
  return %out : tensor<2x8x4xf32>
}

// -----

// Indices offset by 2 instead of 1 would skip a bank row: not rewritten.
// CHECK-LABEL: func.func @wrong_offset_is_not_rewritten
// CHECK-NOT: glimmer.vision_gather
func.func @wrong_offset_is_not_rewritten(%tokens: tensor<1x4xi64>, %embeds: tensor<1x4x2xf32>, %bank: tensor<4x2xf32>) -> tensor<1x4x2xf32> {
  %img = glimmer.constant dense<7> : tensor<1x4xi64>
  %m = glimmer.compare eq, %tokens, %img : tensor<1x4xi64>
  %f = glimmer.reshape %m : tensor<1x4xi1> -> tensor<4xi1>
  %l = glimmer.convert %f : tensor<4xi1> to tensor<4xi64>
  %c = glimmer.cumsum %l dim = 0 : tensor<4xi64>
  %r = glimmer.reshape %c : tensor<4xi64> -> tensor<1x4xi64>
  %two = glimmer.constant dense<2> : tensor<1x4xi64>
  %i = glimmer.sub %r, %two : tensor<1x4xi64>
  %zero = glimmer.constant dense<0> : tensor<1x4xi64>
  %j = glimmer.max %i, %zero : tensor<1x4xi64>
  %rows = glimmer.embedding %bank, %j : tensor<4x2xf32>, tensor<1x4xi64> -> tensor<1x4x2xf32>
  %m3 = glimmer.reshape %m : tensor<1x4xi1> -> tensor<1x4x1xi1>
  %mb = glimmer.broadcast_in_dim %m3 dims = [0, 1, 2] : tensor<1x4x1xi1> -> tensor<1x4x2xi1>
  %out = glimmer.select %mb, %rows, %embeds : tensor<1x4x2xi1>, tensor<1x4x2xf32>
  return %out : tensor<1x4x2xf32>
}

// -----

// The indices come from a different mask than the select's (text tokens
// equal to 5, images equal to 7): not the same merge, not rewritten.
// CHECK-LABEL: func.func @mismatched_masks_are_not_rewritten
// CHECK-NOT: glimmer.vision_gather
func.func @mismatched_masks_are_not_rewritten(%tokens: tensor<1x4xi64>, %embeds: tensor<1x4x2xf32>, %bank: tensor<4x2xf32>) -> tensor<1x4x2xf32> {
  %img = glimmer.constant dense<7> : tensor<1x4xi64>
  %other = glimmer.constant dense<5> : tensor<1x4xi64>
  %m = glimmer.compare eq, %tokens, %img : tensor<1x4xi64>
  %m2 = glimmer.compare eq, %tokens, %other : tensor<1x4xi64>
  %f = glimmer.reshape %m2 : tensor<1x4xi1> -> tensor<4xi1>
  %l = glimmer.convert %f : tensor<4xi1> to tensor<4xi64>
  %c = glimmer.cumsum %l dim = 0 : tensor<4xi64>
  %r = glimmer.reshape %c : tensor<4xi64> -> tensor<1x4xi64>
  %one = glimmer.constant dense<1> : tensor<1x4xi64>
  %i = glimmer.sub %r, %one : tensor<1x4xi64>
  %zero = glimmer.constant dense<0> : tensor<1x4xi64>
  %j = glimmer.max %i, %zero : tensor<1x4xi64>
  %rows = glimmer.embedding %bank, %j : tensor<4x2xf32>, tensor<1x4xi64> -> tensor<1x4x2xf32>
  %m3 = glimmer.reshape %m : tensor<1x4xi1> -> tensor<1x4x1xi1>
  %mb = glimmer.broadcast_in_dim %m3 dims = [0, 1, 2] : tensor<1x4x1xi1> -> tensor<1x4x2xi1>
  %out = glimmer.select %mb, %rows, %embeds : tensor<1x4x2xi1>, tensor<1x4x2xf32>
  return %out : tensor<1x4x2xf32>
}

// -----

// Unclamped indices read row -1 for text tokens before the select discards
// it; the model did not write the bounded gather, so it is left alone.
// CHECK-LABEL: func.func @unclamped_indices_are_not_rewritten
// CHECK-NOT: glimmer.vision_gather
func.func @unclamped_indices_are_not_rewritten(%tokens: tensor<1x4xi64>, %embeds: tensor<1x4x2xf32>, %bank: tensor<4x2xf32>) -> tensor<1x4x2xf32> {
  %img = glimmer.constant dense<7> : tensor<1x4xi64>
  %m = glimmer.compare eq, %tokens, %img : tensor<1x4xi64>
  %f = glimmer.reshape %m : tensor<1x4xi1> -> tensor<4xi1>
  %l = glimmer.convert %f : tensor<4xi1> to tensor<4xi64>
  %c = glimmer.cumsum %l dim = 0 : tensor<4xi64>
  %r = glimmer.reshape %c : tensor<4xi64> -> tensor<1x4xi64>
  %one = glimmer.constant dense<1> : tensor<1x4xi64>
  %i = glimmer.sub %r, %one : tensor<1x4xi64>
  %rows = glimmer.embedding %bank, %i : tensor<4x2xf32>, tensor<1x4xi64> -> tensor<1x4x2xf32>
  %m3 = glimmer.reshape %m : tensor<1x4xi1> -> tensor<1x4x1xi1>
  %mb = glimmer.broadcast_in_dim %m3 dims = [0, 1, 2] : tensor<1x4x1xi1> -> tensor<1x4x2xi1>
  %out = glimmer.select %mb, %rows, %embeds : tensor<1x4x2xi1>, tensor<1x4x2xf32>
  return %out : tensor<1x4x2xf32>
}
