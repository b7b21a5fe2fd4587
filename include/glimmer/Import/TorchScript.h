//===- TorchScript.h - TorchScript to glimmer importer ----------*- C++ -*-===//
//
// Imports the `forward` method of a TorchScript archive (as saved by
// torch.jit.save from PyTorch 2.x) into a func.func in the glimmer dialect.
// This header does not expose LibTorch; only GlimmerTorchImport links it.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_IMPORT_TORCHSCRIPT_H
#define GLIMMER_IMPORT_TORCHSCRIPT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace glimmer {

struct TorchScriptImportOptions {
  /// Path of the TorchScript archive.
  std::string modelPath;
  /// A safetensors file whose tensors are bound to forward arguments by
  /// name; gives their shapes and dtypes.
  std::string exampleInputsPath;
  /// Alternative to exampleInputsPath: "name:2x64xi64,name2:2x3x8x8xf32".
  std::string inputShapes;
  /// When non-empty, the parameters and buffers are written here as
  /// safetensors, keyed by their state_dict names (atomically, with file
  /// mode weightsFileMode: 0600 inside the private program cache).
  std::string weightsOutputPath;
  unsigned weightsFileMode = 0644;
  /// Name of the emitted function.
  std::string functionName = "forward";
  /// When "f32" or "f64", every floating-point tensor of the program (inputs,
  /// parameters, constants, and the targets of casts the model traced, e.g.
  /// `.float()`) gets this precision, and values folded at import time are
  /// computed in it. Empty keeps the traced dtypes.
  std::string floatType;
};

/// Imports the model. Problems are reported as MLIR diagnostics on `context`
/// (with the TorchScript source location where there is one) and yield null.
mlir::OwningOpRef<mlir::ModuleOp>
importTorchScript(mlir::MLIRContext &context,
                  const TorchScriptImportOptions &options);

/// Parses the --input-shapes syntax; on error returns false and sets `error`.
struct InputShape {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype; // "f32", "f64", "bf16", "f16", "i64", "i32", "i1"
};
bool parseInputShapes(const std::string &text, std::vector<InputShape> &out,
                      std::string &error);

} // namespace glimmer

#endif // GLIMMER_IMPORT_TORCHSCRIPT_H
