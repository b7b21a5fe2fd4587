// RUN: glimmer-opt %s -split-input-file -glimmer-prepare-cp-inputs | FileCheck %s

// The vision-bank indices are built from the full token sequence, and only
// then permuted; the tokens feeding the embedding are permuted too. Splat
// constants are not permuted.
// CHECK-LABEL: func.func @index_build_precedes_permutation
// CHECK-SAME: (%[[TOK:.*]]: tensor<2x8xi64>
// CHECK: %[[TP:.*]] = glimmer.cp_permute %[[TOK]] dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
// CHECK: %[[E:.*]] = glimmer.embedding %{{.*}}, %[[TP]]
// CHECK: %[[IDX:.*]] = glimmer.vision_bank_indices %[[TOK]] image_token_id = 7
// CHECK: %[[IP:.*]] = glimmer.cp_permute %[[IDX]] dim = 1 cp = 2
// CHECK: glimmer.vision_gather %[[E]], %{{.*}}, %[[IP]]
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @index_build_precedes_permutation(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %table: tensor<16x4xf32>, %bank: tensor<3x4xf32>) -> tensor<2x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 7 : tensor<2x8xi64>
    %m = glimmer.vision_gather %e, %bank, %idx : tensor<2x8x4xf32>, tensor<3x4xf32>, tensor<2x8xi64>
    return %m : tensor<2x8x4xf32>
  }
}

// -----

// Labels shifted on the full sequence (pad + slice, Hugging Face style) and
// flattened: the permutation happens after the shift, through a reshape to
// [B, T]; positions built from iota are permuted before the attention.
// CHECK-LABEL: func.func @shift_then_permute
// CHECK: %[[PAD:.*]] = glimmer.pad %arg1
// CHECK: %[[SH:.*]] = glimmer.slice %[[PAD]]
// CHECK: %[[FLAT:.*]] = glimmer.reshape %[[SH]] : tensor<2x8xi64> -> tensor<16xi64>
// CHECK: %[[BT:.*]] = glimmer.reshape %[[FLAT]] : tensor<16xi64> -> tensor<2x8xi64>
// CHECK: %[[P:.*]] = glimmer.cp_permute %[[BT]] dim = 1 cp = 2 balancer = head_tail
// CHECK: %[[BACK:.*]] = glimmer.reshape %[[P]] : tensor<2x8xi64> -> tensor<16xi64>
// CHECK: glimmer.cross_entropy %{{.*}}, %[[BACK]]
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @shift_then_permute(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %labels: tensor<2x8xi64> {glimmer.input = "labels"}, %table: tensor<16x4xf32>) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %pad = glimmer.pad %labels low = [0, 0] high = [0, 1] value = -1.000000e+02 : tensor<2x8xi64> -> tensor<2x9xi64>
    %shift = glimmer.slice %pad start = [0, 1] limit = [2, 9] stride = [1, 1] : tensor<2x9xi64> -> tensor<2x8xi64>
    %flat = glimmer.reshape %shift : tensor<2x8xi64> -> tensor<16xi64>
    %logits = glimmer.reshape %e : tensor<2x8x4xf32> -> tensor<16x4xf32>
    %sum, %count = glimmer.cross_entropy %logits, %flat ignore_index = -100 : tensor<16x4xf32>, tensor<16xi64> -> tensor<f32>, tensor<i64>
    return %sum : tensor<f32>
  }
}

// -----

// With cp = 1 nothing changes.
// CHECK-LABEL: func.func @no_cp
// CHECK-NOT: glimmer.cp_permute
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  func.func @no_cp(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32>) -> tensor<2x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    return %e : tensor<2x8x4xf32>
  }
}

// -----

