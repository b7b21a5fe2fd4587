//===- glimmer-run.cpp - Train a compiled program, no compiler needed -----===//
//
//   glimmer-run PROGRAM.{so,cpp} --weights=W.safetensors|HF_DIR
//       --data=BATCH.safetensors|DIR|'GLOB'|synthetic:batch=..,seq=..,images=..
//       [--backend=cpu|cuda] [--steps=N] [--forward-only]
//       [--save=CKPT] [--resume=CKPT] [--metrics=OUT.jsonl] [--seed=N]
//       [--timeout=SECONDS] [--quiet] [--cache-dir=DIR]
//       [--check-fused-kernels] [--tf32] [--cuda-graph]
//       [--config=JOB.toml] [--progress=auto|always|never]
//       [--export-weights=DIR] [--max-shard-size=5GB]
//
// Runs what glimmer-train compiled (its --emit-cpp output, or the shared
// library built from it) on machines that have the runtime but no compiler:
// the program's manifest says how to bind data, weights and optimizer state,
// and which layout it was partitioned for. The optimizer and its
// hyperparameters are part of the program.
//
// Ranks run as threads (one GPU each with --backend=cuda), or, when started
// by torchrun or mpirun (one process per GPU), as this process's one rank.
//
// --check-fused-kernels (CPU backend) also builds the program's fused CUDA
// kernels for the host and runs each call of one beside its ops, which is
// what the CPU runs: a result that differs in any bit stops the run. It
// checks the generated kernels' index maps and arithmetic on machines
// without a GPU.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Trainer.h"

#include "glimmer_rt/DataStream.h"
#include "glimmer_rt/Files.h"
#include "glimmer_rt/HfCheckpoint.h"
#include "glimmer_rt/Nccl.h"
#include "glimmer_rt/ProgramCache.h"
#include "glimmer_rt/Progress.h"
#include "glimmer_rt/ToolArguments.h"
#include "glimmer_rt/ToolConfig.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

using namespace glimmer_rt;

