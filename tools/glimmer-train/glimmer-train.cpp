//===- glimmer-train.cpp - Compile a model and train it -------------------===//
//
//   glimmer-train MODEL.pt --data=BATCH.safetensors|DIR|'GLOB'
//       [--backend=cpu|cuda]
//       [--dtype=f32|f64|bf16|bf16-autocast] [--steps=N --optimizer=adamw|sgd --lr=...
//        --weight-decay=... --betas=B1,B2 --eps=... --max-norm=...
//        --grad-accum=N] [--save=CKPT] [--resume=CKPT]
//       [--weights=FILE|HF_DIR] [--export-weights=DIR --max-shard-size=5GB]
//       [--ac=none|full|selective | --ac-budget=BYTES]
//       [--metrics=OUT.jsonl] [--forward-only] [--tf32] [--cuda-graph]
//       [--config=JOB.toml] [--progress=auto|always|never]
//
// --data=synthetic:batch=2,seq=16,images=1,... draws a seeded synthetic
// batch (--seed) in the reference model's input names instead.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer/Driver/Driver.h"
#include "glimmer/Support/CommandLine.h"
#include "glimmer_rt/DataStream.h"
#include "glimmer_rt/HfCheckpoint.h"
#include "glimmer_rt/Progress.h"
#include "glimmer_rt/Synthetic.h"
#include "glimmer_rt/ToolArguments.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

namespace cl = llvm::cl;

static cl::OptionCategory trainCategory("glimmer-train options");
static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.pt>"),
                                      cl::cat(trainCategory));
static cl::opt<std::string> dataPath(
    "data", cl::Required,
    cl::desc("Batch (safetensors; tensors bind to forward arguments by "
             "name); or a directory of shards, or a glob pattern ('data/"
             "shard-*.safetensors'), one global batch each, step k on shard "
             "k mod N in name order; or synthetic:batch=B,seq=T,images=K,"
             "vocab=V,image-size=S,patch=P,channels=C"),
    cl::value_desc("file|dir|glob"), cl::cat(trainCategory));
static cl::opt<std::string> backend(
    "backend", cl::init("cpu"),
    cl::desc("Execution backend: cpu (ranks as threads) or cuda (one GPU "
             "per rank, NCCL)"),
    cl::value_desc("cpu|cuda"), cl::cat(trainCategory));
static cl::opt<std::string> floatType(
    "dtype", cl::init("f32"),
    cl::desc("Precision of every floating-point tensor: f32 or f64; or bf16: "
             "mixed precision (f32 parameters, optimizer state and loss, "
             "bf16 compute; --backend=cuda, or --steps=0 to compile only); "
             "or bf16-autocast: mixed precision rounding where PyTorch's "
             "autocast does (f32 norms, softmax and residual stream)"),
    cl::value_desc("f32|f64|bf16|bf16-autocast"), cl::cat(trainCategory));
static cl::opt<std::string> spmd(
    "spmd", cl::init(""),
    cl::desc("Parallel layout, e.g. cp=2 (ranks run as threads on the CPU)"),
    cl::value_desc("layout"), cl::cat(trainCategory));
static cl::opt<std::string> tpPlan(
    "tp-plan", cl::init(""),
    cl::desc("Tensor-parallel plan: a JSON object mapping state_dict name "
             "patterns to colwise, rowwise or replicate (default: read off "
             "the graph)"),
    cl::value_desc("file"), cl::cat(trainCategory));
static cl::opt<std::string> ppSplit(
    "pp-split", cl::init(""),
    cl::desc("Pipeline split points: the first decoder layer of each stage "
             "after the first, e.g. layers.4,layers.8 (default: balanced by "
             "cost)"),
    cl::value_desc("layers"), cl::cat(trainCategory));
static cl::opt<int64_t> rematMinElements(
    "remat-min-elements", cl::init(65536),
    cl::desc("Recompute in the backward, instead of keeping, forward values "
             "of at least this many elements that are cheap to compute again "
             "(elementwise, index ops, RMS norm); negative: keep all"),
    cl::value_desc("n"), cl::cat(trainCategory));
static cl::opt<std::string> activationCheckpointing(
    "ac", cl::init("none"),
    cl::desc("Activation checkpointing: full (each decoder and vision layer "
             "keeps its inputs and computes its forward again right before "
             "its backward) or selective (also keeps the results of GEMMs, "
             "attention and collectives); none keeps every activation"),
    cl::value_desc("none|full|selective"), cl::cat(trainCategory));
