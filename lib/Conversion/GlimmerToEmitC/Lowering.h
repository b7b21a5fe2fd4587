//===- Lowering.h - glimmer functions to runtime calls ----------*- C++ -*-===//
//
// Internal to GlimmerToEmitC: the lowering of one func.func to an emitc.func
// that calls the runtime, one call per op. The ops' lowerings are grouped
// by family, one file each (Lower*.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONVERSION_GLIMMERTOEMITC_LOWERING_H
#define GLIMMER_CONVERSION_GLIMMERTOEMITC_LOWERING_H

#include "RuntimeCall.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <optional>
#include <string>

namespace glimmer {

struct LayerRun;

/// The program's fused kernels: one CUDA source, kernels numbered in order
/// of first use; fusions whose kernels read alike share one. A kernel works
/// on flat indices, so fusions of different shapes can share it (a text norm
/// over 2 x 16 tokens and a vision norm over 32 patches); the functions that
/// run a fusion's ops one by one (what the CPU runs) hold the shapes, so
/// there is one per kernel and signature.
struct FusedKernelTable {
  std::map<std::string, int> byBody;
  std::map<std::string, std::string> opsBySignature;
  std::map<int, int> opsPerKernel;
  std::string source;
};

/// The variable holding the program's fused kernels.
constexpr llvm::StringLiteral kFusedKernels = "glimmer_fused_kernels";

/// Lowers one function to an emitc.func at the builder's insertion point,
/// followed by its C-linkage entry point.
class FunctionLowering {
public:
  FunctionLowering(mlir::OpBuilder &b, mlir::func::FuncOp func,
                   FusedKernelTable &kernels);

  mlir::LogicalResult run();

  mlir::OpBuilder &builder() { return b; }
  /// glimmer_rt::Tensor
  mlir::Type tensorType() const { return tensor; }
  /// std::vector<glimmer_rt::Tensor>
  mlir::Type listType() const { return list; }
  /// The C++ value that `v` became. An argument of the function is read
  /// from the frame where it is first used.
  mlir::Value map(mlir::Value v);
  /// Whether `v` is an argument of the function being lowered.
  bool isArgument(mlir::Value v);
  /// The frame the function reads its arguments from.
  mlir::Value frameValue() const { return frame; }
  /// Binds `op`'s results to the elements of the list `results`; those
  /// that the function only returns go to the frame in one call instead.
  void takeResults(mlir::Operation *op, mlir::Value results);
  void bind(mlir::Operation *op, mlir::ArrayRef<mlir::Value> results) {
    for (auto [old, now] : llvm::zip(op->getResults(), results))
      mapping[old] = now;
  }

  /// The module path of an op, from the importer's NameLoc, or "".
  static llvm::StringRef modulePathOf(mlir::Location loc);
  /// The value whose variable `v` shares (through the ops lowered to none).
  static mlir::Value variableOf(mlir::Value v);

  /// Where a value computed in a rolled run is kept: its store variable,
  /// iteration and column.
  struct StoredAt {
    mlir::Value store;
    int64_t iteration, column;
  };

private:
  /// Lowers `op` at the builder's insertion point.
  mlir::LogicalResult lower(mlir::Operation *op);
  mlir::LogicalResult lowerFusion(FusionOp fusion);
  /// A call of an outlined function (glimmer-outline-layers): its operands
  /// in a frame, its results taken from it.
  mlir::LogicalResult lowerCall(mlir::func::CallOp call);
  /// `static std::vector<Tensor> NAME(const std::vector<Tensor> &)` running
  /// the fusion's ops one by one, before the function being lowered.
  mlir::LogicalResult emitFusedOps(FusionOp fusion, llvm::StringRef name);
  /// Lowers the calls from `first` on as one runtime loop (runLayers) where
  /// they repeat the same calls on per-iteration values (LowerLayerRuns.cpp);
  /// returns the last op it lowered, or nullptr where they do not.
  mlir::Operation *lowerRun(mlir::func::CallOp first);
  /// Emits the planned run; returns its last call.
  mlir::Operation *emitRun(LayerRun &run, unsigned columns, unsigned outputs);
  /// Drops the function's handle on `v` after its last use.
  void releaseValue(mlir::Value v);
  /// Releases the copies of stored values the op just lowered read (map).
  void releaseTemporaries(mlir::Location loc);
  /// Lowers an op that forwards its input unchanged (a sharding constraint,
  /// pvary, stop_gradient): its result shares the input's variable.
  void aliasInput(mlir::Value result, mlir::Value input);

