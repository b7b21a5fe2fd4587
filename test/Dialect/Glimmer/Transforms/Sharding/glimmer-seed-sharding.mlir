// RUN: glimmer-opt %s -split-input-file -glimmer-seed-sharding | FileCheck %s

// The default plan, read off the graph: Q/K/V reach attention (through the
// reshape to heads and the transpose), so they are column-parallel with
// their biases; the output projection is left to propagation (row-parallel
// from the split heads). GQA: K/V have 2 heads, which tp = 2 divides.
// CHECK-LABEL: func.func @attention_projections
// CHECK-SAME: %arg1: tensor<32x32xf32> {glimmer.param = "layers.0.wq", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg2: tensor<32xf32> {glimmer.param = "layers.0.wq.bias", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}]>}
// CHECK-SAME: %arg3: tensor<16x32xf32> {glimmer.param = "layers.0.wk", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg4: tensor<16x32xf32> {glimmer.param = "layers.0.wv", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg5: tensor<32x32xf32> {glimmer.param = "layers.0.wo"})
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @attention_projections(%x: tensor<2x16x32xf32>,
      %wq: tensor<32x32xf32> {glimmer.param = "layers.0.wq"}, %bq: tensor<32xf32> {glimmer.param = "layers.0.wq.bias"},
      %wk: tensor<16x32xf32> {glimmer.param = "layers.0.wk"}, %wv: tensor<16x32xf32> {glimmer.param = "layers.0.wv"},
      %wo: tensor<32x32xf32> {glimmer.param = "layers.0.wo"}) -> tensor<2x16x32xf32> {
    %q0 = glimmer.linear %x, %wq, %bq : tensor<2x16x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
    %q1 = glimmer.reshape %q0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    %q = glimmer.transpose %q1 permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    %k0 = glimmer.linear %x, %wk : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %k1 = glimmer.reshape %k0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    %k = glimmer.transpose %k1 permutation = [0, 2, 1, 3] : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
    %v0 = glimmer.linear %x, %wv : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %v1 = glimmer.reshape %v0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    %v = glimmer.transpose %v1 permutation = [0, 2, 1, 3] : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
    %o, %lse = glimmer.attention %q, %k, %v scale = 0.35 : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
    %o1 = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
    %o2 = glimmer.reshape %o1 : tensor<2x16x4x8xf32> -> tensor<2x16x32xf32>
    %y = glimmer.linear %o2, %wo : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    return %y : tensor<2x16x32xf32>
  }
}

// -----

// A gated MLP: gate and up read the same input and are multiplied, so both
// are column-parallel (the mix of two sibling projections does not stop the
// walk); down is left to propagation. The residual add after down mixes in
// a value from other projections, so down's output does not make it
// column-parallel.
// CHECK-LABEL: func.func @gated_mlp
// CHECK-SAME: %arg1: tensor<64x32xf32> {glimmer.param = "layers.0.w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg2: tensor<64x32xf32> {glimmer.param = "layers.0.w3", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg3: tensor<32x64xf32> {glimmer.param = "layers.0.w2"}
// CHECK-SAME: %arg4: tensor<32x32xf32> {glimmer.param = "layers.1.wq"}
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @gated_mlp(%x: tensor<8x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "layers.0.w1"}, %w3: tensor<64x32xf32> {glimmer.param = "layers.0.w3"},
      %w2: tensor<32x64xf32> {glimmer.param = "layers.0.w2"}, %wr: tensor<32x32xf32> {glimmer.param = "layers.1.wq"}) -> tensor<8x32xf32> {
    %r = glimmer.linear %x, %wr : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
    %g = glimmer.linear %x, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %s = glimmer.silu %g : tensor<8x64xf32>
    %u = glimmer.linear %x, %w3 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %h = glimmer.mul %s, %u : tensor<8x64xf32>
    %d = glimmer.linear %h, %w2 : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    %y = glimmer.add %r, %d : tensor<8x32xf32>
    return %y : tensor<8x32xf32>
  }
}