static cl::opt<std::string> activationBudget(
    "ac-budget", cl::init(""),
    cl::desc("Activation checkpointing within a budget: of the activations "
             "the layers' backward reads, keep the most expensive to compute "
             "again per byte while they fit this many bytes (per training "
             "function and rank; KB/MB/GB: powers of 1000, KiB/MiB/GiB: of "
             "1024), computing the rest again"),
    cl::value_desc("bytes"), cl::cat(trainCategory));
static cl::opt<bool> forwardOnly(
    "forward-only", cl::init(false),
    cl::desc("Run the forward pass once and report the loss"),
    cl::cat(trainCategory));
static cl::opt<bool> tf32(
    "tf32", cl::init(false),
    cl::desc("f32 GEMMs (linear, matmul, conv2d) may use TF32 tensor cores, "
             "as PyTorch's allow_tf32 (--backend=cuda; off: full f32)"),
    cl::cat(trainCategory));
static cl::opt<bool> cudaGraph(
    "cuda-graph", cl::init(false),
    cl::desc("Capture the training step once as a CUDA graph and replay it "
             "(--backend=cuda; the first step runs as usual)"),
    cl::cat(trainCategory));
static cl::opt<int> steps("steps", cl::init(10),
                          cl::desc("Optimizer steps (one batch repeats; "
                                   "shards cycle)"),
                          cl::cat(trainCategory));
static cl::opt<std::string> optimizer("optimizer", cl::init("adamw"),
                                      cl::desc("adamw or sgd"),
                                      cl::cat(trainCategory));
static cl::opt<double> lr("lr", cl::init(1e-3), cl::desc("Learning rate"),
                          cl::cat(trainCategory));
static cl::opt<double> weightDecay(
    "weight-decay", cl::init(-1),
    cl::desc("Weight decay (default: 0.01 for adamw, 0 for sgd)"),
    cl::cat(trainCategory));
static cl::opt<std::string> betas("betas", cl::init("0.9,0.999"),
                                  cl::desc("AdamW betas B1,B2"),
                                  cl::cat(trainCategory));
static cl::opt<double> eps("eps", cl::init(1e-8), cl::desc("AdamW epsilon"),
                           cl::cat(trainCategory));
static cl::opt<double> maxNorm(
    "max-norm", cl::init(0),
    cl::desc("Clip the global gradient norm (0: no clipping)"),
    cl::cat(trainCategory));
static cl::opt<int> gradAccum(
    "grad-accum", cl::init(1),
    cl::desc("Micro-batches per optimizer step: the batch is cut into N "
             "pieces, run one after another with the gradients summed "
             "(the loss stays the mean over the whole batch); the same as "
             "microbatches=N in --spmd"),
    cl::cat(trainCategory));
static cl::opt<unsigned> seed("seed", cl::init(0),
                              cl::desc("Seed of synthetic data"),
                              cl::cat(trainCategory));
static cl::opt<std::string> savePath(
    "save", cl::init(""),
    cl::desc("Write a checkpoint (parameters, optimizer state, step) here "
             "after the last step"),
    cl::value_desc("file"), cl::cat(trainCategory));
static cl::opt<std::string> resumePath(
    "resume", cl::init(""),
    cl::desc("Continue from a checkpoint written by --save"),
    cl::value_desc("file"), cl::cat(trainCategory));
static cl::opt<std::string> weightsPath(
    "weights", cl::init(""),
    cl::desc("Bind parameters and buffers by state_dict name from this "
             "safetensors file or Hugging Face checkpoint directory "
             "(model.safetensors, or model.safetensors.index.json and its "
             "shards) instead of the model's own weights"),
    cl::value_desc("file|dir"), cl::cat(trainCategory));
static cl::opt<std::string> exportWeightsDir(
    "export-weights", cl::init(""),
    cl::desc("After the last step, write the parameters here as "
             "save_pretrained does (sharded safetensors and "
             "model.safetensors.index.json)"),
    cl::value_desc("dir"), cl::cat(trainCategory));
static cl::opt<std::string> maxShardSize(
    "max-shard-size", cl::init("5GB"),
    cl::desc("Largest shard --export-weights writes (KB/MB/GB: powers of "
             "1000; KiB/MiB/GiB: of 1024)"),
    cl::value_desc("size"), cl::cat(trainCategory));
static cl::opt<std::string> metricsPath(
    "metrics", cl::init(""),
    cl::desc("Append one JSON line per step to this file"),
    cl::value_desc("file"), cl::cat(trainCategory));
