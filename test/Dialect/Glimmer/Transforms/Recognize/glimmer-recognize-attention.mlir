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
