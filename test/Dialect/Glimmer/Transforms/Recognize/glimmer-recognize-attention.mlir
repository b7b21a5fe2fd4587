// RUN: glimmer-opt %s -split-input-file -glimmer-recognize-attention | FileCheck %s

// Eager attention with an additive causal mask (the most negative float
// where a key is hidden, as Hugging Face builds it): glimmer.attention on
// sequence-index positions; the scores, the mask and the softmax go.
// CHECK-LABEL: func.func @eager_causal
// CHECK: %[[POS:.*]] = glimmer.iota dim = 1 : tensor<2x4xi64>
// CHECK: %[[O:.*]], %{{.*}} = glimmer.attention %arg0, %arg1, %arg2 positions(%[[POS]], %[[POS]] : tensor<2x4xi64>, tensor<2x4xi64>) causal scale = 2.500000e-01
// CHECK-NOT: glimmer.softmax
// CHECK: return %[[O]]
func.func @eager_causal(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32> {
  %tril = glimmer.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %m4 = glimmer.reshape %tril : tensor<4x4xi1> -> tensor<1x1x4x4xi1>
  %mb = glimmer.broadcast_in_dim %m4 dims = [0, 1, 2, 3] : tensor<1x1x4x4xi1> -> tensor<2x1x4x4xi1>
  %zero = glimmer.constant dense<0.0> : tensor<2x1x4x4xf32>
  %min = glimmer.constant dense<-3.40282347E+38> : tensor<2x1x4x4xf32>
  %mask = glimmer.select %mb, %zero, %min : tensor<2x1x4x4xi1>, tensor<2x1x4x4xf32>
  %kt = glimmer.transpose %k permutation = [0, 1, 3, 2] : tensor<2x2x4x16xf32> -> tensor<2x2x16x4xf32>
  %s = glimmer.matmul %q, %kt : tensor<2x2x4x16xf32>, tensor<2x2x16x4xf32> -> tensor<2x2x4x4xf32>
  %c = glimmer.constant dense<0.25> : tensor<2x2x4x4xf32>
  %ss = glimmer.mul %s, %c : tensor<2x2x4x4xf32>
  %heads = glimmer.broadcast_in_dim %mask dims = [0, 1, 2, 3] : tensor<2x1x4x4xf32> -> tensor<2x2x4x4xf32>
  %a = glimmer.add %ss, %heads : tensor<2x2x4x4xf32>
  %p = glimmer.softmax %a dim = 3 : tensor<2x2x4x4xf32>
  %o = glimmer.matmul %p, %v : tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32> -> tensor<2x2x4x16xf32>
  return %o : tensor<2x2x4x16xf32>
}

// -----

// No mask, the keys' transpose folded into the product (transpose_rhs):
// unmasked attention (a vision encoder's).
// CHECK-LABEL: func.func @eager_unmasked_transpose_rhs
// CHECK: glimmer.attention %arg0, %arg1, %arg2 scale = 1.250000e-01
// CHECK-NOT: glimmer.softmax
func.func @eager_unmasked_transpose_rhs(%q: tensor<1x2x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x2x6x8xf32> {
  %s = glimmer.matmul %q, %k transpose_rhs : tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32> -> tensor<1x2x6x6xf32>
  %c = glimmer.constant dense<0.125> : tensor<f32>
  %cb = glimmer.broadcast_in_dim %c dims = [] : tensor<f32> -> tensor<1x2x6x6xf32>
  %ss = glimmer.mul %cb, %s : tensor<1x2x6x6xf32>
  %p = glimmer.softmax %ss dim = 3 : tensor<1x2x6x6xf32>
  %o = glimmer.matmul %p, %v : tensor<1x2x6x6xf32>, tensor<1x2x6x8xf32> -> tensor<1x2x6x8xf32>
  return %o : tensor<1x2x6x8xf32>
}

// -----

// A padding mask made with the most negative float: a query whose keys
// are all padding would average all values in the eager form, not get
// zeros, so the chain stays.
// CHECK-LABEL: func.func @finite_padding_mask_stays
// CHECK-NOT: glimmer.attention
// CHECK: glimmer.softmax
func.func @finite_padding_mask_stays(%q: tensor<1x1x4x8xf32>, %keep: tensor<1x1x1x4xi1>) -> tensor<1x1x4x8xf32> {
  %kb = glimmer.broadcast_in_dim %keep dims = [0, 1, 2, 3] : tensor<1x1x1x4xi1> -> tensor<1x1x4x4xi1>
  %zero = glimmer.constant dense<0.0> : tensor<1x1x4x4xf32>
  %min = glimmer.constant dense<-3.40282347E+38> : tensor<1x1x4x4xf32>
  %mask = glimmer.select %kb, %zero, %min : tensor<1x1x4x4xi1>, tensor<1x1x4x4xf32>
  %kt = glimmer.transpose %q permutation = [0, 1, 3, 2] : tensor<1x1x4x8xf32> -> tensor<1x1x8x4xf32>
  %s = glimmer.matmul %q, %kt : tensor<1x1x4x8xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x4x4xf32>
  %c = glimmer.constant dense<0.5> : tensor<1x1x4x4xf32>
  %ss = glimmer.mul %s, %c : tensor<1x1x4x4xf32>
  %a = glimmer.add %ss, %mask : tensor<1x1x4x4xf32>
  %p = glimmer.softmax %a dim = 3 : tensor<1x1x4x4xf32>
  %o = glimmer.matmul %p, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

// The probabilities are returned too (attention weights as an output): the
// chain stays.
// CHECK-LABEL: func.func @probabilities_used_elsewhere
// CHECK-NOT: glimmer.attention
func.func @probabilities_used_elsewhere(%q: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>) {
  %kt = glimmer.transpose %q permutation = [0, 1, 3, 2] : tensor<1x1x4x8xf32> -> tensor<1x1x8x4xf32>
  %s = glimmer.matmul %q, %kt : tensor<1x1x4x8xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x4x4xf32>
  %c = glimmer.constant dense<0.5> : tensor<1x1x4x4xf32>
  %ss = glimmer.mul %s, %c : tensor<1x1x4x4xf32>
  %p = glimmer.softmax %ss dim = 3 : tensor<1x1x4x4xf32>
  %o = glimmer.matmul %p, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>
  return %o, %p : tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>
}

// -----

// A softmax over another dimension is not attention.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT: glimmer.attention
func.func @softmax_over_queries(%q: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %kt = glimmer.transpose %q permutation = [0, 1, 3, 2] : tensor<1x1x4x8xf32> -> tensor<1x1x8x4xf32>
  %s = glimmer.matmul %q, %kt : tensor<1x1x4x8xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x4x4xf32>
  %c = glimmer.constant dense<0.5> : tensor<1x1x4x4xf32>
  %ss = glimmer.mul %s, %c : tensor<1x1x4x4xf32>
  %p = glimmer.softmax %ss dim = 2 : tensor<1x1x4x4xf32>
  %o = glimmer.matmul %p, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

// Causal attention within packed sequences (transformers'
// find_packed_sequence_indices: a query sees the earlier keys of its own
// sequence, `causal & ids[q] == ids[k]`), -inf where a key is hidden:
// glimmer.attention with the sequence ids as its documents.
// CHECK-LABEL: func.func @eager_causal_packed_sequences
// CHECK: %[[QD:.*]] = glimmer.reshape %{{.*}} : tensor<1x1x4x1xi64> -> tensor<1x4xi64>
// CHECK: %[[P:.*]] = glimmer.iota dim = 1 : tensor<1x4xi64>
// CHECK: glimmer.attention %arg0, %arg1, %arg2 positions(%[[P]], %[[P]] : tensor<1x4xi64>, tensor<1x4xi64>) documents(%[[QD]], %arg3 : tensor<1x4xi64>, tensor<1x4xi64>) causal
// CHECK-NOT: glimmer.softmax
func.func @eager_causal_packed_sequences(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>, %ids: tensor<1x4xi64>) -> tensor<1x2x4x16xf32> {
  %tril = glimmer.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %m4 = glimmer.reshape %tril : tensor<4x4xi1> -> tensor<1x1x4x4xi1>
  %qi = glimmer.reshape %ids : tensor<1x4xi64> -> tensor<1x1x4x1xi64>
  %ki = glimmer.reshape %ids : tensor<1x4xi64> -> tensor<1x1x1x4xi64>
  %qb = glimmer.broadcast_in_dim %qi dims = [0, 1, 2, 3] : tensor<1x1x4x1xi64> -> tensor<1x1x4x4xi64>
  %kb = glimmer.broadcast_in_dim %ki dims = [0, 1, 2, 3] : tensor<1x1x1x4xi64> -> tensor<1x1x4x4xi64>
  %same = glimmer.compare eq, %qb, %kb : tensor<1x1x4x4xi64>
  %false = glimmer.constant dense<false> : tensor<1x1x4x4xi1>
  %both = glimmer.select %m4, %same, %false : tensor<1x1x4x4xi1>, tensor<1x1x4x4xi1>
  %zero = glimmer.constant dense<0.0> : tensor<1x1x4x4xf32>
  %ninf = glimmer.constant dense<0xFF800000> : tensor<1x1x4x4xf32>
  %mask = glimmer.select %both, %zero, %ninf : tensor<1x1x4x4xi1>, tensor<1x1x4x4xf32>
  %kt = glimmer.transpose %k permutation = [0, 1, 3, 2] : tensor<1x2x4x16xf32> -> tensor<1x2x16x4xf32>
  %s = glimmer.matmul %q, %kt : tensor<1x2x4x16xf32>, tensor<1x2x16x4xf32> -> tensor<1x2x4x4xf32>
  %c = glimmer.constant dense<0.25> : tensor<1x2x4x4xf32>
  %ss = glimmer.mul %s, %c : tensor<1x2x4x4xf32>
  %heads = glimmer.broadcast_in_dim %mask dims = [0, 1, 2, 3] : tensor<1x1x4x4xf32> -> tensor<1x2x4x4xf32>
  %a = glimmer.add %ss, %heads : tensor<1x2x4x4xf32>
  %p = glimmer.softmax %a dim = 3 : tensor<1x2x4x4xf32>
  %o = glimmer.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x16xf32> -> tensor<1x2x4x16xf32>
  return %o : tensor<1x2x4x16xf32>
}
