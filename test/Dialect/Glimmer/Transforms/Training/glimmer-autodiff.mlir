// RUN: glimmer-opt %s -split-input-file -glimmer-autodiff='optimizer=sgd lr=0.1 max-norm=1.0' | FileCheck %s --check-prefix=SGD
// RUN: glimmer-opt %s -split-input-file -glimmer-autodiff | FileCheck %s --check-prefix=ADAMW

// A dot product: the loss depends on `w`, not on the unused parameter, which
// gets no gradient and no update (PyTorch skips parameters whose grad is
// None). @forward is kept.
// SGD-LABEL: func.func @forward(
// SGD-LABEL: func.func @grad_step(
// SGD-SAME: %[[X:.*]]: tensor<4xf32> {glimmer.input = "x"}, %[[W:.*]]: tensor<4xf32> {glimmer.param = "w"}, %{{.*}}: tensor<4xf32> {glimmer.param = "unused"})
// SGD-SAME: -> (tensor<f32>, tensor<4xf32> {glimmer.grad = "w"})
// SGD: %[[PROD:.*]] = glimmer.mul %[[X]], %[[W]]
// SGD: %[[LOSS:.*]] = glimmer.reduce sum %[[PROD]]
// SGD: %[[ONE:.*]] = glimmer.constant dense<1.000000e+00> : tensor<f32>
// SGD: %[[DW:.*]] = glimmer.mul %{{.*}}, %[[X]]
// SGD: return %[[LOSS]], %[[DW]]
// SGD-LABEL: func.func @apply_step(
// SGD-SAME: tensor<4xf32> {glimmer.param = "w"}, %{{.*}}: tensor<4xf32> {glimmer.grad = "w"}, %{{.*}}: tensor<i64> {glimmer.step})
// SGD-SAME: -> (tensor<f32>, tensor<4xf32> {glimmer.param = "w"})
// The norm is taken before clipping and returned; clip_grad_norm_ scales
// by min(1, max_norm / (norm + 1e-6)).
// SGD: %[[SUM:.*]] = glimmer.sum_squares %{{.*}} : tensor<4xf32> -> tensor<f32>
// SGD: %[[NORM:.*]] = glimmer.sqrt %[[SUM]]
// SGD: glimmer.add %[[NORM]]
// SGD: glimmer.div
// The coefficient goes into the update (no scaled copy of the gradient).
// SGD: %[[COEF:.*]] = glimmer.min
// SGD-NOT: glimmer.mul
// SGD: %[[NEW:.*]] = glimmer.sgd_update %{{.*}}, %{{.*}} grad_scale(%[[COEF]] : tensor<f32>) lr = 1.000000e-01 weight_decay = 0.000000e+00
// SGD: return %[[NORM]], %[[NEW]]

