//===- GlimmerAttrs.h - Glimmer attributes ----------------------*- C++ -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_GLIMMERATTRS_H
#define GLIMMER_DIALECT_GLIMMER_IR_GLIMMERATTRS_H

#include "glimmer_contract/SpmdContext.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include "glimmer/Dialect/Glimmer/IR/GlimmerEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "glimmer/Dialect/Glimmer/IR/GlimmerAttrs.h.inc"

#endif // GLIMMER_DIALECT_GLIMMER_IR_GLIMMERATTRS_H
