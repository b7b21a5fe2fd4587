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
#include "llvm/ADT/EquivalenceClasses.h"

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

/// Which dimensions of the program's values are the token ids' batch and
/// sequence. Read off the ops' sharding rules, never off sizes: a dimension
/// made of one factor of an op is the same index space as every other
/// dimension made of that factor, so the token ids' dimensions 0 and 1 are
/// followed through every op (a weight whose size happens to equal the
/// sequence length is not the sequence). A dimension that merges the batch
/// and the sequence, batch major (`[B, T, V] -> [B*T, V]`), is the
/// flattened tokens.
class TokenDims {
public:
  enum class Role { Other, Batch, Sequence, FlattenedTokens };

  TokenDims(mlir::func::FuncOp func, mlir::Value tokens);

  Role role(mlir::Value v, int64_t dim) const;
  /// The op that makes the token ids' batch and sequence one index space
  /// (an elementwise op on a value and its transpose), after which no
  /// dimension can be told apart; null when there is none.
  mlir::Operation *mixingOp() const { return mixer; }
  /// The dimensions of `v` that are the sequence, in order.
  llvm::SmallVector<int64_t> sequenceDims(mlir::Value v) const;

private:
  unsigned node(mlir::Value v, int64_t dim);
  unsigned leaderOf(mlir::Value v, int64_t dim) const;

  llvm::EquivalenceClasses<unsigned> classes;
  llvm::DenseMap<std::pair<mlir::Value, int64_t>, unsigned> nodes;
  unsigned numNodes = 0;
  /// A dimension made of several factors: its node, and its factors'
  /// nodes and sizes, major to minor.
  struct Merged {
    unsigned node;
    llvm::SmallVector<unsigned, 2> parts;
    llvm::SmallVector<int64_t, 2> sizes;
  };
  llvm::SmallVector<Merged> merged;
  static constexpr unsigned kNone = ~0u;
  unsigned batch = kNone, sequence = kNone;
  /// The classes of dimensions that merge the batch and the sequence,
  /// batch major.
  llvm::DenseSet<unsigned> flattened;
  mlir::Operation *mixer = nullptr;
};

} // namespace glimmer::detail

#endif // GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_TOKENINPUTS_H
