// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -glimmer-prepare-cp-inputs -glimmer-partition-cp | FileCheck %s

// A one-layer causal attention block with a vision merge and the loss, for
// cp = 2 (T = 8 -> 4 per rank):
// - the indices are built on the full sequence before the permutation;
// - local token tensors have length T/C;
// - no collective feeds vision_gather;
// - K and V are all-gathered on cp, the keys' positions are the full
//   permuted positions;
// - the valid-token count is summed over cp; the loss is a partial sum.
// CHECK-LABEL: func.func @cp_block
// CHECK-SAME: -> (tensor<f32> {glimmer.partial = ["cp"]})
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
// CHECK: %[[SUM:.*]], %[[COUNT:.*]] = glimmer.cross_entropy %{{.*}}, %{{.*}} ignore_index = -100 : tensor<8x16xf32>, tensor<8xi64>
// CHECK: %[[GLOBAL:.*]] = glimmer.all_reduce sum %[[COUNT]] on @mesh ["cp"] : tensor<i64>
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
