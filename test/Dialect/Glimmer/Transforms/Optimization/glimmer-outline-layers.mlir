// RUN: glimmer-opt %s -split-input-file -glimmer-outline-layers=min-ops=2 | FileCheck %s

// Three layers of one kind (linear, silu on their own weight) become three
// calls of one private function, each taking the previous call's result;
// the function returns only what is used after a layer. The final norm,
// which belongs to no numbered module, stays where it was.
// CHECK-LABEL: func.func private @forward_layer0(%arg0: tensor<2x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[L:.*]] = glimmer.linear %arg0, %arg1
// CHECK-NEXT: %[[S:.*]] = glimmer.silu %[[L]]
// CHECK-NEXT: return %[[S]]
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[A:.*]] = call @forward_layer0(%arg0, %arg1)
// CHECK-NEXT: %[[B:.*]] = call @forward_layer0(%[[A]], %arg2)
// CHECK-NEXT: %[[C:.*]] = call @forward_layer0(%[[B]], %arg3)
// CHECK-NEXT: %[[N:.*]] = glimmer.rms_norm %[[C]]
// CHECK-NEXT: return %[[N]]
module {
  func.func @forward(%x: tensor<2x4xf32>, %w0: tensor<4x4xf32>, %w1: tensor<4x4xf32>,
                     %w2: tensor<4x4xf32>, %g: tensor<4xf32>) -> tensor<2x4xf32> {
    %0 = glimmer.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("layers.0.wq")
    %1 = glimmer.silu %0 : tensor<2x4xf32> loc("layers.0.act")
    %2 = glimmer.linear %1, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("layers.1.wq")
    %3 = glimmer.silu %2 : tensor<2x4xf32> loc("layers.1.act")
    %4 = glimmer.linear %3, %w2 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("layers.2.wq")
    %5 = glimmer.silu %4 : tensor<2x4xf32> loc("layers.2.act")
    %6 = glimmer.rms_norm %5, %g eps = 1.0e-05 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32> loc("norm")
    return %6 : tensor<2x4xf32>
  }
}

// -----

// Layers of two kinds (a sliding-window attention layer beside a global
// one) get one function per kind. A value a layer computes and a later
// one reads (the backward's use of the forward's activations) is returned
// by every call of the kind, even where only some callers use it.
// CHECK-LABEL: func.func private @forward_layer0(%arg0: tensor<1x1x4x8xf32>) -> (tensor<1x1x4xf32>, tensor<1x1x4x8xf32>)
// CHECK: glimmer.attention %arg0, %arg0, %arg0 causal window = 2
// CHECK-LABEL: func.func private @forward_layer1(%arg0: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
// CHECK: glimmer.attention %arg0, %arg0, %arg0 causal scale
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[A:.*]]:2 = call @forward_layer0(%arg0)
// CHECK-NEXT: %[[B:.*]] = call @forward_layer1(%[[A]]#1)
// CHECK-NEXT: %[[C:.*]]:2 = call @forward_layer0(%[[B]])
// CHECK-NEXT: %[[D:.*]] = call @forward_layer1(%[[C]]#1)
// CHECK-NEXT: return %[[D]], %[[A]]#0
module {
  func.func @forward(%q: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4xf32>) {
    %o0, %l0 = glimmer.attention %q, %q, %q causal window = 2 scale = 0.5 : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32> loc("layers.0.attn")
    %s0 = glimmer.silu %o0 : tensor<1x1x4x8xf32> loc("layers.0.act")
    %o1, %l1 = glimmer.attention %s0, %s0, %s0 causal scale = 0.5 : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32> loc("layers.1.attn")
    %s1 = glimmer.silu %o1 : tensor<1x1x4x8xf32> loc("layers.1.act")
    %o2, %l2 = glimmer.attention %s1, %s1, %s1 causal window = 2 scale = 0.5 : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32> loc("layers.2.attn")
    %s2 = glimmer.silu %o2 : tensor<1x1x4x8xf32> loc("layers.2.act")
    %o3, %l3 = glimmer.attention %s2, %s2, %s2 causal scale = 0.5 : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32> loc("layers.3.attn")
    %s3 = glimmer.silu %o3 : tensor<1x1x4x8xf32> loc("layers.3.act")
    return %s3, %l0 : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
  }
}

// -----

// Not outlined: a layer seen once (nothing to share), a run shorter than
// min-ops, and two layers whose ops read their inputs at different
// positions (x + w against w + w: not the same computation on other
// operands).
// CHECK-LABEL: func.func @forward
// CHECK-NOT: call
// CHECK: return
module {
  func.func @forward(%x: tensor<4xf32>, %w: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %0 = glimmer.add %x, %w : tensor<4xf32> loc("layers.0.a")
    %1 = glimmer.silu %0 : tensor<4xf32> loc("layers.0.b")
    %2 = glimmer.add %v, %v : tensor<4xf32> loc("layers.1.a")
    %3 = glimmer.silu %2 : tensor<4xf32> loc("layers.1.b")
    %4 = glimmer.exp %1 : tensor<4xf32> loc("blocks.0.a")
    return %1, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
