// RUN: glimmer-opt %s -split-input-file -glimmer-prepare-batch | FileCheck %s

// Data parallelism: the valid-token count is taken on the full labels,
// before anything is split (the cross_entropy's own count is left unused),
// and the loss of Hugging Face's flattened tokens is taken on the
// unflattened [B, T, V] logits and [B, T] labels.
// CHECK-LABEL: func.func @count_on_full_labels
// CHECK-SAME: (%[[TOK:.*]]: tensor<4x8xi64> {glimmer.input = "tokens"}, %[[LAB:.*]]: tensor<4x8xi64> {glimmer.input = "labels"}
// CHECK: %[[E:.*]] = glimmer.embedding %{{.*}}, %[[TOK]]
// CHECK: %[[FLAT:.*]] = glimmer.reshape %[[LAB]] : tensor<4x8xi64> -> tensor<32xi64>
// CHECK: %[[IGN:.*]] = glimmer.constant dense<-100> : tensor<32xi64>
// CHECK: %[[VALID:.*]] = glimmer.compare ne, %[[FLAT]], %[[IGN]] : tensor<32xi64>
// CHECK: %[[V64:.*]] = glimmer.convert %[[VALID]] : tensor<32xi1> to tensor<32xi64>
// CHECK: %[[N:.*]] = glimmer.reduce sum %[[V64]] dims = [0] : tensor<32xi64> -> tensor<i64>
// CHECK: %[[SUM:.*]], %{{.*}} = glimmer.cross_entropy %[[E]], %[[LAB]] ignore_index = -100 : tensor<4x8x16xf32>, tensor<4x8xi64>
// CHECK: %[[NF:.*]] = glimmer.convert %[[N]] : tensor<i64> to tensor<f32>
// CHECK: glimmer.div %[[SUM]], %[[NF]]
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  func.func @count_on_full_labels(%tokens: tensor<4x8xi64> {glimmer.input = "tokens"}, %labels: tensor<4x8xi64> {glimmer.input = "labels"},
                                  %table: tensor<16x16xf32> {glimmer.param = "emb"}) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x16xf32>, tensor<4x8xi64> -> tensor<4x8x16xf32>
    %lf = glimmer.reshape %e : tensor<4x8x16xf32> -> tensor<32x16xf32>
    %lab = glimmer.reshape %labels : tensor<4x8xi64> -> tensor<32xi64>
    %sum, %count = glimmer.cross_entropy %lf, %lab ignore_index = -100 : tensor<32x16xf32>, tensor<32xi64> -> tensor<f32>, tensor<i64>
    %c = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %c : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Mixed precision converts the flattened bf16 logits to f32 for the loss:
// the conversion moves before the reshape that goes away.
// CHECK-LABEL: func.func @unflatten_through_convert
// CHECK: %[[E:.*]] = glimmer.embedding
// CHECK: %[[F:.*]] = glimmer.convert %[[E]] : tensor<2x8x16xbf16> to tensor<2x8x16xf32>
// CHECK: glimmer.cross_entropy %[[F]], %arg1 ignore_index = -100 : tensor<2x8x16xf32>, tensor<2x8xi64>
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @unflatten_through_convert(%tokens: tensor<2x8xi64>, %labels: tensor<2x8xi64>, %table: tensor<16x16xbf16>) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x16xbf16>, tensor<2x8xi64> -> tensor<2x8x16xbf16>
    %lf = glimmer.reshape %e : tensor<2x8x16xbf16> -> tensor<16x16xbf16>
    %f = glimmer.convert %lf : tensor<16x16xbf16> to tensor<16x16xf32>
    %lab = glimmer.reshape %labels : tensor<2x8xi64> -> tensor<16xi64>
    %sum, %count = glimmer.cross_entropy %f, %lab ignore_index = -100 : tensor<16x16xf32>, tensor<16xi64> -> tensor<f32>, tensor<i64>
    return %sum : tensor<f32>
  }
}

// -----

