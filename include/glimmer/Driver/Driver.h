//===- Driver.h - Compile a model and train it ------------------*- C++ -*-===//
//
// The compile-then-run flow shared by glimmer-train and the Python module:
// import TorchScript, run the pipeline (with autodiff when training), emit
// C++, compile it with the system C++ compiler into a shared library (cached
// by content), load it, and bind data, weights and optimizer state to the
// compiled functions' arguments by name.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_DRIVER_DRIVER_H
#define GLIMMER_DRIVER_DRIVER_H

#include "glimmer_contract/Manifest.h"
#include "glimmer_contract/SpmdContext.h"
#include "glimmer_rt/Files.h"
#include "glimmer_rt/Trainer.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/LogicalResult.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace glimmer {

struct OptimizerOptions {
  std::string optimizer = "adamw"; // adamw | sgd
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  /// < 0: torch.optim's default (0.01 for AdamW, 0 for SGD).
  double weightDecay = -1;
  /// Clip the global gradient norm to this (0: no clipping).
  double maxNorm = 0;
};

struct DriverOptions {
  std::string modelPath;
  /// Example batch (safetensors); binds forward arguments by name.
  std::string dataPath;
  /// "f32" or "f64" (every floating-point tensor), or "bf16" /
  /// "bf16-autocast": mixed precision, f32 parameters, optimizer state and
  /// loss with bf16 compute (glimmer-mixed-precision, policy bf16 or
  /// autocast); bf16 programs run on the CUDA backend only.
  std::string floatType = "f32";
  /// Parallel layout ("cp=2", ...); empty: unsharded.
  std::string spmd;
  /// Tensor-parallel plan (JSON: state_dict name patterns -> colwise,
  /// rowwise or replicate); empty: the default plan read off the graph.
  std::string tpPlan;
  /// Pipeline split points ("layers.4,layers.8": the first decoder layer of
  /// each stage after the first); empty: balanced by cost.
  std::string ppSplit;
  /// Build @grad_step and @apply_step besides @forward.
  bool train = false;
  /// Training: forward values of at least this many elements that are cheap
  /// to compute again are recomputed in the backward instead of kept
  /// (glimmer-rematerialize); negative: none are.
  int64_t rematMinElements = 65536;
  /// Training: activation checkpointing (glimmer-activation-checkpointing):
  /// "none"; "full": each block (decoder or vision layer) keeps its inputs
  /// and computes its forward again right before its backward;
  /// "selective": also keeps the results of GEMMs, attention and
  /// collectives.
  std::string activationCheckpointing = "none";
  /// Training: >= 0 keeps, of each block's saved activations, the most
  /// expensive to compute again per byte while they fit this many bytes (per
  /// training function) and computes the rest again; with
  /// activationCheckpointing "none" only. Negative: no budget.
  int64_t activationBudget = -1;
  OptimizerOptions optimizer;
  /// Where generated sources, compiled programs and exported weights go.
  std::string cacheDir;
  /// What happens to the model's own weights. Compiling needs only the
  /// graph and its shapes; the weights are written to the cache for the
  /// run that binds them.
  enum class Weights {
    /// Written; an archive without weight data (exported on the meta
    /// device) is an error.
    Write,
    /// Written when the archive holds them (the non-persistent buffers a
    /// checkpoint leaves out come from there); otherwise none, and the
    /// run binds everything from its own --weights.
    WriteIfPresent,
    /// Not written, nor read beyond what the import needs: nothing runs.
    Skip,
  };
  Weights weights = Weights::Write;
  /// Progress messages ("importing ...") go here when set.
  std::function<void(const std::string &)> progress;
};

// The run half lives in the runtime (glimmer_rt/Trainer.h), so programs
// compiled here also run where no compiler is installed (glimmer-run).
using CompiledFunction = glimmer_rt::Function;

struct CompiledModel {
  /// The loaded program and its manifest.
  std::unique_ptr<glimmer_rt::CompiledProgram> program;
  /// The module after the pipeline (before lowering), for inspection.
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// The generated C++, manifest included.
  std::string cppSource;
  /// The model's own weights as the program binds them; empty when none
  /// were written (DriverOptions::weights).
  std::string weightsPath;
  std::string libraryPath;

  const glimmer_rt::ProgramInfo &info() const { return program->info(); }
  /// The layout the program was partitioned for.
  const glimmer::SpmdContext &layout() const { return program->layout(); }
};

/// Compiles and loads the model. Diagnostics are reported on `context`;
/// failures of the C++ compiler are reported with its output.
llvm::FailureOr<CompiledModel> compileModel(mlir::MLIRContext &context,
                                            const DriverOptions &options);

/// Lowers `module` (already through the pipeline) to C++, compiles and
/// loads it. `weightsPath` is recorded for binding parameters.
llvm::FailureOr<CompiledModel>
compileModule(mlir::MLIRContext &context,
              mlir::OwningOpRef<mlir::ModuleOp> module,
              const std::string &cacheDir,
              const std::function<void(const std::string &)> &progress,
              std::string weightsPath = "");

/// The cache directory used when none is given (per user; see
/// glimmer_rt/Files.h).
using glimmer_rt::defaultCacheDir;

} // namespace glimmer

#endif // GLIMMER_DRIVER_DRIVER_H
