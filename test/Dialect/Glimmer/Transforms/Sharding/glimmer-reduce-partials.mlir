// RUN: glimmer-opt %s -split-input-file -glimmer-reduce-partials | FileCheck %s

// A CP train step: the loss and the gradient are per-rank partial sums over
// cp; each gets one all-reduce over cp and loses its marker. The result
// that is not partial (a replicated value) is returned untouched.
// CHECK-LABEL: func.func @grad_step_partial_over_cp
// CHECK-SAME: -> (tensor<f32>, tensor<8x4xf32> {glimmer.grad = "w"}, tensor<4xf32>)
// CHECK: %[[L:.*]] = glimmer.all_reduce sum %arg0 on @mesh ["cp"] : tensor<f32>
// CHECK: %[[G:.*]] = glimmer.all_reduce sum %arg1 on @mesh ["cp"] : tensor<8x4xf32>
// CHECK-NOT: glimmer.all_reduce
// CHECK: return %[[L]], %[[G]], %arg2
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=1, "pp"=1]>
  func.func @grad_step_partial_over_cp(%loss: tensor<f32>, %dw: tensor<8x4xf32>, %b: tensor<4xf32>)
      -> (tensor<f32> {glimmer.partial = ["cp"]},
          tensor<8x4xf32> {glimmer.grad = "w", glimmer.partial = ["cp"]},
          tensor<4xf32>) {
    return %loss, %dw, %b : tensor<f32>, tensor<8x4xf32>, tensor<4xf32>
  }
}

// -----

// Partial over several axes (data parallel and CP): one all-reduce over all
// of them, not one per axis.
// CHECK-LABEL: func.func @loss_partial_over_dp_and_cp
// CHECK: %[[L:.*]] = glimmer.all_reduce sum %arg0 on @mesh ["dp_replicate", "cp"] : tensor<f32>
// CHECK-NEXT: return %[[L]]
module {
  glimmer.mesh @mesh = <["dp_replicate"=2, "dp_shard"=1, "cp"=2, "tp"=1, "pp"=1]>
  func.func @loss_partial_over_dp_and_cp(%loss: tensor<f32>)
      -> (tensor<f32> {glimmer.partial = ["dp_replicate", "cp"]}) {
    return %loss : tensor<f32>
  }
}

// -----

// An unsharded program has no partial result: nothing changes.
// CHECK-LABEL: func.func @unsharded_step
// CHECK-NOT: glimmer.all_reduce
// CHECK: return %arg0
module {
  func.func @unsharded_step(%loss: tensor<f32>) -> tensor<f32> {
    return %loss : tensor<f32>
  }
}
