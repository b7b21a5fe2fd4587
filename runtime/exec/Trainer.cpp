//===- Trainer.cpp - Training state and steps -----------------------------===//

#include "glimmer_rt/Trainer.h"

#include "Binding.h"
#include "glimmer_rt/DeviceGraph.h"
#include "WeightSlicing.h"

using namespace glimmer_rt;
using namespace glimmer_rt::detail;

/// A rank's step as a CUDA graph (--cuda-graph): warmed up by one step run
/// as usual, captured on the next, replayed after that.
struct Trainer::RankGraph {
  enum class Phase { Warm, Capture, Replay, Off } phase = Phase::Warm;
  std::unique_ptr<DeviceGraph> graph;
  /// The captured step's data inputs and step number, at the addresses it
  /// reads them from; its loss and norm, where each replay writes them.
  Inputs inputs;
  Tensor step, loss, norm;
  /// Set by applyStep: the first result the update did not write in place.
  std::string notInPlace;
  /// How the last step ran (StepResult::graph).
  const char *last = "";
};

Trainer::Trainer(const CompiledProgram &program, const std::string &weightsPath,
                 Ranks &ranks)
    : program(program), ranks(ranks), states(ranks.local().size()) {
  if (program.layout().worldSize() != ranks.layout().worldSize())
    throw RuntimeError("the program was partitioned for " +
                       std::to_string(program.layout().worldSize()) +
                       " ranks but runs on " +
                       std::to_string(ranks.layout().worldSize()));
  const SpmdContext &layout = program.layout();
  for (int64_t rank : ranks.local()) {
    Functions f;
    // Stage functions: pipeline stages, or micro-batches with a prologue.
    if (!program.hasFunction("stage_0")) {
      f.grad = &program.function("grad_step");
      f.apply = &program.function("apply_step");
    } else {
      int64_t r = RankContext::forRank(layout, rank).coord(MeshAxis::Pp);
      for (int64_t c = 0; c < layout.virtualStages; ++c) {
        int64_t stage = r + c * layout.pp();
        std::string s = std::to_string(stage);
        f.stages.push_back(stage);
        f.forwards.push_back(&program.function("stage_" + s));
        f.grads.push_back(&program.function("stage_" + s + "_grad"));
      }
      f.apply = &program.function("apply_step_" + std::to_string(r));
      if (r == 0 && program.hasFunction("prologue")) {
        f.prologue = &program.function("prologue");
        f.prologueGrad = &program.function("prologue_grad");
      }
    }
    functions.push_back(f);
    // Parameters the loss does not reach (a vision tower's unused last
    // layer) are arguments of @grad_step but not of @apply_step.
    for (const Function *fn : f.all())
      for (const Slot &slot : fn->arguments) {
        if (slot.role == Role::Buffer)
          bufferSlots[slot.name] = slot;
        else if (slot.role == Role::Parameter)
          paramSlots[slot.name] = slot;
      }
  }
  auto weights = readFile(weightsPath);
  load(*weights, "", &RankState::params, Role::Parameter, "the weights");
  load(*weights, "", &RankState::buffers, Role::Buffer, "the weights");
  // Zero optimizer state, shaped like each rank's parameters.
  for (size_t i = 0; i < states.size(); ++i)
    for (const Slot &slot : functions[i].apply->arguments) {
      if (slot.role != Role::ExpAvg && slot.role != Role::ExpAvgSq)
        continue;
      Tensor z =
          Tensor::zeros(slot.dtype, slot.shape, ranks.device(ranks.local()[i]));
      (slot.role == Role::ExpAvg ? states[i].expAvg
                                 : states[i].expAvgSq)[slot.name] = z;
    }
}

size_t Trainer::indexOf(int64_t rank) const {
  size_t index = 0;
  while (ranks.local()[index] != rank)
    ++index;
  return index;
}

std::vector<const Function *> Trainer::Functions::all() const {
  std::vector<const Function *> fns{apply};
  if (grad)
    fns.push_back(grad);
  fns.insert(fns.end(), grads.begin(), grads.end());
  if (prologueGrad)
    fns.push_back(prologueGrad);
  return fns;
}

/// Whether one of `fns` takes the state `name` of `role`.
static bool takes(const std::vector<const Function *> &fns,
                  const std::string &name, Role role) {
  for (const Function *fn : fns)
    for (const Slot &slot : fn->arguments)
      if (slot.name == name &&
          (slot.role == role ||
           (role == Role::Parameter &&
            (slot.role == Role::ExpAvg || slot.role == Role::ExpAvgSq))))
        return true;
  return false;
}

