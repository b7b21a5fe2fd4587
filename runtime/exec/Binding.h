//===- Binding.h - Setting per-call arguments of compiled functions -*- C++ -*-===//
//
// Internal to runtime/exec: what the trainer and the pipeline schedule share
// when they bind a call.
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

/// One step of a pipeline schedule: the forward or the backward of a
/// micro-batch on this stage.
struct PipelineAction {
  bool forward;
  int64_t microbatch;
};

/// The order in which stage `stage` of `stages` runs the forwards and
/// backwards of `microbatches` micro-batches: GPipe (all forwards, then
/// all backwards) or 1F1B (stages - stage - 1 forwards to fill the
/// pipeline, then one forward and one backward in turn, then the remaining
/// backwards), which keeps at most `stages - stage` micro-batches in flight.
std::vector<PipelineAction> pipelineSchedule(glimmer::PipelineSchedule kind,
                                             int64_t stage, int64_t stages,
                                             int64_t microbatches);

} // namespace glimmer_rt::detail

#endif // GLIMMER_RUNTIME_EXEC_BINDING_H
