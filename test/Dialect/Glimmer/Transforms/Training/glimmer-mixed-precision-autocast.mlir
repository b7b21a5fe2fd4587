// RUN: glimmer-opt %s -split-input-file -glimmer-mixed-precision=policy=autocast | FileCheck %s
// RUN: glimmer-opt %s -split-input-file -glimmer-mixed-precision=policy=autocast -glimmer-autodiff="optimizer=adamw max-norm=1.0" -canonicalize | FileCheck %s --check-prefix=AD

// A small language model, as under autocast: the signature stays f32; the
// embedding reads its f32 table (an f32 residual stream); the norm computes
// in f32 and, read only by a GEMM, writes bf16 itself; each GEMM reads a
// bf16 copy of its weight (one convert, however often it is used); silu of
// a bf16 GEMM stays bf16, and the residual add of it to the f32 stream is
// f32 (its bf16 operand widened); cross_entropy reads the bf16 logits, its
// sum and the division by the token count are f32.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg0: tensor<2x4xi64> {glimmer.input = "tokens"}
// CHECK-SAME: %arg2: tensor<16x8xf32> {glimmer.param = "embed"}
// CHECK-SAME: %arg3: tensor<8xf32> {glimmer.param = "norm"}
// CHECK-SAME: %arg4: tensor<8x8xf32> {glimmer.param = "w"}
// CHECK-SAME: -> tensor<f32>
// CHECK: %[[X:.*]] = glimmer.embedding %arg2, %arg0 : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[H:.*]] = glimmer.rms_norm %[[X]], %arg3 eps = {{.*}} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[W:.*]] = glimmer.convert %arg4 : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK-NEXT: %[[L1:.*]] = glimmer.linear %[[H]], %[[W]] : tensor<2x4x8xbf16>, tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[G:.*]] = glimmer.silu %[[L1]] : tensor<2x4x8xbf16>
// CHECK-NEXT: %[[GF:.*]] = glimmer.convert %[[G]] : tensor<2x4x8xbf16> to tensor<2x4x8xf32>
// CHECK-NEXT: %[[R:.*]] = glimmer.add %[[X]], %[[GF]] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[RB:.*]] = glimmer.convert %[[R]] : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// CHECK-NEXT: %[[L2:.*]] = glimmer.linear %[[RB]], %[[W]] : tensor<2x4x8xbf16>, tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[F:.*]] = glimmer.reshape %[[L2]] : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
// CHECK-NEXT: %[[LAB:.*]] = glimmer.reshape %arg1
// CHECK-NEXT: %[[S:.*]], %[[C:.*]] = glimmer.cross_entropy %[[F]], %[[LAB]] ignore_index = -100 : tensor<8x8xbf16>, tensor<8xi64> -> tensor<f32>, tensor<i64>
// CHECK-NEXT: %[[CF:.*]] = glimmer.convert %[[C]] : tensor<i64> to tensor<f32>
// CHECK-NEXT: %[[LOSS:.*]] = glimmer.div %[[S]], %[[CF]] : tensor<f32>
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>
//
// After autodiff: @grad_step keeps the f32 signature and returns f32
// gradients: `w`'s two bf16 contributions accumulate, then convert back;
// the norm's backward reads the bf16 cotangent of its bf16 result and
// gives an f32 input gradient, which the residual stream's f32 gradient
// adds (no bf16 round trip is left of the converts' VJPs); the embedding's
// gradient is f32. @apply_step updates f32 parameters with f32 optimizer
// state.
// AD-LABEL: func.func @grad_step
// AD-SAME: -> (tensor<f32>, tensor<16x8xf32> {glimmer.grad = "embed"}, tensor<8xf32> {glimmer.grad = "norm"}, tensor<8x8xf32> {glimmer.grad = "w"})
// AD: glimmer.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index = -100 : tensor<f32>, tensor<8x8xbf16>, tensor<8xi64>
// AD: %[[DR:.*]] = glimmer.convert %{{.*}} : tensor<2x4x8xbf16> to tensor<2x4x8xf32>
// AD-NOT: glimmer.convert %[[DR]]
// AD: %[[DW:.*]] = glimmer.add %{{.*}}, %{{.*}} : tensor<8x8xbf16>
// AD: %[[DWF:.*]] = glimmer.convert %[[DW]] : tensor<8x8xbf16> to tensor<8x8xf32>
// AD: %[[DX:.*]], %[[DN:.*]] = glimmer.rms_norm_grad %{{.*}}, %{{.*}}, %arg3 eps = {{.*}} : tensor<2x4x8xf32>, tensor<8xf32> grad tensor<2x4x8xbf16>
// AD: %[[DS:.*]] = glimmer.add %[[DR]], %[[DX]] : tensor<2x4x8xf32>
// AD: %[[DE:.*]] = glimmer.embedding_grad %[[DS]], %arg0 : tensor<2x4x8xf32>, tensor<2x4xi64> -> tensor<16x8xf32>
// AD: return %{{.*}}, %[[DE]], %[[DN]], %[[DWF]] : tensor<f32>, tensor<16x8xf32>, tensor<8xf32>, tensor<8x8xf32>
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

