// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -glimmer-prepare-batch -glimmer-prepare-cp-inputs -glimmer-seed-sharding -glimmer-propagate-sharding -glimmer-partition | FileCheck %s

// The token splits on the engine, from the global view: the seeds cut each
// value computed from integer inputs where the model reads it (a local
// slice of what every rank holds), and propagation and the partitioner do
// the rest.

// A one-layer causal attention block with a vision merge and the loss, for
// cp = 2 (T = 8 -> 4 per rank):
// - the indices are built on the full sequence before the permutation;
// - local token tensors have length T/C;
// - no collective feeds vision_gather;
// - K and V are all-gathered on cp (attention's rule needs the keys'
//   sequence whole), the keys' positions are the full permuted positions;
// - the valid-token count is taken on the full labels, in sequence order
//   (no collective, no permutation), and the loss on the unflattened
//   tokens; the loss is a partial sum, returned as one.
// CHECK-LABEL: func.func @cp_block
// CHECK-SAME: -> (tensor<f32> {glimmer.partial = ["cp"]})
// CHECK: %[[LP:.*]] = glimmer.cp_permute %arg1 dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
// CHECK: %[[LL:.*]] = glimmer.local_shard %[[LP]] on @mesh ["cp"] dim = 1 : tensor<2x8xi64> -> tensor<2x4xi64>
// CHECK: %[[TP:.*]] = glimmer.cp_permute %arg0 dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
// CHECK: %[[TL:.*]] = glimmer.local_shard %[[TP]] on @mesh ["cp"] dim = 1 : tensor<2x8xi64> -> tensor<2x4xi64>
// CHECK: %[[E:.*]] = glimmer.embedding %arg2, %[[TL]] : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
// CHECK: %[[IDX:.*]] = glimmer.vision_bank_indices %arg0 image_token_id = 15 : tensor<2x8xi64>
// CHECK: %[[IP:.*]] = glimmer.cp_permute %[[IDX]]
// CHECK: %[[IL:.*]] = glimmer.local_shard %[[IP]] on @mesh ["cp"] dim = 1 : tensor<2x8xi64> -> tensor<2x4xi64>
// CHECK-NOT: glimmer.all_gather
// CHECK: %[[H:.*]] = glimmer.vision_gather %[[E]], %arg3, %[[IL]] : tensor<2x4x8xf32>, tensor<3x8xf32>, tensor<2x4xi64>
// CHECK: %[[POS:.*]] = glimmer.cp_permute %{{.*}} dim = 1 cp = 2
// CHECK: %[[QPOS:.*]] = glimmer.local_shard %[[POS]] on @mesh ["cp"] dim = 1 : tensor<2x8xi64> -> tensor<2x4xi64>
// CHECK: %[[K:.*]] = glimmer.all_gather %{{.*}} on @mesh ["cp"] dim = 2 : tensor<2x2x4x4xf32> -> tensor<2x2x8x4xf32>
// CHECK: %[[V:.*]] = glimmer.all_gather %{{.*}} on @mesh ["cp"] dim = 2 : tensor<2x2x4x4xf32> -> tensor<2x2x8x4xf32>
// CHECK: glimmer.attention %{{.*}}, %[[K]], %[[V]] positions(%[[QPOS]], %[[POS]] : tensor<2x4xi64>, tensor<2x8xi64>) causal
// CHECK: %[[VALID:.*]] = glimmer.compare ne, %{{.*}}, %{{.*}} : tensor<16xi64>
// CHECK: %[[V64:.*]] = glimmer.convert %[[VALID]] : tensor<16xi1> to tensor<16xi64>
// CHECK: %[[GLOBAL:.*]] = glimmer.reduce sum %[[V64]] dims = [0] : tensor<16xi64> -> tensor<i64>
// CHECK: %[[SUM:.*]], %{{.*}} = glimmer.cross_entropy %{{.*}}, %[[LL]] ignore_index = -100 : tensor<2x4x16xf32>, tensor<2x4xi64>
// CHECK-NOT: glimmer.all_reduce
// CHECK: %[[N:.*]] = glimmer.convert %[[GLOBAL]]
// CHECK: %[[LOSS:.*]] = glimmer.div %[[SUM]], %[[N]]
// CHECK: return %[[LOSS]]
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @cp_block(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %labels: tensor<2x8xi64> {glimmer.input = "labels"},
                      %table: tensor<16x8xf32> {glimmer.param = "emb"}, %bank: tensor<3x8xf32>,
                      %wq: tensor<8x8xf32> {glimmer.param = "wq"}, %wk: tensor<8x8xf32> {glimmer.param = "wk"},
                      %wv: tensor<8x8xf32> {glimmer.param = "wv"}, %head: tensor<16x8xf32> {glimmer.param = "head"}) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x8xf32>, tensor<2x8xi64> -> tensor<2x8x8xf32>
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 15 : tensor<2x8xi64>
    %h = glimmer.vision_gather %e, %bank, %idx : tensor<2x8x8xf32>, tensor<3x8xf32>, tensor<2x8xi64>
    %pos = glimmer.iota dim = 1 : tensor<2x8xi64>
    %q0 = glimmer.linear %h, %wq : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
    %k0 = glimmer.linear %h, %wk : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
    %v0 = glimmer.linear %h, %wv : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
    %q1 = glimmer.reshape %q0 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %k1 = glimmer.reshape %k0 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %v1 = glimmer.reshape %v0 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %q = glimmer.transpose %q1 permutation = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %k = glimmer.transpose %k1 permutation = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %v = glimmer.transpose %v1 permutation = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %o, %lse = glimmer.attention %q, %k, %v positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.5 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
    %o1 = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<2x2x8x4xf32> -> tensor<2x8x2x4xf32>
    %o2 = glimmer.reshape %o1 : tensor<2x8x2x4xf32> -> tensor<2x8x8xf32>
    %logits = glimmer.linear %o2, %head : tensor<2x8x8xf32>, tensor<16x8xf32> -> tensor<2x8x16xf32>
    %lf = glimmer.reshape %logits : tensor<2x8x16xf32> -> tensor<16x16xf32>
    %lab = glimmer.reshape %labels : tensor<2x8xi64> -> tensor<16xi64>
    %sum, %count = glimmer.cross_entropy %lf, %lab ignore_index = -100 : tensor<16x16xf32>, tensor<16xi64> -> tensor<f32>, tensor<i64>
    %n = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %n : tensor<f32>
    return %loss : tensor<f32>
  }
}


