//===- Trainer.h - Run compiled programs on ranks ---------------*- C++ -*-===//
//
// The run half of compile-then-train, with no compiler in it: a compiled
// program (a shared library built from `glimmer-translate --emit-cpp` or
// glimmer-train's generated C++) carries a manifest describing each
// function's arguments and results by role and state_dict name; this file
// loads it, places ranks (threads of this process, or this process alone
// when a launcher started one process per rank), binds data, weights and
// optimizer state, and trains.
//
// Every rank keeps its own parameters and optimizer state, on its own
// device. The programs return complete values (partial sums are reduced by
// collectives in the program), so each rank runs the optimizer step itself
// and no reduction happens outside the program. Arguments sharded over mesh
// axes (FSDP) hold the rank's piece, cut from the full weights.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_TRAINER_H
#define GLIMMER_RT_TRAINER_H

#include "glimmer_rt/Comm.h"
#include "glimmer_rt/DataStream.h"
#include "glimmer_rt/Loader.h"
#include "glimmer_rt/RankContext.h"
#include "glimmer_rt/Synthetic.h"

#include "glimmer_contract/Manifest.h"

#include <chrono>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace glimmer_rt {

// The manifest (glimmer_contract/Manifest.h) describes the functions.
using glimmer::ProgramInfo;
using glimmer::Role;
using glimmer::Signature;
using glimmer::Slot;
using glimmer::TracedInput;
using glimmer::VisionMergeCheck;

/// A function of a loaded program: its manifest entry and its entry point.
struct Function : Signature {
  EntryFn entry = nullptr;
};

/// A loaded program: its library and its manifest, entries bound.
class CompiledProgram {
public:
  /// dlopens `libraryPath` and reads its manifest; null and `error` on
  /// failure.
  static std::unique_ptr<CompiledProgram> load(const std::string &libraryPath,
                                               std::string &error);
  const ProgramInfo &info() const { return programInfo; }
  const SpmdContext &layout() const { return programInfo.layout; }
  /// Throws RuntimeError when the program has no such function.
  const Function &function(const std::string &name) const;
  bool hasFunction(const std::string &name) const {
    return functions.count(name) != 0;
  }

private:
  std::unique_ptr<LoadedProgram> library;
  ProgramInfo programInfo;
  /// Every function of the manifest, its entry point bound.
  std::map<std::string, Function> functions;
};

enum class Backend { CPU, CUDA };
/// "cpu" / "cuda"; false on anything else.
bool parseBackend(const std::string &text, Backend &backend);

/// The ranks of a layout this process runs, their devices and their
/// communicators. Thread mode runs every rank as a thread of this process
/// (CPU: in-process communicator; CUDA: one GPU per rank, NCCL). Process
/// mode runs one rank here, with a communicator to the other processes.
class Ranks {
public:
  /// Thread mode.
  Ranks(const SpmdContext &layout, Backend backend,
        std::chrono::milliseconds timeout = std::chrono::seconds(60));
  /// Process mode: this process is `rank` of `layout`, on `device`.
  Ranks(const SpmdContext &layout, Backend backend, int64_t rank,
        Device device, std::unique_ptr<Communicator> comm);
  ~Ranks();
  Ranks(const Ranks &) = delete;
  Ranks &operator=(const Ranks &) = delete;

  const SpmdContext &layout() const { return spmd; }
  Backend backend() const { return kind; }
  /// The ranks run by this process, in order.
  const std::vector<int64_t> &local() const { return localRanks; }
  bool runsAll() const {
    return int64_t(localRanks.size()) == spmd.worldSize();
  }
  Device device(int64_t rank) const;

  /// Runs fn(rank) for every local rank, each on its own thread with its
  /// rank context, communicator and device current. When a rank throws, the
  /// others' collectives are aborted and the first failure (not the aborts
  /// it caused) is rethrown as RuntimeError("rank N: ...").
  void run(const std::function<void(int64_t rank)> &fn);

  struct Impl;

private:
  SpmdContext spmd;
  Backend kind;
  std::vector<int64_t> localRanks;
  std::unique_ptr<Impl> impl;
};

/// Checks `data` against what the program assumes of a batch; throws
/// RuntimeError when the number of image tokens differs from the vision
/// encoder's rows, or an input the trace held as constants differs from the
/// traced example's.
void checkBatch(const ProgramInfo &program, const SafetensorsFile &data);

/// Runs @forward on `data` with the weights in `weightsPath`; returns the
/// loss. Throws RuntimeError on bad data or a failing kernel.
double runForward(const CompiledProgram &program,
                  const std::string &weightsPath, const SafetensorsFile &data,
                  Ranks &ranks);