// AdamW carries two state tensors per parameter and torch.optim's default
// weight decay (0.01); without max-norm there is no clipping.
// ADAMW-LABEL: func.func @apply_step(
// ADAMW-SAME: {glimmer.param = "w"}, %{{.*}}: tensor<4xf32> {glimmer.grad = "w"}, %{{.*}}: tensor<4xf32> {glimmer.exp_avg = "w"}, %{{.*}}: tensor<4xf32> {glimmer.exp_avg_sq = "w"}, %{{.*}}: tensor<i64> {glimmer.step}
// ADAMW-SAME: -> (tensor<f32>, tensor<4xf32> {glimmer.param = "w"}, tensor<4xf32> {glimmer.exp_avg = "w"}, tensor<4xf32> {glimmer.exp_avg_sq = "w"})
// ADAMW-NOT: glimmer.min
// ADAMW: glimmer.adamw_update {{.*}} lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 0.99899999999999999 eps = 1.000000e-08 weight_decay = 1.000000e-02
func.func @forward(%x: tensor<4xf32> {glimmer.input = "x"}, %w: tensor<4xf32> {glimmer.param = "w"}, %u: tensor<4xf32> {glimmer.param = "unused"}) -> tensor<f32> {
  %0 = glimmer.mul %x, %w : tensor<4xf32>
  %1 = glimmer.reduce sum %0 dims = [0] : tensor<4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A value used twice accumulates both cotangents; integer index math (the
// embedding ids) needs no rule.
// SGD-LABEL: func.func @grad_step(
// SGD: %[[IDS:.*]] = glimmer.add %arg0
// SGD: %[[E:.*]] = glimmer.embedding %arg1, %[[IDS]]
// SGD: glimmer.reduce sum
// SGD: %[[G1:.*]] = glimmer.mul %{{.*}}, %[[E]]
// SGD: %[[G2:.*]] = glimmer.mul %{{.*}}, %[[E]]
// SGD: %[[SUM:.*]] = glimmer.add %[[G1]], %[[G2]]
// SGD: glimmer.embedding_grad %[[SUM]], %[[IDS]] : tensor<2x3xf32>, tensor<2xi64> -> tensor<5x3xf32>
func.func @forward(%ids: tensor<2xi64> {glimmer.input = "ids"}, %table: tensor<5x3xf32> {glimmer.param = "table"}) -> tensor<f32> {
  %one = glimmer.constant dense<1> : tensor<2xi64>
  %ids1 = glimmer.add %ids, %one : tensor<2xi64>
  %e = glimmer.embedding %table, %ids1 : tensor<5x3xf32>, tensor<2xi64> -> tensor<2x3xf32>
  %sq = glimmer.mul %e, %e : tensor<2x3xf32>
  %s = glimmer.reduce sum %sq dims = [0, 1] : tensor<2x3xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// HSDP (dp_replicate = 2, dp_shard = 2) after partitioning and FSDP: `w` is
// this rank's piece, all-gathered over dp_shard; `r` is replicated; the loss
// is a partial sum over both data-parallel axes.
// - The all_gather's VJP is a reduce_scatter over dp_shard, which already
//   sums over that axis: dw stays partial over dp_replicate only, while the
//   replicated dr is partial over both axes.
// - dw is a local piece and carries the shard attributes, and so do w's
//   parameter, gradient (and AdamW state) arguments and results of
//   @apply_step.
// - The norm sums dw's squares over dp_shard (one all_reduce) and counts the
//   replicated dr once.
// SGD-LABEL: func.func @grad_step(
// SGD-SAME: -> (tensor<f32> {glimmer.partial = ["dp_replicate", "dp_shard"]},
// SGD-SAME: tensor<2xf32> {glimmer.grad = "w", glimmer.partial = ["dp_replicate"], glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>},
// SGD-SAME: tensor<4xf32> {glimmer.grad = "r", glimmer.partial = ["dp_replicate", "dp_shard"]})
// SGD: %[[G:.*]] = glimmer.all_gather %arg1 on @mesh ["dp_shard"] dim = 0 : tensor<2xf32> -> tensor<4xf32>
// SGD: %[[DW:.*]] = glimmer.reduce_scatter sum %{{.*}} on @mesh ["dp_shard"] dim = 0 : tensor<4xf32> -> tensor<2xf32>
// SGD: return %{{.*}}, %[[DW]], %{{.*}} : tensor<f32>, tensor<2xf32>, tensor<4xf32>
// SGD-LABEL: func.func @apply_step(
// SGD-SAME: %[[P:[a-z0-9]+]]: tensor<2xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>},
// SGD-SAME: %[[PG:[a-z0-9]+]]: tensor<2xf32> {glimmer.grad = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>},
// SGD-SAME: %{{.*}}: tensor<4xf32> {glimmer.param = "r"}, %[[RG:[a-z0-9]+]]: tensor<4xf32> {glimmer.grad = "r"}
// SGD-SAME: -> (tensor<f32>, tensor<2xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>}, tensor<4xf32> {glimmer.param = "r"})
// One sum_squares per group: the dp_shard-sharded gradients (all-reduced
// over dp_shard) and the replicated ones (counted once).
// SGD: %[[SW:.*]] = glimmer.sum_squares %[[PG]] : tensor<2xf32> -> tensor<f32>
// SGD: %[[SR:.*]] = glimmer.sum_squares %[[RG]] : tensor<4xf32> -> tensor<f32>
// SGD: %[[TW:.*]] = glimmer.all_reduce sum %[[SW]] on @mesh ["dp_shard"] : tensor<f32>
// SGD: %[[TOTAL:.*]] = glimmer.add %[[SR]], %[[TW]]
// SGD: %[[NORM:.*]] = glimmer.sqrt %[[TOTAL]]
// SGD-NOT: glimmer.all_reduce
// SGD: return %[[NORM]]
// ADAMW-LABEL: func.func @apply_step(%arg0: tensor<2xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>}
// ADAMW-SAME: tensor<2xf32> {glimmer.exp_avg = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>}
// ADAMW-SAME: tensor<2xf32> {glimmer.exp_avg_sq = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>}
// ADAMW-SAME: -> (tensor<f32>, tensor<2xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>}, tensor<4xf32> {glimmer.param = "r"},
// ADAMW-SAME: tensor<2xf32> {glimmer.exp_avg = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>}, tensor<4xf32> {glimmer.exp_avg = "r"},
// ADAMW-SAME: tensor<2xf32> {glimmer.exp_avg_sq = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>}, tensor<4xf32> {glimmer.exp_avg_sq = "r"})
module {
  glimmer.mesh @mesh = <["dp_replicate"=2, "dp_shard"=2, "cp"=1, "tp"=1, "pp"=1]>
  func.func @forward(%x: tensor<4xf32> {glimmer.input = "x"},
                     %w: tensor<2xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}]>},
                     %r: tensor<4xf32> {glimmer.param = "r"})
      -> (tensor<f32> {glimmer.partial = ["dp_replicate", "dp_shard"]}) {
    %g = glimmer.all_gather %w on @mesh ["dp_shard"] dim = 0 : tensor<2xf32> -> tensor<4xf32>
    %0 = glimmer.mul %x, %g : tensor<4xf32>
    %1 = glimmer.mul %0, %r : tensor<4xf32>
    %2 = glimmer.reduce sum %1 dims = [0] : tensor<4xf32> -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// FSDP without dp_replicate: the reduce_scatter over dp_shard x cp sums
// over every axis the loss is partial over, so the sharded gradient is
// complete (no partial marker) and needs no further reduction.
// SGD-LABEL: func.func @grad_step(
// SGD-SAME: -> (tensor<f32> {glimmer.partial = ["dp_shard", "cp"]}, tensor<2xf32> {glimmer.grad = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}]>})
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
  func.func @forward(%x: tensor<8xf32> {glimmer.input = "x"},
                     %w: tensor<2xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}]>})
      -> (tensor<f32> {glimmer.partial = ["dp_shard", "cp"]}) {
    %g = glimmer.all_gather %w on @mesh ["dp_shard", "cp"] dim = 0 : tensor<2xf32> -> tensor<8xf32>
    %0 = glimmer.mul %x, %g : tensor<8xf32>
    %1 = glimmer.reduce sum %0 dims = [0] : tensor<8xf32> -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A bf16 activation all-gathered over cp (K and V of attention in a bf16
// program): the ranks' bf16 cotangents are summed in f32 by the
// reduce_scatter, then converted back.
// SGD-LABEL: func.func @grad_step(
// SGD: glimmer.all_gather %{{.*}} on @mesh ["cp"] dim = 0 : tensor<2xbf16> -> tensor<4xbf16>
// SGD: %[[UP:.*]] = glimmer.convert %{{.*}} : tensor<4xbf16> to tensor<4xf32>
// SGD-NEXT: %[[SUM:.*]] = glimmer.reduce_scatter sum %[[UP]] on @mesh ["cp"] dim = 0 : tensor<4xf32> -> tensor<2xf32>
// SGD-NEXT: glimmer.convert %[[SUM]] : tensor<2xf32> to tensor<2xbf16>
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=1, "pp"=1]>
  func.func @forward(%x: tensor<2xbf16> {glimmer.input = "x"},
                     %w: tensor<2xf32> {glimmer.param = "w"})
      -> (tensor<f32> {glimmer.partial = ["cp"]}) {
    %wb = glimmer.convert %w : tensor<2xf32> to tensor<2xbf16>
    %k = glimmer.mul %x, %wb : tensor<2xbf16>
    %kg = glimmer.all_gather %k on @mesh ["cp"] dim = 0 : tensor<2xbf16> -> tensor<4xbf16>
    %s = glimmer.reduce sum %kg dims = [0] : tensor<4xbf16> -> tensor<bf16>
    %f = glimmer.convert %s : tensor<bf16> to tensor<f32>
    return %f : tensor<f32>
  }
}

