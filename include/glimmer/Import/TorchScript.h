//===- TorchScript.h - TorchScript to glimmer importer ----------*- C++ -*-===//
//
// Imports the `forward` method of a TorchScript archive (as saved by
// torch.jit.save from PyTorch 2.x) into a func.func in the glimmer dialect.
// This header does not expose LibTorch; only GlimmerTorchImport links it.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_IMPORT_TORCHSCRIPT_H
#define GLIMMER_IMPORT_TORCHSCRIPT_H

#include "glimmer/Import/ImportOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace glimmer {

/// Imports the model. Problems are reported as MLIR diagnostics on `context`
/// (with the TorchScript source location where there is one) and yield null.
mlir::OwningOpRef<mlir::ModuleOp>
importTorchScript(mlir::MLIRContext &context,
                  const ImportOptions &options);

} // namespace glimmer

#endif // GLIMMER_IMPORT_TORCHSCRIPT_H
