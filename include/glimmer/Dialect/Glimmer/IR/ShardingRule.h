//===- ShardingRule.h - How an op's computation can be sharded --*- C++ -*-===//
//
// A sharding rule describes an op as a set of *factors*: independent index
// spaces of its computation (a batch, the rows and columns of a GEMM, its
// contraction, a head, ...). Every tensor dimension of an operand or result
// is the product of zero or more factors, major to minor (a reshape from
// [T, 4*8] to [T, 4, 8] maps its input dimension 1 to two factors). Sharding
// a factor over mesh axes shards every dimension it appears in the same way:
// that is how propagation moves shardings through the op. A factor is
//
// - pass-through: sharding it needs no communication;
// - reduction: it appears in operands but not in results (a contraction, a
//   summed dimension); sharding it leaves each rank a partial sum, so the
//   results become partial over its axes;
// - need-replication: the op needs the whole extent on every rank (a
//   normalized dimension, a sliced or concatenated one, a softmax axis):
//   propagation never shards it, and an operand sharded there is resharded
//   to replicated before the op;
// - handled: the op's partition handler computes on a split of it and
//   communicates itself (cross-entropy's vocabulary: loss-parallel), so
//   propagation may shard it like a pass-through factor; it reaches no
//   result, and leaves the results complete.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_SHARDINGRULE_H
#define GLIMMER_DIALECT_GLIMMER_IR_SHARDINGRULE_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace glimmer {

enum class FactorKind { PassThrough, Reduction, NeedReplication, Handled };

class ShardingRule {
public:
  struct Factor {
    int64_t size;
    FactorKind kind;
  };
  /// The factors of one dimension, major to minor (empty: a size-1
  /// dimension, or one no factor describes).
  using DimFactors = llvm::SmallVector<unsigned, 2>;
  using TensorFactors = llvm::SmallVector<DimFactors, 4>;

  unsigned addFactor(int64_t size, FactorKind kind = FactorKind::PassThrough) {
    factors.push_back({size, kind});
    return factors.size() - 1;
  }
  void addOperand(TensorFactors dims) { operands.push_back(std::move(dims)); }
  void addResult(TensorFactors dims) { results.push_back(std::move(dims)); }

  llvm::ArrayRef<Factor> getFactors() const { return factors; }
  const Factor &getFactor(unsigned f) const { return factors[f]; }
  llvm::ArrayRef<TensorFactors> getOperands() const { return operands; }
  llvm::ArrayRef<TensorFactors> getResults() const { return results; }
  /// Operand `i` when `i < numOperands`, else result `i - numOperands`.
  const TensorFactors &getTensor(unsigned i) const {
    return i < operands.size() ? operands[i] : results[i - operands.size()];
  }
  unsigned getNumTensors() const { return operands.size() + results.size(); }

  /// Checks that the rule covers every operand and result of `op` and that
  /// each dimension's factors multiply to its size.
  llvm::LogicalResult verify(mlir::Operation *op) const;

  /// `([i, j, (k,l)], [l]) -> ([i, j, k, l]) {i=2, j=16, k=4, l=8}
  /// reduction={...} need_replication={...}`, factors named i, j, k, ... in
  /// order of creation.
  void print(llvm::raw_ostream &os) const;
  std::string str() const;

  //===--- Builders for the common shapes of rules ---------------------===//

  /// Every operand and result has the result's shape (except scalar
  /// operands, such as the optimizer's step count, which have no factor);
  /// dimension d of each is one pass-through factor.
  static ShardingRule elementwise(mlir::Operation *op);
  /// A reshape from `in` to `out` (same number of elements): the common
  /// refinement of both shapes, so a split of an input dimension follows
  /// into the output dimensions it becomes. Dimensions whose sizes do not
  /// refine into each other get need-replication factors of their own.
  static ShardingRule reshape(llvm::ArrayRef<int64_t> in,
                              llvm::ArrayRef<int64_t> out);

private:
  llvm::SmallVector<Factor> factors;
  llvm::SmallVector<TensorFactors> operands, results;
};

} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_IR_SHARDINGRULE_H
