// RUN: glimmer-gradcheck %s | FileCheck %s

// Gradient checks of the model ops' VJP rules.
// Each function is checked by glimmer-gradcheck: every f64 argument gets
// seeded random values, glimmer-autodiff differentiates the scalar loss
// sum(op(...) * w) (w a non-uniform constant, so every output element
// contributes), and each gradient element is compared with a central
// finite difference.

// linear with a bias on a rank-3 input: dx = dy W, dW = dy^T x over the
// flattened rows, db = sum of dy over all leading dims.
// CHECK: @linear_bias_rank3: PASS
func.func @linear_bias_rank3(%x: tensor<2x3x4xf64>, %w: tensor<5x4xf64>, %b: tensor<5xf64>) -> tensor<f64> {
  %y = glimmer.linear %x, %w, %b : tensor<2x3x4xf64>, tensor<5x4xf64>, tensor<5xf64> -> tensor<2x3x5xf64>
  %lw = glimmer.constant dense<[[[0.727, 0.468, -0.507, 0.982, 1.046], [-0.78, 1.01, 0.743, -0.627, 0.45], [0.837, -1.14, 0.901, 0.885, -0.655]], [[0.775, 0.5, -0.677, 1.132, 1.064], [-0.852, 0.5, 0.848, -0.636, 0.569], [1.024, -1.199, 0.925, 0.346, -0.815]]]> : tensor<2x3x5xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x5xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x3x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// linear without a bias on a rank-2 input.
// CHECK: @linear_rank2: PASS
func.func @linear_rank2(%x: tensor<3x4xf64>, %w: tensor<2x4xf64>) -> tensor<f64> {
  %y = glimmer.linear %x, %w : tensor<3x4xf64>, tensor<2x4xf64> -> tensor<3x2xf64>
  %lw = glimmer.constant dense<[[0.599, 0.36], [-0.663, 1.05], [0.873, -0.757]]> : tensor<3x2xf64>
  %wy = glimmer.mul %y, %lw : tensor<3x2xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<3x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// linear with a bias on a rank-1 input (no leading dims).
// CHECK: @linear_rank1: PASS
func.func @linear_rank1(%x: tensor<4xf64>, %w: tensor<3x4xf64>, %b: tensor<3xf64>) -> tensor<f64> {
  %y = glimmer.linear %x, %w, %b : tensor<4xf64>, tensor<3x4xf64>, tensor<3xf64> -> tensor<3xf64>
  %lw = glimmer.constant dense<[0.59, 0.82, -0.553]> : tensor<3xf64>
  %wy = glimmer.mul %y, %lw : tensor<3xf64>
  %loss = glimmer.reduce sum %wy dims = [0] : tensor<3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// batched matmul without transposes.
// CHECK: @matmul: PASS
func.func @matmul(%a: tensor<2x3x4xf64>, %b: tensor<2x4x5xf64>) -> tensor<f64> {
  %y = glimmer.matmul %a, %b : tensor<2x3x4xf64>, tensor<2x4x5xf64> -> tensor<2x3x5xf64>
  %lw = glimmer.constant dense<[[[0.318, 0.793, -0.832, 0.572, 0.827], [-1.246, 1.11, 0.251, -0.654, 0.935], [0.685, -0.695, 1.168, 1.262, -0.29]], [[0.492, 0.937, -0.847, 0.65, 1.017], [-1.345, 0.42, 0.376, -0.838, 0.989], [0.713, -0.859, 1.323, 0.583, -0.355]]]> : tensor<2x3x5xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x5xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x3x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// batched matmul with transpose_lhs.
// CHECK: @matmul_transpose_lhs: PASS
func.func @matmul_transpose_lhs(%a: tensor<2x4x3xf64>, %b: tensor<2x4x5xf64>) -> tensor<f64> {
  %y = glimmer.matmul %a, %b transpose_lhs : tensor<2x4x3xf64>, tensor<2x4x5xf64> -> tensor<2x3x5xf64>
  %lw = glimmer.constant dense<[[[0.48, 0.85, -0.656, 0.562, 1.006], [-1.211, 0.94, 0.33, -0.804, 0.817], [0.566, -0.843, 1.249, 1.093, -0.253]], [[0.671, 0.929, -0.67, 0.705, 1.18], [-1.249, 0.282, 0.507, -0.942, 0.83], [0.65, -1.034, 1.341, 0.404, -0.384]]]> : tensor<2x3x5xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x5xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x3x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// batched matmul with transpose_rhs.
// CHECK: @matmul_transpose_rhs: PASS
func.func @matmul_transpose_rhs(%a: tensor<2x3x4xf64>, %b: tensor<2x5x4xf64>) -> tensor<f64> {
  %y = glimmer.matmul %a, %b transpose_rhs : tensor<2x3x4xf64>, tensor<2x5x4xf64> -> tensor<2x3x5xf64>
  %lw = glimmer.constant dense<[[[0.652, 0.777, -0.502, 0.674, 1.13], [-1.067, 0.853, 0.497, -0.848, 0.639], [0.567, -1.021, 1.201, 0.927, -0.343]], [[0.813, 0.802, -0.561, 0.86, 1.25], [-1.076, 0.256, 0.687, -0.921, 0.656], [0.716, -1.191, 1.235, 0.274, -0.523]]]> : tensor<2x3x5xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x5xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x3x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// rank-2 matmul with both transpose flags.
// CHECK: @matmul_transpose_both: PASS
func.func @matmul_transpose_both(%a: tensor<4x3xf64>, %b: tensor<5x4xf64>) -> tensor<f64> {
  %y = glimmer.matmul %a, %b transpose_lhs transpose_rhs : tensor<4x3xf64>, tensor<5x4xf64> -> tensor<3x5xf64>
  %lw = glimmer.constant dense<[[0.746, 0.613, -0.451, 0.851, 1.136], [-0.888, 0.893, 0.665, -0.765, 0.492], [0.689, -1.136, 1.05, 0.851, -0.514]]> : tensor<3x5xf64>
  %wy = glimmer.mul %y, %lw : tensor<3x5xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<3x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// rms_norm: rms_norm_grad gives the input and weight gradients.
// CHECK: @rms_norm: PASS
func.func @rms_norm(%x: tensor<2x3x4xf64>, %w: tensor<4xf64>) -> tensor<f64> {
  %y = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<2x3x4xf64>, tensor<4xf64>
  %lw = glimmer.constant dense<[[[0.746, 0.523, -0.474, 0.935], [1.091, -0.815, 0.957, 0.722], [-0.686, 0.456, 0.777, -1.15]], [[0.959, 0.861, -0.603, 0.813], [0.543, -0.628, 1.102, 1.12], [-0.867, 0.44, 0.848, -0.696]]]> : tensor<2x3x4xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// layer_norm: layer_norm_grad gives the input, weight and bias gradients.
// CHECK: @layer_norm: PASS
func.func @layer_norm(%x: tensor<2x3x4xf64>, %w: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<f64> {
  %y = glimmer.layer_norm %x, %w, %b eps = 1.0e-05 : tensor<2x3x4xf64>, tensor<4xf64>
  %lw = glimmer.constant dense<[[[0.253, 0.668, -0.93, 0.673], [0.703, -1.178, 1.252, 0.283], [-0.504, 0.941, 0.834, -0.65]], [[1.031, 1.342, -0.407, 0.382], [0.849, -0.979, 0.704, 0.871], [-1.329, 0.57, 0.353, -0.694]]]> : tensor<2x3x4xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// rope, interleaved pairs, with explicit (unsorted) positions: the VJP is
// the inverse rotation.
// CHECK: @rope_interleaved: PASS
func.func @rope_interleaved(%x: tensor<2x3x2x4xf64>) -> tensor<f64> {
  %pos = glimmer.constant dense<[[0, 5, 2], [7, 1, 3]]> : tensor<2x3xi64>
  %y = glimmer.rope %x, %pos theta = 10.0 style = interleaved : tensor<2x3x2x4xf64>, tensor<2x3xi64>
  %lw = glimmer.constant dense<[[[[0.749, 0.542, -0.466, 0.918], [1.103, -0.83, 0.94, 0.711]], [[-0.705, 0.461, 0.756, -1.15], [0.979, 0.856, -0.584, 0.823]], [[0.559, -0.614, 1.089, 1.138], [-0.875, 0.42, 0.845, -0.717]]], [[[0.55, 0.948, -1.237, 0.991], [0.291, -0.763, 0.867, 0.594]], [[-0.786, 1.235, 1.154, -0.251], [0.611, 0.946, -0.726, 0.673]], [[1.133, -1.293, 0.318, 0.454], [-0.92, 0.889, 0.657, -0.973]]]]> : tensor<2x3x2x4xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x2x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<2x3x2x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// rope, half-split pairs (rotate_half).
// CHECK: @rope_half: PASS
func.func @rope_half(%x: tensor<2x3x2x4xf64>) -> tensor<f64> {
  %pos = glimmer.constant dense<[[0, 5, 2], [7, 1, 3]]> : tensor<2x3xi64>
  %y = glimmer.rope %x, %pos theta = 100.0 style = half : tensor<2x3x2x4xf64>, tensor<2x3xi64>
  %lw = glimmer.constant dense<[[[[0.75, 0.562, -0.46, 0.9], [1.115, -0.845, 0.925, 0.7]], [[-0.723, 0.468, 0.737, -1.148], [1.0, 0.852, -0.564, 0.831]], [[0.576, -0.601, 1.075, 1.154], [-0.885, 0.401, 0.84, -0.737]]], [[[0.55, 0.928, -1.243, 1.01], [0.28, -0.747, 0.882, 0.606]], [[-0.768, 1.228, 1.173, -0.254], [0.59, 0.949, -0.746, 0.665]], [[1.115, -1.305, 0.332, 0.438], [-0.91, 0.908, 0.663, -0.953]]]]> : tensor<2x3x2x4xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x2x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<2x3x2x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// rope with inverse (whose VJP is the forward rotation).
// CHECK: @rope_inverse: PASS
func.func @rope_inverse(%x: tensor<2x3x2x4xf64>) -> tensor<f64> {
  %pos = glimmer.constant dense<[[0, 5, 2], [7, 1, 3]]> : tensor<2x3xi64>
  %y = glimmer.rope %x, %pos theta = 10.0 style = half inverse : tensor<2x3x2x4xf64>, tensor<2x3xi64>
  %lw = glimmer.constant dense<[[[[0.75, 0.583, -0.455, 0.881], [1.124, -0.862, 0.911, 0.687]], [[-0.74, 0.477, 0.717, -1.145], [1.02, 0.85, -0.544, 0.838]], [[0.594, -0.589, 1.06, 1.17], [-0.896, 0.383, 0.834, -0.757]]], [[[0.551, 0.907, -1.247, 1.029], [0.271, -0.73, 0.895, 0.62]], [[-0.751, 1.218, 1.192, -0.258], [0.57, 0.95, -0.766, 0.659]], [[1.097, -1.316, 0.348, 0.423], [-0.898, 0.926, 0.67, -0.933]]]]> : tensor<2x3x2x4xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x2x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<2x3x2x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// attention without masks, Tq = 3 queries over Tk = 5 keys: attention_grad
// from the forward's output and lse (the lse result is unused).
// CHECK: @attention: PASS
func.func @attention(%q: tensor<1x2x3x4xf64>, %k: tensor<1x2x5x4xf64>, %v: tensor<1x2x5x4xf64>) -> tensor<f64> {
  %o, %lse = glimmer.attention %q, %k, %v scale = 0.5 : tensor<1x2x3x4xf64>, tensor<1x2x5x4xf64> -> tensor<1x2x3x4xf64>, tensor<1x2x3xf64>
  %lw = glimmer.constant dense<[[[[0.748, 0.603, -0.452, 0.861], [1.133, -0.879, 0.899, 0.673], [-0.757, 0.487, 0.698, -1.14]], [[1.04, 0.85, -0.524, 0.844], [0.613, -0.579, 1.044, 1.184], [-0.908, 0.365, 0.826, -0.776]]]]> : tensor<1x2x3x4xf64>
  %wy = glimmer.mul %o, %lw : tensor<1x2x3x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<1x2x3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// causal attention from explicit positions (the second row permuted as
// under context parallelism).
// CHECK: @attention_causal: PASS
func.func @attention_causal(%q: tensor<2x2x4x4xf64>, %k: tensor<2x2x4x4xf64>, %v: tensor<2x2x4x4xf64>) -> tensor<f64> {
  %pos = glimmer.constant dense<[[0, 1, 2, 3], [2, 0, 3, 1]]> : tensor<2x4xi64>
  %o, %lse = glimmer.attention %q, %k, %v positions(%pos, %pos : tensor<2x4xi64>, tensor<2x4xi64>) causal scale = 0.5 : tensor<2x2x4x4xf64>, tensor<2x2x4x4xf64> -> tensor<2x2x4x4xf64>, tensor<2x2x4xf64>
  %lw = glimmer.constant dense<[[[[0.254, 0.587, -0.949, 0.749], [0.664, -1.112, 1.307, 0.335], [-0.435, 0.908, 0.911, -0.664], [0.95, 1.349, -0.486, 0.354]], [[0.777, -1.026, 0.764, 0.809], [-1.285, 0.643, 0.378, -0.614], [1.044, 0.923, -0.75, 1.141], [0.739, -0.497, 0.487, 0.958]]], [[[-1.072, 0.798, 0.98, -0.733], [0.66, 0.452, -0.804, 1.147], [0.932, -0.87, 0.627, 0.797], [-0.522, 0.649, 1.117, -1.096]], [[0.859, 0.467, -0.85, 0.669], [0.558, -0.993, 1.218, 0.95], [-0.321, 0.796, 0.829, -0.571], [0.83, 1.247, -1.106, 0.251]]]]> : tensor<2x2x4x4xf64>
  %wy = glimmer.mul %o, %lw : tensor<2x2x4x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<2x2x4x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// grouped-query causal attention: 4 query heads over 2 key/value heads.
// CHECK: @attention_gqa: PASS
func.func @attention_gqa(%q: tensor<2x4x4x4xf64>, %k: tensor<2x2x4x4xf64>, %v: tensor<2x2x4x4xf64>) -> tensor<f64> {
  %pos = glimmer.constant dense<[[0, 1, 2, 3], [2, 0, 3, 1]]> : tensor<2x4xi64>
  %o, %lse = glimmer.attention %q, %k, %v positions(%pos, %pos : tensor<2x4xi64>, tensor<2x4xi64>) causal scale = 0.5 : tensor<2x4x4x4xf64>, tensor<2x2x4x4xf64> -> tensor<2x4x4x4xf64>, tensor<2x4x4xf64>
  %lw = glimmer.constant dense<[[[[0.558, -0.834, 0.582, 0.597], [-1.071, 1.159, 0.888, -0.395], [0.839, 0.743, -0.55, 0.921], [1.244, -1.016, 0.277, 0.741]], [[-0.886, 0.611, 0.763, -1.225], [1.18, 0.255, -0.584, 0.949], [0.752, -0.663, 1.109, 1.309], [-0.337, 0.433, 0.906, -0.914]], [[0.665, 0.947, -1.349, 0.489], [0.354, -0.774, 1.027, 0.767], [-0.807, 1.283, 0.646, -0.38], [0.611, 1.043, -0.926, 0.75]], [[1.138, -0.74, 0.5, 0.486], [-0.955, 1.074, 0.8, -0.977], [0.732, 0.663, -0.452, 0.801], [1.148, -0.935, 0.869, 0.624]]], [[[-0.799, 0.525, 0.646, -1.115], [1.099, 0.859, -0.463, 0.85], [0.672, -0.557, 0.99, 1.219], [-0.953, 0.318, 0.794, -0.832]], [[0.572, 0.827, -1.247, 1.109], [0.251, -0.655, 0.935, 0.685], [-0.695, 1.168, 1.262, -0.29], [0.492, 0.938, -0.847, 0.65]], [[1.018, -1.345, 0.419, 0.376], [-0.839, 0.988, 0.713, -0.86], [1.323, 0.583, -0.355, 0.68], [1.05, -0.855, 0.762, 1.206]], [[-0.711, 0.44, 0.53, -1.004], [1.017, 0.766, -1.043, 0.749], [0.592, -0.453, 0.871, 1.128], [-0.87, 0.905, 0.68, -0.749]]]]> : tensor<2x4x4x4xf64>
  %wy = glimmer.mul %o, %lw : tensor<2x4x4x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<2x4x4x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// causal attention restricted to equal document ids (packed sequences).
// CHECK: @attention_documents: PASS
func.func @attention_documents(%q: tensor<2x2x4x4xf64>, %k: tensor<2x2x4x4xf64>, %v: tensor<2x2x4x4xf64>) -> tensor<f64> {
  %pos = glimmer.constant dense<[[0, 1, 2, 3], [2, 0, 3, 1]]> : tensor<2x4xi64>
  %doc = glimmer.constant dense<[[0, 0, 1, 1], [5, 5, 5, 6]]> : tensor<2x4xi64>
  %o, %lse = glimmer.attention %q, %k, %v positions(%pos, %pos : tensor<2x4xi64>, tensor<2x4xi64>) documents(%doc, %doc : tensor<2x4xi64>, tensor<2x4xi64>) causal scale = 0.5 : tensor<2x2x4x4xf64>, tensor<2x2x4x4xf64> -> tensor<2x2x4x4xf64>, tensor<2x2x4xf64>
  %lw = glimmer.constant dense<[[[[0.281, 0.508, -0.942, 0.83], [0.65, -1.035, 1.341, 0.403], [-0.384, 0.852, 0.977, -0.702], [0.874, 1.33, -0.566, 0.352]], [[0.697, -1.048, 0.839, 0.768], [-1.221, 0.701, 0.427, -0.543], [1.013, 1.002, -0.76, 1.06], [0.75, -0.575, 0.456, 0.887]]], [[[-1.121, 0.856, 0.916, -0.692], [0.734, 0.474, -0.724, 1.146], [1.013, -0.851, 0.551, 0.836], [-0.588, 0.593, 1.066, -1.164]], [[0.892, 0.389, -0.837, 0.75], [0.551, -0.914, 1.246, 1.022], [-0.274, 0.736, 0.891, -0.615], [0.757, 1.222, -1.186, 0.256]]]]> : tensor<2x2x4x4xf64>
  %wy = glimmer.mul %o, %lw : tensor<2x2x4x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<2x2x4x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// non-causal attention masked by document ids only, with GQA.
// CHECK: @attention_documents_noncausal: PASS
func.func @attention_documents_noncausal(%q: tensor<1x2x4x4xf64>, %k: tensor<1x1x4x4xf64>, %v: tensor<1x1x4x4xf64>) -> tensor<f64> {
  %doc = glimmer.constant dense<[[3, 4, 3, 4]]> : tensor<1x4xi64>
  %o, %lse = glimmer.attention %q, %k, %v documents(%doc, %doc : tensor<1x4xi64>, tensor<1x4xi64>) scale = 0.7 : tensor<1x2x4x4xf64>, tensor<1x1x4x4xf64> -> tensor<1x2x4x4xf64>, tensor<1x2x4xf64>
  %lw = glimmer.constant dense<[[[[0.477, -0.85, 0.659, 0.561], [-1.003, 1.213, 0.942, -0.328], [0.802, 0.82, -0.567, 0.84], [1.248, -1.096, 0.253, 0.668]], [[-0.93, 0.673, 0.703, -1.178], [1.251, 0.283, -0.505, 0.941], [0.833, -0.65, 1.031, 1.342], [-0.406, 0.382, 0.85, -0.979]]]]> : tensor<1x2x4x4xf64>
  %wy = glimmer.mul %o, %lw : tensor<1x2x4x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<1x2x4x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// softmax along the last dimension: softmax_grad from the op's output.
// CHECK: @softmax: PASS
func.func @softmax(%x: tensor<3x4xf64>) -> tensor<f64> {
  %y = glimmer.softmax %x dim = 1 : tensor<3x4xf64>
  %lw = glimmer.constant dense<[[0.304, 0.471, -0.929, 0.87], [0.653, -0.994, 1.349, 0.442], [-0.366, 0.818, 1.003, -0.729]]> : tensor<3x4xf64>
  %wy = glimmer.mul %y, %lw : tensor<3x4xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1] : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// softmax along dimension 0 of a rank-3 tensor.
// CHECK: @softmax_dim0: PASS
func.func @softmax_dim0(%x: tensor<3x2x2xf64>) -> tensor<f64> {
  %y = glimmer.softmax %x dim = 0 : tensor<3x2x2xf64>
  %lw = glimmer.constant dense<[[[0.341, 0.812], [-0.805, 0.561]], [[0.857, -1.25], [1.079, 0.256]], [[-0.684, 0.923], [0.658, -0.714]]]> : tensor<3x2x2xf64>
  %wy = glimmer.mul %y, %lw : tensor<3x2x2xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<3x2x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// cross_entropy with two ignored labels (-100): cross_entropy_grad of the
// sum; ignored rows get no gradient and the count has none.
// CHECK: @cross_entropy: PASS
func.func @cross_entropy(%logits: tensor<2x3x5xf64>) -> tensor<f64> {
  %labels = glimmer.constant dense<[[1, -100, 4], [0, 2, -100]]> : tensor<2x3xi64>
  %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x3x5xf64>, tensor<2x3xi64> -> tensor<f64>, tensor<i64>
  %y = glimmer.mul %sum, %sum : tensor<f64>
  %lw = glimmer.constant dense<0.69> : tensor<f64>
  %wy = glimmer.mul %y, %lw : tensor<f64>
  return %wy : tensor<f64>
}

// conv2d with a bias, stride 2 and padding 1: conv2d_grad for input and
// weight, reduce sum over N, H, W for the bias.
// CHECK: @conv2d_bias: PASS
func.func @conv2d_bias(%x: tensor<2x3x5x5xf64>, %w: tensor<4x3x3x3xf64>, %b: tensor<4xf64>) -> tensor<f64> {
  %y = glimmer.conv2d %x, %w, %b stride = [2, 2] padding = [1, 1] : tensor<2x3x5x5xf64>, tensor<4x3x3x3xf64>, tensor<4xf64> -> tensor<2x4x3x3xf64>
  %lw = glimmer.constant dense<[[[[0.637, -0.375, 0.621], [1.045, -0.916, 0.751], [1.148, -0.737, 0.491]], [[0.491, -0.963, 1.067], [0.794, -0.986, 0.735], [0.653, -0.451, 0.811]], [[1.146, -0.925, 0.873], [0.633, -0.793, 0.517], [0.654, -1.12, 1.089]], [[0.857, -0.474, 0.85], [0.662, -0.56, 1.0], [1.214, -0.945, 0.326]]], [[[0.8, -0.823, 0.568], [0.837, -1.248, 1.099], [0.252, -0.665, 0.931]], [[0.676, -0.701, 1.176], [1.254, -0.285, 0.502], [0.941, -0.836, 0.65]], [[1.028, -1.343, 0.409], [0.381, -0.847, 0.981], [0.706, -0.869, 1.328]], [[0.573, -0.353, 0.691], [1.049, -0.845, 0.765], [1.215, -0.705, 0.432]]]]> : tensor<2x4x3x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x4x3x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<2x4x3x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// conv2d without a bias, patch-embedding style (stride = kernel size).
// CHECK: @conv2d: PASS
func.func @conv2d(%x: tensor<1x2x4x4xf64>, %w: tensor<3x2x2x2xf64>) -> tensor<f64> {
  %y = glimmer.conv2d %x, %w stride = [2, 2] padding = [0, 0] : tensor<1x2x4x4xf64>, tensor<3x2x2x2xf64> -> tensor<1x3x2x2xf64>
  %lw = glimmer.constant dense<[[[[0.338, -0.81], [0.808, 0.562]], [[-0.854, 1.25], [1.082, -0.255]], [[0.681, 0.924], [-0.661, 0.712]]]]> : tensor<1x3x2x2xf64>
  %wy = glimmer.mul %y, %lw : tensor<1x3x2x2xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<1x3x2x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// conv2d without a bias, different strides and paddings per dimension.
// CHECK: @conv2d_uneven: PASS
func.func @conv2d_uneven(%x: tensor<1x2x4x5xf64>, %w: tensor<2x2x3x2xf64>) -> tensor<f64> {
  %y = glimmer.conv2d %x, %w stride = [1, 2] padding = [1, 0] : tensor<1x2x4x5xf64>, tensor<2x2x3x2xf64> -> tensor<1x2x4x2xf64>
  %lw = glimmer.constant dense<[[[[0.687, -0.74], [0.477, 0.718], [-1.145, 1.019], [0.85, -0.545]], [[0.838, 0.594], [-0.589, 1.061], [1.169, -0.896], [0.383, 0.834]]]]> : tensor<1x2x4x2xf64>
  %wy = glimmer.mul %y, %lw : tensor<1x2x4x2xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2, 3] : tensor<1x2x4x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// embedding with repeated ids and an unused row: embedding_grad
// scatter-adds into the table.
// CHECK: @embedding: PASS
func.func @embedding(%table: tensor<5x3xf64>) -> tensor<f64> {
  %ids = glimmer.constant dense<[[0, 3, 3], [4, 0, 1]]> : tensor<2x3xi64>
  %y = glimmer.embedding %table, %ids : tensor<5x3xf64>, tensor<2x3xi64> -> tensor<2x3x3xf64>
  %lw = glimmer.constant dense<[[[-0.556, 0.351, 0.708], [-1.047, 0.829, 0.772], [-1.23, 0.695, 0.42]], [[-0.552, 1.019, 0.992], [-0.758, 1.07, 0.75], [-0.565, 0.459, 0.897]]]> : tensor<2x3x3xf64>
  %wy = glimmer.mul %y, %lw : tensor<2x3x3xf64>
  %loss = glimmer.reduce sum %wy dims = [0, 1, 2] : tensor<2x3x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