// RoPE as under autocast: the angles from integer positions and a buffer
// of frequencies, and their cos, depend on no parameter and stay f32; the
// bf16 query times the f32 cos computes in f32 (the query widened), and a
// splat constant does not promote (it is a scalar to type promotion: the
// product by 0.5 would stay bf16 on a bf16 operand; here it is f32 after
// the cos). Attention reads a bf16 copy made before the transpose, so that
// the transpose is still attention's producer; its lse stays f32. A float
// input (pixels) is converted at its first bf16 use; a sum over the bf16
// attention output is f32 (its input widened).
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg0: tensor<2x4xi64> {glimmer.input = "positions"}
// CHECK-SAME: %arg1: tensor<2x4x8xf32> {glimmer.input = "pixels"}
// CHECK-SAME: %arg2: tensor<4xf32> {glimmer.buffer = "inv_freq"}
// CHECK: %[[HALF:.*]] = glimmer.constant dense<5.000000e-01> : tensor<2x4x2x4xf32>
// CHECK: %[[P:.*]] = glimmer.convert %arg0 : tensor<2x4xi64> to tensor<2x4xf32>
// CHECK: %[[A:.*]] = glimmer.mul %{{.*}}, %{{.*}} : tensor<2x4x4xf32>
// CHECK-NEXT: %[[COS:.*]] = glimmer.cos %[[A]] : tensor<2x4x4xf32>
// CHECK-NEXT: %[[COSR:.*]] = glimmer.reshape %[[COS]] : tensor<2x4x4xf32> -> tensor<2x4x1x4xf32>
// CHECK-NEXT: %[[XB:.*]] = glimmer.convert %arg1 : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// CHECK-NEXT: %[[WB:.*]] = glimmer.convert %arg3 : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK-NEXT: %[[Q:.*]] = glimmer.linear %[[XB]], %[[WB]] : tensor<2x4x8xbf16>, tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[Q4:.*]] = glimmer.reshape %[[Q]] : tensor<2x4x8xbf16> -> tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[COSB:.*]] = glimmer.broadcast_in_dim %[[COSR]] dims = [0, 1, 2, 3] : tensor<2x4x1x4xf32> -> tensor<2x4x2x4xf32>
// CHECK-NEXT: %[[Q4F:.*]] = glimmer.convert %[[Q4]] : tensor<2x4x2x4xbf16> to tensor<2x4x2x4xf32>
// CHECK-NEXT: %[[QR:.*]] = glimmer.mul %[[Q4F]], %[[COSB]] : tensor<2x4x2x4xf32>
// CHECK-NEXT: %[[QS:.*]] = glimmer.mul %[[QR]], %[[HALF]] : tensor<2x4x2x4xf32>
// CHECK-NEXT: %[[QSB:.*]] = glimmer.convert %[[QS]] : tensor<2x4x2x4xf32> to tensor<2x4x2x4xbf16>
// CHECK-NEXT: %[[QT:.*]] = glimmer.transpose %[[QSB]] permutation = [0, 2, 1, 3] : tensor<2x4x2x4xbf16> -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: %[[O:.*]], %[[LSE:.*]] = glimmer.attention %[[QT]], %[[QT]], %[[QT]] {{.*}} : tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16> -> tensor<2x2x4x4xbf16>, tensor<2x2x4xf32>
// CHECK-NEXT: %[[OF:.*]] = glimmer.convert %[[O]] : tensor<2x2x4x4xbf16> to tensor<2x2x4x4xf32>
// CHECK-NEXT: %[[SUM:.*]] = glimmer.reduce sum %[[OF]] dims = [0, 1, 2, 3] : tensor<2x2x4x4xf32> -> tensor<f32>
// CHECK-NEXT: return %[[SUM]] : tensor<f32>
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