void Trainer::load(const SafetensorsFile &file, const std::string &prefix,
                   State RankState::*which, Role role, const char *what) {
  const std::map<std::string, Slot> &slots =
      role == Role::Buffer ? bufferSlots : paramSlots;
  bool checkpoint = std::string(what).rfind("checkpoint", 0) == 0;
  for (const auto &[name, slot] : slots) {
    Slot s = slot;
    // SGD keeps no moments: only the state the optimizer has is loaded;
    // and each pipeline stage only its own.
    std::vector<size_t> holders;
    for (size_t i = 0; i < states.size(); ++i) {
      bool holds = role == Role::ExpAvg || role == Role::ExpAvgSq
                       ? (states[i].*which).count(name) > 0
                       : takes(functions[i].all(), name, role);
      if (holds)
        holders.push_back(i);
    }
    if (holders.empty())
      continue;
    if (checkpoint) {
      // A checkpoint resumes bit-exactly only in its own precision.
      const TensorInfo *info = file.find(prefix + name);
      if (info && info->dtype != slot.dtype)
        throw RuntimeError("checkpoint tensor '" + prefix + name + "' is " +
                           std::string(dtypeName(info->dtype)) +
                           " but the program runs in " +
                           std::string(dtypeName(slot.dtype)));
    }
    Tensor full = readFull(file, program.layout(), s, prefix + name, what);
    for (size_t i : holders) {
      int64_t r = ranks.local()[i];
      (states[i].*which)[name] =
          pieceFor(full, program.layout(), s, r, ranks.device(r));
    }
  }
}

std::vector<Tensor> Trainer::bind(const Function &fn, int64_t rank,
                                  const Inputs *data,
                                  const State &grads) const {
  const RankState &state = states[indexOf(rank)];
  Device device = ranks.device(rank);
  std::vector<Tensor> inputs;
  for (const Slot &slot : fn.arguments) {
    switch (slot.role) {
    case Role::Input:
      inputs.push_back(data->at(slot.name).to(device));
      break;
    case Role::Parameter:
      inputs.push_back(state.params.at(slot.name));
      break;
    case Role::Buffer:
      inputs.push_back(state.buffers.at(slot.name));
      break;
    case Role::Grad:
      inputs.push_back(grads.at(slot.name));
      break;
    case Role::ExpAvg:
      inputs.push_back(state.expAvg.at(slot.name));
      break;
    case Role::ExpAvgSq:
      inputs.push_back(state.expAvgSq.at(slot.name));
      break;
    case Role::Step:
      inputs.push_back(full(DType::I64, {}, double(steps + 1)));
      break;
    case Role::Microbatch:
      // Set per call (withMicrobatch).
      inputs.push_back(full(DType::I64, {}, 0));
      break;
    case Role::Activation:
    case Role::Cotangent:
    case Role::ActivationGrad:
    case Role::Prologue:
    case Role::PrologueGrad:
      // Pipeline boundaries: set per call.
      inputs.push_back(Tensor());
      break;
    case Role::Other:
      throw RuntimeError("a compiled argument has no name");
    }
  }
  return inputs;
}

Trainer::Batch Trainer::prepare(const SafetensorsFile &data) const {
  return place(read(data));
}

Trainer::Inputs Trainer::read(const SafetensorsFile &data) const {
  std::vector<const Function *> fns;
  for (const Functions &f : functions)
    for (const Function *fn : f.all())
      fns.push_back(fn);
  Inputs inputs = readInputs(fns, program.layout(), data);
  // After binding, so that a mis-shaped batch is reported as such.
  checkBatch(program.info(), data);
  return inputs;
}

Trainer::Batch Trainer::place(const Inputs &inputs) const {
  Batch batch;
  for (int64_t rank : ranks.local()) {
    Inputs onDevice;
    for (const auto &[name, tensor] : inputs)
      onDevice[name] = tensor.to(ranks.device(rank));
    batch.perRank.push_back(std::move(onDevice));
  }
  return batch;
}

Trainer::StepResult Trainer::step(const SafetensorsFile &data) {
  return step(prepare(data));
}

Trainer::StepResult Trainer::step(const Batch &batch) {
  requireState();
  if (batch.perRank.size() != ranks.local().size())
    throw RuntimeError("the batch was prepared for another set of ranks");
  if (!functions[0].stages.empty())
    return pipelineStep(batch);
  std::vector<double> losses(states.size()), norms(states.size());
  ranks.run([&](int64_t rank) {
    size_t index = indexOf(rank);
    const Inputs &data = batch.perRank[index];
    if (!graphs.empty() && graphs[index]->phase != RankGraph::Phase::Off) {
      graphStep(rank, data, losses[index], norms[index]);
      return;
    }
    eagerStep(rank, data, losses[index], norms[index]);
  });
  ++steps;
  StepResult result{steps, losses[0], norms[0], {}, {}, ""};
  if (!graphs.empty())
    result.graph = graphs[0]->last;
  return result;
}

