//===- Driver.cpp - Compile a model to a loaded runtime program -----------===//

#include "glimmer/Driver/Driver.h"
#include "glimmer/Conversion/Passes.h"
#include "glimmer/Dialect/Glimmer/IR/DType.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer/Dialect/Glimmer/Transforms/Pipelines.h"
#include "glimmer/Import/Export.h"
#include "glimmer/Import/TorchScript.h"
#include "glimmer_contract/Manifest.h"
#include "glimmer_rt/Collectives.h"
#include "glimmer_rt/Files.h"
#include "glimmer_rt/Kernels.h"
#include "glimmer_rt/ProgramCache.h"
#include "glimmer_rt/Safetensors.h"

#include <thread>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>

using namespace glimmer;
using namespace mlir;

namespace {

class Stopwatch {
public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }

private:
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
};

std::string fixed(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

/// The compile pipeline's options for these driver options.
void setPipelineOptions(const DriverOptions &options,
                        TrainPipelineOptions &pipeline) {
  pipeline.dtype = options.floatType;
  pipeline.spmd = options.spmd;
  pipeline.tpPlan = options.tpPlan;
  pipeline.ppSplit = options.ppSplit;
  pipeline.train = options.train;
  pipeline.optimizer = options.optimizer.optimizer;
  pipeline.lr = options.optimizer.lr;
  pipeline.beta1 = options.optimizer.beta1;
  pipeline.beta2 = options.optimizer.beta2;
  pipeline.eps = options.optimizer.eps;
  pipeline.weightDecay = options.optimizer.weightDecay;
  pipeline.maxNorm = options.optimizer.maxNorm;
  pipeline.rematMinElements = options.rematMinElements;
  pipeline.ac = options.activationCheckpointing;
  pipeline.acBudget = options.activationBudget;
}

/// The activation checkpointing options, checked before anything is
/// imported (the pass would report them only after the import and half of
/// the pipeline).
LogicalResult checkActivationCheckpointing(MLIRContext &context,
                                           const DriverOptions &options) {
  StringRef mode = options.activationCheckpointing;
  if (mode != "none" && mode != "full" && mode != "selective")
    return emitError(UnknownLoc::get(&context))
           << "unknown activation checkpointing mode '" << mode
           << "' (expected none, full or selective)";
  if (options.activationBudget >= 0 && mode != "none")
    return emitError(UnknownLoc::get(&context))
           << "an activation checkpointing budget chooses what to keep "
              "itself: it does not combine with the mode '"
           << mode << "'";
  return success();
}

} // namespace

