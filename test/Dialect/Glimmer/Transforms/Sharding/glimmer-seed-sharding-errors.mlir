// RUN: glimmer-opt %s -split-input-file -glimmer-seed-sharding -verify-diagnostics
// RUN: not glimmer-opt %S/Inputs/tp-without-mesh.mlir -glimmer-seed-sharding 2>&1 | FileCheck %s --check-prefix=NOMESH
// RUN: not glimmer-opt %s -split-input-file -glimmer-seed-sharding=tp-plan=%S/Inputs/tp-plan-unused.json 2>&1 | FileCheck %s --check-prefix=UNUSED
// RUN: not glimmer-opt %s -split-input-file -glimmer-seed-sharding=tp-plan=%S/Inputs/tp-plan-bad-style.json 2>&1 | FileCheck %s --check-prefix=STYLE
// RUN: not glimmer-opt %s -split-input-file -glimmer-seed-sharding=tp-plan=%S/Inputs/tp-plan-malformed.json 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: not glimmer-opt %s -split-input-file -glimmer-seed-sharding=tp-plan=%S/Inputs/no-such-plan.json 2>&1 | FileCheck %s --check-prefix=MISSING

// UNUSED: error: the TP plan pattern 'decoder.*.q_proj.weight' matches no linear weight or embedding table; they are named by their state_dict keys (e.g. 'layers.0.attention.wq.weight')
// STYLE: error: the TP plan '{{.*}}tp-plan-bad-style.json' gives pattern 'layers.*.wq' an unknown style (expected "colwise", "rowwise" or "replicate")
// JSON: error: the TP plan '{{.*}}tp-plan-malformed.json' is not valid JSON:
// MISSING: error: cannot read the TP plan '{{.*}}no-such-plan.json': No such file or directory
// NOMESH: error: 'glimmer-seed-sharding' needs @mesh; run glimmer-materialize-mesh first

// Query heads that tp does not divide: the error names the parameter and
// what to change, at the projection's location.
module attributes {glimmer.spmd = #glimmer.spmd<"tp=3">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=3, "pp"=1]>
  func.func @heads_not_divisible(%x: tensor<2x16x32xf32>, %wq: tensor<32x32xf32> {glimmer.param = "layers.0.wq"}, %kv: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
    // expected-error @+1 {{cannot split the 4 query heads of 'layers.0.wq' over tp = 3: choose a tp that divides 4 (or replicate it with --tp-plan)}}
    %q0 = glimmer.linear %x, %wq : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %q1 = glimmer.reshape %q0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    %q = glimmer.transpose %q1 permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    %o, %lse = glimmer.attention %q, %kv, %kv scale = 0.35 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>, tensor<2x4x16xf32>
    return %o : tensor<2x4x16x8xf32>
  }
}

// -----

// GQA: the query heads divide, the key/value heads (2) neither divide
// tp = 3 nor are a divisor of it (which would replicate them).
module attributes {glimmer.spmd = #glimmer.spmd<"tp=3">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=3, "pp"=1]>
  func.func @kv_heads_not_divisible(%q: tensor<2x6x16x8xf32>, %x: tensor<2x16x32xf32>, %wk: tensor<16x32xf32> {glimmer.param = "layers.0.wk"}) -> tensor<2x6x16x8xf32> {
    // expected-error @+1 {{cannot split the 2 key/value heads of 'layers.0.wk' over tp = 3: choose a tp that divides 2 or a multiple of it (key/value heads are then replicated) (or replicate it with --tp-plan)}}
    %k0 = glimmer.linear %x, %wk : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %k1 = glimmer.reshape %k0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    %k = glimmer.transpose %k1 permutation = [0, 2, 1, 3] : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
    %o, %lse = glimmer.attention %q, %k, %k scale = 0.35 : tensor<2x6x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x6x16x8xf32>, tensor<2x6x16xf32>
    return %o : tensor<2x6x16x8xf32>
  }
}

// -----

// MLP hidden features that tp does not divide.
module attributes {glimmer.spmd = #glimmer.spmd<"tp=3">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=3, "pp"=1]>
  func.func @features_not_divisible(%x: tensor<8x32xf32>, %w1: tensor<64x32xf32> {glimmer.param = "layers.0.w1"}, %w2: tensor<32x64xf32> {glimmer.param = "layers.0.w2"}) -> tensor<8x32xf32> {
    // expected-error @+1 {{cannot split the 64 output features of 'layers.0.w1' over tp = 3 (column-parallel): choose a tp that divides 64 (or replicate it with --tp-plan)}}
    %h = glimmer.linear %x, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %g = glimmer.gelu %h : tensor<8x64xf32>
    %y = glimmer.linear %g, %w2 : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    return %y : tensor<8x32xf32>
  }
}