// Regression: which dimensions follow the tokens' permutation is read off
// the ops (their sharding rules), not off sizes. With one sample of T = 8
// tokens, a constant [8, 4] weight (dimension 0: its 8 output features, as
// long as the sequence) was permuted along dimension 0; it is not. A
// position table folded into a constant ([1, 8, 1], added to the tokens'
// activations) is permuted along its sequence dimension.
// CHECK-LABEL: func.func @weight_as_long_as_the_sequence
// CHECK-DAG: %[[W:.*]] = glimmer.constant dense<{{.*}}> : tensor<8x4xf32>
// CHECK-DAG: %[[POS:.*]] = glimmer.constant dense<{{.*}}> : tensor<1x8x1xf32>
// CHECK-DAG: %[[PP:.*]] = glimmer.cp_permute %[[POS]] dim = 1 cp = 2 balancer = head_tail : tensor<1x8x1xf32>
// CHECK-DAG: glimmer.broadcast_in_dim %[[PP]]
// CHECK-DAG: glimmer.linear %{{.*}}, %[[W]] : tensor<1x8x4xf32>, tensor<8x4xf32> -> tensor<1x8x8xf32>
// CHECK-NOT: glimmer.cp_permute %[[W]]
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @weight_as_long_as_the_sequence(%tokens: tensor<1x8xi64> {glimmer.input = "tokens"}, %table: tensor<16x4xf32>) -> tensor<1x8x8xf32> {
    %w = glimmer.constant dense<[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<8x4xf32>
    %pos = glimmer.constant dense<[[[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0]]]> : tensor<1x8x1xf32>
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<1x8xi64> -> tensor<1x8x4xf32>
    %pb = glimmer.broadcast_in_dim %pos dims = [0, 1, 2] : tensor<1x8x1xf32> -> tensor<1x8x4xf32>
    %x = glimmer.add %e, %pb : tensor<1x8x4xf32>
    %y = glimmer.linear %x, %w : tensor<1x8x4xf32>, tensor<8x4xf32> -> tensor<1x8x8xf32>
    return %y : tensor<1x8x8xf32>
  }
}

// -----

// Block ids for bidirectional attention (Gemma 3's image numbering, a
// cumulative sum along the sequence) are computed on the full sequence and
// then permuted like the positions: the attention's mask terms stay exact
// under the permutation.
// CHECK-LABEL: func.func @block_ids_permuted_after_numbering
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<2x8xi64> {glimmer.input = "tokens"}, %[[TYPES:[^:]*]]: tensor<2x8xi64>
// CHECK: %[[IMG:.*]] = glimmer.compare eq, %[[TYPES]]
// CHECK: %[[SUM:.*]] = glimmer.cumsum %{{.*}} dim = 1 : tensor<2x8xi64>
// CHECK: %[[BLK:.*]] = glimmer.select %[[IMG]], %{{.*}}, %{{.*}} : tensor<2x8xi1>, tensor<2x8xi64>
// CHECK-DAG: %[[BP:.*]] = glimmer.cp_permute %[[BLK]] dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
// CHECK-DAG: %[[PP:.*]] = glimmer.cp_permute %{{.*}} dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} positions(%[[PP]], %[[PP]] : {{.*}}) blocks(%[[BP]], %[[BP]] : {{.*}}) causal window = 2
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @block_ids_permuted_after_numbering(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %types: tensor<2x8xi64> {glimmer.input = "token_type_ids"}, %table: tensor<16x4xf32>) -> tensor<2x1x8x4xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %x = glimmer.reshape %e : tensor<2x8x4xf32> -> tensor<2x1x8x4xf32>
    %one = glimmer.constant dense<1> : tensor<2x8xi64>
    %none = glimmer.constant dense<-1> : tensor<2x8xi64>
    %img = glimmer.compare eq, %types, %one : tensor<2x8xi64>
    %n = glimmer.convert %img : tensor<2x8xi1> to tensor<2x8xi64>
    %sum = glimmer.cumsum %n dim = 1 : tensor<2x8xi64>
    %grp = glimmer.sub %sum, %one : tensor<2x8xi64>
    %blk = glimmer.select %img, %grp, %none : tensor<2x8xi1>, tensor<2x8xi64>
    %pos = glimmer.iota dim = 1 : tensor<2x8xi64>
    %o, %lse = glimmer.attention %x, %x, %x positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) blocks(%blk, %blk : tensor<2x8xi64>, tensor<2x8xi64>) causal window = 2 scale = 0.5
        : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8xf32>
    return %o : tensor<2x1x8x4xf32>
  }
}
