//===- GlimmerOps.h - Glimmer operations ------------------------*- C++ -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_GLIMMEROPS_H
#define GLIMMER_DIALECT_GLIMMER_IR_GLIMMEROPS_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerAttrs.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.h"
#include "glimmer/Dialect/Glimmer/IR/ShardingRule.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace glimmer {
/// A tensor of i1 with the shape of `type` (the result type of comparisons).
mlir::Type getI1SameShape(mlir::Type type);
/// A rank-4 attention tensor's type with dimensions 1 and 2 exchanged:
/// [B, H, T, D] <-> [B, T, H, D]. Other types come back unchanged.
mlir::Type swapHeadsAndSequence(mlir::Type type);
/// Whether every value of element type `from` is exactly a value of `to`
/// (both floating-point; bf16 -> f32, say): a convert between them that
/// widens loses nothing.
bool widensExactly(mlir::Type from, mlir::Type to);
} // namespace glimmer

#include "glimmer/Dialect/Glimmer/IR/GlimmerInterfaces.h.inc"

#define GET_OP_CLASSES
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h.inc"

namespace glimmer {
/// The layout recorded on `module` by glimmer-attach-spmd, or null.
SpmdAttr getRecordedSpmd(mlir::ModuleOp module);
/// Like getRecordedSpmd, but emits an error on `module` when none is
/// recorded, naming `passName` as the pass that needs it.
SpmdAttr requireRecordedSpmd(mlir::ModuleOp module, llvm::StringRef passName);
/// `@mesh` of `module` (made by glimmer-materialize-mesh); emits an error
/// naming `passName` and returns null when there is none.
MeshOp requireMesh(mlir::ModuleOp module, llvm::StringRef passName);
} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_IR_GLIMMEROPS_H