// -----

// Only pipeline stages: nothing to seed.
// CHECK-LABEL: func.func @nothing_split
// CHECK-SAME: %arg1: tensor<64x32xf32> {glimmer.param = "w1"})
// CHECK-NOT: glimmer.sharding_constraint
module attributes {glimmer.spmd = #glimmer.spmd<"pp=2">} {
  func.func @nothing_split(%x: tensor<8x32xf32>, %w1: tensor<64x32xf32> {glimmer.param = "w1"}) -> tensor<8x64xf32> {
    %g = glimmer.linear %x, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %s = glimmer.silu %g : tensor<8x64xf32>
    return %s : tensor<8x64xf32>
  }
}

// -----

// Token splits (dp_shard = 2, cp = 2, after glimmer-prepare-cp-inputs): each
// value computed from integer inputs is constrained where the model reads
// it, its batch over dp_shard and its sequence over cp: the permuted token
// ids of the embedding, the permuted vision indices, the queries'
// positions. The keys' positions are not (the keys span the whole
// sequence), and the parameters get no seed (no tp).
// CHECK-LABEL: func.func @token_split_seeds
// CHECK: %[[T:.*]] = glimmer.cp_permute %arg0
// CHECK-NEXT: %[[TS:.*]] = glimmer.sharding_constraint %[[T]] <@mesh, [{"dp_shard"}, {"cp"}]> {glimmer.token_split} : tensor<2x8xi64>
// CHECK: glimmer.embedding %arg1, %[[TS]]
// CHECK: %[[I:.*]] = glimmer.cp_permute %{{.*}}
// CHECK-NEXT: %[[IS:.*]] = glimmer.sharding_constraint %[[I]] <@mesh, [{"dp_shard"}, {"cp"}]> {glimmer.token_split}
// CHECK: glimmer.vision_gather %{{.*}}, %arg2, %[[IS]]
// CHECK: %[[P:.*]] = glimmer.cp_permute %{{.*}}
// CHECK-NEXT: %[[PS:.*]] = glimmer.sharding_constraint %[[P]] <@mesh, [{"dp_shard"}, {"cp"}]> {glimmer.token_split}
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} positions(%[[PS]], %[[P]] : tensor<2x8xi64>, tensor<2x8xi64>) causal
// CHECK-NOT: glimmer.sharding =
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
  func.func @token_split_seeds(%tokens: tensor<2x8xi64>, %table: tensor<16x4xf32> {glimmer.param = "emb"},
                               %bank: tensor<3x4xf32>) -> tensor<2x1x8x4xf32> {
    %t = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
    %e = glimmer.embedding %table, %t : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 15 : tensor<2x8xi64>
    %ip = glimmer.cp_permute %idx dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
    %h = glimmer.vision_gather %e, %bank, %ip : tensor<2x8x4xf32>, tensor<3x4xf32>, tensor<2x8xi64>
    %pos = glimmer.iota dim = 1 : tensor<2x8xi64>
    %pp = glimmer.cp_permute %pos dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
    %q = glimmer.reshape %h : tensor<2x8x4xf32> -> tensor<2x1x8x4xf32>
    %o, %lse = glimmer.attention %q, %q, %q positions(%pp, %pp : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.5 : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> -> tensor<2x1x8x4xf32>, tensor<2x1x8xf32>
    return %o : tensor<2x1x8x4xf32>
  }
}

// -----