void Trainer::eagerStep(int64_t rank, const Inputs &data, double &loss,
                        double &norm) {
  State grads;
  Tensor l = runGrad(rank, data, grads);
  Tensor n = applyStep(rank, grads);
  // The loss is read after the update is queued: reading it first would
  // wait for the backward to finish, leaving the device idle while the
  // host queues the optimizer step.
  norm = n.item(0);
  loss = l.item(0);
}

Tensor Trainer::runGrad(int64_t rank, const Inputs &data, State &grads) {
  size_t index = indexOf(rank);
  const Function &grad = *functions[index].grad;
  std::vector<Tensor> args = bind(grad, rank, &data, {});
  Tensor loss;
  // Each micro-batch's loss and gradients are its share of the global
  // token mean (the program divides by the whole batch's count), so the
  // step's are their sums.
  for (int64_t micro = 0; micro < program.layout().microbatches; ++micro) {
    Frame frame;
    frame.inputs = withMicrobatch(grad, args, micro);
    grad.entry(frame);
    loss = micro == 0 ? frame.outputs[0] : add(loss, frame.outputs[0]);
    addGradients(grads, grad, frame.outputs);
  }
  // `args` holds the parameters: dropped here, so that the update may
  // replace them in place.
  return loss;
}

Tensor Trainer::applyStep(int64_t rank, const State &grads,
                          const Tensor &stepInput) {
  size_t index = indexOf(rank);
  const Function &apply = *functions[index].apply;
  Frame frame;
  frame.inputs = bind(apply, rank, nullptr, grads);
  if (stepInput.defined())
    for (size_t i = 0; i < apply.arguments.size(); ++i)
      if (apply.arguments[i].role == Role::Step)
        frame.inputs[i] = stepInput;
  RankState &state = states[index];
  auto target = [&](Role role) -> State & {
    return role == Role::Parameter ? state.params
           : role == Role::ExpAvg  ? state.expAvg
                                   : state.expAvgSq;
  };
  // The update replaces the parameters and moments it returns: the frame
  // takes the trainer's handles on them, so that where nothing else holds
  // them (Tensor::soleOwner) the update runs in place and the old and the
  // new optimizer state (12 bytes a parameter in f32) never coexist.
  std::vector<const void *> before(apply.results.size(), nullptr);
  for (size_t i = 1; i < apply.results.size(); ++i) {
    State &held = target(apply.results[i].role);
    auto it = held.find(apply.results[i].name);
    if (it != held.end())
      before[i] = it->second.raw();
    held.erase(apply.results[i].name);
  }
  try {
    apply.entry(frame);
  } catch (...) {
    stateLost = true;
    throw;
  }
  for (size_t i = 1; i < apply.results.size(); ++i) {
    target(apply.results[i].role)[apply.results[i].name] = frame.outputs[i];
    if (!graphs.empty() && graphs[index]->notInPlace.empty() &&
        frame.outputs[i].raw() != before[i])
      graphs[index]->notInPlace = apply.results[i].name;
  }
  return frame.outputs[0];
}

void glimmer_rt::checkCudaGraphProgram(const CompiledProgram &program) {
  if (program.hasFunction("stage_0"))
    throw RuntimeError("--cuda-graph captures @grad_step and @apply_step; "
                       "programs with pipeline stages run their stages "
                       "without it");
}

void glimmer_rt::checkCudaGraphBackend(Backend backend) {
  if (backend != Backend::CUDA)
    throw RuntimeError("--cuda-graph replays each step as a CUDA graph, so "
                       "it needs --backend=cuda");
}

void Trainer::useCudaGraphs(std::function<void(const std::string &)> note) {
  checkCudaGraphProgram(program);
  checkCudaGraphBackend(ranks.backend());
  graphNote = std::move(note);
  graphs.clear();
  for (size_t i = 0; i < states.size(); ++i)
    graphs.push_back(std::make_unique<RankGraph>());
}

Trainer::~Trainer() = default;

void Trainer::dropGraphs() {
  for (auto &g : graphs)
    *g = RankGraph();
}

