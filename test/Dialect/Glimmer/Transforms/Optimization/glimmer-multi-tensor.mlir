// RUN: glimmer-opt %s -split-input-file -glimmer-multi-tensor | FileCheck %s

// An optimizer step's updates (one step, one grad_scale, one set of
// hyperparameters; a bf16 gradient among them) become one list op where the
// last one was; the results keep their places in the return.
// CHECK-LABEL: func.func @apply_step
// CHECK: %[[N:.*]] = glimmer.sum_squares
// CHECK-NOT: glimmer.adamw_update %
// CHECK: %[[P:[^:]*]]:2, %[[M:[^:]*]]:2, %[[V:[^:]*]]:2 = glimmer.adamw_update_list(%arg0, %arg4), (%arg1, %arg5), (%arg2, %arg6), (%arg3, %arg7), %arg8 grad_scale(%[[N]] : tensor<f32>) lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 0.99899999999999999 eps = 1.000000e-08 weight_decay = 1.000000e-02 : (tensor<8x8xf32>, tensor<4xf32>), (tensor<8x8xbf16>, tensor<4xf32>), tensor<i64>
// CHECK-NEXT: return %[[N]], %[[P]]#0, %[[M]]#0, %[[V]]#0, %[[P]]#1, %[[M]]#1, %[[V]]#1
module {
  func.func @apply_step(%w: tensor<8x8xf32>, %g: tensor<8x8xbf16>, %m: tensor<8x8xf32>, %v: tensor<8x8xf32>,
                        %b: tensor<4xf32>, %gb: tensor<4xf32>, %mb: tensor<4xf32>, %vb: tensor<4xf32>,
                        %step: tensor<i64>)
      -> (tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %n = glimmer.sum_squares %g, %gb : tensor<8x8xbf16>, tensor<4xf32> -> tensor<f32>
    %p1, %m1, %v1 = glimmer.adamw_update %w, %g, %m, %v, %step grad_scale(%n : tensor<f32>) lr = 1.0e-03
        beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<8x8xf32>, tensor<8x8xbf16>, tensor<i64>
    %p2, %m2, %v2 = glimmer.adamw_update %b, %gb, %mb, %vb, %step grad_scale(%n : tensor<f32>) lr = 1.0e-03
        beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<4xf32>, tensor<4xf32>, tensor<i64>
    return %n, %p1, %m1, %v1, %p2, %m2, %v2 : tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Updates with other hyperparameters (no weight decay for the second) are
// other groups; a group of one stays as it is, and so does an update whose
// result is read before the group's last update.
// CHECK-LABEL: func.func @groups
// CHECK: %[[A:[^,]*]], %{{.*}} = glimmer.adamw_update %arg0, %arg0, %arg0, %arg0, %arg2 lr
// CHECK-NEXT: glimmer.add %[[A]], %[[A]]
// CHECK-NEXT: glimmer.adamw_update %arg1, %arg1, %arg1, %arg1, %arg2 lr = 1.000000e-03 {{.*}} weight_decay = 0.000000e+00
// CHECK-NEXT: glimmer.adamw_update %arg0, %arg0, %arg0, %arg0, %arg2 lr
// CHECK-NEXT: return
func.func @groups(%p: tensor<4xf32>, %q: tensor<4xf32>, %step: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a:3 = glimmer.adamw_update %p, %p, %p, %p, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<4xf32>, tensor<4xf32>, tensor<i64>
  %u = glimmer.add %a#0, %a#0 : tensor<4xf32>
  %b:3 = glimmer.adamw_update %q, %q, %q, %q, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.0 : tensor<4xf32>, tensor<4xf32>, tensor<i64>
  %c:3 = glimmer.adamw_update %p, %p, %p, %p, %step lr = 1.0e-03
      beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<4xf32>, tensor<4xf32>, tensor<i64>
  return %u, %b#0, %c#0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The casts of arguments to one type become one list op where the first
// was (the parameters' bf16 copies of a mixed-precision step); a cast of a
// computed value, and a group of one (the f64 cast), stay.
// CHECK-LABEL: func.func @grad_step
// CHECK-NEXT: %[[C:[^:]*]]:2 = glimmer.convert_list %arg0, %arg1 : tensor<4x8xf32>, tensor<4xf32> to tensor<4x8xbf16>, tensor<4xbf16>
// CHECK-NEXT: %[[X:.*]] = glimmer.linear %arg2, %[[C]]#0
// CHECK-NEXT: glimmer.convert %arg1 : tensor<4xf32> to tensor<4xf64>
// CHECK-NEXT: %[[Z:.*]] = glimmer.rms_norm %[[X]], %[[C]]#1
// CHECK-NEXT: glimmer.convert %[[Z]] : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK-NEXT: return
func.func @grad_step(%w: tensor<4x8xf32>, %n: tensor<4xf32>, %x: tensor<2x8xbf16>) -> (tensor<2x4xf32>, tensor<4xf64>) {
  %wb = glimmer.convert %w : tensor<4x8xf32> to tensor<4x8xbf16>
  %h = glimmer.linear %x, %wb : tensor<2x8xbf16>, tensor<4x8xbf16> -> tensor<2x4xbf16>
  %nd = glimmer.convert %n : tensor<4xf32> to tensor<4xf64>
  %nb = glimmer.convert %n : tensor<4xf32> to tensor<4xbf16>
  %z = glimmer.rms_norm %h, %nb eps = 1.0e-05 : tensor<2x4xbf16>, tensor<4xbf16>
  %zf = glimmer.convert %z : tensor<2x4xbf16> to tensor<2x4xf32>
  return %zf, %nd : tensor<2x4xf32>, tensor<4xf64>
}
