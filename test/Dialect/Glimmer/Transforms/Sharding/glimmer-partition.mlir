// RUN: glimmer-opt %s -split-input-file -glimmer-propagate-sharding -glimmer-partition | FileCheck %s

// Megatron's MLP: the column-parallel input is marked pvary (its VJP sums
// the ranks' shares of dx), the split weights become the rank's pieces
// (glimmer.sharded on dimension 0 and 1), the row-parallel product is all-reduced where a
// replicated value is needed (the residual add), and no other collective
// appears.
// CHECK-LABEL: func.func @mlp_tensor_parallel
// CHECK-SAME: %arg1: tensor<32x32xf32> {glimmer.param = "w1", glimmer.sharded = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK-SAME: %arg2: tensor<32x32xf32> {glimmer.param = "w2", glimmer.sharded = #glimmer.sharding<@mesh, [{}, {"tp"}]>}
// CHECK-SAME: -> tensor<8x32xf32>
// CHECK-NOT: glimmer.sharding
// CHECK: %[[X:.*]] = glimmer.pvary %arg0 on @mesh ["tp"] : tensor<8x32xf32>
// CHECK: %[[H:.*]] = glimmer.linear %[[X]], %arg1 : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
// CHECK: %[[A:.*]] = glimmer.silu %[[H]] : tensor<8x32xf32>
// CHECK: %[[Y:.*]] = glimmer.linear %[[A]], %arg2 : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
// CHECK: %[[S:.*]] = glimmer.all_reduce sum %[[Y]] on @mesh ["tp"] : tensor<8x32xf32>
// CHECK: %[[Z:.*]] = glimmer.add %arg0, %[[S]] : tensor<8x32xf32>
// CHECK-NOT: glimmer.all_gather
// CHECK: return %[[Z]]
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @mlp_tensor_parallel(%x: tensor<8x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %w2: tensor<32x64xf32> {glimmer.param = "w2"}) -> tensor<8x32xf32> {
    %h = glimmer.linear %x, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %a = glimmer.silu %h : tensor<8x64xf32>
    %y = glimmer.linear %a, %w2 : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    %z = glimmer.add %x, %y : tensor<8x32xf32>
    return %z : tensor<8x32xf32>
  }
}

// -----

// A row-parallel projection with a bias: every rank would add the bias to
// its partial product, so the bias is taken off the GEMM and added once to
// the all-reduced sum (not through pvary: it is not a per-rank share).
// CHECK-LABEL: func.func @row_parallel_bias_added_once
// CHECK: %[[Y:.*]] = glimmer.linear %{{.*}}, %arg2 : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
// CHECK-NEXT: %[[S:.*]] = glimmer.all_reduce sum %[[Y]] on @mesh ["tp"] : tensor<8x32xf32>
// CHECK-NEXT: %[[B:.*]] = glimmer.broadcast_in_dim %arg3 dims = [1] : tensor<32xf32> -> tensor<8x32xf32>
// CHECK-NEXT: %[[Z:.*]] = glimmer.add %[[S]], %[[B]] : tensor<8x32xf32>
// CHECK-NEXT: return %[[Z]]
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @row_parallel_bias_added_once(%x: tensor<8x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %w2: tensor<32x64xf32> {glimmer.param = "w2"}, %b2: tensor<32xf32> {glimmer.param = "b2"}) -> tensor<8x32xf32> {
    %h = glimmer.linear %x, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %y = glimmer.linear %h, %w2, %b2 : tensor<8x64xf32>, tensor<32x64xf32>, tensor<32xf32> -> tensor<8x32xf32>
    return %y : tensor<8x32xf32>
  }
}

// -----