FailureOr<CompiledModel> glimmer::compileModel(MLIRContext &context,
                                               const DriverOptions &options) {
  context.loadDialect<GlimmerDialect, func::FuncDialect,
                      emitc::EmitCDialect>();
  std::string cacheDir = options.cacheDir.empty()
                             ? glimmer_rt::defaultCacheDir()
                             : options.cacheDir;
  CompiledModel model;

  // Import. The weights are exported next to the compiled programs, keyed
  // by the model file's content (read in pieces: a model's file can be as
  // large as its weights).
  Stopwatch watch;
  std::string modelHash = "missing", hashError;
  if (options.weights != DriverOptions::Weights::Skip &&
      glimmer_rt::hashFile(options.modelPath, modelHash, hashError))
    modelHash = modelHash.substr(0, 16);
  // Programs are loaded from the cache: only a directory no one else can
  // write is used.
  std::string cacheError;
  if (!glimmer_rt::preparePrivateDirectory(cacheDir, cacheError)) {
    emitError(UnknownLoc::get(&context)) << cacheError;
    return failure();
  }
  llvm::SmallString<256> weights(cacheDir);
  llvm::sys::path::append(weights, "weights-" + modelHash + ".safetensors");
  // bf16 and bf16-autocast are mixed precision: an f32 import, lowered to
  // bf16 compute by glimmer-mixed-precision below.
  StringRef policy = mixedPrecisionPolicy(options.floatType);
  bool mixedPrecision = !policy.empty();
  if (!mixedPrecision && options.floatType != "f32" &&
      options.floatType != "f64") {
    emitError(UnknownLoc::get(&context))
        << "unsupported floating-point type '" << options.floatType
        << "' (expected f32, f64, bf16 or bf16-autocast)";
    return failure();
  }
  if (failed(checkActivationCheckpointing(context, options)))
    return failure();
  ImportOptions importOptions;
  importOptions.modelPath = options.modelPath;
  importOptions.exampleInputsPath = options.dataPath;
  importOptions.floatType = mixedPrecision ? "f32" : options.floatType;
  // Written atomically (concurrent compiles never read a half-written
  // file) and private, like everything in the cache.
  if (options.weights != DriverOptions::Weights::Skip)
    importOptions.weightsOutputPath = std::string(weights);
  importOptions.weightsOptional =
      options.weights == DriverOptions::Weights::WriteIfPresent;
  importOptions.weightsFileMode = 0600;
  if (options.progress)
    options.progress("importing " + options.modelPath);
  // A .pt2 is a torch.export archive; anything else, TorchScript.
  model.module = isExportArchivePath(options.modelPath)
                     ? importExportedProgram(context, importOptions)
                     : importTorchScript(context, importOptions);
  if (!model.module)
    return failure();
  // A weightless archive wrote none (DriverOptions::Weights::WriteIfPresent).
  if (!importOptions.weightsOutputPath.empty() &&
      llvm::sys::fs::exists(importOptions.weightsOutputPath))
    model.weightsPath = importOptions.weightsOutputPath;
  if (options.progress)
    options.progress("imported in " + fixed(watch.seconds()) + " s");

  // Pipeline.
  watch = Stopwatch();
  if (options.spmd.empty() && !options.ppSplit.empty()) {
    emitError(UnknownLoc::get(&context))
        << "pipeline split points ('" << options.ppSplit
        << "') need pipeline parallelism (pp > 1 in the SPMD layout)";
    return failure();
  }
  if (!options.spmd.empty()) {
    std::string error;
    std::optional<SpmdContext> layout = SpmdContext::parse(options.spmd, &error);
    if (!layout) {
      emitError(UnknownLoc::get(&context))
          << "invalid SPMD layout '" << options.spmd << "': " << error;
      return failure();
    }
  }
  TrainPipelineOptions pipeline;
  setPipelineOptions(options, pipeline);
  if (options.progress)
    options.progress("running the compile pipeline");
  PassManager pm(&context);
  buildTrainPipeline(pm, pipeline);
  if (failed(pm.run(*model.module)))
    return failure();
  return compileModule(context, std::move(model.module), cacheDir,
                       options.progress, std::move(model.weightsPath));
}

