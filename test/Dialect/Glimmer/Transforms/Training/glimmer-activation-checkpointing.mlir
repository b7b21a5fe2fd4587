// RUN: glimmer-opt %s -split-input-file -glimmer-activation-checkpointing | FileCheck %s --check-prefixes=CHECK,RECOMP,FULL
// RUN: glimmer-opt %s -split-input-file -glimmer-activation-checkpointing=mode=selective | FileCheck %s --check-prefixes=CHECK,RECOMP,SEL
// RUN: glimmer-opt %s -split-input-file -glimmer-activation-checkpointing="mode=budget budget=128" | FileCheck %s --check-prefixes=CHECK,BUDGET
// RUN: glimmer-opt %s -split-input-file -glimmer-activation-checkpointing="mode=budget budget=0" | FileCheck %s --check-prefixes=CHECK,RECOMP,FULL
// RUN: glimmer-opt %s -split-input-file -glimmer-activation-checkpointing=mode=none | FileCheck %s --check-prefix=NONE

// A block's norm, GEMM and activation, all read by its backward, which
// starts after more than 3 ops of no block (the loss, which reads the
// block's output: kept, as the next block's input would be). full (and a budget
// of 0 bytes) computes all three again right before the backward, from
// the block's inputs; selective keeps the GEMM's result and computes the
// norm and the activation again; a budget of 128 bytes (one of the three)
// keeps the GEMM's, the most expensive to compute again per byte. The
// forward is unchanged; every read of the backward reads the copies.
// CHECK-LABEL: func.func @one_block
// CHECK: %[[N:.*]] = glimmer.rms_norm %arg0, %arg1
// CHECK-NEXT: %[[H:.*]] = glimmer.linear %[[N]], %arg2
// CHECK-NEXT: %[[S:.*]] = glimmer.silu %[[H]]
// CHECK-NEXT: glimmer.add %arg0, %[[S]]
// CHECK-COUNT-4: glimmer.exp
// FULL-NEXT: %[[N2:.*]] = glimmer.rms_norm %arg0, %arg1
// FULL-NEXT: %[[H2:.*]] = glimmer.linear %[[N2]], %arg2
// FULL-NEXT: %[[S2:.*]] = glimmer.silu %[[H2]]
// FULL-NEXT: glimmer.sigmoid %[[H2]]
// FULL: glimmer.mul %[[S2]]
// FULL: glimmer.matmul %{{.*}}, %[[N2]]
// SEL-NEXT: %[[N2:.*]] = glimmer.rms_norm %arg0, %arg1
// SEL-NEXT: %[[S2:.*]] = glimmer.silu %[[H]]
// SEL-NEXT: glimmer.sigmoid %[[H]]
// SEL: glimmer.mul %[[S2]]
// SEL: glimmer.matmul %{{.*}}, %[[N2]]
// BUDGET-NEXT: %[[N2:.*]] = glimmer.rms_norm %arg0, %arg1
// BUDGET-NEXT: %[[S2:.*]] = glimmer.silu %[[H]]
// BUDGET-NEXT: glimmer.sigmoid %[[H]]
// BUDGET: glimmer.mul %[[S2]]
// BUDGET: glimmer.matmul %{{.*}}, %[[N2]]
// CHECK-NOT: glimmer.linear
// NONE-LABEL: func.func @one_block
// NONE-COUNT-1: glimmer.rms_norm
// NONE-NOT: glimmer.rms_norm
func.func @one_block(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x8xf32>, %dy: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<8x8xf32> {glimmer.grad = "w"}) {
  %n = glimmer.rms_norm %x, %g eps = 1.0e-05 : tensor<4x8xf32>, tensor<8xf32> loc("layers.0.norm")
  %h = glimmer.linear %n, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("layers.0.w1")
  %s = glimmer.silu %h : tensor<4x8xf32> loc("layers.0.act")
  %y = glimmer.add %x, %s : tensor<4x8xf32> loc("layers.0")
  %l0 = glimmer.exp %y : tensor<4x8xf32> loc("loss")
  %l1 = glimmer.exp %l0 : tensor<4x8xf32> loc("loss")
  %l2 = glimmer.exp %l1 : tensor<4x8xf32> loc("loss")
  %l3 = glimmer.exp %l2 : tensor<4x8xf32> loc("loss")
  %sig = glimmer.sigmoid %h : tensor<4x8xf32> loc("layers.0.act")
  %ds = glimmer.mul %s, %dy : tensor<4x8xf32> loc("layers.0.act")
  %dh = glimmer.mul %ds, %sig : tensor<4x8xf32> loc("layers.0.act")
  %dw = glimmer.matmul %dh, %n transpose_lhs : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32> loc("layers.0.w1")
  return %l3, %dw : tensor<4x8xf32>, tensor<8x8xf32>
}

