// RUN: glimmer-opt %s -split-input-file -glimmer-propagate-sharding | FileCheck %s
// RUN: glimmer-opt %s -split-input-file -glimmer-propagate-sharding=report-conflicts=true -verify-diagnostics -o /dev/null

// Megatron's MLP from the parameter plan alone: the column-parallel weight
// splits the hidden features, silu keeps them split, and the row-parallel
// weight turns its output into a partial sum over tp.
// CHECK-LABEL: func.func @mlp_column_then_row_parallel
// CHECK-SAME: -> (tensor<8x32xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{}, {}], partial = ["tp"]>})
// CHECK: glimmer.linear %arg0, %arg1 {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {"tp"}]>]}
// CHECK: glimmer.silu %{{.*}} {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {"tp"}]>]}
// CHECK: glimmer.linear %{{.*}}, %arg2 {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {}], partial = ["tp"]>]}
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @mlp_column_then_row_parallel(%x: tensor<8x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %w2: tensor<32x64xf32> {glimmer.param = "w2", glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8x32xf32> {
    %h = glimmer.linear %x, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %a = glimmer.silu %h : tensor<8x64xf32>
    %y = glimmer.linear %a, %w2 : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    return %y : tensor<8x32xf32>
  }
}

// -----

// Heads through reshape and transpose: the column-parallel Q projection
// splits the hidden features, the reshape to [B, T, heads, head_dim] puts
// the split on the heads (the major factor), attention keeps heads split,
// the merge back and the row-parallel output projection give a partial sum.
// K/V come from the same plan; keys stay whole along their sequence.
// CHECK-LABEL: func.func @attention_heads_over_tp
// CHECK: glimmer.reshape %{{.*}} {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {}, {"tp"}, {}]>]} : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
// CHECK: glimmer.transpose %{{.*}} {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {"tp"}, {}, {}]>]}
// CHECK: glimmer.attention {{.*}}{glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {"tp"}, {}, {}]>, #glimmer.sharding<@mesh, [{}, {"tp"}, {}]>]}
// CHECK: glimmer.reshape %{{.*}} {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {}, {"tp"}]>]} : tensor<2x16x4x8xf32> -> tensor<2x16x32xf32>
// CHECK: glimmer.linear %{{.*}}, %arg4 {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {}, {}], partial = ["tp"]>]}
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @attention_heads_over_tp(%x: tensor<2x16x32xf32>,
      %wq: tensor<32x32xf32> {glimmer.param = "wq", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %wk: tensor<32x32xf32> {glimmer.param = "wk", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %wv: tensor<32x32xf32> {glimmer.param = "wv", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %wo: tensor<32x32xf32> {glimmer.param = "wo", glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<2x16x32xf32> {
    %q0 = glimmer.linear %x, %wq : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %q1 = glimmer.reshape %q0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    %q = glimmer.transpose %q1 permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    %k0 = glimmer.linear %x, %wk : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %k1 = glimmer.reshape %k0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    %k = glimmer.transpose %k1 permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    %v0 = glimmer.linear %x, %wv : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %v1 = glimmer.reshape %v0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    %v = glimmer.transpose %v1 permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    %o, %lse = glimmer.attention %q, %k, %v scale = 0.35 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
    %o1 = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
    %o2 = glimmer.reshape %o1 : tensor<2x16x4x8xf32> -> tensor<2x16x32xf32>
    %y = glimmer.linear %o2, %wo : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    return %y : tensor<2x16x32xf32>
  }
}

// -----

// Data inputs: the batch split of the token ids flows through the embedding
// into the activations, and combines with the tensor-parallel split of the
// features (two axes on two dimensions of one value).
// CHECK-LABEL: func.func @data_parallel_tokens_with_tp
// CHECK: glimmer.embedding %arg1, %arg0 {glimmer.shardings = [#glimmer.sharding<@mesh, [{"dp_shard"}, {}, {}]>]}
// CHECK: glimmer.linear %{{.*}}, %arg2 {glimmer.shardings = [#glimmer.sharding<@mesh, [{"dp_shard"}, {}, {"tp"}]>]}
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=2, "pp"=1]>
  func.func @data_parallel_tokens_with_tp(
      %tokens: tensor<4x16xi64> {glimmer.input = "tokens", glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {}]>},
      %table: tensor<64x32xf32> {glimmer.param = "tok_embeddings.weight"},
      %w: tensor<64x32xf32> {glimmer.param = "w", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<4x16x64xf32> {
    %e = glimmer.embedding %table, %tokens : tensor<64x32xf32>, tensor<4x16xi64> -> tensor<4x16x32xf32>
    %h = glimmer.linear %e, %w : tensor<4x16x32xf32>, tensor<64x32xf32> -> tensor<4x16x64xf32>
    return %h : tensor<4x16x64xf32>
  }
}

// -----

// Backward: a constraint on a GEMM's output shards the weight that produces
// it (the weight has no seed of its own) and the bias with it.
// CHECK-LABEL: func.func @constraint_shards_weight_backward
// CHECK-SAME: %arg1: tensor<64x32xf32> {glimmer.param = "w", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg2: tensor<64xf32> {glimmer.param = "b", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}]>}
// CHECK: glimmer.linear %arg0, %arg1, %arg2 {glimmer.shardings = [#glimmer.sharding<@mesh, [{}, {"tp"}]>]}
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @constraint_shards_weight_backward(%x: tensor<8x32xf32>,
      %w: tensor<64x32xf32> {glimmer.param = "w"}, %b: tensor<64xf32> {glimmer.param = "b"}) -> tensor<8x64xf32> {
    %h = glimmer.linear %x, %w, %b : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
    %c = glimmer.sharding_constraint %h <@mesh, [{}, {"tp"}]> : tensor<8x64xf32>
    return %c : tensor<8x64xf32>
  }
}

// -----

// Priority: a constraint wins over the parameter plan. The constraint splits
// the GEMM's rows over tp, so the plan's column split of the weight (seeded
// later) cannot use tp again on that op: the weight keeps its own sharding
// and will be resharded.
// CHECK-LABEL: func.func @constraint_beats_plan
// CHECK: glimmer.linear %arg0, %arg1 {glimmer.shardings = [#glimmer.sharding<@mesh, [{"tp"}, {}]>]}
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @constraint_beats_plan(%x: tensor<8x32xf32>,
      %w: tensor<64x32xf32> {glimmer.param = "w", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x64xf32> {
    // expected-remark @+1 {{sharding conflict: operand #1 dimension 0 is split over [tp], axes another factor of the op already uses; it will be resharded}}
    %h = glimmer.linear %x, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %c = glimmer.sharding_constraint %h <@mesh, [{"tp"}, {}]> : tensor<8x64xf32>
    return %c : tensor<8x64xf32>
  }
}

// -----

// Two operands of an elementwise op split along different axes: the first
// decides the result, the second is reported (and will be resharded).
// CHECK-LABEL: func.func @conflicting_operands
// CHECK: glimmer.add %arg0, %arg1 {glimmer.shardings = [#glimmer.sharding<@mesh, [{"cp"}, {}]>]}
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=2, "pp"=1]>
  func.func @conflicting_operands(
      %a: tensor<8x4xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"cp"}, {}]>},
      %b: tensor<8x4xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x4xf32> {
    // expected-remark @+1 {{sharding conflict: operand #1 dimension 0 is split over [tp] but another value of the op splits the same factor over [cp]; it will be resharded}}
    %0 = glimmer.add %a, %b : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}

// -----

// A need-replication factor is never sharded: a softmax over a split axis
// keeps its result whole there (the operand will be all-gathered); the other
// dimension still propagates.
// CHECK-LABEL: func.func @softmax_axis_stays_whole
// CHECK: glimmer.softmax %arg0 dim = 1 {glimmer.shardings = [#glimmer.sharding<@mesh, [{"cp"}, {}]>]}
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=2, "pp"=1]>
  func.func @softmax_axis_stays_whole(
      %x: tensor<8x4xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"cp"}, {"tp"}]>}) -> tensor<8x4xf32> {
    // expected-remark @+1 {{sharding conflict: operand #0 dimension 1 is split over [tp] where the op needs the whole extent; it will be resharded to replicated}}
    %0 = glimmer.softmax %x dim = 1 : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}

