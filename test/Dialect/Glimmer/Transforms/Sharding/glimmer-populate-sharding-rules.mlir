// RUN: glimmer-opt %s -split-input-file -glimmer-populate-sharding-rules | FileCheck %s

// Elementwise ops (the interface's default): one pass-through factor per
// dimension, shared by every operand and the result; a size-1 dimension has
// no factor.
// CHECK-LABEL: func.func @rule_elementwise
// CHECK: glimmer.add {{.*}}glimmer.sharding_rule = "([i, j, 1], [i, j, 1]) -> ([i, j, 1]) {i=2, j=8}"
// CHECK: glimmer.exp {{.*}}glimmer.sharding_rule = "([i, j, 1]) -> ([i, j, 1]) {i=2, j=8}"
// CHECK: glimmer.select {{.*}}glimmer.sharding_rule = "([i, j, 1], [i, j, 1], [i, j, 1]) -> ([i, j, 1]) {i=2, j=8}"
// CHECK: glimmer.convert {{.*}}glimmer.sharding_rule = "([i, j, 1]) -> ([i, j, 1]) {i=2, j=8}"
func.func @rule_elementwise(%a: tensor<2x8x1xf32>, %c: tensor<2x8x1xi1>) -> tensor<2x8x1xf64> {
  %0 = glimmer.add %a, %a : tensor<2x8x1xf32>
  %1 = glimmer.exp %0 : tensor<2x8x1xf32>
  %2 = glimmer.select %c, %0, %1 : tensor<2x8x1xi1>, tensor<2x8x1xf32>
  %3 = glimmer.convert %2 : tensor<2x8x1xf32> to tensor<2x8x1xf64>
  return %3 : tensor<2x8x1xf64>
}

// -----

// The optimizer update is elementwise over parameter, gradient and moments;
// the scalar step count has no factor.
// CHECK-LABEL: func.func @rule_adamw_update
// CHECK: glimmer.adamw_update {{.*}}glimmer.sharding_rule = "([i, j], [i, j], [i, j], [i, j], []) -> ([i, j], [i, j], [i, j]) {i=8, j=4}"
func.func @rule_adamw_update(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %m: tensor<8x4xf32>, %v: tensor<8x4xf32>, %step: tensor<i64>) -> tensor<8x4xf32> {
  %0:3 = glimmer.adamw_update %p, %g, %m, %v, %step lr = 1.0e-3 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-8 weight_decay = 0.01 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<i64>
  return %0#0 : tensor<8x4xf32>
}

// -----

// Reshape: the common refinement of both shapes. Splitting the hidden
// dimension into heads x head_dim makes it two factors (major: heads), so a
// split of the hidden dimension lands on the heads.
// CHECK-LABEL: func.func @rule_reshape_split_heads
// CHECK: glimmer.reshape {{.*}}glimmer.sharding_rule = "([i, j, (k,l)]) -> ([i, j, k, l]) {i=2, j=16, k=4, l=8}"
func.func @rule_reshape_split_heads(%x: tensor<2x16x32xf32>) -> tensor<2x16x4x8xf32> {
  %0 = glimmer.reshape %x : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  return %0 : tensor<2x16x4x8xf32>
}

// -----

// Merging dimensions, with size-1 dimensions on either side.
// CHECK-LABEL: func.func @rule_reshape_merge
// CHECK: glimmer.reshape {{.*}}glimmer.sharding_rule = "([i, j, k, 1]) -> ([(i,j), 1, k]) {i=3, j=4, k=32}"
func.func @rule_reshape_merge(%x: tensor<3x4x32x1xf32>) -> tensor<12x1x32xf32> {
  %0 = glimmer.reshape %x : tensor<3x4x32x1xf32> -> tensor<12x1x32xf32>
  return %0 : tensor<12x1x32xf32>
}

// -----