// -----

// Tensor-parallel collectives. The input of a column-parallel projection is
// marked pvary, so its cotangent (each rank's share) is all-reduced; a
// value gathered for work that every rank repeats (invariant) gets the
// rank's slice of its complete cotangent back.
// SGD-LABEL: func.func @grad_step
// SGD: glimmer.all_gather %{{.*}} on @mesh ["tp"] dim = 0 invariant : tensor<2xf32> -> tensor<4xf32>
// SGD-DAG: glimmer.local_shard %{{.*}} on @mesh ["tp"] dim = 0 : tensor<4xf32> -> tensor<2xf32>
// SGD-DAG: glimmer.all_reduce sum %{{.*}} on @mesh ["tp"] : tensor<4xf32>
// SGD-LABEL: func.func @apply_step
module {
  glimmer.mesh @mesh = <["tp"=2]>
  func.func @forward(%x: tensor<4xf32> {glimmer.param = "x"},
                     %w: tensor<2xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"tp"}]>}) -> tensor<f32> {
    %g = glimmer.all_gather %w on @mesh ["tp"] dim = 0 invariant : tensor<2xf32> -> tensor<4xf32>
    %xv = glimmer.pvary %x on @mesh ["tp"] : tensor<4xf32>
    %p = glimmer.mul %xv, %g : tensor<4xf32>
    %s = glimmer.reduce sum %p dims = [0] : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// An all_to_all (a split moved from dimension 0 to dimension 1) only moves
// elements: its cotangent goes back by the all_to_all with the dimensions
// swapped.
// SGD-LABEL: func.func @grad_step
// SGD: glimmer.all_to_all %{{.*}} on @mesh ["tp"] split_dim = 1 concat_dim = 0 : tensor<2x4xf32> -> tensor<4x2xf32>
// SGD: glimmer.all_to_all %{{.*}} on @mesh ["tp"] split_dim = 0 concat_dim = 1 : tensor<4x2xf32> -> tensor<2x4xf32>
// SGD-LABEL: func.func @apply_step
module {
  glimmer.mesh @mesh = <["tp"=2]>
  func.func @forward(%w: tensor<2x4xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<f32> {
    %a = glimmer.all_to_all %w on @mesh ["tp"] split_dim = 1 concat_dim = 0 : tensor<2x4xf32> -> tensor<4x2xf32>
    %e = glimmer.exp %a : tensor<4x2xf32>
    %s = glimmer.reduce sum %e dims = [0, 1] : tensor<4x2xf32> -> tensor<f32>
    %t = glimmer.all_reduce sum %s on @mesh ["tp"] : tensor<f32>
    return %t : tensor<f32>
  }
}

// -----

// A max all-reduce (loss-parallel cross-entropy's shift): the cotangent
// goes to the ranks whose value is the maximum, zero elsewhere.
// SGD-LABEL: func.func @grad_step
// SGD: %[[M:.*]] = glimmer.all_reduce max %[[LOCAL:.*]] on @mesh ["tp"] : tensor<4xf32>
// SGD: %[[HIT:.*]] = glimmer.compare eq, %[[LOCAL]], %[[M]] : tensor<4xf32>
// SGD: glimmer.select %[[HIT]], %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xf32>
// SGD-LABEL: func.func @apply_step
module {
  glimmer.mesh @mesh = <["tp"=2]>
  func.func @forward(%x: tensor<4xf32> {glimmer.param = "x"}) -> tensor<f32> {
    %e = glimmer.exp %x : tensor<4xf32>
    %m = glimmer.all_reduce max %e on @mesh ["tp"] : tensor<4xf32>
    %s = glimmer.reduce sum %m dims = [0] : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// Pipeline stages (glimmer-split-stages): each stage gets its backward, with
// the forward recomputed from its inputs. A stage before the last takes its
// results' cotangents as arguments; the last seeds its loss. Each returns
// its activation inputs' cotangents (for the previous stage) and its
// parameters' gradients; each stage's optimizer step sums the squares of
// the gradient norm over the other stages (pp).
// SGD-LABEL: func.func @stage_0_grad
// SGD-SAME: %[[COT:[a-z0-9]+]]: tensor<2x4xf32> {glimmer.cotangent = 0 : i64}
// SGD-SAME: -> (tensor<4x4xf32> {glimmer.grad = "layers.0.w"})
// SGD: glimmer.matmul %[[COT]]
// SGD-LABEL: func.func @stage_1_grad
// SGD-SAME: %[[IN:[a-z0-9]+]]: tensor<2x4xf32> {glimmer.activation = 0 : i64}
// SGD-SAME: -> (tensor<f32>, tensor<2x4xf32> {glimmer.activation_grad = 0 : i64}, tensor<4x4xf32> {glimmer.grad = "layers.1.w"})
// SGD-LABEL: func.func @apply_step_0
// SGD: glimmer.all_reduce sum %{{.*}} on @mesh ["pp"] : tensor<f32>
// SGD: glimmer.sqrt
// SGD-LABEL: func.func @apply_step_1
// SGD: glimmer.all_reduce sum %{{.*}} on @mesh ["pp"] : tensor<f32>
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=1, "pp"=2]>
  func.func @stage_0(%x: tensor<2x4xf32> {glimmer.input = "x"}, %w0: tensor<4x4xf32> {glimmer.param = "layers.0.w"})
      -> (tensor<2x4xf32> {glimmer.activation = 0 : i64}) attributes {glimmer.stage = 0 : i64} {
    %h = glimmer.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    return %h : tensor<2x4xf32>
  }
  func.func @stage_1(%w1: tensor<4x4xf32> {glimmer.param = "layers.1.w"}, %h: tensor<2x4xf32> {glimmer.activation = 0 : i64})
      -> tensor<f32> attributes {glimmer.stage = 1 : i64} {
    %y = glimmer.linear %h, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %s = glimmer.reduce sum %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// A parameter both stages read (a tied embedding and output projection):
// each rank's optimizer step sums its gradient over pp before the update,
// and only its first holder counts it in the gradient norm.
// SGD-LABEL: func.func @apply_step_0
// SGD: %[[T0:.*]] = glimmer.all_reduce sum %{{.*}} on @mesh ["pp"] : tensor<4x4xf32>
// SGD: glimmer.sum_squares %[[T0]]
// SGD: glimmer.sgd_update %{{.*}}, %{{.*}}
// SGD-LABEL: func.func @apply_step_1
// SGD: %[[T1:.*]] = glimmer.all_reduce sum %{{.*}} on @mesh ["pp"] : tensor<4x4xf32>
// SGD-NOT: glimmer.sum_squares %[[T1]]
// SGD: glimmer.sgd_update
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=1, "pp"=2]>
  func.func @stage_0(%x: tensor<2x4xf32> {glimmer.input = "x"}, %w: tensor<4x4xf32> {glimmer.param = "tied"})
      -> (tensor<2x4xf32> {glimmer.activation = 0 : i64}) attributes {glimmer.stage = 0 : i64} {
    %h = glimmer.linear %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    return %h : tensor<2x4xf32>
  }
  func.func @stage_1(%w: tensor<4x4xf32> {glimmer.param = "tied"}, %h: tensor<2x4xf32> {glimmer.activation = 0 : i64})
      -> tensor<f32> attributes {glimmer.stage = 1 : i64} {
    %y = glimmer.linear %h, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %s = glimmer.reduce sum %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// stop_gradient passes no cotangent: the loss x*w + stop_gradient(x*w) has
// the gradient of x*w alone (one product with x, no accumulation), as
// PyTorch's native_layer_norm gives its mean and rstd none.
// SGD-LABEL: func.func @grad_step(
// SGD: glimmer.stop_gradient
// SGD: %[[DW:.*]] = glimmer.mul %{{.*}}, %arg0
// SGD-NOT: glimmer.add
// SGD: return %{{.*}}, %[[DW]]
func.func @forward(%x: tensor<4xf32> {glimmer.input = "x"}, %w: tensor<4xf32> {glimmer.param = "w"}) -> tensor<f32> {
  %0 = glimmer.mul %x, %w : tensor<4xf32>
  %1 = glimmer.stop_gradient %0 : tensor<4xf32>
  %2 = glimmer.add %0, %1 : tensor<4xf32>
  %3 = glimmer.reduce sum %2 dims = [0] : tensor<4xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
