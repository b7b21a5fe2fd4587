// A one-layer vision-language model forward in the global (unsharded) view:
// ViT-style patch embedding of the images, a projector into the text width,
// the vision merge (bank indices + gather), one pre-norm attention block with
// RoPE on explicit positions and GQA, the LM head and the token-mean
// cross-entropy. Shapes: batch 2, sequence 16, vocab 64 (image token 63),
// width 32, 4 query heads / 2 key-value heads of size 8, one 8x8 RGB image per
// sample cut into four 4x4 patches (a bank of 8 rows).
module {
  func.func @vlm_forward(
      %tokens: tensor<2x16xi64>, %labels: tensor<2x16xi64>,
      %images: tensor<2x3x8x8xf32>,
      %patch_w: tensor<32x3x4x4xf32>, %patch_b: tensor<32xf32>,
      %vision_norm_w: tensor<32xf32>, %vision_norm_b: tensor<32xf32>,
      %proj_w: tensor<32x32xf32>, %proj_b: tensor<32xf32>,
      %tok_embeddings: tensor<64x32xf32>,
      %attn_norm: tensor<32xf32>,
      %wq: tensor<32x32xf32>, %wk: tensor<16x32xf32>, %wv: tensor<16x32xf32>,
      %wo: tensor<32x32xf32>,
      %final_norm: tensor<32xf32>, %lm_head: tensor<64x32xf32>)
      -> tensor<f32> {
    // Vision encoder: patches -> [images * patches, width] bank.
    %patches = glimmer.conv2d %images, %patch_w, %patch_b stride = [4, 4] padding = [0, 0]
        : tensor<2x3x8x8xf32>, tensor<32x3x4x4xf32>, tensor<32xf32> -> tensor<2x32x2x2xf32>
    %p0 = glimmer.reshape %patches : tensor<2x32x2x2xf32> -> tensor<2x32x4xf32>
    %p1 = glimmer.transpose %p0 permutation = [0, 2, 1] : tensor<2x32x4xf32> -> tensor<2x4x32xf32>
    %vn = glimmer.layer_norm %p1, %vision_norm_w, %vision_norm_b eps = 1.0e-05
        : tensor<2x4x32xf32>, tensor<32xf32>
    %vp = glimmer.linear %vn, %proj_w, %proj_b
        : tensor<2x4x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<2x4x32xf32>
    %vg = glimmer.gelu %vp approximate = tanh : tensor<2x4x32xf32>
    %bank = glimmer.reshape %vg : tensor<2x4x32xf32> -> tensor<8x32xf32>

    // Vision merge, computed on the full sequence.
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 63 : tensor<2x16xi64>
    %embeds = glimmer.embedding %tok_embeddings, %tokens
        : tensor<64x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    %h = glimmer.vision_gather %embeds, %bank, %idx
        : tensor<2x16x32xf32>, tensor<8x32xf32>, tensor<2x16xi64>

    // Attention block.
    %pos = glimmer.iota dim = 1 : tensor<2x16xi64>
    %x = glimmer.rms_norm %h, %attn_norm eps = 1.0e-05 : tensor<2x16x32xf32>, tensor<32xf32>
    %q0 = glimmer.linear %x, %wq : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %k0 = glimmer.linear %x, %wk : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %v0 = glimmer.linear %x, %wv : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %q1 = glimmer.reshape %q0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    %k1 = glimmer.reshape %k0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    %v1 = glimmer.reshape %v0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    %q2 = glimmer.rope %q1, %pos theta = 1.0e+04 style = interleaved
        : tensor<2x16x4x8xf32>, tensor<2x16xi64>
    %k2 = glimmer.rope %k1, %pos theta = 1.0e+04 style = interleaved
        : tensor<2x16x2x8xf32>, tensor<2x16xi64>
    %q = glimmer.transpose %q2 permutation = [0, 2, 1, 3]
        : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    %k = glimmer.transpose %k2 permutation = [0, 2, 1, 3]
        : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
    %v = glimmer.transpose %v1 permutation = [0, 2, 1, 3]
        : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
    %o, %lse = glimmer.attention %q, %k, %v
        positions(%pos, %pos : tensor<2x16xi64>, tensor<2x16xi64>) causal scale = 0.35355339059327373
        : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
    %o1 = glimmer.transpose %o permutation = [0, 2, 1, 3]
        : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
    %o2 = glimmer.reshape %o1 : tensor<2x16x4x8xf32> -> tensor<2x16x32xf32>
    %attn = glimmer.linear %o2, %wo : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %h1 = glimmer.add %h, %attn : tensor<2x16x32xf32>

    // Head and loss: mean over tokens whose label is not -100.
    %hn = glimmer.rms_norm %h1, %final_norm eps = 1.0e-05 : tensor<2x16x32xf32>, tensor<32xf32>
    %logits = glimmer.linear %hn, %lm_head
        : tensor<2x16x32xf32>, tensor<64x32xf32> -> tensor<2x16x64xf32>
    %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100
        : tensor<2x16x64xf32>, tensor<2x16xi64> -> tensor<f32>, tensor<i64>
    %n = glimmer.convert %count : tensor<i64> to tensor<f32>
    %loss = glimmer.div %sum, %n : tensor<f32>
    return %loss : tensor<f32>
  }
}
