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

#include "glimmer/Spmd/SpmdContext.h"
#include "glimmer_rt/Loader.h"

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
  /// "f32" or "f64".
  std::string floatType = "f32";
  /// Parallel layout ("cp=2", ...); empty: unsharded.
  std::string spmd;
  /// Build @grad_step and @apply_step besides @forward.
  bool train = false;
  OptimizerOptions optimizer;
  /// Where generated sources, compiled programs and exported weights go.
  std::string cacheDir;
  /// Progress messages ("importing ...") go here when set.
  std::function<void(const std::string &)> progress;
};

/// An argument or result of a compiled function, identified by role and
/// state_dict name.
struct Slot {
  enum Role { Input, Parameter, Buffer, Grad, ExpAvg, ExpAvgSq, Step, Other };
  Role role = Other;
  std::string name;
  glimmer_rt::DType dtype = glimmer_rt::DType::F32;
  glimmer_rt::Shape shape;
  /// Each rank holds a partial sum (glimmer.partial): results are summed
  /// over the ranks.
  bool partial = false;
};

struct CompiledFunction {
  glimmer_rt::EntryFn entry = nullptr;
  std::vector<Slot> arguments;
  std::vector<Slot> results;
};

/// What the program's vision merge expects of a batch: every image token of
/// `tokensInput` takes one row of the vision encoder's output, which has
/// `bankRows` rows.
struct VisionMergeCheck {
  std::string tokensInput;
  int64_t imageTokenId = 0;
  int64_t bankRows = 0;
};

struct CompiledModel {
  std::vector<VisionMergeCheck> visionChecks;
  /// The layout the program was partitioned for (one rank per thread).
  glimmer::SpmdContext layout;
  std::unique_ptr<glimmer_rt::LoadedProgram> program;
  std::map<std::string, CompiledFunction> functions;
  /// The module after the pipeline (before lowering), for inspection.
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string cppSource;
  std::string weightsPath;
  std::string libraryPath;
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

/// The cache directory used when none is given: $GLIMMER_CACHE_DIR or
/// <tmp>/glimmer-cache.
std::string defaultCacheDir();

/// Checks `data` against the model's vision merges; throws RuntimeError when
/// the number of image tokens differs from the vision encoder's rows.
void checkVisionRows(const CompiledModel &model,
                     const glimmer_rt::SafetensorsFile &data);

/// Runs `fn` on every rank of the model's layout (ranks as threads, with an
/// in-process communicator) and combines the ranks' results: partial sums
/// are added in rank order, other results are taken from rank 0.
std::vector<glimmer_rt::Tensor>
runOnRanks(const CompiledModel &model, const CompiledFunction &fn,
           const std::vector<glimmer_rt::Tensor> &inputs);

/// Runs @forward on `data` with the model's exported weights; returns the
/// loss. Throws glimmer_rt::RuntimeError on bad data or a failing kernel.
double runForward(const CompiledModel &model,
                  const glimmer_rt::SafetensorsFile &data);

/// Training state and steps over a compiled model (with train = true).
class Trainer {
public:
  /// Loads the parameters from the model's exported weights and zeroes the
  /// optimizer state. Throws glimmer_rt::RuntimeError.
  explicit Trainer(const CompiledModel &model);

  struct StepResult {
    int64_t step;
    double loss;
    double gradNorm;
  };
  /// One optimizer step on `gradAccum` micro-batches (all `data`):
  /// gradients and losses are averaged over the micro-batches.
  StepResult step(const glimmer_rt::SafetensorsFile &data,
                  int64_t gradAccum = 1);

  /// Parameters (state_dict keys), optimizer state and the step count, as
  /// safetensors. Resuming from it continues bit-exactly.
  void save(const std::string &path) const;
  void resume(const std::string &path);

  int64_t stepsDone() const { return steps; }
  const std::map<std::string, glimmer_rt::Tensor> &parameters() const {
    return params;
  }

private:
  std::vector<glimmer_rt::Tensor>
  bind(const CompiledFunction &fn, const glimmer_rt::SafetensorsFile *data,
       const std::map<std::string, glimmer_rt::Tensor> &grads) const;

  const CompiledModel &model;
  std::map<std::string, glimmer_rt::Tensor> params, buffers, expAvg,
      expAvgSq;
  int64_t steps = 0;
};

} // namespace glimmer

#endif // GLIMMER_DRIVER_DRIVER_H