// -----

// A vocabulary that tp does not divide: the token embedding's.
module attributes {glimmer.spmd = #glimmer.spmd<"tp=3">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=3, "pp"=1]>
  func.func @embedding_vocab_not_divisible(%ids: tensor<8xi64> {glimmer.input = "tokens"}, %tok: tensor<64x32xf32> {glimmer.param = "tok_embeddings.weight"}) -> tensor<8x32xf32> {
    // expected-error @+1 {{cannot split the vocabulary of 64 tokens of the embedding 'tok_embeddings.weight' over tp = 3 (vocab-parallel): choose a tp that divides 64 (or replicate it with --tp-plan)}}
    %e = glimmer.embedding %tok, %ids : tensor<64x32xf32>, tensor<8xi64> -> tensor<8x32xf32>
    return %e : tensor<8x32xf32>
  }
}

// -----

// ... and the output projection's.
module attributes {glimmer.spmd = #glimmer.spmd<"tp=3">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=3, "pp"=1]>
  func.func @output_vocab_not_divisible(%h: tensor<8x32xf32>, %wout: tensor<64x32xf32> {glimmer.param = "lm_head.weight"}, %labels: tensor<8xi64>) -> tensor<f32> {
    // expected-error @+1 {{cannot split the vocabulary of 64 tokens of the output projection 'lm_head.weight' over tp = 3 (vocab-parallel): choose a tp that divides 64 (or replicate it with --tp-plan)}}
    %logits = glimmer.linear %h, %wout : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100 : tensor<8x64xf32>, tensor<8xi64> -> tensor<f32>, tensor<i64>
    return %sum : tensor<f32>
  }
}

// -----

// Key/value heads that tp is a multiple of are replicated, but the query
// heads (6, not a projection's output here) must still split over tp = 4.
module attributes {glimmer.spmd = #glimmer.spmd<"tp=4">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=4, "pp"=1]>
  func.func @query_heads_after_replication(%q: tensor<2x6x16x8xf32>, %x: tensor<2x16x32xf32>, %wk: tensor<16x32xf32> {glimmer.param = "layers.0.wk"}) -> tensor<2x6x16x8xf32> {
    %k0 = glimmer.linear %x, %wk : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %k1 = glimmer.reshape %k0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    %k = glimmer.transpose %k1 permutation = [0, 2, 1, 3] : tensor<2x16x2x8xf32> -> tensor<2x2x16x8xf32>
    // expected-error @+1 {{cannot split the 6 query heads of this attention over tp = 4: choose a tp that divides 6}}
    %o, %lse = glimmer.attention %q, %k, %k scale = 0.35 : tensor<2x6x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x6x16x8xf32>, tensor<2x6x16xf32>
    return %o : tensor<2x6x16x8xf32>
  }
}

// -----

// Key/value heads to repeat for tp, on sequence-major operands (which
// glimmer-fold-attention-transposes makes only after partitioning): the
// repeat reads heads at dimension 1, so it refuses them.
module attributes {glimmer.spmd = #glimmer.spmd<"tp=4">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=1, "tp"=4, "pp"=1]>
  func.func @sequence_major_key_value_repeat(%x: tensor<2x16x32xf32>,
      %wq: tensor<32x32xf32> {glimmer.param = "layers.0.wq"},
      %wk: tensor<16x32xf32> {glimmer.param = "layers.0.wk"}, %wv: tensor<16x32xf32> {glimmer.param = "layers.0.wv"}) -> tensor<2x16x4x8xf32> {
    %q0 = glimmer.linear %x, %wq : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    %q = glimmer.reshape %q0 : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
    %k0 = glimmer.linear %x, %wk : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %k = glimmer.reshape %k0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    %v0 = glimmer.linear %x, %wv : tensor<2x16x32xf32>, tensor<16x32xf32> -> tensor<2x16x16xf32>
    %v = glimmer.reshape %v0 : tensor<2x16x16xf32> -> tensor<2x16x2x8xf32>
    // expected-error @+1 {{cannot repeat key/value heads of sequence-major attention operands: sequence_major is chosen after partitioning}}
    %o, %lse = glimmer.attention %q, %k, %v scale = 0.35 {sequence_major = array<i1: true, true, true, true>} : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32> -> tensor<2x16x4x8xf32>, tensor<2x4x16xf32>
    return %o : tensor<2x16x4x8xf32>
  }
}