// -----

// Two GEMMs' results read by the backward, of 128 bytes each: the one over
// the longer contraction (more multiply-adds per byte) is what a budget of
// 128 bytes keeps; selective keeps both, full neither.
// CHECK-LABEL: func.func @budget_by_cost_per_byte
// CHECK: %[[A:.*]] = glimmer.linear %arg0, %arg1
// CHECK: %[[B:.*]] = glimmer.linear %arg2, %arg3
// CHECK-COUNT-4: glimmer.exp
// FULL-NEXT: %[[A2:.*]] = glimmer.linear %arg0, %arg1
// FULL-NEXT: %[[B2:.*]] = glimmer.linear %arg2, %arg3
// FULL-NEXT: glimmer.mul %[[A2]], %[[B2]]
// SEL-NEXT: glimmer.mul %[[A]], %[[B]]
// BUDGET-NEXT: %[[B2:.*]] = glimmer.linear %arg2, %arg3
// BUDGET-NEXT: glimmer.mul %[[A]], %[[B2]]
func.func @budget_by_cost_per_byte(%xa: tensor<4x16xf32>, %wa: tensor<8x16xf32>, %xb: tensor<4x8xf32>, %wb: tensor<8x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32> {glimmer.grad = "wb"}) {
  %a = glimmer.linear %xa, %wa : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32> loc("layers.0.wa")
  %b = glimmer.linear %xb, %wb : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("layers.0.wb")
  %s = glimmer.add %a, %b : tensor<4x8xf32> loc("layers.0")
  %l0 = glimmer.exp %s : tensor<4x8xf32> loc("loss")
  %l1 = glimmer.exp %l0 : tensor<4x8xf32> loc("loss")
  %l2 = glimmer.exp %l1 : tensor<4x8xf32> loc("loss")
  %l3 = glimmer.exp %l2 : tensor<4x8xf32> loc("loss")
  %d = glimmer.mul %a, %b : tensor<4x8xf32> loc("layers.0")
  return %l3, %d : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Two blocks: layer 0's output is layer 1's input, which layer 1 keeps
// (another block reads it before layer 0's backward), so no mode computes
// it again; each block's copies go right before its own backward (layer
// 1's first, as the backward runs), from the inputs it keeps.
// CHECK-LABEL: func.func @two_blocks
// CHECK: %[[E0:.*]] = glimmer.exp %arg0
// CHECK: %[[H0:.*]] = glimmer.neg %[[E0]]
// CHECK: %[[E1:.*]] = glimmer.exp %[[H0]]
// CHECK: %[[H1:.*]] = glimmer.neg %[[E1]]
// CHECK-COUNT-4: glimmer.tanh
// CHECK-NEXT: %[[E1C:.*]] = glimmer.exp %[[H0]]
// CHECK-NEXT: %[[D1:.*]] = glimmer.mul %[[E1C]], %arg1
// RECOMP-NEXT: %[[E0C:.*]] = glimmer.exp %arg0
// RECOMP-NEXT: glimmer.mul %[[E0C]], %[[D1]]
// Of two values of equal cost per byte, a budget for one keeps the first.
// BUDGET-NEXT: glimmer.mul %[[E0]], %[[D1]]
// NONE-LABEL: func.func @two_blocks
// NONE-COUNT-2: glimmer.exp
// NONE-NOT: glimmer.exp
// NONE: return
func.func @two_blocks(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32> {glimmer.activation_grad = 0 : i64}) {
  %e0 = glimmer.exp %x : tensor<4x8xf32> loc("layers.0")
  %h0 = glimmer.neg %e0 : tensor<4x8xf32> loc("layers.0")
  %e1 = glimmer.exp %h0 : tensor<4x8xf32> loc("layers.1")
  %h1 = glimmer.neg %e1 : tensor<4x8xf32> loc("layers.1")
  %l0 = glimmer.tanh %h1 : tensor<4x8xf32> loc("loss")
  %l1 = glimmer.tanh %l0 : tensor<4x8xf32> loc("loss")
  %l2 = glimmer.tanh %l1 : tensor<4x8xf32> loc("loss")
  %l3 = glimmer.tanh %l2 : tensor<4x8xf32> loc("loss")
  %d1 = glimmer.mul %e1, %dy : tensor<4x8xf32> loc("layers.1")
  %d0 = glimmer.mul %e0, %d1 : tensor<4x8xf32> loc("layers.0")
  return %l3, %d0 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Attention's two results come from one copy; selective keeps both. The
// constant that canonicalization hoisted to the top with the block's
// location starts no segment and is never copied.
// CHECK-LABEL: func.func @attention_copied_once
// CHECK: %[[C:.*]] = glimmer.constant
// CHECK: %[[QS:.*]] = glimmer.mul %arg0, %[[C]]
// CHECK-NEXT: %[[O:.*]], %[[L:.*]] = glimmer.attention %[[QS]]
// CHECK-NEXT: glimmer.add
// CHECK-COUNT-4: glimmer.exp
// FULL-NEXT: %[[Q2:.*]] = glimmer.mul %arg0, %[[C]]
// FULL-NEXT: %[[O2:.*]], %[[L2:.*]] = glimmer.attention %[[Q2]]
// FULL-NEXT: glimmer.attention_grad %{{.*}}, %[[Q2]], %arg1, %arg2, %[[O2]], %[[L2]]
// SEL-NEXT: %[[Q2:.*]] = glimmer.mul %arg0, %[[C]]
// SEL-NEXT: glimmer.attention_grad %{{.*}}, %[[Q2]], %arg1, %arg2, %[[O]], %[[L]]
// The attention's 144 bytes do not fit a budget of 128; the scaled
// query's 128 do.
// BUDGET-NEXT: %[[O2:.*]], %[[L2:.*]] = glimmer.attention %[[QS]], %arg1
// BUDGET-NEXT: glimmer.attention_grad %{{.*}}, %[[QS]], %arg1, %arg2, %[[O2]], %[[L2]]
// CHECK-NOT: glimmer.constant
func.func @attention_copied_once(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>, %do: tensor<1x1x4x8xf32>)
    -> (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> {glimmer.grad = "q"}) {
  %c = glimmer.constant dense<0.5> : tensor<1x1x4x8xf32> loc("layers.0.attention")
  %qs = glimmer.mul %q, %c : tensor<1x1x4x8xf32> loc("layers.0.attention")
  %o, %lse = glimmer.attention %qs, %k, %v causal scale = 0.25 : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32> loc("layers.0.attention")
  %y = glimmer.add %q, %o : tensor<1x1x4x8xf32> loc("layers.0")
  %l0 = glimmer.exp %y : tensor<1x1x4x8xf32> loc("loss")
  %l1 = glimmer.exp %l0 : tensor<1x1x4x8xf32> loc("loss")
  %l2 = glimmer.exp %l1 : tensor<1x1x4x8xf32> loc("loss")
  %l3 = glimmer.exp %l2 : tensor<1x1x4x8xf32> loc("loss")
  %dq, %dk, %dv = glimmer.attention_grad %do, %qs, %k, %v, %o, %lse causal scale = 0.25 : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4xf32> loc("layers.0.attention")
  return %l3, %dq : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
}

// -----

// A collective is copied by full checkpointing (every rank runs the copy
// at the same place) and kept by selective. An op with effects (an index
// check, which fails the program) is never copied: its result stays.
// CHECK-LABEL: func.func @collective_and_effects
// CHECK: %[[R:.*]] = glimmer.all_reduce sum %arg0
// CHECK: %[[I:.*]] = glimmer.check_indices %arg2
// CHECK-NEXT: glimmer.add
// CHECK-COUNT-4: glimmer.exp
// FULL-NEXT: %[[R2:.*]] = glimmer.all_reduce sum %arg0
// FULL-NEXT: glimmer.mul %[[R2]], %arg1
// FULL-NEXT: glimmer.embedding %{{.*}}, %[[I]]
// The index check's 32 bytes count first (they stay); the all-reduce's
// 128 do not fit beside them in 128, so it is copied.
// BUDGET-NEXT: %[[R2:.*]] = glimmer.all_reduce sum %arg0
// BUDGET-NEXT: glimmer.mul %[[R2]], %arg1
// BUDGET-NEXT: glimmer.embedding %{{.*}}, %[[I]]
// SEL-NEXT: glimmer.mul %[[R]], %arg1
// SEL-NEXT: glimmer.embedding %{{.*}}, %[[I]]
module {
  glimmer.mesh @mesh = <["tp"=2]>
  func.func @collective_and_effects(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %ids: tensor<4xi64>, %table: tensor<16x8xf32>)
      -> (tensor<4x8xf32>, tensor<4x8xf32> {glimmer.grad = "x"}, tensor<4x8xf32>) {
    %r = glimmer.all_reduce sum %x on @mesh ["tp"] : tensor<4x8xf32> loc("layers.0.wo")
    %i = glimmer.check_indices %ids bound = 16 for "embedding" : tensor<4xi64> loc("layers.0.ids")
    %y = glimmer.add %x, %r : tensor<4x8xf32> loc("layers.0")
    %l0 = glimmer.exp %y : tensor<4x8xf32> loc("loss")
    %l1 = glimmer.exp %l0 : tensor<4x8xf32> loc("loss")
    %l2 = glimmer.exp %l1 : tensor<4x8xf32> loc("loss")
    %l3 = glimmer.exp %l2 : tensor<4x8xf32> loc("loss")
    %d = glimmer.mul %r, %dy : tensor<4x8xf32> loc("layers.0.wo")
    %e = glimmer.embedding %table, %i : tensor<16x8xf32>, tensor<4xi64> -> tensor<4x8xf32> loc("layers.0.ids")
    return %l3, %d, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// Left alone: a function that returns no gradients (a forward, an
// optimizer step), and a block whose backward follows its forward within
// 3 ops (the last layer of a pipeline stage: one segment, nothing held in
// between).
// CHECK-LABEL: func.func @no_gradients
// CHECK-COUNT-1: glimmer.neg
// CHECK-NOT: glimmer.neg
// CHECK-LABEL: func.func @adjacent_backward
// CHECK-COUNT-1: glimmer.neg
// CHECK-NOT: glimmer.neg
func.func @no_gradients(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %n = glimmer.neg %x : tensor<4x8xf32> loc("layers.0")
  %l0 = glimmer.exp %x : tensor<4x8xf32> loc("loss")
  %l1 = glimmer.exp %l0 : tensor<4x8xf32> loc("loss")
  %l2 = glimmer.exp %l1 : tensor<4x8xf32> loc("loss")
  %l3 = glimmer.exp %l2 : tensor<4x8xf32> loc("loss")
  %d = glimmer.mul %n, %l3 : tensor<4x8xf32> loc("layers.0")
  return %l3, %d : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @adjacent_backward(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32> {glimmer.cotangent = 0 : i64})
    -> (tensor<4x8xf32> {glimmer.activation_grad = 0 : i64}) {
  %n = glimmer.neg %x : tensor<4x8xf32> loc("layers.3")
  %e = glimmer.exp %n : tensor<4x8xf32> loc("layers.3")
  %l0 = glimmer.tanh %dy : tensor<4x8xf32> loc("head")
  %d = glimmer.mul %n, %l0 : tensor<4x8xf32> loc("layers.3")
  %d2 = glimmer.mul %d, %e : tensor<4x8xf32> loc("layers.3")
  return %d2 : tensor<4x8xf32>
}
