//===- TokenInputs.h - What the SPMD passes agree a token tensor is -*- C++ -*-===//
//
// glimmer-prepare-cp-inputs and glimmer-partition-tokens must agree on which
// values are computed from integer inputs on the full batch and sequence,
// and on which of them are token-side (carry the batch and the sequence):
// the first permutes those values, the second shards them. Both ask here.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_TOKENINPUTS_H
#define GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_TOKENINPUTS_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace glimmer::detail {

/// The token ids: a rank-2 integer argument used as embedding ids (also
/// through a glimmer.cp_permute); the one the vision merge reads when
/// several are, else the first.
mlir::Value findTokens(mlir::func::FuncOp func);

/// Values computed from integer arguments and constants only (the values
/// every rank can compute on the full batch and sequence): integer
/// arguments, constants of any type (the importer folds per-position
/// tables), and the integer results of ops whose operands are all such
/// values.
llvm::DenseSet<mlir::Value> computePrepValues(mlir::func::FuncOp func);

/// The uses where a prep value enters the rest of the program: operands of
/// ops that are not part of the prep computation (ops with a result that is
/// not a prep value). Splat constants are left out: they are the same in
/// every layout and are rebuilt at local shapes where needed. In block
/// order.
llvm::SmallVector<mlir::OpOperand *>
findPrepBoundaries(mlir::func::FuncOp func,
                   const llvm::DenseSet<mlir::Value> &prep);

/// The sequence dimension of a value of this shape, for a batch of `batch`
/// sequences of `seq` tokens: the first dimension past the leading
/// batch-like ones (size `batch` or 1) that has the sequence length, when
/// the leading dimension is `batch` or 1. nullopt when the value does not
/// have that form.
std::optional<int64_t> findSequenceDim(llvm::ArrayRef<int64_t> shape,
                                       int64_t batch, int64_t seq);

/// Whether dimension 0 is the flattened `batch * seq` tokens (batch major).
bool isFlattenedTokens(llvm::ArrayRef<int64_t> shape, int64_t batch,
                       int64_t seq);

} // namespace glimmer::detail

#endif // GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_TOKENINPUTS_H