// A parameter nothing reads gets no convert; one that only f32 compute
// reads (a sum) stays f32.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: glimmer.convert
// CHECK: %[[S:.*]] = glimmer.reduce sum %arg0 dims = [0] : tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: return %[[S]] : tensor<f32>
module {
  func.func @forward(%w: tensor<4xf32> {glimmer.param = "w"},
                     %unused: tensor<4xf32> {glimmer.param = "unused"}) -> tensor<f32> {
    %s = glimmer.reduce sum %w dims = [0] : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// Promotion: an op whose operands are all bf16 computes in bf16; splat
// constants and broadcast 0-d values are scalars that stay out of it (a
// bf16 constant, a bf16 copy of the 0-d buffer), while a dimensioned f32
// tensor (the [2, 4] input) makes the op f32. exp and softmax compute in
// f32 whatever their input (widened), max (exact) promotes (a max reduction
// of bf16 is bf16, widened where the f32 loss adds it).
// CHECK-LABEL: func.func @forward
// CHECK: %[[H:.*]] = glimmer.linear
// CHECK-NEXT: %[[TWO:.*]] = glimmer.constant dense<2.000000e+00> : tensor<2x4xbf16>
// CHECK-NEXT: %[[A:.*]] = glimmer.mul %[[H]], %[[TWO]] : tensor<2x4xbf16>
// CHECK-NEXT: %[[SB:.*]] = glimmer.convert %arg2 : tensor<f32> to tensor<bf16>
// CHECK-NEXT: %[[SBB:.*]] = glimmer.broadcast_in_dim %[[SB]] dims = [] : tensor<bf16> -> tensor<2x4xbf16>
// CHECK-NEXT: %[[B:.*]] = glimmer.add %[[A]], %[[SBB]] : tensor<2x4xbf16>
// CHECK-NEXT: %[[M:.*]] = glimmer.max %[[B]], %[[B]] : tensor<2x4xbf16>
// CHECK-NEXT: %[[MF:.*]] = glimmer.convert %[[M]] : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK-NEXT: %[[E:.*]] = glimmer.exp %[[MF]] : tensor<2x4xf32>
// CHECK-NEXT: %[[BF:.*]] = glimmer.convert %[[B]] : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK-NEXT: %[[C:.*]] = glimmer.add %[[BF]], %arg1 : tensor<2x4xf32>
// CHECK-NEXT: %[[SM:.*]] = glimmer.softmax %[[MF]] dim = 1 : tensor<2x4xf32>
// CHECK-NEXT: %[[T0:.*]] = glimmer.mul %[[E]], %[[C]] : tensor<2x4xf32>
// CHECK-NEXT: %[[T1:.*]] = glimmer.mul %[[T0]], %[[SM]] : tensor<2x4xf32>
// CHECK-NEXT: %[[SUM:.*]] = glimmer.reduce sum %[[T1]] dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
// CHECK-NEXT: %[[BMAX:.*]] = glimmer.reduce max %[[B]] dims = [0, 1] : tensor<2x4xbf16> -> tensor<bf16>
// CHECK-NEXT: %[[BMAXF:.*]] = glimmer.convert %[[BMAX]] : tensor<bf16> to tensor<f32>
// CHECK-NEXT: %[[LOSS:.*]] = glimmer.add %[[SUM]], %[[BMAXF]] : tensor<f32>
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>
module {
  func.func @forward(%x: tensor<2x8xf32> {glimmer.input = "x"},
                     %bias: tensor<2x4xf32> {glimmer.input = "bias"},
                     %scale: tensor<f32> {glimmer.buffer = "scale"},
                     %w: tensor<4x8xf32> {glimmer.param = "w"})
      -> tensor<f32> {
    %h = glimmer.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
    %two = glimmer.constant dense<2.0> : tensor<2x4xf32>
    %a = glimmer.mul %h, %two : tensor<2x4xf32>
    %sb = glimmer.broadcast_in_dim %scale dims = [] : tensor<f32> -> tensor<2x4xf32>
    %b = glimmer.add %a, %sb : tensor<2x4xf32>
    %m = glimmer.max %b, %b : tensor<2x4xf32>
    %e = glimmer.exp %m : tensor<2x4xf32>
    %c = glimmer.add %b, %bias : tensor<2x4xf32>
    %s = glimmer.softmax %m dim = 1 : tensor<2x4xf32>
    %t0 = glimmer.mul %e, %c : tensor<2x4xf32>
    %t1 = glimmer.mul %t0, %s : tensor<2x4xf32>
    %sum = glimmer.reduce sum %t1 dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %bsum = glimmer.reduce max %b dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %loss = glimmer.add %sum, %bsum : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A norm whose result an f32 op also reads keeps its f32 result (and the
// GEMM reads a convert of it); a norm of a bf16 value reads it widened.
// CHECK-LABEL: func.func @forward
// CHECK: %[[N:.*]] = glimmer.layer_norm %arg0, %arg2, %arg2 eps = {{.*}} : tensor<2x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[NB:.*]] = glimmer.convert %[[N]] : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK: %[[L:.*]] = glimmer.linear %[[NB]], %{{.*}} : tensor<2x8xbf16>, tensor<8x8xbf16> -> tensor<2x8xbf16>
// CHECK-NEXT: %[[R:.*]] = glimmer.add %[[N]], %arg0 : tensor<2x8xf32>
// CHECK-NEXT: %[[LF:.*]] = glimmer.convert %[[L]] : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK-NEXT: %[[M:.*]] = glimmer.rms_norm %[[LF]], %arg2 eps = {{.*}} : tensor<2x8xf32>, tensor<8xf32>
module {
  func.func @forward(%x: tensor<2x8xf32> {glimmer.input = "x"},
                     %w: tensor<8x8xf32> {glimmer.param = "w"},
                     %g: tensor<8xf32> {glimmer.param = "g"})
      -> tensor<f32> {
    %n = glimmer.layer_norm %x, %g, %g eps = 1.0e-05 : tensor<2x8xf32>, tensor<8xf32>
    %l = glimmer.linear %n, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
    %r = glimmer.add %n, %x : tensor<2x8xf32>
    %m = glimmer.rms_norm %l, %g eps = 1.0e-05 : tensor<2x8xf32>, tensor<8xf32>
    %p = glimmer.mul %r, %m : tensor<2x8xf32>
    %loss = glimmer.reduce sum %p dims = [0, 1] : tensor<2x8xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
