//===- TokenInputs.h - What the SPMD passes agree a token tensor is -*- C++ -*-===//
//
// The SPMD passes must agree on which values are computed from integer
// inputs on the full batch and sequence, and on which of their dimensions
// are the batch and the sequence: glimmer-prepare-batch cuts them to the
// micro-batch, glimmer-prepare-cp-inputs permutes them, glimmer-seed-sharding
// seeds their splits over the data and context axes, and propagation keeps
// them whole until then. All ask here.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_TOKENINPUTS_H
#define GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_TOKENINPUTS_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "glimmer_contract/SpmdContext.h"
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

/// The mesh axes the tokens are split over: the data-parallel axes of
/// degree > 1 over the batch (mesh order), cp over the sequence. Over these
/// axes the loss is a per-rank partial sum.
struct TokenAxes {
  llvm::SmallVector<llvm::StringRef, 2> batch, sequence;

  static TokenAxes of(const SpmdContext &layout);
  bool empty() const { return batch.empty() && sequence.empty(); }
  /// Every token axis, in mesh order.
  llvm::SmallVector<llvm::StringRef, 3> all() const;
};

/// The axes of each dimension of `v` where the tokens are split: its batch
/// over the batch axes, its first sequence dimension (the queries' side of
/// a [T, T] table) over the sequence axes, and merged batch-major tokens
/// over the batch axes.
llvm::SmallVector<llvm::SmallVector<llvm::StringRef, 2>>
tokenSplit(const TokenDims &roles, mlir::Value v, const TokenAxes &axes);

} // namespace glimmer::detail

#endif // GLIMMER_LIB_DIALECT_GLIMMER_TRANSFORMS_TOKENINPUTS_H