static cl::opt<std::string> cacheDir(
    "cache-dir", cl::init(""),
    cl::desc("Where compiled programs are kept (default: "
             "$GLIMMER_CACHE_DIR, else $XDG_CACHE_HOME/glimmer, else "
             "~/.cache/glimmer); only you may be able to write it"),
    cl::value_desc("dir"), cl::cat(trainCategory));
static cl::opt<std::string> emitCppPath(
    "emit-cpp", cl::init(""), cl::desc("Also write the generated C++ here"),
    cl::value_desc("file"), cl::cat(trainCategory));
static cl::opt<std::string> emitMlirPath(
    "emit-mlir", cl::init(""),
    cl::desc("Also write the program after the compile pipeline (what "
             "glimmer-opt --glimmer-train-pipeline makes of the imported "
             "module; the IR the C++ is lowered from)"),
    cl::value_desc("file"), cl::cat(trainCategory));
static cl::opt<bool> quiet("quiet", cl::init(false),
                           cl::desc("No progress messages"),
                           cl::cat(trainCategory));
static cl::opt<std::string> progressMode(
    "progress", cl::init("auto"),
    cl::desc("Progress on stderr: a line redrawn in place (the compile "
             "stage, then a bar of the steps) on a terminal (auto) or "
             "always, else one line per stage (never)"),
    cl::value_desc("auto|always|never"), cl::cat(trainCategory));

static int fail(const std::string &message) {
  llvm::WithColor::error(llvm::errs(), "glimmer-train") << message << "\n";
  return 1;
}