// -----

// Data parallelism alone (dp_shard = 2, B = 4 -> 2 samples per rank): no
// permutation; the integer-derived values are computed on the full batch
// and cut to the rank's samples (dim 0 over dp_shard) where they enter the
// model:
// - the vision-bank indices are built from all tokens before the cut, so
//   they stay global rows of the replicated bank; no collective feeds
//   vision_gather;
// - the norm weight broadcast and the splat are computed at the local
//   shape (not sliced: the weight's gradient must not be counted once per
//   rank);
// - attention needs no collective (samples are independent);
// - the valid-token count is taken on the full labels; the loss is
//   partial over dp_shard.
// CHECK-LABEL: func.func @dp_block
// CHECK-SAME: -> (tensor<f32> {glimmer.partial = ["dp_shard"]})
// CHECK: %[[LL:.*]] = glimmer.local_shard %arg1 on @mesh ["dp_shard"] dim = 0 : tensor<4x8xi64> -> tensor<2x8xi64>
// CHECK: %[[TL:.*]] = glimmer.local_shard %arg0 on @mesh ["dp_shard"] dim = 0 : tensor<4x8xi64> -> tensor<2x8xi64>
// CHECK: %[[E:.*]] = glimmer.embedding %arg2, %[[TL]] : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
// CHECK: %[[IDX:.*]] = glimmer.vision_bank_indices %arg0 image_token_id = 15 : tensor<4x8xi64>
// CHECK-NEXT: %[[IL:.*]] = glimmer.local_shard %[[IDX]] on @mesh ["dp_shard"] dim = 0 : tensor<4x8xi64> -> tensor<2x8xi64>
// CHECK-NEXT: %[[H:.*]] = glimmer.vision_gather %[[E]], %arg3, %[[IL]] : tensor<2x8x4xf32>, tensor<3x4xf32>, tensor<2x8xi64>
// CHECK: %[[W:.*]] = glimmer.broadcast_in_dim %arg4 dims = [2] : tensor<4xf32> -> tensor<2x8x4xf32>
// CHECK: glimmer.constant dense<9.99999974E-6> : tensor<2x8x4xf32>
// CHECK: glimmer.mul %[[H]], %[[W]] : tensor<2x8x4xf32>
// CHECK: %[[POS:.*]] = glimmer.iota dim = 1 : tensor<4x8xi64>
// CHECK-NEXT: %[[PL:.*]] = glimmer.local_shard %[[POS]] on @mesh ["dp_shard"] dim = 0 : tensor<4x8xi64> -> tensor<2x8xi64>
// CHECK-NOT: glimmer.all_gather
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} positions(%[[PL]], %[[PL]] : tensor<2x8xi64>, tensor<2x8xi64>) causal
// CHECK: %[[LAB:.*]] = glimmer.reshape %arg1 : tensor<4x8xi64> -> tensor<32xi64>
// CHECK: %[[VALID:.*]] = glimmer.compare ne, %[[LAB]], %{{.*}} : tensor<32xi64>
// CHECK: %[[SUM:.*]], %{{.*}} = glimmer.cross_entropy %{{.*}}, %[[LL]] ignore_index = -100 : tensor<2x8x16xf32>, tensor<2x8xi64>
// CHECK-NOT: glimmer.all_reduce
// CHECK: return
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  func.func @dp_block(%tokens: tensor<4x8xi64> {glimmer.input = "tokens"}, %labels: tensor<4x8xi64> {glimmer.input = "labels"},
                      %table: tensor<16x4xf32> {glimmer.param = "emb"}, %bank: tensor<3x4xf32>,
                      %norm: tensor<4xf32> {glimmer.param = "norm"}, %head: tensor<16x4xf32> {glimmer.param = "head"}) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x4xf32>, tensor<4x8xi64> -> tensor<4x8x4xf32>
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 15 : tensor<4x8xi64>
    %h = glimmer.vision_gather %e, %bank, %idx : tensor<4x8x4xf32>, tensor<3x4xf32>, tensor<4x8xi64>
    %w = glimmer.broadcast_in_dim %norm dims = [2] : tensor<4xf32> -> tensor<4x8x4xf32>
    %eps = glimmer.constant dense<1.0e-05> : tensor<4x8x4xf32>
    %n0 = glimmer.mul %h, %w : tensor<4x8x4xf32>
    %n = glimmer.add %n0, %eps : tensor<4x8x4xf32>
    %pos = glimmer.iota dim = 1 : tensor<4x8xi64>
    %q = glimmer.reshape %n : tensor<4x8x4xf32> -> tensor<4x1x8x4xf32>
    %o, %lse = glimmer.attention %q, %q, %q positions(%pos, %pos : tensor<4x8xi64>, tensor<4x8xi64>) causal scale = 0.5 : tensor<4x1x8x4xf32>, tensor<4x1x8x4xf32> -> tensor<4x1x8x4xf32>, tensor<4x1x8xf32>
    %o1 = glimmer.reshape %o : tensor<4x1x8x4xf32> -> tensor<4x8x4xf32>
    %logits = glimmer.linear %o1, %head : tensor<4x8x4xf32>, tensor<16x4xf32> -> tensor<4x8x16xf32>
    %lf = glimmer.reshape %logits : tensor<4x8x16xf32> -> tensor<32x16xf32>
    %lab = glimmer.reshape %labels : tensor<4x8xi64> -> tensor<32xi64>
    %sum, %count = glimmer.cross_entropy %lf, %lab ignore_index = -100 : tensor<32x16xf32>, tensor<32xi64> -> tensor<f32>, tensor<i64>
    %c = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %c : tensor<f32>
    return %loss : tensor<f32>
  }
}