// Two micro-batches: the function takes the micro-batch index; the values
// computed from integer inputs are prepared on the whole batch (vision-bank
// indices, the count over all 16 labels) and cut to the micro-batch where
// the model reads them, so the model runs at B = 1. The embedding's token
// ids and the indices are cut once each; the splat constant is not cut
// (it is the same in any micro-batch).
// CHECK-LABEL: func.func @two_microbatches
// CHECK-SAME: %[[MB:[a-z0-9]+]]: tensor<i64> {glimmer.microbatch}) -> tensor<f32>
// CHECK: %[[L:.*]] = glimmer.microbatch_slice %arg1[%[[MB]]] pieces = 2 dim = 0
// CHECK: %[[T:.*]] = glimmer.microbatch_slice %arg0[%[[MB]]] pieces = 2 dim = 0 : tensor<2x8xi64>, tensor<i64> -> tensor<1x8xi64>
// CHECK: glimmer.embedding %{{.*}}, %[[T]] : tensor<16x4xf32>, tensor<1x8xi64> -> tensor<1x8x4xf32>
// CHECK: %[[IDX:.*]] = glimmer.vision_bank_indices %arg0 image_token_id = 15 : tensor<2x8xi64>
// CHECK-NEXT: %[[IL:.*]] = glimmer.microbatch_slice %[[IDX]][%[[MB]]] pieces = 2 dim = 0
// CHECK: glimmer.vision_gather %{{.*}}, %arg3, %[[IL]] : tensor<1x8x4xf32>, tensor<3x4xf32>, tensor<1x8xi64>
// CHECK: glimmer.reduce sum %{{.*}} dims = [0, 1] : tensor<2x8xi64> -> tensor<i64>
// CHECK: glimmer.cross_entropy %{{.*}}, %[[L]] ignore_index = -100 : tensor<1x8x16xf32>, tensor<1x8xi64>
module attributes {glimmer.spmd = #glimmer.spmd<"microbatches=2">} {
  func.func @two_microbatches(%tokens: tensor<2x8xi64>, %labels: tensor<2x8xi64>, %table: tensor<16x4xf32>, %bank: tensor<3x4xf32>,
                              %head: tensor<16x4xf32>) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 15 : tensor<2x8xi64>
    %h = glimmer.vision_gather %e, %bank, %idx : tensor<2x8x4xf32>, tensor<3x4xf32>, tensor<2x8xi64>
    %eps = glimmer.constant dense<1.0e-05> : tensor<2x8x4xf32>
    %h2 = glimmer.add %h, %eps : tensor<2x8x4xf32>
    %logits = glimmer.linear %h2, %head : tensor<2x8x4xf32>, tensor<16x4xf32> -> tensor<2x8x16xf32>
    %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<f32>, tensor<i64>
    %n = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %n : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Regression: which values are cut to the micro-batch is read off the ops,
// not off sizes. A constant [2, 8] weight with a batch of 2 (its 2 output
// features) stays whole; the folded position table [2, 8, 1] added to the
// activations is cut.
// CHECK-LABEL: func.func @weight_as_wide_as_the_batch
// CHECK-DAG: %[[W:.*]] = glimmer.constant dense<{{.*}}> : tensor<2x8xf32>
// CHECK-DAG: %[[POS:.*]] = glimmer.constant dense<{{.*}}> : tensor<2x8x1xf32>
// CHECK-DAG: glimmer.microbatch_slice %[[POS]][%{{.*}}] pieces = 2 dim = 0 : tensor<2x8x1xf32>, tensor<i64> -> tensor<1x8x1xf32>
// CHECK-DAG: glimmer.linear %{{.*}}, %[[W]] : tensor<1x8x8xf32>, tensor<2x8xf32> -> tensor<1x8x2xf32>
// CHECK-NOT: glimmer.microbatch_slice %[[W]]
module attributes {glimmer.spmd = #glimmer.spmd<"microbatches=2">} {
  func.func @weight_as_wide_as_the_batch(%tokens: tensor<2x8xi64>, %table: tensor<16x8xf32>) -> tensor<2x8x2xf32> {
    %w = glimmer.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]]> : tensor<2x8xf32>
    %pos = glimmer.constant dense<[[[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0]], [[0.0], [1.0], [2.0], [3.0], [0.0], [1.0], [2.0], [3.0]]]> : tensor<2x8x1xf32>
    %e = glimmer.embedding %table, %tokens : tensor<16x8xf32>, tensor<2x8xi64> -> tensor<2x8x8xf32>
    %pb = glimmer.broadcast_in_dim %pos dims = [0, 1, 2] : tensor<2x8x1xf32> -> tensor<2x8x8xf32>
    %x = glimmer.add %e, %pb : tensor<2x8x8xf32>
    %y = glimmer.linear %x, %w : tensor<2x8x8xf32>, tensor<2x8xf32> -> tensor<2x8x2xf32>
    return %y : tensor<2x8x2xf32>
  }
}

// -----

// Tensor parallelism alone splits no tokens: nothing to prepare.
// CHECK-LABEL: func.func @tensor_parallel_only
// CHECK-NOT: glimmer.reduce
// CHECK: glimmer.cross_entropy %{{.*}}, %{{.*}} ignore_index = -100 : tensor<16x16xf32>, tensor<16xi64>
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  func.func @tensor_parallel_only(%tokens: tensor<2x8xi64>, %labels: tensor<2x8xi64>, %table: tensor<16x16xf32>) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
    %lf = glimmer.reshape %e : tensor<2x8x16xf32> -> tensor<16x16xf32>
    %lab = glimmer.reshape %labels : tensor<2x8xi64> -> tensor<16xi64>
    %sum, %count = glimmer.cross_entropy %lf, %lab ignore_index = -100 : tensor<16x16xf32>, tensor<16xi64> -> tensor<f32>, tensor<i64>
    %n = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %n : tensor<f32>
    return %loss : tensor<f32>
  }
}
