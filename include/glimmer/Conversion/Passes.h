//===- Passes.h - Glimmer conversion passes ---------------------*- C++ -*-===//

#ifndef GLIMMER_CONVERSION_PASSES_H
#define GLIMMER_CONVERSION_PASSES_H

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace glimmer {

#define GEN_PASS_DECL
#include "glimmer/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "glimmer/Conversion/Passes.h.inc"

/// Lowers a copy of `module` to EmitC and prints it as C++ (the module
/// itself is left unchanged). Diagnostics go to the module's context.
llvm::LogicalResult emitCpp(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace glimmer

#endif // GLIMMER_CONVERSION_PASSES_H