  mlir::OpBuilder &b;
  mlir::func::FuncOp func;
  mlir::MLIRContext *ctx;
  mlir::Type tensor;
  mlir::Type list;
  mlir::Value frame;
  llvm::DenseMap<mlir::Value, mlir::Value> mapping;
  /// Results already written to the frame (takeResults, lowerRun).
  llvm::DenseSet<mlir::Value> returned;
  /// The values rolled runs keep in their stores.
  llvm::DenseMap<mlir::Value, StoredAt> stored;
  /// Copies of stored values read by the op being lowered, released after it.
  llvm::SmallVector<mlir::Value> temporaries;
  /// Each variable's last user, and the variables the frame holds
  /// (arguments and returned values), which are never released.
  llvm::DenseMap<mlir::Value, mlir::Operation *> lastUse;
  llvm::DenseSet<mlir::Value> held;
  /// The variables released after each op.
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Value>>
      releaseAfter;
  std::string lastPath;
  FusedKernelTable &kernels;
  mlir::Operation *emitted = nullptr; // the emitc.func being built
};

/// Lowers one op to runtime calls at the builder's insertion point. The
/// lowering of each family of ops returns std::nullopt for an op outside
/// the family.
class OpLowering {
public:
  OpLowering(FunctionLowering &function, mlir::Operation *op)
      : function(function), op(op) {}

  /// Lowers the op with its family's lowering.
  mlir::LogicalResult lower();

  RuntimeCall call(Kernel kernel) {
    return RuntimeCall(function.builder(), op->getLoc(), kernel);
  }
  /// A call whose first arguments are `operands`.
  RuntimeCall call(Kernel kernel, mlir::ValueRange operands);
  mlir::Value map(mlir::Value v) const { return function.map(v); }
  /// Builds `c`, whose one result is the op's.
  mlir::LogicalResult one(RuntimeCall c);
  /// Builds `c`, whose results (a std::tuple) are the op's.
  mlir::LogicalResult many(RuntimeCall c);
  /// A runtime list of the values: the multi-tensor ops' operands go in as
  /// one.
  mlir::Value listOf(mlir::ValueRange values);
  /// Releases a list after its last use; it would otherwise hold its
  /// tensors until the function returns.
  void release(mlir::Value list);
  /// Binds the op's results to the elements of the list `results`, taken
  /// one by one.
  mlir::LogicalResult takeAll(mlir::Value results);
  /// Builds `c`, whose result is a runtime list.
  mlir::Value buildList(RuntimeCall c) {
    return c.build(function.listType())[0];
  }

  static mlir::RankedTensorType typeOf(mlir::Value v) {
    return mlir::cast<mlir::RankedTensorType>(v.getType());
  }

private:
  /// Constants and iota.
  std::optional<mlir::LogicalResult> lowerCreation();
  /// Unary and binary arithmetic, comparison, selection and conversion.
  std::optional<mlir::LogicalResult> lowerElementwise();
  /// Reshapes, transposes, broadcasts, slices, concatenation, padding and
  /// the sequence permutations and microbatch slices of partitioned
  /// programs.
  std::optional<mlir::LogicalResult> lowerShapes();
  /// Embeddings, vision gathers and the checks of their indices.
  std::optional<mlir::LogicalResult> lowerGathers();
  /// Reductions, cumulative sums, softmax and cross-entropy.
  std::optional<mlir::LogicalResult> lowerReductions();
  /// Linear layers, matmuls and convolutions.
  std::optional<mlir::LogicalResult> lowerLinearAlgebra();
  /// RMS and layer norms.
  std::optional<mlir::LogicalResult> lowerNorms();
  /// RoPE and attention.
  std::optional<mlir::LogicalResult> lowerAttention();
  /// Collectives and local shards.
  std::optional<mlir::LogicalResult> lowerCollectives();
  /// Optimizer updates and the multi-tensor ops.
  std::optional<mlir::LogicalResult> lowerOptimizers();

  FunctionLowering &function;
  mlir::Operation *op;
};

} // namespace glimmer

#endif // GLIMMER_CONVERSION_GLIMMERTOEMITC_LOWERING_H
