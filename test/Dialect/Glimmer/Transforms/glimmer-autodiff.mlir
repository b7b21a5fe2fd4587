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
// SGD: %[[SQ:.*]] = glimmer.mul
// SGD: %[[SUM:.*]] = glimmer.reduce sum %[[SQ]]
// SGD: %[[NORM:.*]] = glimmer.sqrt %[[SUM]]
// SGD: glimmer.add %[[NORM]]
// SGD: glimmer.div
// SGD: glimmer.min
// SGD: %[[NEW:.*]] = glimmer.sgd_update %{{.*}}, %{{.*}} lr = 1.000000e-01 weight_decay = 0.000000e+00
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