// -----

// A split that does not fit the factors of a reshape: 4 ranks cannot split
// the heads factor of size 2 without splitting the axis itself, so nothing
// propagates through (the operand will be resharded).
// CHECK-LABEL: func.func @split_finer_than_major_factor
// CHECK: glimmer.reshape %arg0 : tensor<8x16xf32> -> tensor<8x2x8xf32>
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=4, "pp"=1]>
  func.func @split_finer_than_major_factor(
      %x: tensor<8x16xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8x2x8xf32> {
    // expected-remark @+1 {{sharding conflict: operand #0 dimension 1 is split over [tp], which does not divide its factors; it will be resharded}}
    %0 = glimmer.reshape %x : tensor<8x16xf32> -> tensor<8x2x8xf32>
    return %0 : tensor<8x2x8xf32>
  }
}

// -----

// Two axes on one dimension (dp_shard then cp, major to minor) split the
// batch-major flattened tokens in the same order: the batch factor is split
// completely, so the sequence's split continues inside it.
// CHECK-LABEL: func.func @two_axes_on_one_dimension
// CHECK: glimmer.reshape %arg0 {glimmer.shardings = [#glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}]>]} : tensor<2x8x16xf32> -> tensor<16x16xf32>
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
  func.func @two_axes_on_one_dimension(
      %x: tensor<2x8x16xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {"cp"}, {}]>}) -> tensor<16x16xf32> {
    %0 = glimmer.reshape %x : tensor<2x8x16xf32> -> tensor<16x16xf32>
    return %0 : tensor<16x16xf32>
  }
}

// -----

// The same with a batch split only part way (4 samples over 2 ranks): the
// flattened rows of a rank are not one block, so only the batch axis carries
// over to the merged dimension.
// CHECK-LABEL: func.func @partial_major_split_stops_merge
// CHECK: glimmer.reshape %arg0 {glimmer.shardings = [#glimmer.sharding<@mesh, [{"dp_shard"}, {}]>]} : tensor<4x8x16xf32> -> tensor<32x16xf32>
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
  func.func @partial_major_split_stops_merge(
      %x: tensor<4x8x16xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {"cp"}, {}]>}) -> tensor<32x16xf32> {
    %0 = glimmer.reshape %x : tensor<4x8x16xf32> -> tensor<32x16xf32>
    return %0 : tensor<32x16xf32>
  }
}