FailureOr<CompiledModel>
glimmer::compileModule(MLIRContext &context, OwningOpRef<ModuleOp> module,
                       const std::string &cacheDir,
                       const std::function<void(const std::string &)> &progress,
                       std::string weightsPath) {
  CompiledModel model;
  model.module = std::move(module);
  model.weightsPath = std::move(weightsPath);
  // The manifest: what the runtime needs to bind and run the program.
  ProgramInfo info;
  if (SpmdAttr spmd = getRecordedSpmd(*model.module))
    info.layout = spmd.getLayout();
  model.module->walk([&](VisionGatherOp gather) {
    auto indices = gather.getIndices().getDefiningOp<VisionBankIndicesOp>();
    for (Operation *op = gather.getIndices().getDefiningOp();
         op && !indices && op->getNumOperands() > 0;
         op = op->getOperand(0).getDefiningOp())
      indices = dyn_cast<VisionBankIndicesOp>(op);
    if (!indices)
      return;
    auto arg = dyn_cast<BlockArgument>(indices.getTokens());
    auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                    : func::FuncOp();
    auto name =
        func ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kInputAttr)
             : StringAttr();
    if (!name)
      return;
    info.visionChecks.push_back(
        {name.getValue().str(), int64_t(indices.getImageTokenId()),
         cast<RankedTensorType>(gather.getBank().getType()).getDimSize(0)});
  });
  if (auto traced =
          (*model.module)->getAttrOfType<DictionaryAttr>(kTracedInputsAttr))
    for (NamedAttribute entry : traced)
      info.tracedInputs.push_back(
          {entry.getName().str(),
           cast<StringAttr>(entry.getValue()).getValue().str()});
  for (auto func : model.module->getOps<func::FuncOp>()) {
    // Outlined layers are internal to the program.
    if (func.isPrivate())
      continue;
    Signature fn;
    auto toSlot = [&](DictionaryAttr attrs, Type type) -> FailureOr<Slot> {
      Slot slot;
      if (attrs) {
        // Boundaries are named by their index in the cut.
        for (const RoleAttr &r : kRoleAttrs) {
          Attribute value = attrs.get(r.attr);
          if (r.value == RoleValue::Name) {
            if (auto n = dyn_cast_or_null<StringAttr>(value)) {
              slot.role = r.role;
              slot.name = n.getValue().str();
            }
          } else if (r.value == RoleValue::Index) {
            if (auto index = dyn_cast_or_null<IntegerAttr>(value)) {
              slot.role = r.role;
              slot.name = std::to_string(index.getInt());
            }
          } else if (value) {
            slot.role = r.role;
          }
        }
        if (attrs.get(kPartialAttr))
          return func.emitError()
                 << "a result is still a per-rank partial sum after the "
                    "pipeline (glimmer-reduce-partials did not run)";
        if (auto sharded = attrs.getAs<ShardingAttr>(kShardedAttr))
          for (unsigned d = 0; d < sharded.getDims().size(); ++d) {
            std::vector<std::string> axes;
            for (StringRef a : sharded.getDimAxes(d))
              axes.push_back(a.str());
            slot.dimAxes.push_back(std::move(axes));
          }
      }
      auto tensor = cast<RankedTensorType>(type);
      auto dtype = dtypeOf(tensor.getElementType());
      if (!dtype)
        return func.emitError() << "unsupported type " << type;
      slot.dtype = *dtype;
      slot.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
      return slot;
    };
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto slot = toSlot(func.getArgAttrDict(i), func.getArgumentTypes()[i]);
      if (failed(slot))
        return failure();
      fn.arguments.push_back(*slot);
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto slot = toSlot(func.getResultAttrDict(i), func.getResultTypes()[i]);
      if (failed(slot))
        return failure();
      fn.results.push_back(*slot);
    }
    info.functions[func.getName().str()] = std::move(fn);
  }

  Stopwatch watch;
  DriverOptions options;
  options.progress = progress;
  llvm::raw_string_ostream os(model.cppSource);
  if (options.progress)
    options.progress("lowering to C++");
  if (failed(emitCpp(*model.module, os)))
    return failure();
  os << manifestFunctionSource(info.toManifest());
  if (options.progress)
    options.progress("lowered to C++ (" +
                     std::to_string(llvm::count(model.cppSource, '\n')) +
                     " lines) in " + fixed(watch.seconds()) + " s");

  glimmer_rt::ProgramBuildOptions build;
  build.cacheDir = cacheDir;
  build.progress = progress;
  std::string error;
  model.libraryPath = glimmer_rt::buildProgram(model.cppSource, build, error);
  if (model.libraryPath.empty()) {
    emitError(UnknownLoc::get(&context)) << error;
    return failure();
  }
  model.program = glimmer_rt::CompiledProgram::load(model.libraryPath, error);
  if (!model.program) {
    emitError(UnknownLoc::get(&context)) << error;
    return failure();
  }
  return model;
}
