//===- Loop.cpp - The training loop of glimmer-train and glimmer-run ------===//

#include "glimmer_rt/HfCheckpoint.h"
#include "glimmer_rt/Progress.h"
#include "glimmer_rt/Trainer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

using namespace glimmer_rt;

static std::string g17(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

/// With pipeline stages, each local rank's stage, the seconds its stage
/// functions ran and the most bytes of boundary activations it kept
/// between forwards and backwards, as a JSON member (empty otherwise).
static std::string pipelineMetrics(const SpmdContext &layout,
                                   const std::vector<int64_t> &local,
                                   const Trainer::StepResult &r) {
  if (r.busySeconds.empty())
    return "";
  std::ostringstream os;
  os << ",\"pipeline\":[";
  for (size_t i = 0; i < local.size(); ++i)
    os << (i ? "," : "") << "{\"rank\":" << local[i] << ",\"stage\":"
       << RankContext::forRank(layout, local[i]).coord(MeshAxis::Pp)
       << ",\"busy_s\":" << g17(r.busySeconds[i])
       << ",\"stash_peak_bytes\":" << r.stashPeakBytes[i] << "}";
  os << "]";
  return os.str();
}

/// Which shard a step trained on, as JSON members: its index in the
/// stream and its file.
static std::string shardMetrics(const TrainingData &data, size_t shard) {
  return ",\"shard\":" + std::to_string(shard) + ",\"shard_path\":" +
         nlohmann::json(data.shards.paths[shard])
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void glimmer_rt::applyLoopSettings(const LoopOptions &options,
                                   Backend backend) {
  if (options.tf32 && backend != Backend::CUDA)
    throw RuntimeError("--tf32 lets f32 GEMMs on GPUs use TF32, so it needs "
                       "--backend=cuda (the CPU kernels compute in full f32)");
  setAllowTf32(options.tf32);
  if (!options.cudaGraph)
    return;
  checkCudaGraphBackend(backend);
  if (options.forwardOnly)
    throw RuntimeError("--cuda-graph replays training steps, and "
                       "--forward-only runs none");
  if (profilingEnabled())
    throw RuntimeError("--cuda-graph replays each step with one launch, "
                       "which GLIMMER_PROFILE cannot time op by op: profile "
                       "without --cuda-graph");
}

/// `body()`, with a shard's problem named by its file when `data` is a
/// stream.
template <typename F>
static auto onShard(const TrainingData &data, size_t shard, F &&body)
    -> decltype(body()) {
  try {
    return body();
  } catch (const RuntimeError &e) {
    if (!data.shards.stream)
      throw;
    throw RuntimeError("--data shard '" + data.shards.paths[shard] +
                       "': " + e.message);
  }
}

void glimmer_rt::runLoop(const CompiledProgram &program,
                         const TrainingData &data, Ranks &ranks,
                         const LoopOptions &options, std::ostream &out,
                         std::ostream &err) {
  // One process reports (all ranks compute the same loss and norm).
  bool reports = ranks.local().front() == 0;
  BoundWeights weights(program.info(), options.weightsPath,
                       options.pretrainedPath);
  std::ofstream metrics;
  if (reports && !options.metricsPath.empty()) {
    metrics.open(options.metricsPath, std::ios::app);
    if (!metrics)
      throw RuntimeError("cannot open --metrics file '" + options.metricsPath +
                         "'");
  }
  Progress bar(options.tool, err, options.liveProgress,
               reports && !options.quiet);
  auto progress = [&](const std::string &message) { bar.note(message); };
  // Tokens per step, for throughput: the first integer input's elements.
  int64_t tokens = 0;
  const Function &probe = program.function("forward");
  for (const Slot &slot : probe.arguments)
    if (slot.role == Role::Input && !isFloating(slot.dtype)) {
      tokens = numElements(slot.shape);
      break;
    }
  using Clock = std::chrono::steady_clock;
  if (options.forwardOnly) {
    auto start = Clock::now();
    double loss = onShard(data, 0, [&] {
      return runForward(program, weights.path(), *data.first, ranks);
    });
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (reports) {
      char line[64];
      std::snprintf(line, sizeof(line), "%.3f", seconds);
      out << "step 0 | loss " << g17(loss) << " | " << line << " s"
          << std::endl;
      if (metrics.is_open())
        metrics << "{\"step\":0,\"loss\":" << g17(loss)
                << ",\"seconds\":" << g17(seconds) << shardMetrics(data, 0)
                << "}\n";
    }
    return;
  }
  Trainer trainer(program, weights.path(), ranks);
  if (!options.resumePath.empty()) {
    trainer.resume(options.resumePath);
    progress("resumed from " + options.resumePath + " at step " +
             std::to_string(trainer.stepsDone()));
  }
  if (options.cudaGraph)
    trainer.useCudaGraphs(progress);
  // The most memory any of this process's ranks' devices had handed out
  // during a step (reported with --metrics; on the CPU, the host allocator
  // that all thread ranks share).
  std::vector<Device> devices;
  for (int64_t r : ranks.local())
    if (std::find(devices.begin(), devices.end(), ranks.device(r)) ==
        devices.end())
      devices.push_back(ranks.device(r));
  // The host tensors of a shard, checked against the program. The first
  // shard stays in memory (the tools read it before compiling).
  auto readShard = [&](size_t shard) {
    return onShard(data, shard, [&] {
      if (shard == 0)
        return trainer.read(*data.first);
      return trainer.read(*readSafetensors(data.shards.paths[shard]));
    });
  };
  // Global step k trains on shard k mod N (a resumed run continues the
  // stream). One shard: every step trains on it, read and copied to the
  // devices once. Several: a reader thread reads and checks the next
  // shard while a step runs.
  int64_t first = trainer.stepsDone();
  std::optional<Trainer::Batch> fixed;
  std::unique_ptr<Prefetcher<Trainer::Inputs>> reader;
  if (data.shards.paths.size() == 1)
    fixed = trainer.place(readShard(0));
  else
    reader = std::make_unique<Prefetcher<Trainer::Inputs>>(
        options.steps, /*depth=*/1,
        [&, first](int64_t i) { return readShard(data.shardOf(first + i)); });
  for (int64_t i = 0; i < options.steps; ++i) {
    size_t shard = data.shardOf(first + i);
    // Time the step waited for its shard (0 when the reader keeps up).
    auto waitStart = Clock::now();
    std::optional<Trainer::Batch> next;
    if (reader)
      next = trainer.place(reader->next());
    double dataWait =
        std::chrono::duration<double>(Clock::now() - waitStart).count();
    const Trainer::Batch &batch = reader ? *next : *fixed;
    double waitedBefore = 0;
    size_t allocationsBefore = 0;
    for (Device d : devices) {
      resetPeakDeviceMemory(d);
      waitedBefore += hostWaitSeconds(d);
      allocationsBefore += deviceAllocations(d);
    }
    int64_t cudnnBefore = cudnnAttentionCalls(),
            kernelsBefore = attentionKernelCalls();
    auto start = Clock::now();
    Trainer::StepResult r = trainer.step(batch);
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    // Time the host spent waiting for the devices in this step (the rest
    // went to queueing the work).
    double waited = -waitedBefore;
    for (Device d : devices)
      waited += hostWaitSeconds(d);
    size_t peakBytes = 0, allocations = 0;
    for (Device d : devices) {
      peakBytes = std::max(peakBytes, peakDeviceMemory(d));
      allocations += deviceAllocations(d);
    }
    allocations -= allocationsBefore;
    // The first step is a warm-up (cuBLAS plans, the allocator's cache).
    if (profilingEnabled())
      profileStep(/*count=*/i > 0);
    double tps = seconds > 0 ? double(tokens) / seconds : 0;
    if (!reports)
      continue;
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%.0f", tps);
    bar.print(out, "step " + std::to_string(r.step) + " | loss " + g17(r.loss) +
                       " | grad_norm " + g17(r.gradNorm) + " | " + rate +
                       " tok/s");
    bar.step(i + 1, options.steps, r.loss, tps, seconds);
    if (metrics.is_open())
      metrics << "{\"step\":" << r.step << ",\"loss\":" << g17(r.loss)
              << ",\"grad_norm\":" << g17(r.gradNorm)
              << ",\"tokens_per_s\":" << g17(tps)
              << ",\"seconds\":" << g17(seconds)
              << ",\"data_wait_seconds\":" << g17(dataWait)
              << shardMetrics(data, shard)
              << ",\"peak_device_bytes\":" << peakBytes
              << ",\"host_wait_seconds\":" << g17(waited)
              << ",\"device_allocations\":" << allocations
              << (r.graph.empty() ? std::string()
                                  : ",\"cuda_graph\":\"" + r.graph + "\"")
              << ",\"attention_calls\":{\"cudnn\":"
              << cudnnAttentionCalls() - cudnnBefore << ",\"gpu_kernels\":"
              << attentionKernelCalls() - kernelsBefore << "}"
              << pipelineMetrics(program.layout(), ranks.local(), r) << "}"
              << std::endl;
  }
  bar.finish();
  if (reports && profilingEnabled())
    profileReport(err);
  // One process writes the checkpoint (in process mode the others hold the
  // same replicated state).
  if (!options.savePath.empty() && reports) {
    trainer.save(options.savePath);
    progress("saved step " + std::to_string(trainer.stepsDone()) + " to " +
             options.savePath);
  }
  if (!options.exportWeightsDir.empty() && reports) {
    exportHfCheckpoint(options.exportWeightsDir, trainer.parameters(),
                       options.maxShardBytes);
    progress("exported the parameters to " + options.exportWeightsDir);
  }
}

void glimmer_rt::parseSyntheticSpec(const std::string &spec,
                                    SyntheticConfig &cfg) {
  std::stringstream entries(spec);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    size_t eq = entry.find('=');
    std::string key = entry.substr(0, eq);
    long long value = -1;
    if (eq != std::string::npos) {
      char *end = nullptr;
      value = std::strtoll(entry.c_str() + eq + 1, &end, 10);
      if (*end != '\0' || end == entry.c_str() + eq + 1)
        value = -1;
    }
    int64_t *field = key == "batch"        ? &cfg.batch
                     : key == "seq"        ? &cfg.seqLen
                     : key == "images"     ? &cfg.imagesPerSample
                     : key == "vocab"      ? &cfg.vocab
                     : key == "image-size" ? &cfg.imageSize
                     : key == "patch"      ? &cfg.patch
                     : key == "channels"   ? &cfg.channels
                                           : nullptr;
    if (!field)
      throw RuntimeError("unknown synthetic data key '" + key + "'");
    if (value < 0)
      throw RuntimeError("bad value in synthetic data entry '" + entry + "'");
    *field = value;
  }
}