/// Training state and steps over a program compiled for training
/// (@grad_step and @apply_step).
class Trainer {
public:
  /// Loads the parameters from `weightsPath` (each rank's piece where an
  /// argument is sharded) onto the ranks' devices and zeroes the optimizer
  /// state. Throws RuntimeError.
  Trainer(const CompiledProgram &program, const std::string &weightsPath,
          Ranks &ranks);

  /// A batch's data inputs by name, on the host.
  using Inputs = std::map<std::string, Tensor>;

  struct StepResult {
    int64_t step;
    double loss;
    double gradNorm;
    /// Pipeline runs, per local rank: seconds spent in the stage's
    /// functions, and the most bytes of boundary activations it kept
    /// between a micro-batch's forward and backward (empty without pp).
    std::vector<double> busySeconds;
    std::vector<size_t> stashPeakBytes;
    /// Under useCudaGraphs, how the step ran: "warm-up", "captured" (and
    /// replayed), "replayed", or "off" (without a graph); else empty.
    std::string graph;
  };
  /// One optimizer step on the batch `data`: @grad_step runs once per
  /// micro-batch the program was compiled for (its layout's
  /// `microbatches`), each on its piece of the batch; their losses and
  /// gradients (each a share of the global token mean) are summed.
  StepResult step(const SafetensorsFile &data);
  /// A batch read and copied to the devices once: each local rank's data
  /// inputs on its device. Steps on it read and copy nothing (glimmer-run
  /// trains every step on its one --data batch).
  struct Batch {
    /// Indexed like ranks.local().
    std::vector<Inputs> perRank;
  };
  /// Checks `data` as step() does and binds it. Throws RuntimeError.
  Batch prepare(const SafetensorsFile &data) const;
  /// prepare() in two halves: the checks and the host tensors of `data`
  /// (touching no training state, so a reader thread may run it while a
  /// step runs), and their copies on each local rank's device.
  Inputs read(const SafetensorsFile &data) const;
  Batch place(const Inputs &inputs) const;
  StepResult step(const Batch &batch);

  /// Parameters (state_dict keys, full tensors), optimizer state and the
  /// step count, as a checkpoint (writeCheckpoint). Resuming from it
  /// continues bit-exactly where steps are deterministic (on the CPU; on
  /// GPUs atomics and NCCL's reduction order make them agree to rounding).
  void save(const std::string &path) const;
  void resume(const std::string &path);

  int64_t stepsDone() const { return steps; }

  /// Runs each rank's steps as a CUDA graph (--cuda-graph): the next step
  /// runs as usual, the one after it is captured (DeviceGraph) and every
  /// later one replays the capture, its data and step number copied to
  /// where the capture reads them. Where the step cannot be captured (an
  /// op in it reads device data on the host; an optimizer update that does
  /// not run in place, whose result a replay would not see), `note` says
  /// why and the steps run without a graph. Throws RuntimeError where
  /// checkCudaGraphProgram or checkCudaGraphBackend does.
  void useCudaGraphs(std::function<void(const std::string &)> note);
  ~Trainer();
  /// The full parameters, on the host (sharded ones reassembled).
  std::map<std::string, Tensor> parameters() const;

private:
  using State = std::map<std::string, Tensor>;
  struct RankState {
    State params, buffers, expAvg, expAvgSq;
  };
  /// What a rank runs: @grad_step and @apply_step, or its pipeline
  /// stage's @stage_<s>, @stage_<s>_grad and @apply_step_<s>.
  struct Functions {
    /// Without stages: @grad_step.
    const Function *grad = nullptr, *apply = nullptr;
    /// The rank's pipeline stages (interleaved: stage r + c * pp for its
    /// chunk c), forward and backward.
    std::vector<int64_t> stages;
    std::vector<const Function *> forwards, grads;
    /// Stage 0's once-per-step work (@prologue, @prologue_grad), if any.
    const Function *prologue = nullptr, *prologueGrad = nullptr;
    /// Every function of the rank that takes state.
    std::vector<const Function *> all() const;
  };
  size_t indexOf(int64_t rank) const;
  /// Runs @grad_step on `data` once per micro-batch; returns the loss and
  /// adds the gradients to `grads` (tensors, not waited for).
  Tensor runGrad(int64_t rank, const Inputs &data, State &grads);
  /// Runs @apply_step on `grads` and keeps the new state; returns the norm
  /// (not waited for). `stepInput`, when defined, is the step number's
  /// tensor (a captured graph's).
  Tensor applyStep(int64_t rank, const State &grads,
                   const Tensor &stepInput = {});
  struct RankGraph;
  /// One rank's step without a graph; its loss and norm are read.
  void eagerStep(int64_t rank, const Inputs &data, double &loss,
                 double &norm);
  /// One rank's step under useCudaGraphs.
  void graphStep(int64_t rank, const Inputs &data, double &loss,
                 double &norm);
  /// Forgets the captured graphs (the state they read was replaced).
  void dropGraphs();
  StepResult pipelineStep(const Batch &batch);
  std::vector<Tensor> bind(const Function &fn, int64_t rank,
                           const Inputs *data,
                           const State &grads) const;
  /// Full (host) tensors of `which` state, reassembled from the ranks.
  State gather(State RankState::*which) const;
  void load(const SafetensorsFile &file, const std::string &prefix,
            State RankState::*which, Role role, const char *what);

