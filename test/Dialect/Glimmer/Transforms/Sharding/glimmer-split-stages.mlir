// RUN: glimmer-opt %s -split-input-file -glimmer-split-stages | FileCheck %s
// RUN: glimmer-opt %S/Inputs/split-stages-two-layers.mlir -glimmer-split-stages=split=layers.1 | FileCheck %s --check-prefix=SPLIT

// A two-layer VLM on two stages, in two micro-batches. The vision encoder
// (trained, the same for every micro-batch) is the prologue, run once per
// step. Stage 0 holds the rest of the multimodal preparation (the
// vision-bank indices on the full batch, vision_gather of the prologue's
// bank) with the token embedding and layer 0, and returns the residual
// stream; stage 1 takes it as its activation, does no vision work, and
// computes layer 1, the head and the loss from the labels. @forward stays.
// CHECK-LABEL: func.func @forward
// CHECK-LABEL: func.func @prologue
// CHECK-SAME: %[[IMG:[a-z0-9]+]]: tensor<3x4xf32> {glimmer.input = "images"}
// CHECK-SAME: {glimmer.param = "vision.layers.0.w"}
// CHECK-SAME: -> (tensor<3x4xf32> {glimmer.activation = 0 : i64}) attributes {glimmer.stage_prologue}
// CHECK: glimmer.linear %[[IMG]]
// CHECK-LABEL: func.func @stage_0
// CHECK-SAME: %[[TOK:[a-z0-9]+]]: tensor<2x8xi64> {glimmer.input = "tokens"}
// CHECK-SAME: {glimmer.param = "emb"}
// CHECK-SAME: {glimmer.param = "layers.0.w"}
// CHECK-NOT: glimmer.param = "layers.1.w"
// CHECK-SAME: {glimmer.microbatch}
// CHECK-SAME: %[[BANK:[a-z0-9]+]]: tensor<3x4xf32> {glimmer.prologue = 0 : i64}
// CHECK-SAME: -> (tensor<1x8x4xf32> {glimmer.activation = 0 : i64}) attributes {glimmer.stage = 0 : i64}
// CHECK: glimmer.vision_bank_indices %[[TOK]]
// CHECK: glimmer.vision_gather %{{.*}}, %[[BANK]]
// CHECK: %[[H0:.*]] = glimmer.add
// CHECK-NOT: glimmer.cross_entropy
// CHECK: return %[[H0]]
// CHECK-LABEL: func.func @stage_1
// CHECK-SAME: {glimmer.input = "labels"}
// CHECK-SAME: {glimmer.param = "layers.1.w"}
// CHECK-SAME: {glimmer.param = "head"}
// CHECK-SAME: %[[IN:[a-z0-9]+]]: tensor<1x8x4xf32> {glimmer.activation = 0 : i64}
// CHECK-SAME: -> (tensor<f32> {glimmer.partial = ["dp_shard"]}) attributes {glimmer.stage = 1 : i64}
// CHECK-NOT: glimmer.vision
// CHECK: glimmer.linear %[[IN]]
// CHECK: glimmer.cross_entropy
// A cut named explicitly (two layers, the second on stage 1).
// SPLIT-LABEL: func.func @stage_0
// SPLIT-SAME: {glimmer.param = "layers.0.w"}
// SPLIT-LABEL: func.func @stage_1
// SPLIT-SAME: {glimmer.param = "layers.1.w"}
module attributes {glimmer.spmd = #glimmer.spmd<"pp=2,microbatches=2">} {
  func.func @forward(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %labels: tensor<2x8xi64> {glimmer.input = "labels"},
                     %images: tensor<3x4xf32> {glimmer.input = "images"},
                     %venc: tensor<4x4xf32> {glimmer.param = "vision.layers.0.w"},
                     %emb: tensor<16x4xf32> {glimmer.param = "emb"},
                     %w0: tensor<4x4xf32> {glimmer.param = "layers.0.w"},
                     %w1: tensor<4x4xf32> {glimmer.param = "layers.1.w"},
                     %head: tensor<16x4xf32> {glimmer.param = "head"},
                     %mb: tensor<i64> {glimmer.microbatch}) -> (tensor<f32> {glimmer.partial = ["dp_shard"]}) {
    %bank = glimmer.linear %images, %venc : tensor<3x4xf32>, tensor<4x4xf32> -> tensor<3x4xf32>
    %t = glimmer.microbatch_slice %tokens[%mb] pieces = 2 dim = 0 : tensor<2x8xi64>, tensor<i64> -> tensor<1x8xi64>
    %e = glimmer.embedding %emb, %t : tensor<16x4xf32>, tensor<1x8xi64> -> tensor<1x8x4xf32>
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 15 : tensor<2x8xi64>
    %i = glimmer.microbatch_slice %idx[%mb] pieces = 2 dim = 0 : tensor<2x8xi64>, tensor<i64> -> tensor<1x8xi64>
    %m = glimmer.vision_gather %e, %bank, %i : tensor<1x8x4xf32>, tensor<3x4xf32>, tensor<1x8xi64>
    %a0 = glimmer.linear %m, %w0 : tensor<1x8x4xf32>, tensor<4x4xf32> -> tensor<1x8x4xf32>
    %h0 = glimmer.add %m, %a0 : tensor<1x8x4xf32>
    %a1 = glimmer.linear %h0, %w1 : tensor<1x8x4xf32>, tensor<4x4xf32> -> tensor<1x8x4xf32>
    %h1 = glimmer.add %h0, %a1 : tensor<1x8x4xf32>
    %logits = glimmer.linear %h1, %head : tensor<1x8x4xf32>, tensor<16x4xf32> -> tensor<1x8x16xf32>
    %flat = glimmer.reshape %logits : tensor<1x8x16xf32> -> tensor<8x16xf32>
    %lab = glimmer.reshape %labels : tensor<2x8xi64> -> tensor<16xi64>
    %l = glimmer.microbatch_slice %lab[%mb] pieces = 2 dim = 0 : tensor<16xi64>, tensor<i64> -> tensor<8xi64>
    %sum, %count = glimmer.cross_entropy %flat, %l ignore_index = -100 : tensor<8x16xf32>, tensor<8xi64> -> tensor<f32>, tensor<i64>
    %n = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %n : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Three layers on three stages, where layer 2 also reads layer 0's output
// (a long skip connection): stage 1 receives it and passes it on with its
// own output, so each stage talks to its neighbours only. The positions
// (a data input) are read on every stage that uses them, not sent. With
// one micro-batch, the token embedding is the prologue.
// CHECK-LABEL: func.func @prologue
// CHECK: glimmer.embedding
// CHECK-LABEL: func.func @stage_0
// CHECK-SAME: -> (tensor<2x8x4xf32> {glimmer.activation = 0 : i64})
// CHECK-LABEL: func.func @stage_1
// CHECK-SAME: {glimmer.input = "positions"}
// CHECK-SAME: %[[H0:[a-z0-9]+]]: tensor<2x8x4xf32> {glimmer.activation = 0 : i64}
// CHECK-SAME: -> (tensor<2x8x4xf32> {glimmer.activation = 0 : i64}, tensor<2x8x4xf32> {glimmer.activation = 1 : i64})
// CHECK: glimmer.rope
// CHECK: %[[H1:.*]] = glimmer.reshape
// CHECK: return %[[H0]], %[[H1]]
// CHECK-LABEL: func.func @stage_2
// CHECK-SAME: {glimmer.input = "positions"}
// CHECK-SAME: %[[S0:[a-z0-9]+]]: tensor<2x8x4xf32> {glimmer.activation = 0 : i64}, %[[S1:[a-z0-9]+]]: tensor<2x8x4xf32> {glimmer.activation = 1 : i64}
// CHECK: glimmer.add %{{.*}}, %[[S0]]
module attributes {glimmer.spmd = #glimmer.spmd<"pp=3">} {
  func.func @forward(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %pos: tensor<2x8xi64> {glimmer.input = "positions"},
                  %emb: tensor<16x4xf32> {glimmer.param = "emb"},
                  %w0: tensor<4x4xf32> {glimmer.param = "model.layers.0.w"},
                  %w1: tensor<4x4xf32> {glimmer.param = "model.layers.1.w"},
                  %w2: tensor<4x4xf32> {glimmer.param = "model.layers.2.w"}) -> tensor<f32> {
    %e = glimmer.embedding %emb, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %h0 = glimmer.linear %e, %w0 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %a1 = glimmer.linear %h0, %w1 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %r1 = glimmer.reshape %a1 : tensor<2x8x4xf32> -> tensor<2x8x1x4xf32>
    %q1 = glimmer.rope %r1, %pos theta = 1.000000e+04 style = interleaved : tensor<2x8x1x4xf32>, tensor<2x8xi64>
    %h1 = glimmer.reshape %q1 : tensor<2x8x1x4xf32> -> tensor<2x8x4xf32>
    %a2 = glimmer.linear %h1, %w2 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %r2 = glimmer.reshape %a2 : tensor<2x8x4xf32> -> tensor<2x8x1x4xf32>
    %q2 = glimmer.rope %r2, %pos theta = 1.000000e+04 style = interleaved : tensor<2x8x1x4xf32>, tensor<2x8xi64>
    %h2 = glimmer.reshape %q2 : tensor<2x8x1x4xf32> -> tensor<2x8x4xf32>
    %s = glimmer.add %h2, %h0 : tensor<2x8x4xf32>
    %r = glimmer.reduce sum %s dims = [0, 1, 2] : tensor<2x8x4xf32> -> tensor<f32>
    return %r : tensor<f32>
  }
}

// -----

// An output projection tied to the token embedding: both stages read the
// parameter (stage 0 in its prologue's embedding, stage 1 in the head);
// autodiff sums their gradients over pp.
// CHECK-LABEL: func.func @prologue
// CHECK-SAME: {glimmer.param = "emb"}
// CHECK-LABEL: func.func @stage_1
// CHECK-SAME: {glimmer.param = "emb"}
// CHECK: glimmer.linear %{{.*}}, %arg0
module attributes {glimmer.spmd = #glimmer.spmd<"pp=2">} {
  func.func @forward(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %emb: tensor<16x4xf32> {glimmer.param = "emb"},
                     %w0: tensor<4x4xf32> {glimmer.param = "layers.0.w"}, %w1: tensor<4x4xf32> {glimmer.param = "layers.1.w"}) -> tensor<f32> {
    %e = glimmer.embedding %emb, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %h0 = glimmer.linear %e, %w0 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %h1 = glimmer.linear %h0, %w1 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %logits = glimmer.linear %h1, %emb : tensor<2x8x4xf32>, tensor<16x4xf32> -> tensor<2x8x16xf32>
    %r = glimmer.reduce sum %logits dims = [0, 1, 2] : tensor<2x8x16xf32> -> tensor<f32>
    return %r : tensor<f32>
  }
}

// -----

// Without pp the pass does nothing.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: glimmer.stage
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
