//===- PartitionedValues.h - Values of the per-rank program -----*- C++ -*-===//
//
// What glimmer-partition and its handlers know of every value of the
// program being partitioned: its global (unsharded) type and its layout,
// and how to bring it from one layout to another with collectives.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_TRANSFORMS_PARTITIONEDVALUES_H
#define GLIMMER_LIB_TRANSFORMS_PARTITIONEDVALUES_H

#include "ShardingLayout.h"

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace glimmer::detail {

class PartitionedValues {
public:
  /// Values of `func`, partitioned over `mesh` (the symbol `meshRef`).
  PartitionedValues(mlir::func::FuncOp func, MeshAttr mesh,
                    mlir::FlatSymbolRefAttr meshRef);

  MeshAttr getMesh() const { return mesh; }
  mlir::FlatSymbolRefAttr getMeshRef() const { return meshRef; }
  /// Where the partitioner and its handlers emit the per-rank code.
  mlir::OpBuilder &builder() { return b; }

  /// The rank's piece of a `global` value held as `l`.
  mlir::RankedTensorType localType(mlir::RankedTensorType global,
                                   const Layout &l) const;
  mlir::ArrayAttr axesAttr(llvm::ArrayRef<llvm::StringRef> axes) {
    return b.getStrArrayAttr(axes);
  }

  /// The layout of `v` (replicated when none was recorded).
  const Layout &layoutOf(mlir::Value v);
  /// The global type of `v` (null when none was recorded).
  mlir::RankedTensorType globalType(mlir::Value v) const {
    return globalTypes.lookup(v);
  }
  /// Records `v`'s global type and layout (`l` by value: it may be another
  /// value's layout, which the insertion may move).
  void set(mlir::Value v, mlir::RankedTensorType global, Layout l) {
    globalTypes[v] = global;
    layouts[v] = std::move(l);
  }
  void setLayout(mlir::Value v, Layout l) { layouts[v] = std::move(l); }
  /// Records `global` as `v`'s global type unless it has one.
  void addGlobalType(mlir::Value v, mlir::RankedTensorType global) {
    globalTypes.try_emplace(v, global);
  }
  /// Forgets `v` (a result of an erased op).
  void forget(mlir::Value v) {
    layouts.erase(v);
    globalTypes.erase(v);
  }

  /// `v` (held as `from`, global type `global`) as `to`: partial sums that
  /// `to` does not keep are all-reduced (reduce-scattered when `to` splits
  /// them), a split that moves to another dimension is one all-to-all, the
  /// axes a dimension is split over beyond what `to` keeps of them (its
  /// leading axes) are all-gathered, and axes `to` adds are cut locally.
  /// `sharedWork` are the axes that split the consumer's work: a gather
  /// over them feeds per-rank work (its cotangents are shares, summed by the
  /// gather's VJP); any other gather over tp is `invariant` (its VJP takes
  /// the rank's slice). A cut over token axes of a value computed from
  /// trained parameters is an error (its VJP, a gather, would make each
  /// rank's gradient share whole).
  mlir::Value reshard(mlir::Value v, const Layout &from, const Layout &to,
                      mlir::RankedTensorType global, mlir::Location loc,
                      llvm::ArrayRef<llvm::StringRef> sharedWork = {});

  /// An error at `loc` that names the token axes it cannot be partitioned
  /// over; the reason follows.
  mlir::InFlightDiagnostic tokenAxesError(mlir::Location loc,
                                          llvm::ArrayRef<llvm::StringRef> axes);
  /// Whether an error was emitted (a reshard that cannot be made).
  bool isBroken() const { return broken; }

private:
  /// The steps of reshard, each from `cur` (updated) towards `to`: partial
  /// axes `to` drops summed, splits moved between dimensions, splits `to`
  /// does not keep gathered, splits `to` adds cut (`isTrained`: `v` is
  /// computed from trained parameters).
  mlir::Value reducePartials(mlir::Value v, Layout &cur, const Layout &to,
                             mlir::RankedTensorType global, mlir::Location loc);
  mlir::Value moveSplits(mlir::Value v, Layout &cur, const Layout &to,
                         mlir::RankedTensorType global, mlir::Location loc);
  mlir::Value gatherSplits(mlir::Value v, Layout &cur, const Layout &to,
                           mlir::RankedTensorType global, mlir::Location loc,
                           llvm::ArrayRef<llvm::StringRef> sharedWork);
  mlir::Value cutSplits(mlir::Value v, bool isTrained, Layout &cur,
                        const Layout &to, mlir::RankedTensorType global,
                        mlir::Location loc);

  MeshAttr mesh;
  mlir::FlatSymbolRefAttr meshRef;
  mlir::OpBuilder b;
  /// Global (unsharded) type of every value, and its layout in the
  /// partitioned program.
  llvm::DenseMap<mlir::Value, mlir::RankedTensorType> globalTypes;
  llvm::DenseMap<mlir::Value, Layout> layouts;
  /// Values computed from trained parameters (their gradients flow back).
  llvm::DenseSet<mlir::Value> trained;
  bool broken = false;
};

} // namespace glimmer::detail

#endif // GLIMMER_LIB_TRANSFORMS_PARTITIONEDVALUES_H
