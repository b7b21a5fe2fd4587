//===- Pipeline.cpp - Run pipeline stages on micro-batches ----------------===//
//
// Each rank runs its stages' functions (glimmer-split-stages, autodiff): the
// forward @stage_<s> on a micro-batch sends the stage's boundary values to
// the next stage's rank along pp; the backward @stage_<s>_grad recomputes
// the stage's forward from the kept inputs, takes the next stage's
// cotangents and sends its inputs' cotangents back. The last stage's
// backward computes the loss itself (its forward only receives and keeps
// the inputs). Stage 0's @prologue runs once before the micro-batches and
// @prologue_grad once after them. With one stage per rank, messages
// between two ranks arrive in the order they were sent and every stage
// runs the backwards in the same micro-batch order, so they need no tags;
// interleaved schedules tag them (see recvFrom).
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
                                     int64_t rank, int64_t ranks,
                                     int64_t microbatches, int64_t chunks) {
  std::vector<PipelineAction> actions;
  int64_t total = microbatches * chunks;
  int64_t warmup;
  if (kind == glimmer::PipelineSchedule::GPipe)
    warmup = total;
  else if (kind == glimmer::PipelineSchedule::Interleaved1F1B)
    warmup = microbatches == ranks
                 ? total
                 : std::min((ranks - rank - 1) * 2 + (chunks - 1) * ranks,
                            total);
  else
    warmup = std::min(ranks - rank - 1, total);
  // The k-th forward (backward) of the rank: micro-batches go through the
  // chunks in rounds of `ranks`.
  auto at = [&](int64_t k, bool forward) {
    int64_t chunk = (k / ranks) % chunks;
    return PipelineAction{forward, (k / (ranks * chunks)) * ranks + k % ranks,
                          forward ? chunk : chunks - 1 - chunk};
  };
  int64_t forwards = 0, backwards = 0;
  for (; forwards < warmup; ++forwards)
    actions.push_back(at(forwards, true));
  while (forwards < total) {
    actions.push_back(at(forwards++, true));
    actions.push_back(at(backwards++, false));
  }
  while (backwards < total)
    actions.push_back(at(backwards++, false));
  return actions;
}

