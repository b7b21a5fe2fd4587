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

#endif // GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_TD