// Sequence parallelism: the residual add that takes a row-parallel output
// (the first projection the column-parallel one reaches) is split along the
// sequence, and the column-parallel input is whole; both constraints are
// marked for propagation to rank them below the TP plan. The norm in
// between is spelled out (pow/mean/rsqrt, as Hugging Face models do): the
// residual stream is found from the plan, not from norm ops.
// CHECK-LABEL: func.func @sequence_parallel_constraints
// CHECK: %[[X:.*]] = glimmer.sharding_constraint %arg0 <@mesh, [{}, {}, {}]> {glimmer.sequence_parallel}
// CHECK: glimmer.linear %[[X]], %arg1
// CHECK: %[[R:.*]] = glimmer.add %arg0, %{{.*}} : tensor<2x16x32xf32>
// CHECK: %[[S:.*]] = glimmer.sharding_constraint %[[R]] <@mesh, [{}, {"tp"}, {}]> {glimmer.sequence_parallel}
// CHECK: glimmer.mul %[[S]], %[[S]]
// CHECK: return %[[S]]
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2,sp">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @sequence_parallel_constraints(%x: tensor<2x16x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "w1"}, %w2: tensor<32x64xf32> {glimmer.param = "w2"}) -> tensor<2x16x32xf32> {
    %h = glimmer.linear %x, %w1 : tensor<2x16x32xf32>, tensor<64x32xf32> -> tensor<2x16x64xf32>
    %a = glimmer.gelu %h : tensor<2x16x64xf32>
    %y = glimmer.linear %a, %w2 : tensor<2x16x64xf32>, tensor<32x64xf32> -> tensor<2x16x32xf32>
    %r = glimmer.add %x, %y : tensor<2x16x32xf32>
    %sq = glimmer.mul %r, %r : tensor<2x16x32xf32>
    return %r : tensor<2x16x32xf32>
  }
}

// -----

// The default plan's vocabulary splits: the token embedding (ids are a data
// input, seen through the CP permutation and the sequence split) and the
// output projection (its logits reach cross_entropy through a reshape) are
// split by rows over tp. A position table read with ids from a buffer stays
// replicated.
// CHECK-LABEL: func.func @vocab_parallel_defaults
// CHECK-SAME: %arg1: tensor<64x32xf32> {glimmer.param = "tok_embeddings.weight", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg2: tensor<16x32xf32> {glimmer.param = "pos_table"},
// CHECK-SAME: %arg4: tensor<64x32xf32> {glimmer.param = "output.weight", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2,cp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=2, "pp"=1]>
  func.func @vocab_parallel_defaults(%tokens: tensor<2x16xi64> {glimmer.input = "tokens"},
      %tok: tensor<64x32xf32> {glimmer.param = "tok_embeddings.weight"}, %pos: tensor<16x32xf32> {glimmer.param = "pos_table"},
      %pids: tensor<2x8xi64> {glimmer.buffer = "pos_ids"}, %wout: tensor<64x32xf32> {glimmer.param = "output.weight"},
      %labels: tensor<16xi64>) -> tensor<f32> {
    %p = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = head_tail : tensor<2x16xi64>
    %ids = glimmer.local_shard %p on @mesh ["cp"] dim = 1 : tensor<2x16xi64> -> tensor<2x8xi64>
    %e = glimmer.embedding %tok, %ids : tensor<64x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
    %q = glimmer.embedding %pos, %pids : tensor<16x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
    %h = glimmer.add %e, %q : tensor<2x8x32xf32>
    %logits = glimmer.linear %h, %wout : tensor<2x8x32xf32>, tensor<64x32xf32> -> tensor<2x8x64xf32>
    %flat = glimmer.reshape %logits : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %sum, %count = glimmer.cross_entropy %flat, %labels ignore_index = -100 : tensor<16x64xf32>, tensor<16xi64> -> tensor<f32>, tensor<i64>
    return %sum : tensor<f32>
  }
}

// -----