// Heads through reshape/transpose to attention: local shapes follow the
// split heads (2 of 4 per rank), no communication until the output
// projection; a slice along an unsplit dimension keeps its bounds but
// shrinks along the split one.
// CHECK-LABEL: func.func @heads_local
// CHECK: glimmer.reshape %{{.*}} : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
// CHECK: glimmer.slice %{{.*}} start = [0, 0, 0, 0] limit = [2, 16, 2, 4] stride = [1, 1, 1, 1] : tensor<2x16x2x8xf32> -> tensor<2x16x2x4xf32>
// CHECK: glimmer.concat %{{.*}}, %{{.*}} dim = 3 : tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32> -> tensor<2x16x2x8xf32>
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} scale = {{.*}} : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x2x16x8xf32>, tensor<2x2x16xf32>
// CHECK: glimmer.reshape %{{.*}} : tensor<2x16x2x8xf32> -> tensor<2x16x16xf32>
// CHECK: glimmer.all_reduce sum
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @heads_local(%x: tensor<2x16x32xf32>,
      %wq: tensor<32x32xf32> {glimmer.param = "wq", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %wo: tensor<32x32xf32> {glimmer.param = "wo"}) -> tensor<2x16x32xf32> {
    %q0 = glimmer.linear %x, %wq : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %q1 = glimmer.reshape %q0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    %lo = glimmer.slice %q1 start = [0, 0, 0, 0] limit = [2, 16, 4, 4] stride = [1, 1, 1, 1] : tensor<2x16x4x8xf32> -> tensor<2x16x4x4xf32>
    %hi = glimmer.slice %q1 start = [0, 0, 0, 4] limit = [2, 16, 4, 8] stride = [1, 1, 1, 1] : tensor<2x16x4x8xf32> -> tensor<2x16x4x4xf32>
    %q2 = glimmer.concat %hi, %lo dim = 3 : tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32> -> tensor<2x16x4x8xf32>
    %q = glimmer.transpose %q2 permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    %o, %lse = glimmer.attention %q, %q, %q scale = 0.35 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
    %o1 = glimmer.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
    %o2 = glimmer.reshape %o1 : tensor<2x16x4x8xf32> -> tensor<2x16x32xf32>
    %y = glimmer.linear %o2, %wo : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    return %y : tensor<2x16x32xf32>
  }
}

// -----

// A split value that an op needs whole (softmax over the split features) is
// all-gathered first; a replicated operand of an elementwise op whose other
// operand is split is cut to the rank's slice (local_shard, whose VJP is the
// all-gather), and a split constant that is a splat is rebuilt at the local
// shape.
// CHECK-LABEL: func.func @reshard_cases
// CHECK: %[[H:.*]] = glimmer.linear %{{.*}}, %arg1 : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
// CHECK: %[[C:.*]] = glimmer.constant dense<2.000000e+00> : tensor<8x32xf32>
// CHECK: glimmer.mul
// CHECK: %[[L:.*]] = glimmer.local_shard %arg2 on @mesh ["tp"] dim = 1 : tensor<8x64xf32> -> tensor<8x32xf32>
// CHECK: glimmer.add
// The softmax computes the same on every rank, so its gather is invariant
// (the VJP takes the rank's slice of the complete cotangent).
// CHECK: %[[G:.*]] = glimmer.all_gather %{{.*}} on @mesh ["tp"] dim = 1 invariant : tensor<8x32xf32> -> tensor<8x64xf32>
// CHECK: glimmer.softmax %[[G]] dim = 1 : tensor<8x64xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @reshard_cases(%x: tensor<8x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %r: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %h = glimmer.linear %x, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %c = glimmer.constant dense<2.0> : tensor<8x64xf32>
    %m = glimmer.mul %h, %c : tensor<8x64xf32>
    %a = glimmer.add %m, %r : tensor<8x64xf32>
    %s = glimmer.softmax %a dim = 1 : tensor<8x64xf32>
    return %s : tensor<8x64xf32>
  }
}

// -----