// -----

// Both data-parallel axes (dp_replicate = 2, dp_shard = 2): the batch is cut
// over both, in mesh order, and the loss is partial over both.
// CHECK-LABEL: func.func @hsdp_batch
// CHECK-SAME: -> (tensor<f32> {glimmer.partial = ["dp_replicate", "dp_shard"]})
// CHECK: glimmer.local_shard %arg1 on @mesh ["dp_replicate", "dp_shard"] dim = 0 : tensor<4x8xi64> -> tensor<1x8xi64>
// CHECK: glimmer.local_shard %arg0 on @mesh ["dp_replicate", "dp_shard"] dim = 0 : tensor<4x8xi64> -> tensor<1x8xi64>
// CHECK: glimmer.reduce sum %{{.*}} dims = [0] : tensor<32xi64> -> tensor<i64>
// CHECK-NOT: glimmer.all_reduce
module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2,dp_shard=2">} {
  func.func @hsdp_batch(%tokens: tensor<4x8xi64> {glimmer.input = "tokens"}, %labels: tensor<4x8xi64> {glimmer.input = "labels"},
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

// FSDP-style layout dp_shard = 2 with cp = 2 on the CP block above (B = 2 ->
// one sample per rank, T = 8 -> 4 tokens per rank): each permuted value is
// cut to the rank's sample (dim 0 over dp_shard) and its sequence slice
// (dim 1 over cp); the indices are built on the full batch and sequence
// before both; the attention keys' positions are the rank's sample's full
// permuted positions; K and V are gathered over cp only; the loss is
// partial over every token axis.
// CHECK-LABEL: func.func @dp_cp_block
// CHECK-SAME: -> (tensor<f32> {glimmer.partial = ["dp_shard", "cp"]})
// CHECK: %[[TP:.*]] = glimmer.cp_permute %arg0 dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
// CHECK-NEXT: %[[TB:.*]] = glimmer.local_shard %[[TP]] on @mesh ["dp_shard"] dim = 0 : tensor<2x8xi64> -> tensor<1x8xi64>
// CHECK-NEXT: %[[TL:.*]] = glimmer.local_shard %[[TB]] on @mesh ["cp"] dim = 1 : tensor<1x8xi64> -> tensor<1x4xi64>
// CHECK: %[[E:.*]] = glimmer.embedding %arg2, %[[TL]] : tensor<16x8xf32>, tensor<1x4xi64> -> tensor<1x4x8xf32>
// CHECK: %[[IDX:.*]] = glimmer.vision_bank_indices %arg0 image_token_id = 15 : tensor<2x8xi64>
// CHECK-NEXT: %[[IP:.*]] = glimmer.cp_permute %[[IDX]]
// CHECK-NEXT: %[[IB:.*]] = glimmer.local_shard %[[IP]] on @mesh ["dp_shard"] dim = 0 : tensor<2x8xi64> -> tensor<1x8xi64>
// CHECK-NEXT: %[[IL:.*]] = glimmer.local_shard %[[IB]] on @mesh ["cp"] dim = 1 : tensor<1x8xi64> -> tensor<1x4xi64>
// CHECK-NEXT: glimmer.vision_gather %[[E]], %arg3, %[[IL]] : tensor<1x4x8xf32>, tensor<3x8xf32>, tensor<1x4xi64>
// CHECK: %[[POS:.*]] = glimmer.cp_permute %{{.*}} dim = 1 cp = 2
// CHECK-NEXT: %[[QB:.*]] = glimmer.local_shard %[[POS]] on @mesh ["dp_shard"] dim = 0 : tensor<2x8xi64> -> tensor<1x8xi64>
// CHECK-NEXT: %[[QPOS:.*]] = glimmer.local_shard %[[QB]] on @mesh ["cp"] dim = 1 : tensor<1x8xi64> -> tensor<1x4xi64>
// CHECK: %[[K:.*]] = glimmer.all_gather %{{.*}} on @mesh ["cp"] dim = 2 : tensor<1x2x4x4xf32> -> tensor<1x2x8x4xf32>
// CHECK: %[[V:.*]] = glimmer.all_gather %{{.*}} on @mesh ["cp"] dim = 2 : tensor<1x2x4x4xf32> -> tensor<1x2x8x4xf32>
// CHECK: %[[KPOS:.*]] = glimmer.local_shard %[[POS]] on @mesh ["dp_shard"] dim = 0 : tensor<2x8xi64> -> tensor<1x8xi64>
// CHECK: glimmer.attention %{{.*}}, %[[K]], %[[V]] positions(%[[QPOS]], %[[KPOS]] : tensor<1x4xi64>, tensor<1x8xi64>) causal
// CHECK: glimmer.reduce sum %{{.*}} dims = [0] : tensor<16xi64> -> tensor<i64>
// CHECK: %[[SUM:.*]], %{{.*}} = glimmer.cross_entropy %{{.*}}, %{{.*}} ignore_index = -100 : tensor<1x4x16xf32>, tensor<1x4xi64>
// CHECK-NOT: glimmer.all_reduce
// CHECK: return
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">} {
  func.func @dp_cp_block(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %labels: tensor<2x8xi64> {glimmer.input = "labels"},
                      %table: tensor<16x8xf32> {glimmer.param = "emb"}, %bank: tensor<3x8xf32>,
                      %wq: tensor<8x8xf32> {glimmer.param = "wq"}, %wk: tensor<8x8xf32> {glimmer.param = "wk"},
                      %wv: tensor<8x8xf32> {glimmer.param = "wv"}, %head: tensor<16x8xf32> {glimmer.param = "head"}) -> tensor<f32> {
    %e = glimmer.embedding %table, %tokens : tensor<16x8xf32>, tensor<2x8xi64> -> tensor<2x8x8xf32>
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 15 : tensor<2x8xi64>
    %h = glimmer.vision_gather %e, %bank, %idx : tensor<2x8x8xf32>, tensor<3x8xf32>, tensor<2x8xi64>
    %pos = glimmer.iota dim = 1 : tensor<2x8xi64>
    %q0 = glimmer.linear %h, %wq : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
    %k0 = glimmer.linear %h, %wk : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
    %v0 = glimmer.linear %h, %wv : tensor<2x8x8xf32>, tensor<8x8xf32> -> tensor<2x8x8xf32>
    %q1 = glimmer.reshape %q0 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %k1 = glimmer.reshape %k0 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %v1 = glimmer.reshape %v0 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %q = glimmer.transpose %q1 permutation = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %k = glimmer.transpose %k1 permutation = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %v = glimmer.transpose %v1 permutation = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %o, %lse = glimmer.attention %q, %k, %v positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.5 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
    %o1 = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<2x2x8x4xf32> -> tensor<2x8x2x4xf32>
    %o2 = glimmer.reshape %o1 : tensor<2x8x2x4xf32> -> tensor<2x8x8xf32>
    %logits = glimmer.linear %o2, %head : tensor<2x8x8xf32>, tensor<16x8xf32> -> tensor<2x8x16xf32>
    %lf = glimmer.reshape %logits : tensor<2x8x16xf32> -> tensor<16x16xf32>
    %lab = glimmer.reshape %labels : tensor<2x8xi64> -> tensor<16xi64>
    %sum, %count = glimmer.cross_entropy %lf, %lab ignore_index = -100 : tensor<16x16xf32>, tensor<16xi64> -> tensor<f32>, tensor<i64>
    %n = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %n : tensor<f32>
    return %loss : tensor<f32>
  }
}