// GQA with fewer key/value heads (2) than tp (4): the key/value projections
// stay replicated, and each key/value head is repeated tp / 2 times before
// the attention, whose tp heads of each then split over tp (query head h
// still reads key/value head h / 2).
// CHECK-LABEL: func.func @replicated_key_value_heads
// CHECK-SAME: %arg1: tensor<32x32xf32> {glimmer.param = "layers.0.wq", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg2: tensor<16x32xf32> {glimmer.param = "layers.0.wk"},
// CHECK-SAME: %arg3: tensor<16x32xf32> {glimmer.param = "layers.0.wv"})
// CHECK: %[[K:.*]] = glimmer.transpose %{{.*}} : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
// CHECK: %[[V:.*]] = glimmer.transpose %{{.*}} : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
// CHECK: %[[KB:.*]] = glimmer.broadcast_in_dim %[[K]] dims = [0, 1, 3, 4] : tensor<2x2x16x8xf32> -> tensor<2x2x2x16x8xf32>
// CHECK: %[[KR:.*]] = glimmer.reshape %[[KB]] : tensor<2x2x2x16x8xf32> -> tensor<2x4x16x8xf32>
// CHECK: %[[VB:.*]] = glimmer.broadcast_in_dim %[[V]] dims = [0, 1, 3, 4] : tensor<2x2x16x8xf32> -> tensor<2x2x2x16x8xf32>
// CHECK: %[[VR:.*]] = glimmer.reshape %[[VB]] : tensor<2x2x2x16x8xf32> -> tensor<2x4x16x8xf32>
// CHECK: glimmer.attention %{{.*}}, %[[KR]], %[[VR]] scale = 3.500000e-01 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"tp=4">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=4, "pp"=1]>
  func.func @replicated_key_value_heads(%x: tensor<2x16x32xf32>,
      %wq: tensor<32x32xf32> {glimmer.param = "layers.0.wq"},
      %wk: tensor<16x32xf32> {glimmer.param = "layers.0.wk"}, %wv: tensor<16x32xf32> {glimmer.param = "layers.0.wv"}) -> tensor<2x4x16x8xf32> {
    %q0 = glimmer.linear %x, %wq : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %q1 = glimmer.reshape %q0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    %q = glimmer.transpose %q1 permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    %k0 = glimmer.linear %x, %wk : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %k1 = glimmer.reshape %k0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    %k = glimmer.transpose %k1 permutation = [0, 2, 1, 3] : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
    %v0 = glimmer.linear %x, %wv : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %v1 = glimmer.reshape %v0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    %v = glimmer.transpose %v1 permutation = [0, 2, 1, 3] : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
    %o, %lse = glimmer.attention %q, %k, %v scale = 0.35 : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
    return %o : tensor<2x4x16x8xf32>
  }
}

// -----

// Sequence parallelism with context parallelism (cp = 2, tp = 2): the
// residual stream's sequence is split over cp x tp (tp minor), and the
// column-parallel input is whole over tp only: its sequence stays split
// over cp.
// CHECK-LABEL: func.func @sequence_parallel_under_cp
// CHECK: %[[X:.*]] = glimmer.sharding_constraint %{{.*}} <@mesh, [{}, {"cp"}, {}]> {glimmer.sequence_parallel}
// CHECK: glimmer.linear %[[X]], %arg2
// CHECK: %[[R:.*]] = glimmer.add
// CHECK: glimmer.sharding_constraint %[[R]] <@mesh, [{}, {"cp", "tp"}, {}]> {glimmer.sequence_parallel}
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2,tp=2,sp">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=2, "pp"=1]>
  func.func @sequence_parallel_under_cp(%tokens: tensor<2x16xi64>, %table: tensor<64x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "w1"}, %w2: tensor<32x64xf32> {glimmer.param = "w2"}) -> tensor<2x16x32xf32> {
    %t = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = head_tail : tensor<2x16xi64>
    %x = glimmer.embedding %table, %t : tensor<64x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    %h = glimmer.linear %x, %w1 : tensor<2x16x32xf32>, tensor<64x32xf32> -> tensor<2x16x64xf32>
    %a = glimmer.gelu %h : tensor<2x16x64xf32>
    %y = glimmer.linear %a, %w2 : tensor<2x16x64xf32>, tensor<32x64xf32> -> tensor<2x16x32xf32>
    %r = glimmer.add %x, %y : tensor<2x16x32xf32>
    return %r : tensor<2x16x32xf32>
  }
}