// Sequence parallelism (the constraints glimmer-seed-sharding writes): the
// residual stream is split along the sequence. The column-parallel input is
// all-gathered (a plain gather: the projection's work is split over tp, so
// the VJP's reduce-scatter sums the ranks' shares, and no pvary is needed),
// and the row-parallel sum goes straight to the sequence split with a
// reduce-scatter.
// CHECK-LABEL: func.func @sequence_parallel_mlp
// CHECK: %[[X:.*]] = glimmer.local_shard %arg0 on @mesh ["tp"] dim = 1 : tensor<2x16x32xf32> -> tensor<2x8x32xf32>
// CHECK: %[[G:.*]] = glimmer.all_gather %{{.*}} on @mesh ["tp"] dim = 1 : tensor<2x8x32xf32> -> tensor<2x16x32xf32>
// CHECK-NOT: glimmer.pvary
// CHECK: %[[H:.*]] = glimmer.linear %[[G]], %arg1
// CHECK: %[[Y:.*]] = glimmer.linear %{{.*}}, %arg2 : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
// CHECK: %[[RS:.*]] = glimmer.reduce_scatter sum %[[Y]] on @mesh ["tp"] dim = 1 : tensor<2x16x32xf32> -> tensor<2x8x32xf32>
// CHECK: glimmer.add %{{.*}}, %[[RS]] : tensor<2x8x32xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2,sp">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @sequence_parallel_mlp(%x: tensor<2x16x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %w2: tensor<32x64xf32> {glimmer.param = "w2"}) -> tensor<2x16x32xf32> {
    %stream = glimmer.sharding_constraint %x <@mesh, [{}, {"tp"}, {}]> {glimmer.sequence_parallel} : tensor<2x16x32xf32>
    %xw = glimmer.sharding_constraint %stream <@mesh, [{}, {}, {}]> {glimmer.sequence_parallel} : tensor<2x16x32xf32>
    %h = glimmer.linear %xw, %w1 : tensor<2x16x32xf32>, tensor<64x32xf32> -> tensor<2x16x64xf32>
    %a = glimmer.gelu %h : tensor<2x16x64xf32>
    %y = glimmer.linear %a, %w2 : tensor<2x16x64xf32>, tensor<32x64xf32> -> tensor<2x16x32xf32>
    %r = glimmer.add %stream, %y : tensor<2x16x32xf32>
    %s = glimmer.sharding_constraint %r <@mesh, [{}, {"tp"}, {}]> {glimmer.sequence_parallel} : tensor<2x16x32xf32>
    return %s : tensor<2x16x32xf32>
  }
}

// -----

// The same with a bias on the row-parallel projection (the vision
// encoder's and the projector's): the sum still goes to the sequence split
// with one reduce-scatter, and the bias is added once, to the rank's piece
// (through pvary: the rank's tokens give a share of its gradient).
// CHECK-LABEL: func.func @sequence_parallel_row_bias
// CHECK: %[[Y:.*]] = glimmer.linear %{{.*}}, %arg2 : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
// CHECK-NEXT: %[[RS:.*]] = glimmer.reduce_scatter sum %[[Y]] on @mesh ["tp"] dim = 1 : tensor<2x16x32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT: %[[PB:.*]] = glimmer.pvary %arg3 on @mesh ["tp"] : tensor<32xf32>
// CHECK-NEXT: %[[B:.*]] = glimmer.broadcast_in_dim %[[PB]] dims = [2] : tensor<32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT: %[[S:.*]] = glimmer.add %[[RS]], %[[B]] : tensor<2x8x32xf32>
// CHECK-NEXT: glimmer.add %{{.*}}, %[[S]] : tensor<2x8x32xf32>
// CHECK-NOT: glimmer.all_reduce
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2,sp">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @sequence_parallel_row_bias(%x: tensor<2x16x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %w2: tensor<32x64xf32> {glimmer.param = "w2"}, %b2: tensor<32xf32> {glimmer.param = "b2"}) -> tensor<2x16x32xf32> {
    %stream = glimmer.sharding_constraint %x <@mesh, [{}, {"tp"}, {}]> {glimmer.sequence_parallel} : tensor<2x16x32xf32>
    %xw = glimmer.sharding_constraint %stream <@mesh, [{}, {}, {}]> {glimmer.sequence_parallel} : tensor<2x16x32xf32>
    %h = glimmer.linear %xw, %w1 : tensor<2x16x32xf32>, tensor<64x32xf32> -> tensor<2x16x64xf32>
    %a = glimmer.gelu %h : tensor<2x16x64xf32>
    %y = glimmer.linear %a, %w2, %b2 : tensor<2x16x64xf32>, tensor<32x64xf32>, tensor<32xf32> -> tensor<2x16x32xf32>
    %r = glimmer.add %stream, %y : tensor<2x16x32xf32>
    %s = glimmer.sharding_constraint %r <@mesh, [{}, {"tp"}, {}]> {glimmer.sequence_parallel} : tensor<2x16x32xf32>
    return %s : tensor<2x16x32xf32>
  }
}

// -----

