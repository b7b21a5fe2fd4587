//===- GlimmerDialect.h - Glimmer dialect -----------------------*- C++ -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_GLIMMERDIALECT_H
#define GLIMMER_DIALECT_GLIMMER_IR_GLIMMERDIALECT_H

#include "glimmer_contract/Attributes.h"

#include "mlir/IR/Dialect.h"

#include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.h.inc"

#endif // GLIMMER_DIALECT_GLIMMER_IR_GLIMMERDIALECT_H
