// RUN: glimmer-opt %s -split-input-file -glimmer-simplify-attention-masks | FileCheck %s

// Causal attention on iota positions (what the importer makes of
// is_causal=True): the positions go, forward and VJP alike; the causal
// attribute stays.
// CHECK-LABEL: func.func @causal_iota_positions_dropped
// CHECK: glimmer.attention %arg0, %arg1, %arg1 causal scale
// CHECK-NOT: positions
// CHECK: glimmer.attention_grad %arg0, %arg0, %arg1, %arg1, %{{.*}}, %{{.*}} causal scale
func.func @causal_iota_positions_dropped(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x2x8x16xbf16>)
    -> (tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>) {
  %pos = glimmer.iota dim = 1 : tensor<2x8xi64>
  %o, %lse = glimmer.attention %q, %k, %k positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.25 : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16> -> tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>
  %dq, %dk, %dv = glimmer.attention_grad %q, %q, %k, %k, %o, %lse positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.25 : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x4x8xf32>
  return %dq, %dk : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>
}

// -----

// Positions permuted by context parallelism are not the index: kept.
// CHECK-LABEL: func.func @permuted_positions_kept
// CHECK: glimmer.attention %arg0, %arg0, %arg0 positions(%[[P:.*]], %[[P]] :
func.func @permuted_positions_kept(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %iota = glimmer.iota dim = 1 : tensor<1x8xi64>
  %pos = glimmer.cp_permute %iota dim = 1 cp = 2 balancer = head_tail : tensor<1x8xi64>
  %o, %lse = glimmer.attention %q, %q, %q positions(%pos, %pos : tensor<1x8xi64>, tensor<1x8xi64>) causal scale = 0.5 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Positions given as data (they might be anything): kept.
// CHECK-LABEL: func.func @argument_positions_kept
// CHECK: positions(%arg1, %arg1 :
func.func @argument_positions_kept(%q: tensor<1x2x8x4xf32>, %pos: tensor<1x8xi64>) -> tensor<1x2x8x4xf32> {
  %o, %lse = glimmer.attention %q, %q, %q positions(%pos, %pos : tensor<1x8xi64>, tensor<1x8xi64>) causal scale = 0.5 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// An iota along the batch is no sequence index: kept.
// CHECK-LABEL: func.func @batch_iota_kept
// CHECK: positions(
func.func @batch_iota_kept(%q: tensor<2x2x8x4xf32>) -> tensor<2x2x8x4xf32> {
  %pos = glimmer.iota dim = 0 : tensor<2x8xi64>
  %o, %lse = glimmer.attention %q, %q, %q positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.5 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return %o : tensor<2x2x8x4xf32>
}

// -----

// Non-causal attention never reads its positions: dropped, whatever they
// are.
// CHECK-LABEL: func.func @non_causal_positions_dropped
// CHECK: glimmer.attention %arg0, %arg0, %arg0 scale
func.func @non_causal_positions_dropped(%q: tensor<1x2x8x4xf32>, %pos: tensor<1x8xi64>) -> tensor<1x2x8x4xf32> {
  %o, %lse = glimmer.attention %q, %q, %q positions(%pos, %pos : tensor<1x8xi64>, tensor<1x8xi64>) scale = 0.5 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Documents restrict the mask further: positions and documents both stay.
// CHECK-LABEL: func.func @documents_keep_positions
// CHECK: positions(%{{.*}}, %{{.*}} : tensor<1x8xi64>, tensor<1x8xi64>) documents(%arg1, %arg1
func.func @documents_keep_positions(%q: tensor<1x2x8x4xf32>, %doc: tensor<1x8xi64>) -> tensor<1x2x8x4xf32> {
  %pos = glimmer.iota dim = 1 : tensor<1x8xi64>
  %o, %lse = glimmer.attention %q, %q, %q positions(%pos, %pos : tensor<1x8xi64>, tensor<1x8xi64>) documents(%doc, %doc : tensor<1x8xi64>, tensor<1x8xi64>) causal scale = 0.5 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Iota positions go, the window and the blocks stay: the runtime reads the
// indices as positions for both.
// CHECK-LABEL: func.func @index_window_blocks
// CHECK: glimmer.attention %{{.*}}, %{{.*}}, %{{.*}} blocks(%{{.*}}, %{{.*}} : tensor<2x8xi64>, tensor<2x8xi64>) causal window = 4 scale
func.func @index_window_blocks(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x2x8x16xbf16>, %blk: tensor<2x8xi64>) -> tensor<2x4x8x16xbf16> {
  %pos = glimmer.iota dim = 1 : tensor<2x8xi64>
  %o, %lse = glimmer.attention %q, %k, %k positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) blocks(%blk, %blk : tensor<2x8xi64>, tensor<2x8xi64>) causal window = 4 scale = 0.25
      : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16> -> tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>
  return %o : tensor<2x4x8x16xbf16>
}
