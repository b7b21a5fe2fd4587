// The bundled example the demo compiles parses, verifies, and goes through
// the demo's pipeline under the default demo layout.
// RUN: glimmer-opt %glimmer_src_root/examples/mlir/vlm_forward.mlir --spmd=dp_shard=2,cp=2 --glimmer-attach-spmd --glimmer-materialize-mesh --canonicalize | FileCheck %s

// CHECK: module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">}
// CHECK: glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
// CHECK-LABEL: func.func @vlm_forward
// The merge: indices from the tokens, then the gather into the embeddings.
// CHECK: %[[IDX:.*]] = glimmer.vision_bank_indices %arg0 image_token_id = 63
// CHECK: %[[EMB:.*]] = glimmer.embedding
// CHECK: glimmer.vision_gather %[[EMB]], %{{.*}}, %[[IDX]]
// CHECK: glimmer.attention {{.*}} causal
// CHECK: glimmer.cross_entropy {{.*}} ignore_index = -100
// CHECK: return %{{.*}} : tensor<f32>
