//===- DType.h - The contract's element types of MLIR types -----*- C++ -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_DTYPE_H
#define GLIMMER_DIALECT_GLIMMER_IR_DTYPE_H

#include "glimmer_contract/DType.h"

#include "mlir/IR/Types.h"

#include <optional>

namespace glimmer {

/// The runtime's element type of MLIR element type `type`, or nullopt when
/// the runtime has none.
std::optional<DType> dtypeOf(mlir::Type type);

} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_IR_DTYPE_H