/// Parses a byte count: digits, optionally followed by B, KB, MB, GB
/// (powers of 1000) or KiB, MiB, GiB (powers of 1024). std::nullopt when
/// malformed or too large.
static std::optional<int64_t> parseBytes(llvm::StringRef text) {
  llvm::StringRef digits = text.take_while(llvm::isDigit);
  llvm::StringRef unit = text.drop_front(digits.size());
  int64_t scale = llvm::StringSwitch<int64_t>(unit)
                      .Case("", 1)
                      .Case("B", 1)
                      .Case("KB", 1000)
                      .Case("MB", 1000'000)
                      .Case("GB", 1000'000'000)
                      .Case("KiB", 1 << 10)
                      .Case("MiB", 1 << 20)
                      .Case("GiB", int64_t(1) << 30)
                      .Default(0);
  uint64_t n;
  if (digits.empty() || scale == 0 || digits.getAsInteger(10, n) ||
      n > uint64_t(std::numeric_limits<int64_t>::max() / scale))
    return std::nullopt;
  return int64_t(n) * scale;
}

/// Writes a synthetic batch described by `spec` ("batch=2,seq=16,...") to
/// a file and returns its path.
static std::string makeSynthetic(const std::string &spec,
                                 const std::string &dir) {
  glimmer_rt::SyntheticConfig cfg;
  cfg.seed = seed;
  glimmer_rt::parseSyntheticSpec(spec, cfg);
  llvm::sys::fs::create_directories(dir);
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "synthetic-" +
                                    std::to_string(std::hash<std::string>()(
                                        spec + "/" + std::to_string(seed))) +
                                    ".safetensors");
  glimmer_rt::writeSyntheticBatch(cfg, std::string(path));
  return std::string(path);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(trainCategory);
  if (!glimmer::parseCommandLineWithConfig(
          argc, argv, "Glimmer: compile a model and train it\n",
          trainCategory, modelPath, "model"))
    return 1;
  glimmer_rt::ProgressMode progress;
  if (!glimmer_rt::parseProgressMode(progressMode, progress))
    return fail("--progress must be auto, always or never, got '" +
                progressMode + "'");
  glimmer_rt::Backend executionBackend;
  if (!glimmer_rt::parseBackend(backend, executionBackend))
    return fail("unknown backend '" + backend + "' (available: cpu, cuda)");
  bool mixedPrecision = !glimmer::mixedPrecisionPolicy(floatType).empty();
  if (floatType != "f32" && floatType != "f64" && !mixedPrecision)
    return fail("--dtype must be f32, f64, bf16 or bf16-autocast, got '" +
                floatType + "'");
  if (optimizer != "adamw" && optimizer != "sgd")
    return fail("--optimizer must be adamw or sgd, got '" + optimizer + "'");
  if (steps < 0)
    return fail("--steps must not be negative");
  if (gradAccum < 1)
    return fail("--grad-accum must be at least 1");
  if (activationCheckpointing != "none" && activationCheckpointing != "full" &&
      activationCheckpointing != "selective")
    return fail("--ac must be none, full or selective, got '" +
                activationCheckpointing + "'");
  std::optional<int64_t> budgetBytes;
  if (activationBudget.getNumOccurrences()) {
    budgetBytes = parseBytes(activationBudget);
    if (!budgetBytes)
      return fail("--ac-budget expects a number of bytes such as 500000000, "
                  "500MB or 512MiB, got '" +
                  activationBudget + "'");
    if (activationCheckpointing != "none")
      return fail("--ac-budget chooses what to keep itself: it does not "
                  "combine with --ac=" +
                  activationCheckpointing);
  }
  // Checked before compiling: a bf16 program would fail in its first kernel.
  // With --steps=0 nothing runs (the program is compiled, and emitted with
  // --emit-cpp, to be carried to a GPU machine).
  if (mixedPrecision && executionBackend == glimmer_rt::Backend::CPU &&
      (steps > 0 || forwardOnly))
    return fail("bf16 programs need --backend=cuda: the CPU kernels run f32 "
                "and f64 (--steps=0 --emit-cpp=FILE compiles without "
                "running)");
  // Also before compiling: the settings that apply to the backend.
  glimmer_rt::LoopOptions loop;
  loop.tf32 = tf32;
  loop.cudaGraph = cudaGraph;
  loop.forwardOnly = forwardOnly;
  try {
    glimmer_rt::applyLoopSettings(loop, executionBackend);
  } catch (const glimmer_rt::RuntimeError &e) {
    return fail(e.what());
  }
  // The files named on the command line, before anything runs: the
  // compile can take minutes.
  std::string fileError;
  if (!glimmer_rt::checkInputFile("model", modelPath, fileError) ||
      (!tpPlan.empty() &&
       !glimmer_rt::checkInputFile("--tp-plan", tpPlan, fileError)) ||
      (!resumePath.empty() &&
       !glimmer_rt::checkInputFile("--resume", resumePath, fileError)))
    return fail(fileError);
  for (auto [flag, path] : {std::pair{"--save", &savePath},
                            std::pair{"--metrics", &metricsPath},
                            std::pair{"--emit-cpp", &emitCppPath},
                            std::pair{"--emit-mlir", &emitMlirPath}})
    if (!path->empty() &&
        !glimmer_rt::checkOutputFile(flag, *path, fileError))
      return fail(fileError);
  double beta1 = 0, beta2 = 0;
  {
    char *end = nullptr;
    beta1 = std::strtod(betas.c_str(), &end);
    if (*end != ',')
      return fail("--betas must be B1,B2, got '" + betas + "'");
    beta2 = std::strtod(end + 1, &end);
    if (*end != '\0')
      return fail("--betas must be B1,B2, got '" + betas + "'");
  }

  std::string dir = cacheDir.empty() ? glimmer::defaultCacheDir()
                                     : std::string(cacheDir);
  std::string data = dataPath;
  if (llvm::StringRef(data).starts_with("synthetic:")) {
    try {
      data = makeSynthetic(data.substr(strlen("synthetic:")), dir);
    } catch (const glimmer_rt::RuntimeError &e) {
      return fail(std::string("--data: ") + e.what());
    }
  }

  mlir::MLIRContext context;
  // Diagnostics carry source locations; the whole module as a note is noise.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  // The program is compiled for the first shard's shapes.
  glimmer_rt::TrainingData trainingData;
  try {
    trainingData = glimmer_rt::TrainingData::open(data);
  } catch (const glimmer_rt::RuntimeError &e) {
    return fail("--data: " + e.message);
  }
  // Before the compile, which can take minutes.

  glimmer::DriverOptions options;
  options.modelPath = modelPath;
  options.dataPath = trainingData.shards.paths.front();
  options.floatType = floatType;
  options.cacheDir = dir;
  options.train = !forwardOnly;
  options.spmd = spmd;
  if (gradAccum > 1) {
    // A malformed --spmd is reported by the compiler, with its message.
    if (auto layout = glimmer::SpmdContext::parse(spmd)) {
      if (layout->microbatches != 1 && layout->microbatches != gradAccum)
        return fail("--grad-accum=" + std::to_string(gradAccum) +
                    " disagrees with microbatches=" +
                    std::to_string(layout->microbatches) + " in --spmd");
      layout->microbatches = gradAccum;
      options.spmd = layout->print();
    }
  }
  options.tpPlan = tpPlan;
  options.ppSplit = ppSplit;
  // Compiling needs the graph, not the weights nor any training state:
  // when nothing runs (--steps=0 without --save or --export-weights), none
  // are written or allocated, so a model of any size compiles in the memory
  // its graph takes. Weights given with --weights may replace all of the
  // model's own (a model exported on the meta device has none).
  bool runs = steps > 0 || forwardOnly || !savePath.empty() ||
              !exportWeightsDir.empty();
  options.weights = !runs ? glimmer::DriverOptions::Weights::Skip
                    : weightsPath.empty()
                        ? glimmer::DriverOptions::Weights::Write
                        : glimmer::DriverOptions::Weights::WriteIfPresent;
  options.rematMinElements = rematMinElements;
  options.activationCheckpointing = activationCheckpointing;
  options.activationBudget = budgetBytes.value_or(-1);
  options.optimizer.optimizer = optimizer;
  options.optimizer.lr = lr;
  options.optimizer.beta1 = beta1;
  options.optimizer.beta2 = beta2;
  options.optimizer.eps = eps;
  options.optimizer.weightDecay = weightDecay;
  options.optimizer.maxNorm = maxNorm;
  bool live = glimmer_rt::isLiveProgress(progress);
  glimmer_rt::Progress compileProgress("glimmer-train", std::cerr, live,
                                       !quiet);
  options.progress = [&](const std::string &message) {
    compileProgress.stage(message);
  };
  // A diagnostic starts on a line of its own (then goes on to the handler
  // that prints it).
  context.getDiagEngine().registerHandler([&](mlir::Diagnostic &) {
    compileProgress.finish();
    return mlir::failure();
  });
  // Every output file opens before the compile, which can take minutes; a
  // ToolOutputFile is removed again unless the compile succeeds.
  std::unique_ptr<llvm::ToolOutputFile> mlirOut, cppOut;
  for (auto [flag, path, out] :
       {std::tuple{"--emit-mlir", &emitMlirPath, &mlirOut},
        std::tuple{"--emit-cpp", &emitCppPath, &cppOut}}) {
    if (path->empty())
      continue;
    std::error_code error;
    *out = std::make_unique<llvm::ToolOutputFile>(*path, error,
                                                  llvm::sys::fs::OF_None);
    if (error)
      return fail(std::string("cannot write ") + flag + " file '" + *path +
                  "': " + error.message());
  }
  try {
    loop.maxShardBytes = glimmer_rt::parseShardSize(maxShardSize);
    if (!exportWeightsDir.empty())
      glimmer_rt::checkExportDirectory(exportWeightsDir);
  } catch (const glimmer_rt::RuntimeError &e) {
    return fail(e.what());
  }

  auto model = glimmer::compileModel(context, options);
  compileProgress.finish();
  if (mlir::failed(model))
    return 1;
  if (mlirOut) {
    model->module->print(mlirOut->os());
    mlirOut->os() << "\n";
  }
  if (cppOut)
    cppOut->os() << model->cppSource;
  for (auto [path, out] : {std::pair{&emitMlirPath, &mlirOut},
                           std::pair{&emitCppPath, &cppOut}}) {
    if (!*out)
      continue;
    llvm::raw_fd_ostream &os = (*out)->os();
    os.close();
    if (os.has_error()) {
      std::string message = os.error().message();
      os.clear_error();
      return fail("cannot write '" + *path + "': " + message);
    }
    (*out)->keep();
  }
  if (!runs) {
    // The first shard is still checked against the compiled program.
    try {
      glimmer_rt::checkBatch(model->info(), *trainingData.first);
    } catch (const glimmer_rt::RuntimeError &e) {
      return fail("--data: " + e.message);
    }
    return 0;
  }
  loop.weightsPath = model->weightsPath;
  loop.pretrainedPath = weightsPath;
  loop.exportWeightsDir = exportWeightsDir;
  loop.steps = steps;
  loop.forwardOnly = forwardOnly;
  loop.savePath = savePath;
  loop.resumePath = resumePath;
  loop.metricsPath = metricsPath;
  loop.quiet = quiet;
  loop.liveProgress = live;
  try {
    if (loop.cudaGraph)
      glimmer_rt::checkCudaGraphProgram(*model->program);
  } catch (const glimmer_rt::RuntimeError &e) {
    return fail(e.what());
  }
  try {
    glimmer_rt::Ranks ranks(model->layout(), executionBackend);
    glimmer_rt::runLoop(*model->program, trainingData, ranks, loop,
                        std::cout, std::cerr);
  } catch (const glimmer_rt::RuntimeError &e) {
    return fail(std::string("the program failed: ") + e.what());
  }
  return 0;
}