// -----

// Regression: without cp, the values cut to the rank's samples are those
// whose dimension 0 is the batch by the ops' rules, not by size. A constant
// [2, 8] weight of a batch of 2 sequences of 8 tokens (its 2 output
// features) stays whole; the folded position table [2, 8, 1] that is added
// to the activations is cut to the rank's sample. The result, split over
// the batch, leaves the function whole (gathered).
// CHECK-LABEL: func.func @weight_as_wide_as_the_batch
// CHECK-DAG: %[[W:.*]] = glimmer.constant dense<{{.*}}> : tensor<2x8xf32>
// CHECK-DAG: %[[POS:.*]] = glimmer.constant dense<{{.*}}> : tensor<2x8x1xf32>
// CHECK-DAG: glimmer.local_shard %[[POS]] on @mesh ["dp_shard"] dim = 0 : tensor<2x8x1xf32> -> tensor<1x8x1xf32>
// CHECK-DAG: glimmer.linear %{{.*}}, %[[W]] : tensor<1x8x8xf32>, tensor<2x8xf32> -> tensor<1x8x2xf32>
// CHECK-NOT: glimmer.local_shard %[[W]]
// CHECK: glimmer.all_gather %{{.*}} on @mesh ["dp_shard"] dim = 0 : tensor<1x8x2xf32> -> tensor<2x8x2xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
  func.func @weight_as_wide_as_the_batch(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %table: tensor<16x8xf32> {glimmer.param = "emb"}) -> tensor<2x8x2xf32> {
    %w = glimmer.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]]> : tensor<2x8xf32>
    %pos = glimmer.constant dense<[[[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0]], [[0.0], [1.0], [2.0], [3.0], [0.0], [1.0], [2.0], [3.0]]]> : tensor<2x8x1xf32>
    %e = glimmer.embedding %table, %tokens : tensor<16x8xf32>, tensor<2x8xi64> -> tensor<2x8x8xf32>
    %pb = glimmer.broadcast_in_dim %pos dims = [0, 1, 2] : tensor<2x8x1xf32> -> tensor<2x8x8xf32>
    %x = glimmer.add %e, %pb : tensor<2x8x8xf32>
    %y = glimmer.linear %x, %w : tensor<2x8x8xf32>, tensor<2x8xf32> -> tensor<2x8x2xf32>
    return %y : tensor<2x8x2xf32>
  }
}