namespace {

int fail(const std::string &message) {
  std::cerr << "glimmer-run: error: " << message << std::endl;
  return 1;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// --weights (a file, or a directory: a Hugging Face checkpoint bound by
/// state_dict name), --export-weights and --max-shard-size. Throws
/// RuntimeError.
void setWeightOptions(LoopOptions &loop, const std::string &weights,
                      const std::string &exportDir,
                      const std::string &shardSize) {
  (std::filesystem::is_directory(weights) ? loop.pretrainedPath
                                          : loop.weightsPath) = weights;
  loop.exportWeightsDir = exportDir;
  loop.maxShardBytes = parseShardSize(shardSize);
  if (!exportDir.empty())
    checkExportDirectory(exportDir);
}

ProgramBuildOptions buildOptions(const std::string &cacheDir,
                                 Progress &progress) {
  ProgramBuildOptions options;
  options.cacheDir = cacheDir;
  options.progress = [&progress](const std::string &message) {
    progress.stage(message);
  };
  return options;
}

/// Builds the generated C++ in `source` into the private program cache;
/// returns the library's path or throws.
std::string buildProgramFile(const std::string &source,
                             const std::string &cacheDir, Progress &progress) {
  std::ifstream in(source, std::ios::binary);
  if (!in)
    throw RuntimeError("cannot open '" + source + "': " +
                       std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  std::string so =
      buildProgram(text.str(), buildOptions(cacheDir, progress), error);
  if (so.empty())
    throw RuntimeError(error);
  return so;
}

/// --check-fused-kernels: each call of a fused kernel on the CPU is run
/// again by the kernel's host build and compared with its ops' results.
class FusedKernelChecker {
public:
  explicit FusedKernelChecker(ProgramBuildOptions options)
      : options(std::move(options)) {}

  void check(FusedKernels &kernels, int index,
             const std::vector<Tensor> &inputs,
             const std::vector<Tensor> &results) {
    std::lock_guard<std::mutex> guard(lock);
    void *&library = libraries[&kernels];
    if (!library) {
      std::string error;
      // Built into the private cache and hash-checked like a program.
      std::string so =
          buildProgram(fusedKernelsHostSource(kernels), options, error);
      if (so.empty())
        throw RuntimeError("building the fused kernels for the host: " + error);
      library = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!library)
        throw RuntimeError(std::string("loading the fused kernels' host "
                                       "build: ") +
                           dlerror());
    }
    std::string name = "glimmer_fused_" + std::to_string(index);
    using HostKernel = void (*)(void *const *);
    auto kernel = reinterpret_cast<HostKernel>(
        dlsym(library, (name + "_host").c_str()));
    if (!kernel)
      throw RuntimeError("the fused kernels' host build has no " + name);
    std::vector<Tensor> mine;
    std::vector<void *> pointers;
    for (const Tensor &t : inputs)
      pointers.push_back(const_cast<void *>(t.raw()));
    for (const Tensor &r : results) {
      mine.emplace_back(r.dtype(), r.shape());
      pointers.push_back(mine.back().raw());
    }
    kernel(pointers.data());
    requireSameResults(index, mine, results);
    ++calls;
    checked.insert({&kernels, index});
  }

  std::string summary() {
    std::lock_guard<std::mutex> guard(lock);
    return "checked " + std::to_string(calls) + " calls of " +
           std::to_string(checked.size()) +
           " fused kernels on the host: every result equal to its ops' "
           "bit for bit";
  }

private:
  ProgramBuildOptions options;
  std::mutex lock;
  std::map<FusedKernels *, void *> libraries; // kept open until exit
  std::set<std::pair<FusedKernels *, int>> checked;
  size_t calls = 0;
};

/// glimmer-run's options as --config keys ("program": the positional
/// argument).
std::optional<ConfigOption> configOption(const std::string &key) {
  static const std::map<std::string, ConfigOption> options = {
      {"program", {ConfigType::String, true}},
      {"weights", {ConfigType::String, true}},
      {"data", {ConfigType::String, true}},
      {"export-weights", {ConfigType::String, true}},
      {"max-shard-size", {ConfigType::String, false}},
      {"backend", {ConfigType::String, false}},
      {"steps", {ConfigType::Integer, false}},
      {"forward-only", {ConfigType::Bool, false}},
      {"save", {ConfigType::String, true}},
      {"resume", {ConfigType::String, true}},
      {"metrics", {ConfigType::String, true}},
      {"seed", {ConfigType::Integer, false}},
      {"timeout", {ConfigType::Number, false}},
      {"quiet", {ConfigType::Bool, false}},
      {"progress", {ConfigType::String, false}},
      {"cache-dir", {ConfigType::String, true}},
      {"check-fused-kernels", {ConfigType::Bool, false}},
      {"tf32", {ConfigType::Bool, false}},
      {"cuda-graph", {ConfigType::Bool, false}},
  };
  auto it = options.find(key);
  if (it == options.end())
    return std::nullopt;
  return it->second;
}

/// The command line with --config's settings put first (so that the
/// command line wins); false and `error` when the config does not fit.
bool withConfig(int argc, char **argv, std::vector<std::string> &args,
                std::string &error) {
  std::vector<std::string> given(argv + 1, argv + argc);
  std::string path = findConfigArgument(given);
  if (path.empty()) {
    args = given;
    return true;
  }
  std::vector<ConfigSetting> settings;
  if (!readToolConfig(path, "glimmer-run", configOption, settings, error))
    return false;
  bool programGiven = false;
  for (const std::string &arg : given)
    programGiven |= arg.rfind("-", 0) != 0;
  for (const ConfigSetting &setting : settings) {
    if (setting.name != "program")
      args.push_back("--" + setting.name + "=" + setting.values.front());
    else if (!programGiven)
      args.push_back(setting.values.front());
  }
  args.insert(args.end(), given.begin(), given.end());
  return true;
}

} // namespace

/// glimmer-run --help.
static void printUsage() {
  std::cout << "usage: glimmer-run PROGRAM.{so,cpp} --weights=FILE "
               "--data=FILE|DIR|GLOB|synthetic:batch=B,seq=T,images=K\n"
               "  (DIR: its *.safetensors shards; GLOB: the files it "
               "matches;\n"
               "   step k trains on shard k mod N, in name order, read ahead "
               "by a thread)\n"
               "  [--backend=cpu|cuda] [--steps=N] [--forward-only]\n"
               "  [--save=FILE] [--resume=FILE] [--metrics=FILE] "
               "[--seed=N] [--timeout=S] [--quiet]\n"
               "  [--check-fused-kernels]  (CPU) run each fused kernel's host "
               "build beside its ops\n"
               "  [--tf32]  (CUDA) f32 GEMMs may use TF32 tensor cores, as "
               "PyTorch's allow_tf32\n"
               "  [--cuda-graph]  (CUDA) capture the step once as a CUDA "
               "graph and replay it\n"
               "  [--export-weights=DIR] [--max-shard-size=5GB]  write the "
               "trained\n"
               "    parameters as save_pretrained does (sharded safetensors "
               "and an index)\n"
               "  --weights=DIR: a Hugging Face checkpoint (model.safetensors, "
               "or\n"
               "    model.safetensors.index.json and its shards)\n"
               "  [--cache-dir=DIR]  where a .cpp program is built (default: "
               "$GLIMMER_CACHE_DIR,\n"
               "                     else $XDG_CACHE_HOME/glimmer, else "
               "~/.cache/glimmer)\n"
               "  [--progress=auto|always|never]  a line redrawn in place "
               "on stderr (auto: on a terminal)\n"
               "  [--config=FILE]  options from a TOML file (keys: the "
               "option names and 'program';\n"
               "                   relative paths resolve against its "
               "directory; the command line wins)\n";
}

int main(int argc, char **argv) {
  std::string program, weights, data, backendName = "cpu", save, resume,
                                       metrics, cacheDir, configPath, exportDir,
                                       shardSize = "5GB";
  LoopOptions loop;
  loop.tool = "glimmer-run";
  uint64_t seed = 0;
  double timeout = 60;
  bool checkFused = false;
  std::string progressName = "auto";
  std::vector<std::string> args;
  std::string configError;
  if (!withConfig(argc, argv, args, configError))
    return fail(configError);
  for (const std::string &arg : args) {
    auto value = [&](const char *flag, std::string &out) {
      std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) != 0)
        return false;
      out = arg.substr(prefix.size());
      return true;
    };
    auto number = [&](const char *flag, auto &out) {
      std::string text;
      if (!value(flag, text))
        return false;
      char *end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || v < 0)
        throw RuntimeError(std::string(flag) + " expects a non-negative "
                                               "number, got '" +
                           text + "'");
      out = std::remove_reference_t<decltype(out)>(v);
      return true;
    };
    // A flag, or --flag=true / --flag=false (as a config writes it).
    auto flag = [&](const char *name, bool &out) {
      std::string text;
      if (arg == name)
        text = "true";
      else if (!value(name, text))
        return false;
      if (text != "true" && text != "false")
        throw RuntimeError(std::string(name) + " expects true or false, got '" +
                           text + "'");
      out = text == "true";
      return true;
    };
    try {
      if (arg == "--help" || arg == "-h") {
        printUsage();
        return 0;
      }
      if (value("--weights", weights) || value("--data", data) ||
          value("--backend", backendName) || value("--save", save) ||
          value("--resume", resume) || value("--metrics", metrics) ||
          value("--cache-dir", cacheDir) || value("--progress", progressName) ||
          value("--config", configPath) ||
          value("--export-weights", exportDir) ||
          value("--max-shard-size", shardSize) ||
          number("--steps", loop.steps) || number("--seed", seed) ||
          number("--timeout", timeout) ||
          flag("--forward-only", loop.forwardOnly) ||
          flag("--quiet", loop.quiet) ||
          flag("--check-fused-kernels", checkFused) ||
          flag("--tf32", loop.tf32) ||
          flag("--cuda-graph", loop.cudaGraph))
        continue;
    } catch (const RuntimeError &e) {
      return fail(e.what());
    }
    if (arg.rfind("--grad-accum", 0) == 0)
      return fail("micro-batches are chosen when the program is compiled "
                  "(glimmer-train --grad-accum=N, or microbatches=N in "
                  "--spmd): it is compiled for the micro-batch's shape");
    if (arg.rfind("-", 0) == 0)
      return fail("unknown option '" + arg + "' (see --help)");
    else if (program.empty())
      program = arg;
    else
      return fail("more than one program given ('" + program + "', '" + arg +
                  "')");
  }
  if (program.empty())
    return fail("no program given (see --help)");
  if (weights.empty())
    return fail("--weights is required");
  if (data.empty())
    return fail("--data is required");
  Backend backend;
  if (!parseBackend(backendName, backend))
    return fail("unknown backend '" + backendName + "' (available: cpu, cuda)");
  ProgressMode progressMode;
  if (!parseProgressMode(progressName, progressMode))
    return fail("--progress must be auto, always or never, got '" +
                progressName + "'");
  try {
    setWeightOptions(loop, weights, exportDir, shardSize);
  } catch (const RuntimeError &e) {
    return fail(e.what());
  }
  loop.savePath = save;
  loop.resumePath = resume;
  loop.metricsPath = metrics;

  if (cacheDir.empty())
    cacheDir = defaultCacheDir();
  if (checkFused && backend != Backend::CPU)
    return fail("--check-fused-kernels checks the fused kernels' host build "
                "against the ops the CPU runs: it needs --backend=cpu (on a "
                "GPU, GLIMMER_CUDA_FUSION=check compares the kernels with "
                "their ops)");
  try {
    applyLoopSettings(loop, backend);
  } catch (const RuntimeError &e) {
    return fail(e.what());
  }
  // The files named on the command line, after the settings (which need
  // none) and before a program is built.
  std::string fileError;
  if (!checkInputFile("program", program, fileError))
    return fail(fileError);
  for (auto [flag, path] :
       {std::pair{"--save", &save}, std::pair{"--metrics", &metrics}})
    if (!path->empty() && !checkOutputFile(flag, *path, fileError))
      return fail(fileError);
  bool live = isLiveProgress(progressMode);
  Progress progress("glimmer-run", std::cerr, live, !loop.quiet);
  loop.liveProgress = live;
  std::unique_ptr<FusedKernelChecker> checker;
  if (checkFused) {
    checker = std::make_unique<FusedKernelChecker>(
        buildOptions(cacheDir, progress));
    setFusedCheck([&checker](FusedKernels &kernels, int index,
                             const std::vector<Tensor> &inputs,
                             const std::vector<Tensor> &results) {
      checker->check(kernels, index, inputs, results);
    });
  }

  try {
    std::string error;
    TrainingData trainingData;
    if (data.rfind("synthetic:", 0) == 0) {
      SyntheticConfig cfg;
      cfg.seed = seed;
      parseSyntheticSpec(data.substr(10), cfg);
      // Written where no one else can plant or swap the file.
      if (!preparePrivateDirectory(cacheDir, error))
        return fail(error);
      std::string path = cacheDir + "/synthetic-" + std::to_string(getpid()) +
                         ".safetensors";
      writeSyntheticBatch(cfg, path);
      auto batch = SafetensorsFile::read(path, error);
      std::remove(path.c_str());
      if (!batch)
        return fail("--data: " + error);
      trainingData.shards.paths = {path};
      trainingData.first = std::move(batch);
    } else {
      try {
        trainingData = TrainingData::open(data);
      } catch (const RuntimeError &e) {
        return fail("--data: " + e.message);
      }
    }
    std::string library = endsWith(program, ".cpp")
                              ? buildProgramFile(program, cacheDir, progress)
                              : program;
    auto compiled = CompiledProgram::load(library, error);
    if (!compiled)
      return fail(error);
    if (loop.cudaGraph) {
      try {
        checkCudaGraphProgram(*compiled);
      } catch (const RuntimeError &e) {
        return fail(e.what());
      }
    }
    auto ms = std::chrono::milliseconds(int64_t(timeout * 1000));

    std::unique_ptr<Ranks> ranks;
    std::optional<int64_t> processRank;
    std::string launchError;
    std::optional<LaunchInfo> launch = launchFromEnvironment(launchError);
    if (!launchError.empty())
      return fail(launchError);
    if (launch && launch->worldSize > 1) {
      if (backend != Backend::CUDA)
        return fail("started by " + launch->launcher +
                    " with several processes: one process per rank needs "
                    "--backend=cuda (the CPU backend runs ranks as threads "
                    "of one process)");
      if (launch->worldSize != compiled->layout().worldSize())
        return fail("the program was partitioned for " +
                    std::to_string(compiled->layout().worldSize()) +
                    " ranks (layout '" + compiled->layout().print() +
                    "') but " + launch->launcher + " started " +
                    std::to_string(launch->worldSize) + " processes");
      Device device = Device::cuda(int(launch->localRank));
      DeviceScope scope(device);
      auto comm = processCommunicator(*launch, ms);
      ranks = std::make_unique<Ranks>(compiled->layout(), backend,
                                      launch->rank, device, std::move(comm));
      processRank = launch->rank;
    }
    if (!ranks)
      ranks = std::make_unique<Ranks>(compiled->layout(), backend, ms);
    progress.finish();
    if (!processRank || *processRank == 0)
      progress.note(library + ": layout '" +
                    (compiled->layout().print().empty()
                         ? std::string("unsharded")
                         : compiled->layout().print()) +
                    "', " + std::to_string(compiled->layout().worldSize()) +
                    " rank(s) on " + backendName);
    runLoop(*compiled, trainingData, *ranks, loop, std::cout, std::cerr);
    if (checker)
      std::cout << checker->summary() << std::endl;
  } catch (const std::exception &e) {
    return fail(std::string("the program failed: ") + e.what());
  }
  return 0;
}
