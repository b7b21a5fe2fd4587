//===- Pipeline.cpp - Run pipeline stages on micro-batches ----------------===//
//
// Each rank runs its stage's functions (glimmer-split-stages, autodiff): the
// forward @stage_<s> on a micro-batch sends the stage's boundary values to
// the next stage's rank along pp; the backward @stage_<s>_grad recomputes
// the stage's forward from the kept inputs, takes the next stage's
// cotangents and sends its inputs' cotangents back. The last stage's
// backward computes the loss itself (its forward only receives and keeps
// the inputs). Point-to-point messages between two ranks arrive in the
// order they were sent, and every stage runs the backwards in the same
// micro-batch order, so the schedules need no tags.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Collectives.h"
#include "glimmer_rt/Trainer.h"

#include "Binding.h"

#include <chrono>

using namespace glimmer_rt;
using namespace glimmer_rt::detail;

std::vector<PipelineAction>
glimmer_rt::detail::pipelineSchedule(glimmer::PipelineSchedule kind,
                                     int64_t stage, int64_t stages,
                                     int64_t microbatches) {
  std::vector<PipelineAction> actions;
  int64_t warmup = kind == glimmer::PipelineSchedule::GPipe
                       ? microbatches
                       : std::min(stages - stage - 1, microbatches);
  int64_t forwards = 0, backwards = 0;
  for (; forwards < warmup; ++forwards)
    actions.push_back({true, forwards});
  while (forwards < microbatches) {
    actions.push_back({true, forwards++});
    actions.push_back({false, backwards++});
  }
  while (backwards < microbatches)
    actions.push_back({false, backwards++});
  return actions;
}

namespace {

/// The positions of `fn`'s arguments (or results) of `role`, by their index
/// in the cut.
std::vector<size_t> slotsOf(const std::vector<Slot> &slots, Slot::Role role) {
  std::vector<std::pair<int64_t, size_t>> found;
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].role == role)
      found.push_back({std::stoll(slots[i].name), i});
  std::sort(found.begin(), found.end());
  std::vector<size_t> positions;
  for (auto [index, position] : found)
    positions.push_back(position);
  return positions;
}

size_t bytesOf(const std::vector<Tensor> &tensors) {
  size_t n = 0;
  for (const Tensor &t : tensors)
    n += size_t(t.numel()) * dtypeSize(t.dtype());
  return n;
}

} // namespace

Trainer::StepResult Trainer::pipelineStep(const Inputs &inputs) {
  const SpmdContext &layout = program.layout();
  int64_t stages = layout.pp(), microbatches = layout.microbatches;
  std::vector<double> losses(states.size()), norms(states.size()),
      busy(states.size());
  std::vector<size_t> stashPeak(states.size());
  using Clock = std::chrono::steady_clock;
  ranks.run([&](int64_t rank) {
    size_t index = indexOf(rank);
    const Functions &f = functions[index];
    int64_t stage = f.stage;
    bool last = stage == stages - 1;
    RankContext ctx = RankContext::forRank(layout, rank);
    Communicator &comm = currentCommunicator();
    int64_t prev = stage > 0 ? ctx.peer(MeshAxis::Pp, stage - 1) : -1;
    int64_t next = last ? -1 : ctx.peer(MeshAxis::Pp, stage + 1);
    const Function &fwd = *f.forward, &grad = *f.grad;
    std::vector<Tensor> fwdArgs = bind(fwd, rank, &inputs, {});
    std::vector<Tensor> gradArgs = bind(grad, rank, &inputs, {});
    std::vector<size_t> fwdIn = slotsOf(fwd.arguments, Slot::Activation);
    std::vector<size_t> fwdOut = slotsOf(fwd.results, Slot::Activation);
    std::vector<size_t> gradIn = slotsOf(grad.arguments, Slot::Activation);
    std::vector<size_t> gradCot = slotsOf(grad.arguments, Slot::Cotangent);
    std::vector<size_t> gradOut = slotsOf(grad.results, Slot::ActivationGrad);

    std::map<int64_t, std::vector<Tensor>> kept;
    size_t keptBytes = 0, keptPeak = 0;
    State grads;
    Tensor loss;
    double seconds = 0;
    auto timed = [&](const Function &fn, Frame &frame) {
      auto start = Clock::now();
      fn.entry(frame);
      // Kernels may be queued on a device: the time is the work's.
      for (const Tensor &t : frame.outputs)
        synchronize(t.device());
      seconds += std::chrono::duration<double>(Clock::now() - start).count();
    };
    for (PipelineAction action :
         pipelineSchedule(layout.schedule, stage, stages, microbatches)) {
      int64_t micro = action.microbatch;
      if (action.forward) {
        std::vector<Tensor> in;
        for (size_t k = 0; k < fwdIn.size(); ++k)
          in.push_back(comm.recv(prev));
        if (!last) {
          Frame frame;
          frame.inputs = withMicrobatch(fwd, fwdArgs, micro);
          for (size_t k = 0; k < fwdIn.size(); ++k)
            frame.inputs[fwdIn[k]] = in[k];
          timed(fwd, frame);
          for (size_t position : fwdOut)
            comm.send(frame.outputs[position], next);
        }
        keptBytes += bytesOf(in);
        keptPeak = std::max(keptPeak, keptBytes);
        kept[micro] = std::move(in);
        continue;
      }
      Frame frame;
      frame.inputs = withMicrobatch(grad, gradArgs, micro);
      std::vector<Tensor> &in = kept.at(micro);
      for (size_t k = 0; k < gradIn.size(); ++k)
        frame.inputs[gradIn[k]] = in[k];
      for (size_t position : gradCot)
        frame.inputs[position] = comm.recv(next);
      timed(grad, frame);
      keptBytes -= bytesOf(in);
      kept.erase(micro);
      for (size_t position : gradOut)
        comm.send(frame.outputs[position], prev);
      for (size_t i = 0; i < grad.results.size(); ++i) {
        const Slot &slot = grad.results[i];
        if (slot.role == Slot::Grad) {
          auto it = grads.find(slot.name);
          if (it == grads.end())
            grads[slot.name] = frame.outputs[i];
          else
            it->second = add(it->second, frame.outputs[i]);
        } else if (last && slot.role == Slot::Other) {
          loss = loss.defined() ? add(loss, frame.outputs[i])
                                : frame.outputs[i];
        }
      }
    }
    norms[index] = applyStep(rank, grads);
    busy[index] = seconds;
    stashPeak[index] = keptPeak;
    // The loss is on the last stage; rank 0 reports it, so the last
    // stage's rank in rank 0's pipeline sends it there.
    int64_t reporter = RankContext::forRank(layout, 0)
                           .peer(MeshAxis::Pp, stages - 1);
    if (rank == reporter)
      comm.send(loss, 0);
    if (rank == 0)
      losses[index] = comm.recv(reporter).item(0);
  });
  ++steps;
  return {steps, losses[0], norms[0], busy, stashPeak};
}