  const CompiledProgram &program;
  Ranks &ranks;
  /// Indexed like ranks.local().
  std::vector<RankState> states;
  std::vector<Functions> functions;
  /// Slots of the state (from @apply_step's arguments), by name.
  std::map<std::string, Slot> paramSlots, bufferSlots;
  int64_t steps = 0;
  /// Set when an optimizer update failed after taking the state it
  /// replaces (see applyStep): later steps and reads of the state refuse
  /// to run (requireState).
  bool stateLost = false;
  void requireState() const;
  /// Per local rank, under useCudaGraphs (else empty).
  std::vector<std::unique_ptr<RankGraph>> graphs;
  std::function<void(const std::string &)> graphNote;
};

/// What the training loop of glimmer-train and glimmer-run does.
/// Writes a checkpoint: `tensors` (parameters under their state_dict names,
/// AdamW moments under optimizer.exp_avg. / optimizer.exp_avg_sq.), the
/// step count and a checksum of the content (verified by Trainer::resume),
/// atomically: a crash mid-write leaves an older file at `path` intact.
/// `extra` adds metadata entries. Throws RuntimeError on failure.
void writeCheckpoint(const std::string &path,
                     const std::vector<TensorView> &tensors, int64_t step,
                     const std::map<std::string, std::string> &extra = {});

struct LoopOptions {
  std::string weightsPath;
  /// A safetensors file or Hugging Face checkpoint directory whose tensors
  /// bind by state_dict name over `weightsPath` (bindCheckpoint).
  std::string pretrainedPath;
  /// Where the trained parameters are written as a Hugging Face checkpoint
  /// (exportHfCheckpoint), with shards of at most `maxShardBytes`.
  std::string exportWeightsDir;
  uint64_t maxShardBytes = 5'000'000'000;
  int64_t steps = 10;
  /// Run @forward once and report the loss instead of training.
  bool forwardOnly = false;
  std::string savePath, resumePath;
  /// Appends one JSON line per step.
  std::string metricsPath;
  /// Prefix of progress lines ("[glimmer-train] ...").
  std::string tool = "glimmer-train";
  bool quiet = false;
  /// Redraw a progress bar of the steps on `err` in place (a terminal; see
  /// glimmer_rt/Progress.h) instead of printing nothing there per step.
  bool liveProgress = false;
  /// f32 GEMMs on GPUs may use TF32 (setAllowTf32); CUDA only.
  bool tf32 = false;
  /// Steps replayed as CUDA graphs (Trainer::useCudaGraphs); CUDA only.
  bool cudaGraph = false;
};

/// Throws RuntimeError when `program` has pipeline stages, whose steps
/// --cuda-graph does not capture.
void checkCudaGraphProgram(const CompiledProgram &program);
/// Throws RuntimeError unless `backend` is CUDA, which --cuda-graph needs.
void checkCudaGraphBackend(Backend backend);

/// Applies the process-wide settings of `options` (--tf32) for `backend`
/// and checks --cuda-graph against them;
/// throws RuntimeError when one does not apply to it. Call before runLoop.
void applyLoopSettings(const LoopOptions &options, Backend backend);

/// Runs the loop: one "step N | loss L | grad_norm G | T tok/s" line per
/// step on `out` (from the process that runs rank 0), progress on `err`.
/// Step k trains on shard k mod N of `data`; one shard is read and copied
/// to the devices once, several are read and checked one step ahead by a
/// reader thread. --forward-only runs the first shard. Throws RuntimeError
/// (a shard's problem named with its file when `data` is a stream).
void runLoop(const CompiledProgram &program, const TrainingData &data,
             Ranks &ranks, const LoopOptions &options, std::ostream &out,
             std::ostream &err);

/// Parses "batch=2,seq=16,images=1,vocab=V,image-size=S,patch=P,channels=C"
/// into `cfg` (keys not given keep their values). Throws RuntimeError.
void parseSyntheticSpec(const std::string &spec, SyntheticConfig &cfg);

} // namespace glimmer_rt

#endif // GLIMMER_RT_TRAINER_H
