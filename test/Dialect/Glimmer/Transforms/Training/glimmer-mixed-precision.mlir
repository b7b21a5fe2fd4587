// RUN: glimmer-opt %s -split-input-file -glimmer-mixed-precision | FileCheck %s
// RUN: glimmer-opt %s -split-input-file -glimmer-mixed-precision -glimmer-autodiff="optimizer=adamw max-norm=1.0" -canonicalize | FileCheck %s --check-prefix=AD

// A small language model: the signature stays f32; each parameter is read
// through one convert to bf16 (before its first use, however often it is
// used); the embedding, norm, GEMMs and their elementwise glue run in bf16;
// cross_entropy's sum and the division by the token count stay f32.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg0: tensor<2x4xi64> {glimmer.input = "tokens"}
// CHECK-SAME: %arg2: tensor<16x8xf32> {glimmer.param = "embed"}
// CHECK-SAME: %arg3: tensor<8xf32> {glimmer.param = "norm"}
// CHECK-SAME: %arg4: tensor<8x8xf32> {glimmer.param = "w"}
// CHECK-SAME: -> tensor<f32>
// CHECK: %[[E:.*]] = glimmer.convert %arg2 : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK-NEXT: %[[X:.*]] = glimmer.embedding %[[E]], %arg0 : tensor<16x8xbf16>, tensor<2x4xi64> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[N:.*]] = glimmer.convert %arg3 : tensor<8xf32> to tensor<8xbf16>
// CHECK-NEXT: %[[H:.*]] = glimmer.rms_norm %[[X]], %[[N]] eps = {{.*}} : tensor<2x4x8xbf16>, tensor<8xbf16>
// CHECK-NEXT: %[[W:.*]] = glimmer.convert %arg4 : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK-NEXT: %[[L1:.*]] = glimmer.linear %[[H]], %[[W]] : tensor<2x4x8xbf16>, tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[G:.*]] = glimmer.silu %[[L1]] : tensor<2x4x8xbf16>
// CHECK-NEXT: %[[R:.*]] = glimmer.add %[[X]], %[[G]] : tensor<2x4x8xbf16>
// CHECK-NEXT: %[[L2:.*]] = glimmer.linear %[[R]], %[[W]] : tensor<2x4x8xbf16>, tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[F:.*]] = glimmer.reshape %[[L2]] : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
// CHECK-NEXT: %[[LAB:.*]] = glimmer.reshape %arg1
// CHECK-NEXT: %[[S:.*]], %[[C:.*]] = glimmer.cross_entropy %[[F]], %[[LAB]] ignore_index = -100 : tensor<8x8xbf16>, tensor<8xi64> -> tensor<f32>, tensor<i64>
// CHECK-NEXT: %[[CF:.*]] = glimmer.convert %[[C]] : tensor<i64> to tensor<f32>
// CHECK-NEXT: %[[LOSS:.*]] = glimmer.div %[[S]], %[[CF]] : tensor<f32>
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>
//
// After autodiff: @grad_step keeps the f32 signature and returns f32
// gradients, each the bf16 cotangent of a parameter's convert converted
// back (`w`, used twice, accumulates its two bf16 contributions first);
// @apply_step updates f32 parameters with f32 optimizer state.
// AD-LABEL: func.func @grad_step
// AD-SAME: -> (tensor<f32>, tensor<16x8xf32> {glimmer.grad = "embed"}, tensor<8xf32> {glimmer.grad = "norm"}, tensor<8x8xf32> {glimmer.grad = "w"})
// AD: glimmer.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index = -100 : tensor<f32>, tensor<8x8xbf16>, tensor<8xi64>
// AD: %[[DW:.*]] = glimmer.add %{{.*}}, %{{.*}} : tensor<8x8xbf16>
// AD: %[[DWF:.*]] = glimmer.convert %[[DW]] : tensor<8x8xbf16> to tensor<8x8xf32>
// AD: %[[DE:.*]] = glimmer.embedding_grad %{{.*}}, %arg0 : tensor<2x4x8xbf16>, tensor<2x4xi64> -> tensor<16x8xbf16>
// AD: %[[DEF:.*]] = glimmer.convert %[[DE]] : tensor<16x8xbf16> to tensor<16x8xf32>
// AD: return %{{.*}}, %[[DEF]], %{{.*}}, %[[DWF]] : tensor<f32>, tensor<16x8xf32>, tensor<8xf32>, tensor<8x8xf32>
// AD-LABEL: func.func @apply_step
// AD-NOT: bf16
// AD: glimmer.adamw_update {{.*}} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<i64>
// AD-NOT: bf16
// AD: return
module {
  func.func @forward(%tokens: tensor<2x4xi64> {glimmer.input = "tokens"},
                     %labels: tensor<2x4xi64> {glimmer.input = "labels"},
                     %embed: tensor<16x8xf32> {glimmer.param = "embed"},
                     %norm: tensor<8xf32> {glimmer.param = "norm"},
                     %w: tensor<8x8xf32> {glimmer.param = "w"}) -> tensor<f32> {
    %x = glimmer.embedding %embed, %tokens : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
    %h = glimmer.rms_norm %x, %norm eps = 1.0e-05 : tensor<2x4x8xf32>, tensor<8xf32>
    %l1 = glimmer.linear %h, %w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    %g = glimmer.silu %l1 : tensor<2x4x8xf32>
    %r = glimmer.add %x, %g : tensor<2x4x8xf32>
    %l2 = glimmer.linear %r, %w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    %f = glimmer.reshape %l2 : tensor<2x4x8xf32> -> tensor<8x8xf32>
    %lab = glimmer.reshape %labels : tensor<2x4xi64> -> tensor<8xi64>
    %s, %c = glimmer.cross_entropy %f, %lab ignore_index = -100 : tensor<8x8xf32>, tensor<8xi64> -> tensor<f32>, tensor<i64>
    %cf = glimmer.convert %c : tensor<i64> to tensor<f32>
    %loss = glimmer.div %s, %cf : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Values that depend on no parameter keep f32: the RoPE angles from integer
// positions and a buffer of frequencies, their cos and sin. Where they meet
// bf16 compute they are converted once (a reshape and a broadcast are
// rebuilt on a bf16 copy of their input, so the convert lands on the cos
// and the partitioner still sees a broadcast); a
// float input (pixels) is converted at its first bf16 use. Attention's lse
// stays f32 for bf16 queries; f32 constants that bf16 ops read become bf16
// constants.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg0: tensor<2x4xi64> {glimmer.input = "positions"}
// CHECK-SAME: %arg1: tensor<2x4x8xf32> {glimmer.input = "pixels"}
// CHECK-SAME: %arg2: tensor<4xf32> {glimmer.buffer = "inv_freq"}
// CHECK-NOT: glimmer.constant {{.*}}f32>
// CHECK: %[[P:.*]] = glimmer.convert %arg0 : tensor<2x4xi64> to tensor<2x4xf32>
// CHECK: %[[A:.*]] = glimmer.mul %{{.*}}, %{{.*}} : tensor<2x4x4xf32>
// CHECK-NEXT: %[[COS:.*]] = glimmer.cos %[[A]] : tensor<2x4x4xf32>
// CHECK-NEXT: %[[XB:.*]] = glimmer.convert %arg1 : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// CHECK-NEXT: %[[WB:.*]] = glimmer.convert %arg3 : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK-NEXT: %[[Q:.*]] = glimmer.linear %[[XB]], %[[WB]] : tensor<2x4x8xbf16>, tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[Q4:.*]] = glimmer.reshape %[[Q]] : tensor<2x4x8xbf16> -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[COSL:.*]] = glimmer.convert %[[COS]] : tensor<2x4x4xf32> to tensor<2x4x4xbf16>
// CHECK-NEXT: %[[COSR:.*]] = glimmer.reshape %[[COSL]] : tensor<2x4x4xbf16> -> tensor<2x4x1x4xbf16>
// CHECK-NEXT: %[[COSB:.*]] = glimmer.broadcast_in_dim %[[COSR]] dims = [0, 1, 2, 3] : tensor<2x4x1x4xbf16> -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[QR:.*]] = glimmer.mul %[[Q4]], %[[COSB]] : tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[HALF:.*]] = glimmer.constant dense<5.000000e-01> : tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[QS:.*]] = glimmer.mul %[[QR]], %[[HALF]] : tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[QT:.*]] = glimmer.transpose %[[QS]]
// CHECK-NEXT: %[[O:.*]], %[[LSE:.*]] = glimmer.attention %[[QT]], %[[QT]], %[[QT]] {{.*}} : tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16> -> tensor<2x2x4x4xbf16>, tensor<2x2x4xf32>
// CHECK: %[[SUM:.*]] = glimmer.reduce sum %{{.*}} dims = [0, 1, 2, 3] : tensor<2x2x4x4xbf16> -> tensor<bf16>
// CHECK-NEXT: %[[LOSS:.*]] = glimmer.convert %[[SUM]] : tensor<bf16> to tensor<f32>
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>
module {
  func.func @forward(%pos: tensor<2x4xi64> {glimmer.input = "positions"},
                     %pixels: tensor<2x4x8xf32> {glimmer.input = "pixels"},
                     %inv_freq: tensor<4xf32> {glimmer.buffer = "inv_freq"},
                     %wq: tensor<8x8xf32> {glimmer.param = "wq"})
      -> tensor<f32> {
    %half = glimmer.constant dense<0.5> : tensor<2x4x2x4xf32>
    %pf = glimmer.convert %pos : tensor<2x4xi64> to tensor<2x4xf32>
    %pb = glimmer.broadcast_in_dim %pf dims = [0, 1] : tensor<2x4xf32> -> tensor<2x4x4xf32>
    %fb = glimmer.broadcast_in_dim %inv_freq dims = [2] : tensor<4xf32> -> tensor<2x4x4xf32>
    %angles = glimmer.mul %pb, %fb : tensor<2x4x4xf32>
    %cos = glimmer.cos %angles : tensor<2x4x4xf32>
    %cos4 = glimmer.reshape %cos : tensor<2x4x4xf32> -> tensor<2x4x1x4xf32>
    %q = glimmer.linear %pixels, %wq : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    %q4 = glimmer.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %cosb = glimmer.broadcast_in_dim %cos4 dims = [0, 1, 2, 3] : tensor<2x4x1x4xf32> -> tensor<2x4x2x4xf32>
    %qr = glimmer.mul %q4, %cosb : tensor<2x4x2x4xf32>
    %qs = glimmer.mul %qr, %half : tensor<2x4x2x4xf32>
    %qt = glimmer.transpose %qs permutation = [0, 2, 1, 3] : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
    %o, %lse = glimmer.attention %qt, %qt, %qt positions(%pos, %pos : tensor<2x4xi64>, tensor<2x4xi64>) causal scale = 0.5
        : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32> -> tensor<2x2x4x4xf32>, tensor<2x2x4xf32>
    %sum = glimmer.reduce sum %o dims = [0, 1, 2, 3] : tensor<2x2x4x4xf32> -> tensor<f32>
    return %sum : tensor<f32>
  }
}

// -----

// A parameter nothing reads gets no convert; a bf16 result is converted
// back to f32.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg1: tensor<4xf32> {glimmer.param = "unused"}
// CHECK-NOT: glimmer.convert %arg1
// CHECK: %[[W:.*]] = glimmer.convert %arg0 : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[S:.*]] = glimmer.reduce sum %[[W]] dims = [0] : tensor<4xbf16> -> tensor<bf16>
// CHECK-NEXT: %[[F:.*]] = glimmer.convert %[[S]] : tensor<bf16> to tensor<f32>
// CHECK-NEXT: return %[[F]] : tensor<f32>
module {
  func.func @forward(%w: tensor<4xf32> {glimmer.param = "w"},
                     %unused: tensor<4xf32> {glimmer.param = "unused"}) -> tensor<f32> {
    %s = glimmer.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
