//===- Passes.td - Glimmer conversion passes ---------------*- tablegen -*-===//

#ifndef GLIMMER_CONVERSION_PASSES_TD
#define GLIMMER_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGlimmerToEmitC : Pass<"convert-glimmer-to-emitc", "::mlir::ModuleOp"> {
  let summary = "Lowers glimmer functions to EmitC calls into the runtime";
  let description = [{
    Rewrites every `func.func` of glimmer ops into an `emitc.func` taking a
    `glimmer_rt::Frame &`: arguments are read with `glimmer_rt::input`,
    results written with `glimmer_rt::output`, and each op becomes one call
    of its runtime kernel (`runtime/include/glimmer_rt/Kernels.h`) with the
    op's attributes as literal arguments. Tensors become the opaque type
    `glimmer_rt::Tensor`. A comment names the module path (from the
    importer's locations) where it changes, and an `extern "C"` entry
    `glimmer_entry_<name>` is added for loading the compiled program.
    `glimmer-translate --emit-cpp` runs this pass and prints C++.

    Before:
    ```mlir
    func.func @f(%x: tensor<2x4xf32> {glimmer.input = "x"},
                 %w: tensor<3x4xf32> {glimmer.param = "fc.weight"}) -> tensor<2x3xf32> {
      %y = glimmer.linear %x, %w : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
      return %y : tensor<2x3xf32>
    }
    ```
    After:
    ```mlir
    emitc.include "glimmer_rt/Program.h"
    emitc.func @f(%frame: !emitc.opaque<"glimmer_rt::Frame&">) {
      emitc.verbatim "// input x"
      %0 = emitc.call_opaque "glimmer_rt::input"(%frame) {args = [0 : index, #emitc.opaque<"0">]} : (!emitc.opaque<"glimmer_rt::Frame&">) -> !emitc.opaque<"glimmer_rt::Tensor">
      emitc.verbatim "// param fc.weight"
      %1 = emitc.call_opaque "glimmer_rt::input"(%frame) {args = [0 : index, #emitc.opaque<"1">]} : (!emitc.opaque<"glimmer_rt::Frame&">) -> !emitc.opaque<"glimmer_rt::Tensor">
      %2 = emitc.call_opaque "glimmer_rt::linear"(%0, %1) {args = [0 : index, 1 : index, #emitc.opaque<"glimmer_rt::Tensor()">]} : (...) -> !emitc.opaque<"glimmer_rt::Tensor">
      emitc.call_opaque "glimmer_rt::output"(%frame, %2) {args = [0 : index, #emitc.opaque<"0">, 1 : index]} : (...) -> ()
      emitc.return
    }
    emitc.verbatim "extern \"C\" void glimmer_entry_f(glimmer_rt::Frame &frame) { f(frame); }"
    ```
  }];
  let dependentDialects = ["::mlir::emitc::EmitCDialect"];
}

#endif // GLIMMER_CONVERSION_PASSES_TD
