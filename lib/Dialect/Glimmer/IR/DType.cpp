//===- DType.cpp - The contract's element types of MLIR types -------------===//

#include "glimmer/Dialect/Glimmer/IR/DType.h"

using namespace glimmer;

std::optional<DType> glimmer::dtypeOf(mlir::Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF64())
    return DType::F64;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF16())
    return DType::F16;
  if (t.isInteger(64))
    return DType::I64;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(1))
    return DType::Bool;
  return std::nullopt;
}
