// RUN: glimmer-opt %s -split-input-file -glimmer-narrow-gathers | FileCheck %s

// An FSDP piece gathered whole and read only in bf16: each rank rounds its
// piece and the gather moves bf16 (the invariant marker and the gather's
// attributes carried over). The gradient's reduce_scatter (an f32 value)
// is not a gather and stays as it is.
// CHECK-LABEL: func.func @fsdp_param_read_in_bf16
// CHECK: %[[P:.*]] = glimmer.convert %arg0 : tensor<32x64xf32> to tensor<32x64xbf16>
// CHECK-NEXT: %[[W:.*]] = glimmer.all_gather %[[P]] on @mesh ["dp_shard"] dim = 0 : tensor<32x64xbf16> -> tensor<64x64xbf16>
// CHECK-NEXT: glimmer.linear %arg1, %[[W]]
// CHECK: glimmer.reduce_scatter sum %arg2 on @mesh ["dp_shard"] dim = 0 : tensor<64x64xf32> -> tensor<32x64xf32>
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=1, "pp"=1]>
  func.func @fsdp_param_read_in_bf16(%piece: tensor<32x64xf32>, %x: tensor<8x64xbf16>, %dw: tensor<64x64xf32>)
      -> (tensor<8x64xbf16>, tensor<32x64xf32>) {
    %w = glimmer.all_gather %piece on @mesh ["dp_shard"] dim = 0 : tensor<32x64xf32> -> tensor<64x64xf32>
    %wb = glimmer.convert %w : tensor<64x64xf32> to tensor<64x64xbf16>
    %y = glimmer.linear %x, %wb : tensor<8x64xbf16>, tensor<64x64xbf16> -> tensor<8x64xbf16>
    %g = glimmer.reduce_scatter sum %dw on @mesh ["dp_shard"] dim = 0 : tensor<64x64xf32> -> tensor<32x64xf32>
    return %y, %g : tensor<8x64xbf16>, tensor<32x64xf32>
  }
}

// -----

// Two converts to the same type (a tied weight read twice before CSE): one
// narrow gather feeds both readers; the marker for invariant users kept.
// CHECK-LABEL: func.func @two_readers_same_type
// CHECK: %[[P:.*]] = glimmer.convert %arg0 : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: %[[W:.*]] = glimmer.all_gather %[[P]] on @mesh ["tp"] dim = 1 invariant : tensor<4x8xbf16> -> tensor<4x16xbf16>
// CHECK-NOT: glimmer.convert
// CHECK: return %[[W]], %[[W]]
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=2, "pp"=1]>
  func.func @two_readers_same_type(%piece: tensor<4x8xf32>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>) {
    %w = glimmer.all_gather %piece on @mesh ["tp"] dim = 1 invariant : tensor<4x8xf32> -> tensor<4x16xf32>
    %a = glimmer.convert %w : tensor<4x16xf32> to tensor<4x16xbf16>
    %b = glimmer.convert %w : tensor<4x16xf32> to tensor<4x16xbf16>
    return %a, %b : tensor<4x16xbf16>, tensor<4x16xbf16>
  }
}

// -----

// Left as they are: a gather also read in f32 (its f32 value is needed), a
// gather converted to two types, a gather that is widened (rounding first
// would not save anything and a widening gathers more bytes), an integer
// gather converted to a narrower integer (truncation, not rounding: kept
// out of the rule) and a gather nothing converts.
// CHECK-LABEL: func.func @gathers_left_alone
// CHECK: %[[A:.*]] = glimmer.all_gather %arg0 {{.*}} -> tensor<8xf32>
// CHECK: glimmer.convert %[[A]] : tensor<8xf32> to tensor<8xbf16>
// CHECK: %[[B:.*]] = glimmer.all_gather %arg1 {{.*}} -> tensor<8xf32>
// CHECK: glimmer.convert %[[B]] : tensor<8xf32> to tensor<8xbf16>
// CHECK: glimmer.convert %[[B]] : tensor<8xf32> to tensor<8xf16>
// CHECK: %[[C:.*]] = glimmer.all_gather %arg2 {{.*}} -> tensor<8xbf16>
// CHECK: glimmer.convert %[[C]] : tensor<8xbf16> to tensor<8xf32>
// CHECK: %[[D:.*]] = glimmer.all_gather %arg3 {{.*}} -> tensor<8xi64>
// CHECK: glimmer.convert %[[D]] : tensor<8xi64> to tensor<8xi32>
// CHECK: glimmer.all_gather %arg4 {{.*}} -> tensor<8xf32>
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=1, "pp"=1]>
  func.func @gathers_left_alone(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xbf16>, %d: tensor<4xi64>, %e: tensor<4xf32>)
      -> (tensor<8xf32>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xf16>, tensor<8xf32>, tensor<8xi32>, tensor<8xf32>) {
    %ga = glimmer.all_gather %a on @mesh ["dp_shard"] dim = 0 : tensor<4xf32> -> tensor<8xf32>
    %ca = glimmer.convert %ga : tensor<8xf32> to tensor<8xbf16>
    %gb = glimmer.all_gather %b on @mesh ["dp_shard"] dim = 0 : tensor<4xf32> -> tensor<8xf32>
    %cb = glimmer.convert %gb : tensor<8xf32> to tensor<8xbf16>
    %cb2 = glimmer.convert %gb : tensor<8xf32> to tensor<8xf16>
    %gc = glimmer.all_gather %c on @mesh ["dp_shard"] dim = 0 : tensor<4xbf16> -> tensor<8xbf16>
    %cc = glimmer.convert %gc : tensor<8xbf16> to tensor<8xf32>
    %gd = glimmer.all_gather %d on @mesh ["dp_shard"] dim = 0 : tensor<4xi64> -> tensor<8xi64>
    %cd = glimmer.convert %gd : tensor<8xi64> to tensor<8xi32>
    %ge = glimmer.all_gather %e on @mesh ["dp_shard"] dim = 0 : tensor<4xf32> -> tensor<8xf32>
    return %ga, %ca, %cb, %cb2, %cc, %cd, %ge : tensor<8xf32>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xf16>, tensor<8xf32>, tensor<8xi32>, tensor<8xf32>
  }
}