void Trainer::graphStep(int64_t rank, const Inputs &data, double &loss,
                        double &norm) {
  size_t index = indexOf(rank);
  RankGraph &g = *graphs[index];
  Device device = ranks.device(rank);
  auto eager = [&] { eagerStep(rank, data, loss, norm); };
  auto off = [&](const std::string &why) {
    g = RankGraph();
    g.phase = RankGraph::Phase::Off;
    g.last = "off";
    if (graphNote && rank == ranks.local().front())
      graphNote("--cuda-graph: " + why + "; the steps run without a graph");
  };
  switch (g.phase) {
  case RankGraph::Phase::Off:
    g.last = "off";
    return eager();
  case RankGraph::Phase::Warm:
    // The first step runs as it would without a graph (cuBLAS and cuDNN
    // plans, fused kernels and the allocator's cache are set up by it),
    // and shows whether the update replaces the state in place: a replay
    // reads the state where the capture found it.
    g.notInPlace.clear();
    g.last = "warm-up";
    eager();
    if (!g.notInPlace.empty())
      off("the optimizer update of '" + g.notInPlace +
          "' does not run in place, so a replay would not see it");
    else
      g.phase = RankGraph::Phase::Capture;
    return;
  case RankGraph::Phase::Capture: {
    // The captured step reads its data and step number from tensors of
    // its own, refreshed before each replay.
    for (const auto &[name, tensor] : data)
      g.inputs[name] = tensor.clone();
    g.step = full(DType::I64, {}, double(steps + 1));
    std::string why;
    {
      auto graph = std::make_unique<DeviceGraph>(device);
      Tensor l, n;
      g.notInPlace.clear();
      try {
        State grads;
        l = runGrad(rank, g.inputs, grads);
        n = applyStep(rank, grads, g.step);
      } catch (const RuntimeError &e) {
        why = e.message;
      }
      std::string endWhy;
      bool ok = graph->end(endWhy);
      if (why.empty() && !ok)
        why = endWhy;
      // The capture ran nothing: state it did not update in place holds
      // no values yet (the warm-up step showed the update in place).
      if (why.empty() && !g.notInPlace.empty()) {
        stateLost = true;
        why = "the optimizer update of '" + g.notInPlace +
              "' did not run in place";
      }
      if (why.empty()) {
        g.graph = std::move(graph);
        g.loss = l;
        g.norm = n;
      }
    }
    if (!why.empty()) {
      // Nothing captured ran, so the state is as the last step left it,
      // unless the update had taken it when the capture failed.
      if (stateLost)
        throw RuntimeError("--cuda-graph: the step could not be captured (" +
                           why + ")");
      off("the step could not be captured (" + why + ")");
      return eager();
    }
    g.phase = RankGraph::Phase::Replay;
    g.last = "captured";
    break;
  }
  case RankGraph::Phase::Replay:
    g.last = "replayed";
    for (const auto &[name, tensor] : data)
      copyInto(g.inputs.at(name), tensor);
    copyInto(g.step, full(DType::I64, {}, double(steps + 1)));
    break;
  }
  g.graph->replay();
  norm = g.norm.item(0);
  loss = g.loss.item(0);
}

void Trainer::requireState() const {
  if (stateLost)
    throw RuntimeError("an earlier optimizer update failed after taking the "
                       "state it replaces: the parameters and optimizer "
                       "state are lost; start again from a checkpoint");
}

Trainer::State Trainer::gather(State RankState::*which) const {
  requireState();
  const SpmdContext &layout = program.layout();
  if (layout.pp() > 1 && !ranks.runsAll())
    throw RuntimeError("pipeline stages hold their parameters on ranks in "
                       "other processes; saving them needs all ranks in one "
                       "process (thread mode)");
  State out;
  // Each tensor from the first rank that holds it (pipeline stages hold
  // their own parameters).
  std::map<std::string, size_t> holder;
  for (size_t i = 0; i < states.size(); ++i)
    for (const auto &entry : states[i].*which)
      holder.emplace(entry.first, i);
  for (const auto &[name, index] : holder) {
    const Tensor &tensor = (states[index].*which).at(name);
    auto slotIt = paramSlots.find(name);
    const Slot *slot = slotIt == paramSlots.end() ? nullptr : &slotIt->second;
    if (!slot || !slot->isSharded()) {
      out[name] = tensor.to(Device::cpu());
      continue;
    }
    if (!ranks.runsAll())
      throw RuntimeError("'" + name +
                         "' is sharded over ranks in other "
                         "processes; saving sharded state needs all ranks "
                         "in one process (thread mode)");
    out[name] = assemble(
        *slot, layout, RankContext::forRank(layout, ranks.local()[index]),
        [&](int64_t r) {
          return (states[size_t(r)].*which).at(name).to(Device::cpu());
        });
  }
  return out;
}

std::map<std::string, Tensor> Trainer::parameters() const {
  return gather(&RankState::params);
}
