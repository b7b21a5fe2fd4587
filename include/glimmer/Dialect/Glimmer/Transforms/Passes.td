//===- Passes.td - Glimmer passes --------------------------*- tablegen -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_TD
#define GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GlimmerAttachSpmd : Pass<"glimmer-attach-spmd", "::mlir::ModuleOp"> {
  let summary = "Records the SPMD layout on the module";
  let description = [{
    Writes the parallel layout as `glimmer.spmd` on the module. The layout is
    the pass's `layout` option when given, otherwise the thread's current
    `glimmer::SpmdContext` (set by `glimmer-opt --spmd=...`, `glimmer-train
    --spmd=...` or Python's `with glimmer.SpmdContext(...)`). Every later pass
    reads the attribute instead of the thread-local context, so a test is
    reproducible from its IR alone. Re-running with the same layout is a
    no-op; recording a different layout over an existing one is an error,
    since the program may already be partitioned for the old one.

    Before (`glimmer-opt --spmd=dp_shard=2,cp=2 --glimmer-attach-spmd`):
    ```mlir
    module {
    }
    ```
    After:
    ```mlir
    module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">} {
    }
    ```
  }];
  let options = [
    Option<"layout", "layout", "std::string", /*default=*/"\"\"",
           "Layout text (as --spmd=); empty uses the thread's current context">,
  ];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerMaterializeMesh : Pass<"glimmer-materialize-mesh", "::mlir::ModuleOp"> {
  let summary = "Declares the device mesh of the recorded layout";
  let description = [{
    Creates `glimmer.mesh @mesh` with the axes `dp_replicate, dp_shard, cp, tp,
    pp` sized from the module's `glimmer.spmd` attribute, for shardings and
    collectives to refer to. Fails with a diagnostic when no layout is
    recorded, and when a `@mesh` that disagrees with the layout exists.

    Before:
    ```mlir
    module attributes {glimmer.spmd = #glimmer.spmd<"cp=4">} {
    }
    ```
    After:
    ```mlir
    module attributes {glimmer.spmd = #glimmer.spmd<"cp=4">} {
      glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=4, "tp"=1, "pp"=1]>
    }
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

def GlimmerRecognizeVisionMerge
    : Pass<"glimmer-recognize-vision-merge", "::mlir::func::FuncOp"> {
  let summary = "Rewrites a model's image-feature merge into vision ops";
  let description = [{
    Models merge vision-encoder features into the token embeddings in several
    ways: a cumsum index gather (`idx = cumsum(tokens == IMG) - 1;
    where(mask, bank[idx.clamp(0)], embeds)`, torchtitan style) or
    `inputs_embeds.masked_scatter(mask, features)` (Hugging Face style). The
    importer lowers both to the same core pattern; this pass recognises it and
    replaces it with `glimmer.vision_bank_indices` + `glimmer.vision_gather`,
    the form that context parallelism shards (indices built on the full
    sequence, gather local to each rank).

    The pattern is matched exactly: the mask is `tokens == IMG` on a `[B, T]`
    integer tensor, the indices are the inclusive prefix sum of that same mask
    over the row-major flattened batch minus one, clamped at zero, the rows
    come from a `[N, D]` bank, and the select keeps the embeddings where the
    mask is false. Anything else is left untouched.

    Before:
    ```mlir
    %m = glimmer.compare eq, %tokens, %img : tensor<2x16xi64>
    %f = glimmer.reshape %m : tensor<2x16xi1> -> tensor<32xi1>
    %l = glimmer.convert %f : tensor<32xi1> to tensor<32xi64>
    %c = glimmer.cumsum %l dim = 0 : tensor<32xi64>
    %r = glimmer.reshape %c : tensor<32xi64> -> tensor<2x16xi64>
    %i = glimmer.sub %r, %one : tensor<2x16xi64>
    %j = glimmer.max %i, %zero : tensor<2x16xi64>
    %rows = glimmer.embedding %bank, %j : tensor<12x32xf32>, tensor<2x16xi64> -> tensor<2x16x32xf32>
    %m3 = glimmer.reshape %m : tensor<2x16xi1> -> tensor<2x16x1xi1>
    %mb = glimmer.broadcast_in_dim %m3 dims = [0, 1, 2] : tensor<2x16x1xi1> -> tensor<2x16x32xi1>
    %out = glimmer.select %mb, %rows, %embeds : tensor<2x16x32xi1>, tensor<2x16x32xf32>
    ```
    After:
    ```mlir
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 63 : tensor<2x16xi64>
    %out = glimmer.vision_gather %embeds, %bank, %idx
        : tensor<2x16x32xf32>, tensor<12x32xf32>, tensor<2x16xi64>
    ```
  }];
  let dependentDialects = ["::glimmer::GlimmerDialect"];
}

#endif // GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_TD
