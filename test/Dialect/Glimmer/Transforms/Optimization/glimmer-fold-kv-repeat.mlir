// RUN: glimmer-opt %s -split-input-file -glimmer-fold-kv-repeat -canonicalize | FileCheck %s

// Hugging Face's repeat_kv on [B, Hkv, T, D] (expand after the heads,
// reshape): the attention reads the two key/value heads themselves.
// CHECK-LABEL: func.func @repeat_kv_heads_first
// CHECK-NOT: glimmer.broadcast_in_dim
// CHECK: glimmer.attention %arg0, %arg1, %arg2 causal scale = 2.500000e-01 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>
func.func @repeat_kv_heads_first(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %k1 = glimmer.reshape %k : tensor<2x2x8x16xf32> -> tensor<2x2x1x8x16xf32>
  %k2 = glimmer.broadcast_in_dim %k1 dims = [0, 1, 2, 3, 4] : tensor<2x2x1x8x16xf32> -> tensor<2x2x2x8x16xf32>
  %kr = glimmer.reshape %k2 : tensor<2x2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  %v1 = glimmer.reshape %v : tensor<2x2x8x16xf32> -> tensor<2x2x1x8x16xf32>
  %v2 = glimmer.broadcast_in_dim %v1 dims = [0, 1, 2, 3, 4] : tensor<2x2x1x8x16xf32> -> tensor<2x2x2x8x16xf32>
  %vr = glimmer.reshape %v2 : tensor<2x2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  %o, %lse = glimmer.attention %q, %kr, %vr causal scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// The reference model repeats on [B, T, Hkv, D] and then transposes to
// heads-first: the attention reads the transposed unrepeated heads.
// CHECK-LABEL: func.func @repeat_then_transpose
// CHECK-DAG: %[[K:.*]] = glimmer.transpose %arg1 permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
// CHECK-DAG: %[[V:.*]] = glimmer.transpose %arg2 permutation = [0, 2, 1, 3] : tensor<1x8x2x16xbf16> -> tensor<1x2x8x16xbf16>
// CHECK-NOT: glimmer.broadcast_in_dim
// CHECK: glimmer.attention %arg0, %[[K]], %[[V]] causal
func.func @repeat_then_transpose(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x8x2x16xbf16>, %v: tensor<1x8x2x16xbf16>) -> tensor<1x4x8x16xbf16> {
  %k1 = glimmer.reshape %k : tensor<1x8x2x16xbf16> -> tensor<1x8x2x1x16xbf16>
  %k2 = glimmer.broadcast_in_dim %k1 dims = [0, 1, 2, 3, 4] : tensor<1x8x2x1x16xbf16> -> tensor<1x8x2x2x16xbf16>
  %k3 = glimmer.reshape %k2 : tensor<1x8x2x2x16xbf16> -> tensor<1x8x4x16xbf16>
  %kt = glimmer.transpose %k3 permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
  %v1 = glimmer.reshape %v : tensor<1x8x2x16xbf16> -> tensor<1x8x2x1x16xbf16>
  %v2 = glimmer.broadcast_in_dim %v1 dims = [0, 1, 2, 3, 4] : tensor<1x8x2x1x16xbf16> -> tensor<1x8x2x2x16xbf16>
  %v3 = glimmer.reshape %v2 : tensor<1x8x2x2x16xbf16> -> tensor<1x8x4x16xbf16>
  %vt = glimmer.transpose %v3 permutation = [0, 2, 1, 3] : tensor<1x8x4x16xbf16> -> tensor<1x4x8x16xbf16>
  %o, %lse = glimmer.attention %q, %kt, %vt causal scale = 0.25 : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
  return %o : tensor<1x4x8x16xbf16>
}

// -----

// Copies placed before the heads (head h reads key/value head h % Hkv, a
// tile, not a repeat) are not what attention's grouping means: kept.
// CHECK-LABEL: func.func @tiled_heads_kept
// CHECK: glimmer.broadcast_in_dim
// CHECK: glimmer.attention %arg0, %{{.*}}, %{{.*}} scale
// CHECK-SAME: tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
func.func @tiled_heads_kept(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %k1 = glimmer.reshape %k : tensor<2x2x8x16xf32> -> tensor<2x1x2x8x16xf32>
  %k2 = glimmer.broadcast_in_dim %k1 dims = [0, 1, 2, 3, 4] : tensor<2x1x2x8x16xf32> -> tensor<2x2x2x8x16xf32>
  %kr = glimmer.reshape %k2 : tensor<2x2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  %o, %lse = glimmer.attention %q, %kr, %kr scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Only the key is a repeat (the value has as many heads as the query):
// nothing changes, since key and value must have one shape.
// CHECK-LABEL: func.func @value_not_repeated_kept
// CHECK: glimmer.broadcast_in_dim
// CHECK: glimmer.attention %arg0, %{{.*}}, %arg2 scale
func.func @value_not_repeated_kept(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %k1 = glimmer.reshape %k : tensor<2x2x8x16xf32> -> tensor<2x2x1x8x16xf32>
  %k2 = glimmer.broadcast_in_dim %k1 dims = [0, 1, 2, 3, 4] : tensor<2x2x1x8x16xf32> -> tensor<2x2x2x8x16xf32>
  %kr = glimmer.reshape %k2 : tensor<2x2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  %o, %lse = glimmer.attention %q, %kr, %v scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Sequence-major key and value ([B, T, H, D]): a repeat along dimension 1
// copies keys along the sequence, not heads, and must stay.
// CHECK-LABEL: func.func @sequence_major_key_value_kept
// CHECK: glimmer.broadcast_in_dim
// CHECK: glimmer.attention %arg0, %{{.*}}, %{{.*}} scale
// CHECK-SAME: : tensor<2x2x8x16xbf16>, tensor<2x8x2x16xbf16> ->
func.func @sequence_major_key_value_kept(%q: tensor<2x2x8x16xbf16>, %k: tensor<2x4x2x16xbf16>) -> tensor<2x2x8x16xbf16> {
  %k1 = glimmer.reshape %k : tensor<2x4x2x16xbf16> -> tensor<2x4x1x2x16xbf16>
  %k2 = glimmer.broadcast_in_dim %k1 dims = [0, 1, 2, 3, 4] : tensor<2x4x1x2x16xbf16> -> tensor<2x4x2x2x16xbf16>
  %kr = glimmer.reshape %k2 : tensor<2x4x2x2x16xbf16> -> tensor<2x8x2x16xbf16>
  %o, %lse = glimmer.attention %q, %kr, %kr scale = 0.25 {sequence_major = array<i1: false, true, true, false>} : tensor<2x2x8x16xbf16>, tensor<2x8x2x16xbf16> -> tensor<2x2x8x16xbf16>, tensor<2x2x8xf32>
  return %o : tensor<2x2x8x16xbf16>
}
