// RUN: glimmer-gradcheck %s | FileCheck %s

// Gradient checks of the multimodal and context-parallel ops' VJP rules.
// Each function is checked by glimmer-gradcheck: every f64 argument gets
// seeded random values, glimmer-autodiff differentiates the scalar loss
// sum(op(...) * w) (w a non-uniform constant, so every output element
// contributes), and each gradient element is compared with a central
// finite difference.

// vision_gather with image rows at the start of the first sequence and at
// the end of the second: vision_gather_grad zeroes the image rows of the
// embeddings gradient and scatters them into the bank gradient.
// CHECK: @vision_gather: PASS
func.func @vision_gather(%embeds: tensor<2x4x3xf64>, %bank: tensor<4x3xf64>) -> tensor<f64> {
  %idx = glimmer.constant dense<[[0, 1, -1, -1], [-1, -1, 2, 3]]> : tensor<2x4xi64>
  %y = glimmer.vision_gather %embeds, %bank, %idx : tensor<2x4x3xf64>, tensor<4x3xf64>, tensor<2x4xi64>
  %lw = glimmer.constant dense<[[[0.727, 0.468, -0.507], [0.982, 1.046, -0.78], [1.01, 0.743, -0.627], [0.45, 0.837, -1.14]], [[0.901, 0.885, -0.655], [0.775, 0.5, -0.677], [1.132, 1.064, -0.852], [0.5, 0.848, -0.636]]]> : tensor<2x4x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x4x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x4x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// vision_gather with indices built by vision_bank_indices from tokens
// (image token 7), a bank row left unused.
// CHECK: @vision_gather_from_tokens: PASS
func.func @vision_gather_from_tokens(%embeds: tensor<2x4x3xf64>, %bank: tensor<3x3xf64>) -> tensor<f64> {
  %tok = glimmer.constant dense<[[7, 2, 3, 7], [4, 5, 6, 1]]> : tensor<2x4xi64>
  %idx = glimmer.vision_bank_indices %tok image_token_id = 7 : tensor<2x4xi64>
  %y = glimmer.vision_gather %embeds, %bank, %idx : tensor<2x4x3xf64>, tensor<3x3xf64>, tensor<2x4xi64>
  %lw = glimmer.constant dense<[[[0.269, 0.724, -0.899], [0.625, 0.746, -1.215], [1.199, 0.26, -0.563], [0.95, 0.773, -0.657]], [[1.09, 1.32, -0.353], [0.418, 0.893, -0.932], [0.672, 0.927, -1.346], [0.51, 0.351, -0.754]]]> : tensor<2x4x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x4x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x4x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// vision_gather with no image token: the embeddings pass through and the
// bank gets a zero gradient.
// CHECK: @vision_gather_no_image: PASS
func.func @vision_gather_no_image(%embeds: tensor<1x3x2xf64>, %bank: tensor<2x2xf64>) -> tensor<f64> {
  %idx = glimmer.constant dense<[[-1, -1, -1]]> : tensor<1x3xi64>
  %y = glimmer.vision_gather %embeds, %bank, %idx : tensor<1x3x2xf64>, tensor<2x2xf64>, tensor<1x3xi64>
  %lw = glimmer.constant dense<[[[0.735, 0.485], [-0.495, 0.968], [1.062, -0.79]]]> : tensor<1x3x2xf64>
  %wy = glimmer.mul %y, %lw : tensor<1x3x2xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<1x3x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// cp_permute (head_tail, cp = 2) along the sequence dimension: the VJP is
// cp_unpermute.
// CHECK: @cp_permute: PASS
func.func @cp_permute(%x: tensor<2x8x3xf64>) -> tensor<f64> {
  %y = glimmer.cp_permute %x dim = 1 cp = 2 balancer = head_tail : tensor<2x8x3xf64>
  %lw = glimmer.constant dense<[[[0.392, 0.837, -0.747], [0.55, 0.917, -1.245], [1.02, 0.276, -0.738], [0.889, 0.613, -0.759], [1.223, 1.183, -0.255], [0.58, 0.95, -0.756], [0.662, 1.106, -1.311], [0.34, 0.43, -0.904]], [[0.917, 0.666, -0.943], [1.349, 0.493, -0.353], [0.771, 1.029, -0.77], [0.805, 1.28, -0.649], [0.382, 0.607, -1.042], [0.93, 0.75, -1.134], [0.741, 0.504, -0.484], [0.952, 1.077, -0.802]]]> : tensor<2x8x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x8x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x8x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// cp_permute with the contiguous balancer (identity), cp = 3.
// CHECK: @cp_permute_contiguous: PASS
func.func @cp_permute_contiguous(%x: tensor<3x2xf64>) -> tensor<f64> {
  %y = glimmer.cp_permute %x dim = 0 cp = 3 balancer = contiguous : tensor<3x2xf64>
  %lw = glimmer.constant dense<[[0.374, 0.83], [-0.767, 0.553], [0.897, -1.248]]> : tensor<3x2xf64>
  %wy = glimmer.mul %y, %lw : tensor<3x2xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<3x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// cp_unpermute (head_tail, cp = 3) along dimension 0: the VJP is
// cp_permute.
// CHECK: @cp_unpermute: PASS
func.func @cp_unpermute(%x: tensor<12x2xf64>) -> tensor<f64> {
  %y = glimmer.cp_unpermute %x dim = 0 cp = 3 balancer = head_tail : tensor<12x2xf64>
  %lw = glimmer.constant dense<[[0.439, 0.367], [-0.821, 1.001], [0.727, -0.843], [1.313, 0.602], [-0.361, 0.66], [1.05, -0.876], [0.756, 1.187], [-0.721, 0.456], [0.516, -0.991], [1.035, 0.774], [-1.023, 0.746], [0.613, -0.451]]> : tensor<12x2xf64>
  %wy = glimmer.mul %y, %lw : tensor<12x2xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<12x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