// Shapes without a common refinement ([6, 4] -> [4, 6]): every dimension is
// needed whole.
// CHECK-LABEL: func.func @rule_reshape_no_refinement
// CHECK: glimmer.reshape {{.*}}glimmer.sharding_rule = "([i, j]) -> ([k, l]) {i=6, j=4, k=4, l=6} need_replication={i, j, k, l}"
func.func @rule_reshape_no_refinement(%x: tensor<6x4xf32>) -> tensor<4x6xf32> {
  %0 = glimmer.reshape %x : tensor<6x4xf32> -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// Transpose permutes the factors.
// CHECK-LABEL: func.func @rule_transpose
// CHECK: glimmer.transpose {{.*}}glimmer.sharding_rule = "([i, j, k, l]) -> ([i, k, j, l]) {i=2, j=16, k=4, l=8}"
func.func @rule_transpose(%x: tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32> {
  %0 = glimmer.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  return %0 : tensor<2x4x16x8xf32>
}

// -----

// broadcast_in_dim: mapped dimensions of equal size share a factor; a
// broadcast size-1 dimension and new dimensions are the result's own.
// CHECK-LABEL: func.func @rule_broadcast_in_dim
// CHECK: glimmer.broadcast_in_dim {{.*}}glimmer.sharding_rule = "([1, i]) -> ([j, k, i]) {i=4, j=2, k=16}"
func.func @rule_broadcast_in_dim(%x: tensor<1x4xf32>) -> tensor<2x16x4xf32> {
  %0 = glimmer.broadcast_in_dim %x dims = [1, 2] : tensor<1x4xf32> -> tensor<2x16x4xf32>
  return %0 : tensor<2x16x4xf32>
}

// -----

// Slice: untouched dimensions pass through; a cut one is needed whole.
// CHECK-LABEL: func.func @rule_slice
// CHECK: glimmer.slice {{.*}}glimmer.sharding_rule = "([i, j, k]) -> ([i, j, l]) {i=2, j=16, k=8, l=4} need_replication={k, l}"
func.func @rule_slice(%x: tensor<2x16x8xf32>) -> tensor<2x16x4xf32> {
  %0 = glimmer.slice %x start = [0, 0, 0] limit = [2, 16, 8] stride = [1, 1, 2] : tensor<2x16x8xf32> -> tensor<2x16x4xf32>
  return %0 : tensor<2x16x4xf32>
}

// -----

// Concat: the concatenated dimension is needed whole, the others pass
// through.
// CHECK-LABEL: func.func @rule_concat
// CHECK: glimmer.concat {{.*}}glimmer.sharding_rule = "([i, j, l], [i, j, m]) -> ([i, j, k]) {i=2, j=16, k=8, l=4, m=4} need_replication={k, l, m}"
func.func @rule_concat(%a: tensor<2x16x4xf32>, %b: tensor<2x16x4xf32>) -> tensor<2x16x8xf32> {
  %0 = glimmer.concat %a, %b dim = 2 : tensor<2x16x4xf32>, tensor<2x16x4xf32> -> tensor<2x16x8xf32>
  return %0 : tensor<2x16x8xf32>
}

// -----

// Pad: padded dimensions are needed whole.
// CHECK-LABEL: func.func @rule_pad
// CHECK: glimmer.pad {{.*}}glimmer.sharding_rule = "([i, j]) -> ([i, k]) {i=4, j=6, k=8} need_replication={j, k}"
func.func @rule_pad(%x: tensor<4x6xf32>) -> tensor<4x8xf32> {
  %0 = glimmer.pad %x low = [0, 1] high = [0, 1] value = 0.0 : tensor<4x6xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Constants pass through; iota's counting dimension is needed whole (a
// split would need each rank's offset).
// CHECK-LABEL: func.func @rule_constant_iota
// CHECK: glimmer.constant {{.*}}glimmer.sharding_rule = "() -> ([i, j]) {i=2, j=16}"
// CHECK: glimmer.iota {{.*}}glimmer.sharding_rule = "() -> ([i, j]) {i=2, j=16} need_replication={j}"
func.func @rule_constant_iota() -> (tensor<2x16xf32>, tensor<2x16xi64>) {
  %0 = glimmer.constant dense<1.0> : tensor<2x16xf32>
  %1 = glimmer.iota dim = 1 : tensor<2x16xi64>
  return %0, %1 : tensor<2x16xf32>, tensor<2x16xi64>
}

// -----

// sum_squares sums every dimension of every input: each is a reduction
// factor of its own (a split one makes the scalar a partial sum).
// CHECK-LABEL: func.func @rule_sum_squares
// CHECK: glimmer.sum_squares {{.*}}glimmer.sharding_rule = "([i, j], [k]) -> ([]) {i=8, j=32, k=4} reduction={i, j, k}"
func.func @rule_sum_squares(%x: tensor<8x32xf32>, %y: tensor<4xf32>) -> tensor<f32> {
  %0 = glimmer.sum_squares %x, %y : tensor<8x32xf32>, tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A sum over a dimension makes it a reduction factor (a split gives partial
// sums); max and min need it whole; keep_dims leaves a size-1 dimension.
// CHECK-LABEL: func.func @rule_reduce
// CHECK: glimmer.reduce sum {{.*}}glimmer.sharding_rule = "([i, j]) -> ([i]) {i=8, j=32} reduction={j}"
// CHECK: glimmer.reduce max {{.*}}glimmer.sharding_rule = "([i, j]) -> ([i, 1]) {i=8, j=32} need_replication={j}"
func.func @rule_reduce(%x: tensor<8x32xf32>) -> (tensor<8xf32>, tensor<8x1xf32>) {
  %0 = glimmer.reduce sum %x dims = [1] : tensor<8x32xf32> -> tensor<8xf32>
  %1 = glimmer.reduce max %x dims = [1] keep_dims : tensor<8x32xf32> -> tensor<8x1xf32>
  return %0, %1 : tensor<8xf32>, tensor<8x1xf32>
}

// -----

// Scans, softmax and sorts need their axis whole; stop_gradient is
// elementwise.
// CHECK-LABEL: func.func @rule_cumsum_softmax
// CHECK: glimmer.cumsum {{.*}}glimmer.sharding_rule = "([i, j]) -> ([i, j]) {i=2, j=16} need_replication={j}"
// CHECK: glimmer.softmax {{.*}}glimmer.sharding_rule = "([i, j]) -> ([i, j]) {i=2, j=16} need_replication={j}"
// CHECK: glimmer.argsort {{.*}}glimmer.sharding_rule = "([i, j]) -> ([i, j]) {i=2, j=16} need_replication={i}"
// CHECK: glimmer.stop_gradient {{.*}}glimmer.sharding_rule = "([i, j]) -> ([i, j]) {i=2, j=16}"
func.func @rule_cumsum_softmax(%x: tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xi64>, tensor<2x16xf32>) {
  %0 = glimmer.cumsum %x dim = 1 : tensor<2x16xf32>
  %1 = glimmer.softmax %x dim = 1 : tensor<2x16xf32>
  %2 = glimmer.argsort %x dim = 0 : tensor<2x16xf32> -> tensor<2x16xi64>
  %3 = glimmer.stop_gradient %x : tensor<2x16xf32>
  return %0, %1, %2, %3 : tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xi64>, tensor<2x16xf32>
}

// -----

// Linear: leading dimensions pass through, the output features follow the
// weight's rows (column-parallel), the contraction is a reduction
// (row-parallel gives partial sums); the bias follows the output features.
// CHECK-LABEL: func.func @rule_linear
// CHECK: glimmer.linear {{.*}}glimmer.sharding_rule = "([i, j, k], [l, k], [l]) -> ([i, j, l]) {i=2, j=16, k=32, l=64} reduction={k}"
// CHECK: glimmer.linear {{.*}}glimmer.sharding_rule = "([i, j, k], [l, k]) -> ([i, j, l]) {i=2, j=16, k=64, l=32} reduction={k}"
func.func @rule_linear(%x: tensor<2x16x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>) -> tensor<2x16x32xf32> {
  %0 = glimmer.linear %x, %w1, %b1 : tensor<2x16x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<2x16x64xf32>
  %1 = glimmer.linear %0, %w2 : tensor<2x16x64xf32>, tensor<32x64xf32> -> tensor<2x16x32xf32>
  return %1 : tensor<2x16x32xf32>
}

// -----

// Matmul with transposed operands: batch, rows, columns and the
// contraction.
// CHECK-LABEL: func.func @rule_matmul
// CHECK: glimmer.matmul {{.*}}glimmer.sharding_rule = "([i, j, k], [i, l, k]) -> ([i, j, l]) {i=4, j=8, k=16, l=32} reduction={k}"
// CHECK: glimmer.matmul {{.*}}glimmer.sharding_rule = "([i, k, j], [i, k, l]) -> ([i, j, l]) {i=4, j=16, k=8, l=32} reduction={k}"
func.func @rule_matmul(%a: tensor<4x8x16xf32>, %b: tensor<4x32x16xf32>) -> (tensor<4x8x32xf32>, tensor<4x16x32xf32>) {
  %0 = glimmer.matmul %a, %b transpose_rhs : tensor<4x8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
  %1 = glimmer.matmul %a, %0 transpose_lhs : tensor<4x8x16xf32>, tensor<4x8x32xf32> -> tensor<4x16x32xf32>
  return %0, %1 : tensor<4x8x32xf32>, tensor<4x16x32xf32>
}

// -----

// Norms: tokens pass through (sequence parallelism splits them), the
// normalized features are needed whole and the weights follow them.
// CHECK-LABEL: func.func @rule_norms
// CHECK: glimmer.rms_norm {{.*}}glimmer.sharding_rule = "([i, j, k], [k]) -> ([i, j, k]) {i=2, j=16, k=32} need_replication={k}"
// CHECK: glimmer.layer_norm {{.*}}glimmer.sharding_rule = "([i, j, k], [k], [k]) -> ([i, j, k]) {i=2, j=16, k=32} need_replication={k}"
func.func @rule_norms(%x: tensor<2x16x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x16x32xf32> {
  %0 = glimmer.rms_norm %x, %w eps = 1.0e-5 : tensor<2x16x32xf32>, tensor<32xf32>
  %1 = glimmer.layer_norm %0, %w, %b eps = 1.0e-5 : tensor<2x16x32xf32>, tensor<32xf32>
  return %1 : tensor<2x16x32xf32>
}

// -----

// RoPE: batch and sequence shared with the positions, heads pass through,
// the rotated features are needed whole.
// CHECK-LABEL: func.func @rule_rope
// CHECK: glimmer.rope {{.*}}glimmer.sharding_rule = "([i, j, k, l], [i, j]) -> ([i, j, k, l]) {i=2, j=8, k=4, l=16} need_replication={l}"
func.func @rule_rope(%x: tensor<2x8x4x16xf32>, %pos: tensor<2x8xi64>) -> tensor<2x8x4x16xf32> {
  %0 = glimmer.rope %x, %pos theta = 10000.0 style = interleaved : tensor<2x8x4x16xf32>, tensor<2x8xi64>
  return %0 : tensor<2x8x4x16xf32>
}

// -----

// Attention with grouped-query heads (4 query heads, 2 KV heads): the query
// head dimension is (kv head, group), so splitting heads splits the KV heads
// with them; keys are needed whole along their sequence (the CP handler
// gathers them), and so is the contracted head dimension.
// CHECK-LABEL: func.func @rule_attention_gqa
// CHECK: glimmer.attention {{.*}}glimmer.sharding_rule = "([i, (j,k), l, n], [i, j, m, n], [i, j, m, o], [i, l], [i, m]) -> ([i, (j,k), l, o], [i, (j,k), l]) {i=2, j=2, k=2, l=8, m=8, n=16, o=16} need_replication={m, n}"
func.func @rule_attention_gqa(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %pos: tensor<2x8xi64>) -> tensor<2x4x8x16xf32> {
  %o, %lse = glimmer.attention %q, %k, %v positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.25 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Sequence-major query, key and output: the same factors as head-major,
// heads and sequence exchanged in those tensors (value stays head-major).
// CHECK-LABEL: func.func @rule_attention_sequence_major
// CHECK: glimmer.attention {{.*}}glimmer.sharding_rule = "([i, l, (j,k), n], [i, m, j, n], [i, j, m, o]) -> ([i, l, (j,k), o], [i, (j,k), l]) {i=2, j=2, k=2, l=8, m=8, n=16, o=16} need_replication={m, n}"
func.func @rule_attention_sequence_major(%q: tensor<2x8x4x16xbf16>, %k: tensor<2x8x2x16xbf16>, %v: tensor<2x2x8x16xbf16>) -> tensor<2x8x4x16xbf16> {
  %o, %lse = glimmer.attention %q, %k, %v causal scale = 0.25 {sequence_major = array<i1: true, true, false, true>} : tensor<2x8x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x2x8x16xbf16> -> tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>
  return %o : tensor<2x8x4x16xbf16>
}

// -----

// Cross-entropy sums over every token (reductions: split tokens give partial
// sums and counts); a split vocabulary is handled (loss-parallel).
// CHECK-LABEL: func.func @rule_cross_entropy
// CHECK: glimmer.cross_entropy {{.*}}glimmer.sharding_rule = "([i, j, k], [i, j]) -> ([], []) {i=2, j=8, k=32} reduction={i, j} handled={k}"
func.func @rule_cross_entropy(%logits: tensor<2x8x32xf32>, %labels: tensor<2x8xi64>) -> tensor<f32> {
  %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>, tensor<i64>
  return %sum : tensor<f32>
}

// -----

// Embedding: ids pass through, the hidden size follows the table's columns,
// the vocabulary is a contraction (onehot(ids) @ table: vocab-parallel rows
// give partial sums).
// CHECK-LABEL: func.func @rule_embedding
// CHECK: glimmer.embedding {{.*}}glimmer.sharding_rule = "([k, l], [i, j]) -> ([i, j, l]) {i=2, j=16, k=64, l=32} reduction={k}"
func.func @rule_embedding(%table: tensor<64x32xf32>, %ids: tensor<2x16xi64>) -> tensor<2x16x32xf32> {
  %0 = glimmer.embedding %table, %ids : tensor<64x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
  return %0 : tensor<2x16x32xf32>
}

// -----

// Conv2d: batch and output channels pass through, input channels are a
// contraction, spatial windows are needed whole.
// CHECK-LABEL: func.func @rule_conv2d
// CHECK: glimmer.conv2d {{.*}}glimmer.sharding_rule = "([i, j, l, m], [k, j, n, o], [k]) -> ([i, k, p, q]) {i=3, j=3, k=32, l=8, m=8, n=4, o=4, p=2, q=2} reduction={j} need_replication={l, m, n, o, p, q}"
func.func @rule_conv2d(%x: tensor<3x3x8x8xf32>, %w: tensor<32x3x4x4xf32>, %b: tensor<32xf32>) -> tensor<3x32x2x2xf32> {
  %0 = glimmer.conv2d %x, %w, %b stride = [4, 4] padding = [0, 0] : tensor<3x3x8x8xf32>, tensor<32x3x4x4xf32>, tensor<32xf32> -> tensor<3x32x2x2xf32>
  return %0 : tensor<3x32x2x2xf32>
}

// -----

// Vision ops: the bank indices are a prefix count over the whole batch
// (needed whole: built before any split); vision_gather passes tokens and
// features through and needs the whole bank (any row can be gathered).
// CHECK-LABEL: func.func @rule_vision
// CHECK: glimmer.vision_bank_indices {{.*}}glimmer.sharding_rule = "([i, j]) -> ([i, j]) {i=2, j=16} need_replication={i, j}"
// CHECK: glimmer.vision_gather {{.*}}glimmer.sharding_rule = "([i, j, k], [l, k], [i, j]) -> ([i, j, k]) {i=2, j=16, k=32, l=12} need_replication={l}"
func.func @rule_vision(%tokens: tensor<2x16xi64>, %embeds: tensor<2x16x32xf32>, %bank: tensor<12x32xf32>) -> tensor<2x16x32xf32> {
  %idx = glimmer.vision_bank_indices %tokens image_token_id = 63 : tensor<2x16xi64>
  %0 = glimmer.vision_gather %embeds, %bank, %idx : tensor<2x16x32xf32>, tensor<12x32xf32>, tensor<2x16xi64>
  return %0 : tensor<2x16x32xf32>
}

// -----

// The CP permutation reorders its dimension: needed whole (it runs on the
// full sequence, before the split).
// CHECK-LABEL: func.func @rule_cp_permute
// CHECK: glimmer.cp_permute {{.*}}glimmer.sharding_rule = "([i, j]) -> ([i, j]) {i=2, j=16} need_replication={j}"
func.func @rule_cp_permute(%x: tensor<2x16xi64>) -> tensor<2x16xi64> {
  %0 = glimmer.cp_permute %x dim = 1 cp = 2 balancer = head_tail : tensor<2x16xi64>
  return %0 : tensor<2x16xi64>
}

// -----

// Collectives over other axes (a program already split over cp): the
// dimensions other than the collective's pass through, so tensor
// parallelism can be added on top; the collective's own dimension changes
// size and is needed whole on both sides. all_reduce and pvary are
// elementwise.
// CHECK-LABEL: func.func @rule_collectives
// CHECK: glimmer.all_gather {{.*}}glimmer.sharding_rule = "([i, j, k, l]) -> ([i, j, m, l]) {i=2, j=4, k=4, l=8, m=8} need_replication={k, m}"
// CHECK: glimmer.local_shard {{.*}}glimmer.sharding_rule = "([i, j, k, l]) -> ([i, j, m, l]) {i=2, j=4, k=8, l=8, m=4} need_replication={k, m}"
// CHECK: glimmer.all_reduce {{.*}}glimmer.sharding_rule = "([i, j, k, l]) -> ([i, j, k, l]) {i=2, j=4, k=4, l=8}"
// microbatch_slice is like local_shard along its dimension; its index is a
// scalar with no factor.
// CHECK: glimmer.microbatch_slice {{.*}}glimmer.sharding_rule = "([i, j, k, l], []) -> ([1, j, k, l]) {i=2, j=4, k=4, l=8} need_replication={i}"
// all_to_all cuts one dimension and joins another: both whole on both sides.
// CHECK: glimmer.all_to_all {{.*}}glimmer.sharding_rule = "([i, j, k, l]) -> ([i, j, n, m]) {i=2, j=4, k=4, l=8, m=4, n=8} need_replication={k, l, m, n}"
module {
  glimmer.mesh @mesh = <["cp"=2, "tp"=2]>
  func.func @rule_collectives(%k: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
    %0 = glimmer.all_gather %k on @mesh ["cp"] dim = 2 : tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
    %1 = glimmer.local_shard %0 on @mesh ["cp"] dim = 2 : tensor<2x4x8x8xf32> -> tensor<2x4x4x8xf32>
    %2 = glimmer.all_reduce sum %1 on @mesh ["cp"] : tensor<2x4x4x8xf32>
    %mb = glimmer.constant dense<0> : tensor<i64>
    %3 = glimmer.microbatch_slice %2[%mb] pieces = 2 dim = 0 : tensor<2x4x4x8xf32>, tensor<i64> -> tensor<1x4x4x8xf32>
    %4 = glimmer.all_to_all %2 on @mesh ["cp"] split_dim = 3 concat_dim = 2 : tensor<2x4x4x8xf32> -> tensor<2x4x8x4xf32>
    return %2 : tensor<2x4x4x8xf32>
  }
}
