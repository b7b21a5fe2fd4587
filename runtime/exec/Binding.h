//===- Binding.h - Setting per-call arguments of compiled functions -*- C++
//-*-===//
//
// Internal to runtime/exec: what the trainer, the forward and the pipeline
// schedule share when they bind a call.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RUNTIME_EXEC_BINDING_H
#define GLIMMER_RUNTIME_EXEC_BINDING_H

#include "glimmer_rt/Trainer.h"

namespace glimmer_rt::detail {

/// `args` with the micro-batch index arguments of `fn` set to `micro` (a
/// host scalar: the slicing kernel reads it without a device sync).
std::vector<Tensor> withMicrobatch(const Function &fn, std::vector<Tensor> args,
                                   int64_t micro);

/// Adds the gradients among `fn`'s results (role Grad) to `grads`, by name
/// (the first one of a name is kept as it is).
void addGradients(std::map<std::string, Tensor> &grads, const Function &fn,
                  const std::vector<Tensor> &outputs);

/// The data inputs of `fns`, read from `data` on the host once (each rank
/// moves them to its device).
Trainer::Inputs readInputs(const std::vector<const Function *> &fns,
                           const SpmdContext &layout,
                           const SafetensorsFile &data);

/// One step of a pipeline schedule: the forward or the backward of a
/// micro-batch on one of the rank's stages (its chunk; 0 unless
/// interleaved).
struct PipelineAction {
  bool forward;
  int64_t microbatch;
  int64_t chunk = 0;
};

/// The order in which pp rank `rank` of `ranks` runs the forwards and
/// backwards of `microbatches` micro-batches on its `chunks` stages: GPipe
/// (all forwards, then all backwards); 1F1B (ranks - rank - 1 forwards to
/// fill the pipeline, then one forward and one backward in turn, then the
/// remaining backwards), which keeps at most ranks - rank micro-batches in
/// flight; interleaved 1F1B (Megatron-LM's order over chunks: forwards of
/// chunk (k / ranks) % chunks, backwards of the chunks in reverse, with
/// (ranks - rank - 1) * 2 + (chunks - 1) * ranks warm-up forwards).
std::vector<PipelineAction> pipelineSchedule(glimmer::PipelineSchedule kind,
                                             int64_t rank, int64_t ranks,
                                             int64_t microbatches,
                                             int64_t chunks = 1);

} // namespace glimmer_rt::detail

#endif // GLIMMER_RUNTIME_EXEC_BINDING_H
