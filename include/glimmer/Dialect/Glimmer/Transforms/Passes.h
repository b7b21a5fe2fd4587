//===- Passes.h - Glimmer passes --------------------------------*- C++ -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_H
#define GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace glimmer {

#define GEN_PASS_DECL
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"

/// The glimmer-mixed-precision policy that a `--dtype` value asks for:
/// "bf16" for bf16, "autocast" for bf16-autocast; empty for any other value
/// (f32 and f64 run without mixed precision).
llvm::StringRef mixedPrecisionPolicy(llvm::StringRef dtype);

} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_TRANSFORMS_PASSES_H
