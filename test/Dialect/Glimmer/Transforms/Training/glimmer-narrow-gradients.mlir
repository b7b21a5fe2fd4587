// RUN: glimmer-opt %s -split-input-file -glimmer-narrow-gradients | FileCheck %s

// A bf16 cotangent converted to f32 as @grad_step's last op: the convert
// goes, @grad_step returns the bf16 gradient, @apply_step takes it in bf16
// and its norm and update read it as they are (f32 parameter and state).
// CHECK-LABEL: func.func @grad_step
// CHECK-SAME: -> (tensor<f32>, tensor<8x8xbf16> {glimmer.grad = "w"})
// CHECK-NOT: glimmer.convert
// CHECK: return %{{.*}}, %arg1 : tensor<f32>, tensor<8x8xbf16>
// CHECK-LABEL: func.func @apply_step
// CHECK-SAME: %arg1: tensor<8x8xbf16> {glimmer.grad = "w"}
// CHECK: glimmer.sum_squares %arg1 : tensor<8x8xbf16> -> tensor<f32>
// CHECK: glimmer.adamw_update %arg0, %arg1, {{.*}} : tensor<8x8xf32>, tensor<8x8xbf16>, tensor<i64>
module {
  func.func @grad_step(%loss: tensor<f32>, %dw: tensor<8x8xbf16>) -> (tensor<f32>, tensor<8x8xf32> {glimmer.grad = "w"}) {
    %dwf = glimmer.convert %dw : tensor<8x8xbf16> to tensor<8x8xf32>
    return %loss, %dwf : tensor<f32>, tensor<8x8xf32>
  }
  func.func @apply_step(%w: tensor<8x8xf32> {glimmer.param = "w"}, %g: tensor<8x8xf32> {glimmer.grad = "w"},
                        %m: tensor<8x8xf32>, %v: tensor<8x8xf32>, %step: tensor<i64>)
      -> (tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
    %n = glimmer.sum_squares %g : tensor<8x8xf32> -> tensor<f32>
    %p1, %m1, %v1 = glimmer.adamw_update %w, %g, %m, %v, %step lr = 1.0e-03
        beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<i64>
    return %n, %p1, %m1, %v1 : tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}

// -----

// Left as they are: a convert also used inside @grad_step (its f32 value is
// needed there), a gradient that is f32 all along, and a gradient that
// @apply_step also reads with an op that does not widen (SGD with a bf16
// gradient of its own stays right beside them).
// CHECK-LABEL: func.func @grad_step
// CHECK-SAME: -> (tensor<4xf32> {glimmer.grad = "a"}, tensor<4xf32> {glimmer.grad = "b"}, tensor<4xf32> {glimmer.grad = "c"}, tensor<4xbf16> {glimmer.grad = "d"})
// CHECK: %[[A:.*]] = glimmer.convert %arg0
// CHECK: %[[C:.*]] = glimmer.convert %arg2
// CHECK: return %[[A]], %{{.*}}, %[[C]], %arg3
// CHECK-LABEL: func.func @apply_step
// CHECK-SAME: %arg0: tensor<4xf32> {glimmer.grad = "a"}, %arg1: tensor<4xf32> {glimmer.grad = "b"}, %arg2: tensor<4xf32> {glimmer.grad = "c"}, %arg3: tensor<4xbf16> {glimmer.grad = "d"}
module {
  func.func @grad_step(%da: tensor<4xbf16>, %db: tensor<4xf32>, %dc: tensor<4xbf16>, %dd: tensor<4xbf16>)
      -> (tensor<4xf32> {glimmer.grad = "a"}, tensor<4xf32> {glimmer.grad = "b"}, tensor<4xf32> {glimmer.grad = "c"}, tensor<4xf32> {glimmer.grad = "d"}) {
    %a = glimmer.convert %da : tensor<4xbf16> to tensor<4xf32>
    %twice = glimmer.add %a, %a : tensor<4xf32>
    %c = glimmer.convert %dc : tensor<4xbf16> to tensor<4xf32>
    %d = glimmer.convert %dd : tensor<4xbf16> to tensor<4xf32>
    return %a, %twice, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  func.func @apply_step(%ga: tensor<4xf32> {glimmer.grad = "a"}, %gb: tensor<4xf32> {glimmer.grad = "b"},
                        %gc: tensor<4xf32> {glimmer.grad = "c"}, %gd: tensor<4xf32> {glimmer.grad = "d"},
                        %p: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %pa = glimmer.sgd_update %p, %ga lr = 0.1 weight_decay = 0.0 : tensor<4xf32>, tensor<4xf32>
    %pc = glimmer.add %p, %gc : tensor<4xf32>
    %pd = glimmer.sgd_update %p, %gd lr = 0.1 weight_decay = 0.0 : tensor<4xf32>, tensor<4xf32>
    return %pa, %pc, %pd : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Micro-batches: the trainer sums each micro-batch's gradients between the
// two functions, in the type @grad_step returns, so they stay f32.
// CHECK-LABEL: func.func @grad_step
// CHECK-SAME: -> (tensor<4xf32> {glimmer.grad = "w"})
// CHECK: glimmer.convert
module attributes {glimmer.spmd = #glimmer.spmd<"microbatches=2">} {
  func.func @grad_step(%dw: tensor<4xbf16>) -> (tensor<4xf32> {glimmer.grad = "w"}) {
    %f = glimmer.convert %dw : tensor<4xbf16> to tensor<4xf32>
    return %f : tensor<4xf32>
  }
  func.func @apply_step(%w: tensor<4xf32> {glimmer.param = "w"}, %g: tensor<4xf32> {glimmer.grad = "w"}) -> tensor<4xf32> {
    %p = glimmer.sgd_update %w, %g lr = 0.1 weight_decay = 0.0 : tensor<4xf32>, tensor<4xf32>
    return %p : tensor<4xf32>
  }
}

// -----

// A gradient still marked partial is summed later in its f32 type: kept.
// CHECK-LABEL: func.func @grad_step
// CHECK-SAME: -> (tensor<4xf32> {glimmer.grad = "w", glimmer.partial = ["cp"]})
// CHECK: glimmer.convert
module {
  func.func @grad_step(%dw: tensor<4xbf16>) -> (tensor<4xf32> {glimmer.grad = "w", glimmer.partial = ["cp"]}) {
    %f = glimmer.convert %dw : tensor<4xbf16> to tensor<4xf32>
    return %f : tensor<4xf32>
  }
  func.func @apply_step(%w: tensor<4xf32> {glimmer.param = "w"}, %g: tensor<4xf32> {glimmer.grad = "w"}) -> tensor<4xf32> {
    %p = glimmer.sgd_update %w, %g lr = 0.1 weight_decay = 0.0 : tensor<4xf32>, tensor<4xf32>
    return %p : tensor<4xf32>
  }
}
