// RUN: glimmer-translate --emit-cpp --split-input-file %s | FileCheck %s

// sequence_major becomes the runtime's AttentionLayout argument (query,
// key, value, output), for the forward and the backward alike.
// CHECK-LABEL: void step(
// CHECK: glimmer_rt::attention({{.*}}, true, 0, 0.25, glimmer_rt::AttentionLayout{false, false, true, true});
// CHECK: glimmer_rt::attentionGrad({{.*}}, true, 0, 0.25, glimmer_rt::AttentionLayout{false, false, true, true});
module {
  func.func @step(%q: tensor<1x4x8x16xbf16> {glimmer.input = "q"}, %k: tensor<1x2x8x16xbf16> {glimmer.input = "k"}, %vs: tensor<1x8x2x16xbf16> {glimmer.input = "v"}) -> tensor<1x4x8x16xbf16> {
    %o, %lse = glimmer.attention %q, %k, %vs causal scale = 0.25 {sequence_major = array<i1: false, false, true, true>} : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x8x2x16xbf16> -> tensor<1x8x4x16xbf16>, tensor<1x4x8xf32>
    %dq, %dk, %dv = glimmer.attention_grad %o, %q, %k, %vs, %o, %lse causal scale = 0.25 {sequence_major = array<i1: false, false, true, true>} : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x4x8xf32>, tensor<1x8x2x16xbf16>, tensor<1x8x4x16xbf16>
    return %dq : tensor<1x4x8x16xbf16>
  }
}

// -----

// Head-major attention keeps the runtime's default layout (no argument).
// CHECK-LABEL: void head_major(
// CHECK: glimmer_rt::attention({{.*}}, false, 0, 0.25);
module {
  func.func @head_major(%q: tensor<1x4x8x16xbf16> {glimmer.input = "q"}) -> tensor<1x4x8x16xbf16> {
    %o, %lse = glimmer.attention %q, %q, %q scale = 0.25 : tensor<1x4x8x16xbf16>, tensor<1x4x8x16xbf16> -> tensor<1x4x8x16xbf16>, tensor<1x4x8xf32>
    return %o : tensor<1x4x8x16xbf16>
  }
}