namespace {

/// The positions of `fn`'s arguments (or results) of `role`, by their index
/// in the cut.
std::vector<size_t> slotsOf(const std::vector<Slot> &slots, Role role) {
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

Trainer::StepResult Trainer::pipelineStep(const Batch &batch) {
  const SpmdContext &layout = program.layout();
  int64_t ranksPp = layout.pp(), microbatches = layout.microbatches;
  int64_t chunks = layout.virtualStages, stages = ranksPp * chunks;
  std::vector<double> losses(states.size()), norms(states.size()),
      busy(states.size());
  std::vector<size_t> stashPeak(states.size());
  using Clock = std::chrono::steady_clock;
  ranks.run([&](int64_t rank) {
    size_t index = indexOf(rank);
    const Functions &f = functions[index];
    RankContext ctx = RankContext::forRank(layout, rank);
    int64_t r = ctx.coord(MeshAxis::Pp);
    // Point-to-point messages only between stages (a single stage of
    // micro-batches may run without a communicator).
    Communicator *comm = stages > 1 ? &currentCommunicator() : nullptr;
    int64_t prevRank = ctx.peer(MeshAxis::Pp, (r + ranksPp - 1) % ranksPp);
    int64_t nextRank = ctx.peer(MeshAxis::Pp, (r + 1) % ranksPp);
    Device device = ranks.device(rank);
    const Inputs &inputs = batch.perRank[index];

    // With several stages per rank, two ranks exchange both activations
    // and cotangents, in orders their schedules do not share: each message
    // then carries a header (kind, stage, micro-batch, count), and a
    // receiver keeps messages that arrive before it asks for them.
    bool tagged = chunks > 1;
    std::map<std::array<int64_t, 4>, std::vector<Tensor>> early;
    auto sendTo = [&](int64_t peer, int64_t kind, int64_t stage, int64_t micro,
                      const std::vector<Tensor> &values) {
      if (tagged) {
        Tensor header(DType::I64, {4}, Device::cpu());
        int64_t words[4] = {kind, stage, micro, int64_t(values.size())};
        std::copy(words, words + 4, header.data<int64_t>());
        comm->send(header.to(device), peer);
      }
      for (const Tensor &t : values)
        comm->send(t, peer);
    };
    auto recvFrom = [&](int64_t peer, int64_t kind, int64_t stage,
                        int64_t micro, size_t count) {
      std::vector<Tensor> values;
      if (!tagged) {
        for (size_t k = 0; k < count; ++k)
          values.push_back(comm->recv(peer));
        return values;
      }
      std::array<int64_t, 4> want{peer, kind, stage, micro};
      while (true) {
        auto it = early.find(want);
        if (it != early.end()) {
          values = std::move(it->second);
          early.erase(it);
          return values;
        }
        Tensor header = comm->recv(peer).to(Device::cpu());
        const int64_t *w = header.data<int64_t>();
        std::vector<Tensor> payload;
        for (int64_t k = 0; k < w[3]; ++k)
          payload.push_back(comm->recv(peer));
        early[{peer, w[0], w[1], w[2]}] = std::move(payload);
      }
    };
    constexpr int64_t kActivations = 0, kCotangents = 1;

    struct Chunk {
      int64_t stage;
      const Function *fwd, *grad;
      std::vector<Tensor> fwdArgs, gradArgs;
      std::vector<size_t> fwdIn, fwdOut, gradIn, gradCot, gradOut, proOut;
      std::map<int64_t, std::vector<Tensor>> kept;
    };
    std::vector<Chunk> mine;
    for (size_t c = 0; c < f.stages.size(); ++c) {
      Chunk k;
      k.stage = f.stages[c];
      k.fwd = f.forwards[c];
      k.grad = f.grads[c];
      k.fwdArgs = bind(*k.fwd, rank, &inputs, {});
      k.gradArgs = bind(*k.grad, rank, &inputs, {});
      k.fwdIn = slotsOf(k.fwd->arguments, Role::Activation);
      k.fwdOut = slotsOf(k.fwd->results, Role::Activation);
      k.gradIn = slotsOf(k.grad->arguments, Role::Activation);
      k.gradCot = slotsOf(k.grad->arguments, Role::Cotangent);
      k.gradOut = slotsOf(k.grad->results, Role::ActivationGrad);
      k.proOut = slotsOf(k.grad->results, Role::PrologueGrad);
      mine.push_back(std::move(k));
    }

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

    // Stage 0's prologue (the vision encoder on all images) once per step;
    // every micro-batch reads its results.
    std::vector<Tensor> proCot;
    if (f.prologue) {
      Frame frame;
      frame.inputs = bind(*f.prologue, rank, &inputs, {});
      timed(*f.prologue, frame);
      std::vector<size_t> out = slotsOf(f.prologue->results, Role::Activation);
      Chunk &first = mine[0];
      std::vector<size_t> intoFwd =
          slotsOf(first.fwd->arguments, Role::Prologue);
      std::vector<size_t> intoGrad =
          slotsOf(first.grad->arguments, Role::Prologue);
      for (size_t k = 0; k < intoFwd.size(); ++k)
        first.fwdArgs[intoFwd[k]] = frame.outputs[out[k]];
      for (size_t k = 0; k < intoGrad.size(); ++k)
        first.gradArgs[intoGrad[k]] = frame.outputs[out[k]];
      proCot.resize(first.proOut.size());
    }

    for (PipelineAction action : pipelineSchedule(
             layout.schedule, r, ranksPp, microbatches, chunks)) {
      int64_t micro = action.microbatch;
      Chunk &k = mine[size_t(action.chunk)];
      bool last = k.stage == stages - 1;
      if (action.forward) {
        std::vector<Tensor> in;
        if (k.stage > 0)
          in = recvFrom(prevRank, kActivations, k.stage, micro,
                        k.fwdIn.size());
        // The last stage's forward is part of its backward.
        if (!last) {
          Frame frame;
          frame.inputs = withMicrobatch(*k.fwd, k.fwdArgs, micro);
          for (size_t i = 0; i < k.fwdIn.size(); ++i)
            frame.inputs[k.fwdIn[i]] = in[i];
          timed(*k.fwd, frame);
          std::vector<Tensor> out;
          for (size_t position : k.fwdOut)
            out.push_back(frame.outputs[position]);
          sendTo(nextRank, kActivations, k.stage + 1, micro, out);
        }
        keptBytes += bytesOf(in);
        keptPeak = std::max(keptPeak, keptBytes);
        k.kept[micro] = std::move(in);
        continue;
      }
      Frame frame;
      frame.inputs = withMicrobatch(*k.grad, k.gradArgs, micro);
      std::vector<Tensor> &in = k.kept.at(micro);
      for (size_t i = 0; i < k.gradIn.size(); ++i)
        frame.inputs[k.gradIn[i]] = in[i];
      if (!last) {
        std::vector<Tensor> cot = recvFrom(nextRank, kCotangents, k.stage,
                                           micro, k.gradCot.size());
        for (size_t i = 0; i < k.gradCot.size(); ++i)
          frame.inputs[k.gradCot[i]] = cot[i];
      }
      timed(*k.grad, frame);
      keptBytes -= bytesOf(in);
      k.kept.erase(micro);
      if (k.stage > 0) {
        std::vector<Tensor> back;
        for (size_t position : k.gradOut)
          back.push_back(frame.outputs[position]);
        sendTo(prevRank, kCotangents, k.stage - 1, micro, back);
      }
      for (size_t i = 0; i < k.proOut.size(); ++i) {
        const Tensor &g = frame.outputs[k.proOut[i]];
        proCot[i] = proCot[i].defined() ? add(proCot[i], g) : g;
      }
      addGradients(grads, *k.grad, frame.outputs);
      if (last) {
        const Tensor &l = frame.outputs[0];
        loss = loss.defined() ? add(loss, l) : l;
      }
    }
    // The prologue's backward once, on the micro-batches' summed
    // cotangents.
    if (f.prologueGrad) {
      const Function &pg = *f.prologueGrad;
      Frame frame;
      frame.inputs = bind(pg, rank, &inputs, {});
      std::vector<size_t> cot = slotsOf(pg.arguments, Role::Cotangent);
      for (size_t i = 0; i < cot.size(); ++i)
        frame.inputs[cot[i]] = proCot[i];
      timed(pg, frame);
      addGradients(grads, pg, frame.outputs);
    }
    // The stages' bound arguments hold the parameters: dropped first, so
    // that the update may replace them in place.
    mine.clear();
    norms[index] = applyStep(rank, grads).item(0);
    busy[index] = seconds;
    stashPeak[index] = keptPeak;
    // The loss is on the last stage's rank; rank 0 reports it, so the last
    // stage's rank in rank 0's pipeline sends it there.
    int64_t reporter = RankContext::forRank(layout, 0)
                           .peer(MeshAxis::Pp, (stages - 1) % ranksPp);
    if (reporter == 0) {
      if (rank == 0)
        losses[index] = loss.item(0);
    } else if (rank == reporter) {
      comm->send(loss, 0);
    } else if (rank == 0) {
      losses[index] = comm->recv(reporter).item(0);
    }
  });
  ++steps;
  return {steps, losses[0], norms[0], busy, stashPeak, ""};
}