// Vocab-parallel embedding (handler): the rank holds 32 of the 64 rows. The
// ids are checked against the whole vocabulary (the local lookup could not
// see a bad one); the rank's first row comes from its piece of [0, 32]; the
// ids are made local and clamped, the rows another rank holds are zeroed,
// and the shares are summed where a replicated value is needed.
// CHECK-LABEL: func.func @vocab_parallel_embedding
// CHECK-SAME: %arg1: tensor<32x16xf32> {glimmer.param = "tok", glimmer.sharded = #glimmer.sharding<@mesh, [{"tp"}, {}]>}
// CHECK: %[[IDS:.*]] = glimmer.check_indices %arg0 bound = 64 for "embedding" : tensor<2x8xi64>
// CHECK: %[[STARTS:.*]] = glimmer.constant dense<[0, 32]> : tensor<2xi64>
// CHECK: %[[MINE:.*]] = glimmer.local_shard %[[STARTS]] on @mesh ["tp"] dim = 0 : tensor<2xi64> -> tensor<1xi64>
// CHECK: %[[OFF:.*]] = glimmer.reshape %[[MINE]] : tensor<1xi64> -> tensor<i64>
// CHECK: %[[OFFB:.*]] = glimmer.broadcast_in_dim %[[OFF]] dims = [] : tensor<i64> -> tensor<2x8xi64>
// CHECK: %[[REL:.*]] = glimmer.sub %[[IDS]], %[[OFFB]] : tensor<2x8xi64>
// CHECK: %[[LO:.*]] = glimmer.max %[[REL]], %{{.*}} : tensor<2x8xi64>
// CHECK: %[[ROW:.*]] = glimmer.min %[[LO]], %{{.*}} : tensor<2x8xi64>
// CHECK: %[[IN:.*]] = glimmer.compare eq, %[[ROW]], %[[REL]] : tensor<2x8xi64>
// CHECK: %[[E:.*]] = glimmer.embedding %arg1, %[[ROW]] : tensor<32x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
// CHECK: %[[KEEP:.*]] = glimmer.broadcast_in_dim %[[IN]] dims = [0, 1] : tensor<2x8xi1> -> tensor<2x8x16xi1>
// CHECK: %[[SHARE:.*]] = glimmer.select %[[KEEP]], %[[E]], %{{.*}} : tensor<2x8x16xi1>, tensor<2x8x16xf32>
// CHECK: %[[SUM:.*]] = glimmer.all_reduce sum %[[SHARE]] on @mesh ["tp"] : tensor<2x8x16xf32>
// CHECK: return %[[SUM]]
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @vocab_parallel_embedding(%ids: tensor<2x8xi64>,
      %tok: tensor<64x16xf32> {glimmer.param = "tok", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<2x8x16xf32> {
    %e = glimmer.embedding %tok, %ids : tensor<64x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
    return %e : tensor<2x8x16xf32>
  }
}

// -----

// Loss-parallel cross-entropy (handler): the logits of a column-parallel
// output projection stay split over the vocabulary (16 of 32 per rank).
// Each token's log-sum-exp combines the ranks' maxima (all-reduce max, used
// through pvary in the rank's exponentials) and sums; the label's logit
// comes from the rank holding its row (the labels checked against the
// whole vocabulary first); no rank gathers the logits.
// CHECK-LABEL: func.func @loss_parallel_cross_entropy
// CHECK-NOT: glimmer.all_gather
// CHECK: %[[LOGITS:.*]] = glimmer.linear %{{.*}}, %arg1 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK: %[[LABELS:.*]] = glimmer.check_indices %arg2 bound = 32 for "cross_entropy" ignore_index = -100 : tensor<8xi64>
// CHECK: %[[LMAX:.*]] = glimmer.reduce max %[[LOGITS]] dims = [1] : tensor<8x16xf32> -> tensor<8xf32>
// CHECK: %[[MAX:.*]] = glimmer.all_reduce max %[[LMAX]] on @mesh ["tp"] : tensor<8xf32>
// CHECK: %[[SHIFT:.*]] = glimmer.pvary %[[MAX]] on @mesh ["tp"] : tensor<8xf32>
// CHECK: %[[LSUM:.*]] = glimmer.reduce sum %{{.*}} dims = [1] : tensor<8x16xf32> -> tensor<8xf32>
// CHECK: %[[TOTAL:.*]] = glimmer.all_reduce sum %[[LSUM]] on @mesh ["tp"] : tensor<8xf32>
// CHECK: %[[LOG:.*]] = glimmer.log %[[TOTAL]] : tensor<8xf32>
// CHECK: %[[LSE:.*]] = glimmer.add %[[LOG]], %[[MAX]] : tensor<8xf32>
// CHECK: glimmer.constant dense<[0, 16]> : tensor<2xi64>
// CHECK: %[[COLS:.*]] = glimmer.iota dim = 1 : tensor<8x16xi64>
// CHECK: %[[LT:.*]] = glimmer.reduce sum %{{.*}} dims = [1] : tensor<8x16xf32> -> tensor<8xf32>
// CHECK: %[[MT:.*]] = glimmer.select %{{.*}}, %[[LT]], %{{.*}} : tensor<8xi1>, tensor<8xf32>
// CHECK: %[[TARGET:.*]] = glimmer.all_reduce sum %[[MT]] on @mesh ["tp"] : tensor<8xf32>
// CHECK: %[[VALID:.*]] = glimmer.compare ne, %[[LABELS]], %{{.*}} : tensor<8xi64>
// CHECK: %[[NLL:.*]] = glimmer.sub %[[LSE]], %[[TARGET]] : tensor<8xf32>
// CHECK: %[[LOSSES:.*]] = glimmer.select %[[VALID]], %[[NLL]], %{{.*}} : tensor<8xi1>, tensor<8xf32>
// CHECK: %[[SUM:.*]] = glimmer.reduce sum %[[LOSSES]] dims = [0] : tensor<8xf32> -> tensor<f32>
// CHECK: %[[ONES:.*]] = glimmer.convert %[[VALID]] : tensor<8xi1> to tensor<8xi64>
// CHECK: %[[COUNT:.*]] = glimmer.reduce sum %[[ONES]] dims = [0] : tensor<8xi64> -> tensor<i64>
// CHECK-NOT: glimmer.cross_entropy
// CHECK: return %[[SUM]], %[[COUNT]]
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @loss_parallel_cross_entropy(%h: tensor<8x16xf32>,
      %wout: tensor<32x16xf32> {glimmer.param = "lm_head", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %labels: tensor<8xi64>) -> (tensor<f32>, tensor<i64>) {
    %logits = glimmer.linear %h, %wout : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
    %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<8x32xf32>, tensor<8xi64> -> tensor<f32>, tensor<i64>
    return %sum, %count : tensor<f32>, tensor<i64>
  }
}

// -----

// Split over tp on one dimension -> split over tp on another (a
// sequence-parallel value read by a split-head op, here an exp pinned by a
// constraint): one all_to_all, which cuts the new dimension and joins the
// old one; no rank ever holds the whole value. (Its VJP is the all_to_all
// back: glimmer-autodiff.mlir.) The result leaves replicated: gathered.
// CHECK-LABEL: func.func @split_to_other_split
// CHECK: %[[A:.*]] = glimmer.all_to_all %arg0 on @mesh ["tp"] split_dim = 1 concat_dim = 0 : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[E:.*]] = glimmer.exp %[[A]] : tensor<8x4xf32>
// CHECK-NEXT: glimmer.all_gather %[[E]] on @mesh ["tp"] dim = 1 invariant : tensor<8x4xf32> -> tensor<8x8xf32>
// CHECK-NOT: local_shard
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @split_to_other_split(%x: tensor<8x8xf32> {glimmer.param = "x", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x8xf32> {
    %c = glimmer.sharding_constraint %x <@mesh, [{}, {"tp"}]> : tensor<8x8xf32>
    %e = glimmer.exp %c : tensor<8x8xf32>
    return %e : tensor<8x8xf32>
  }
}

// -----

// Sequence parallelism inside context parallelism (cp = 2, tp = 2): the
// residual stream's sequence is split over cp x tp, tp minor. What a reshard
// keeps of a dimension's axes is their leading ones: the column-parallel
// input is gathered over tp only (its sequence stays split over cp), and
// the row-parallel sum is reduce-scattered over tp onto the cp-split
// sequence. Between the token split's cut and the result's gather no
// collective runs over cp.
// CHECK-LABEL: func.func @sequence_parallel_under_cp
// CHECK: glimmer.local_shard %arg0 on @mesh ["cp"] dim = 1 : tensor<2x16x32xf32> -> tensor<2x8x32xf32>
// CHECK-NOT: on @mesh ["cp"
// CHECK: %[[X:.*]] = glimmer.local_shard %{{.*}} on @mesh ["tp"] dim = 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
// CHECK-NOT: on @mesh ["cp"
// CHECK: %[[G:.*]] = glimmer.all_gather %[[X]] on @mesh ["tp"] dim = 1 : tensor<2x4x32xf32> -> tensor<2x8x32xf32>
// CHECK-NOT: on @mesh ["cp"
// CHECK: glimmer.linear %[[G]], %arg1 : tensor<2x8x32xf32>, tensor<32x32xf32> -> tensor<2x8x32xf32>
// CHECK-NOT: on @mesh ["cp"
// CHECK: %[[Y:.*]] = glimmer.linear %{{.*}}, %arg2 : tensor<2x8x32xf32>, tensor<32x32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT: %[[RS:.*]] = glimmer.reduce_scatter sum %[[Y]] on @mesh ["tp"] dim = 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
// CHECK-NEXT: %[[S:.*]] = glimmer.add %[[X]], %[[RS]] : tensor<2x4x32xf32>
// CHECK-NEXT: glimmer.all_gather %[[S]] on @mesh ["cp", "tp"] dim = 1 invariant : tensor<2x4x32xf32> -> tensor<2x16x32xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2,tp=2,sp">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=2, "pp"=1]>
  func.func @sequence_parallel_under_cp(%x: tensor<2x16x32xf32>,
      %w1: tensor<64x32xf32> {glimmer.param = "w1", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>},
      %w2: tensor<32x64xf32> {glimmer.param = "w2"}) -> tensor<2x16x32xf32> {
    %t = glimmer.sharding_constraint %x <@mesh, [{}, {"cp"}, {}]> {glimmer.token_split} : tensor<2x16x32xf32>
    %stream = glimmer.sharding_constraint %t <@mesh, [{}, {"cp", "tp"}, {}]> {glimmer.sequence_parallel} : tensor<2x16x32xf32>
    %xw = glimmer.sharding_constraint %stream <@mesh, [{}, {"cp"}, {}]> {glimmer.sequence_parallel} : tensor<2x16x32xf32>
    %h = glimmer.linear %xw, %w1 : tensor<2x16x32xf32>, tensor<64x32xf32> -> tensor<2x16x64xf32>
    %a = glimmer.gelu %h : tensor<2x16x64xf32>
    %y = glimmer.linear %a, %w2 : tensor<2x16x64xf32>, tensor<32x64xf32> -> tensor<2x16x32xf32>
    %r = glimmer.add %stream, %y : tensor<2x16x32xf32>
    %s = glimmer.sharding_constraint %r <@mesh, [{}, {"cp", "tp"}, {}]> {glimmer.sequence_parallel} : tensor<2x16x32xf32>
    return %s : tensor<2x16x32xf32>
  }
}

// -----

// The all-to-all under cp: a sequence split over cp x tp moves its tp part
// to the heads (sequence-split to head-split), over tp only.
// CHECK-LABEL: func.func @all_to_all_keeps_cp
// CHECK: glimmer.local_shard %arg0 on @mesh ["cp", "tp"] dim = 2 : tensor<2x4x16x8xf32> -> tensor<2x4x4x8xf32>
// CHECK-NEXT: %[[M:.*]] = glimmer.all_to_all %{{.*}} on @mesh ["tp"] split_dim = 1 concat_dim = 2 : tensor<2x4x4x8xf32> -> tensor<2x2x8x8xf32>
// CHECK-NEXT: glimmer.exp %[[M]] : tensor<2x2x8x8xf32>
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2,tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=2, "pp"=1]>
  func.func @all_to_all_keeps_cp(%x: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
    %s = glimmer.sharding_constraint %x <@mesh, [{}, {}, {"cp", "tp"}, {}]> : tensor<2x4x16x8xf32>
    %h = glimmer.sharding_constraint %s <@mesh, [{}, {"tp"}, {"cp"}, {}]> : tensor<2x4x16x8xf32>
    %e = glimmer.exp %h : tensor<2x4x16x8xf32>
    return %e : tensor<2x4x16x8xf32>
  }
}
