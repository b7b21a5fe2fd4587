// A two-layer model for glimmer-split-stages' split points (pp=2).
module attributes {glimmer.spmd = #glimmer.spmd<"pp=2">} {
  func.func @forward(%tokens: tensor<2x8xi64> {glimmer.input = "tokens"}, %emb: tensor<16x4xf32> {glimmer.param = "emb"},
                     %w0: tensor<4x4xf32> {glimmer.param = "layers.0.w"}, %w1: tensor<4x4xf32> {glimmer.param = "layers.1.w"}) -> tensor<f32> {
    %e = glimmer.embedding %emb, %tokens : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %h0 = glimmer.linear %e, %w0 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %h1 = glimmer.linear %h0, %w1 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %r = glimmer.reduce sum %h1 dims = [0, 1, 2] : tensor<2x8x4xf32> -> tensor<f32>
    return %r : tensor<f32>
  }
}
