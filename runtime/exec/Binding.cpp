//===- Binding.cpp - Binding batches to compiled functions ----------------===//

#include "Binding.h"
#include "WeightSlicing.h"

using namespace glimmer_rt;

void glimmer_rt::checkBatch(const ProgramInfo &program,
                            const SafetensorsFile &data) {
  for (const TracedInput &traced : program.tracedInputs) {
    const TensorInfo *info = data.find(traced.name);
    if (info && tensorDigest(data, *info) != traced.digest)
      throw RuntimeError(
          "the batch's '" + traced.name +
          "' differs from the traced example's: the traced program never "
          "read it (the model used its values in Python), so it holds what "
          "the model computed from them as constants; trace the model on a "
          "batch with these values");
  }
  for (const VisionMergeCheck &check : program.visionChecks) {
    const TensorInfo *info = data.find(check.tokensInput);
    if (!info || isFloating(info->dtype))
      continue;
    Tensor tokens = convert(readTensor(data, *info), DType::I64);
    int64_t count = 0;
    for (int64_t i = 0; i < tokens.numel(); ++i)
      count += tokens.data<int64_t>()[i] == check.imageTokenId;
    if (count != check.bankRows)
      throw RuntimeError(
          "the batch has " + std::to_string(count) + " image tokens (id " +
          std::to_string(check.imageTokenId) + " in '" + check.tokensInput +
          "') but the vision encoder produces " +
          std::to_string(check.bankRows) +
          " rows: every image token must take exactly one vision row");
  }
}

void glimmer_rt::detail::addGradients(std::map<std::string, Tensor> &grads,
                                      const Function &fn,
                                      const std::vector<Tensor> &outputs) {
  for (size_t i = 0; i < fn.results.size(); ++i) {
    const Slot &slot = fn.results[i];
    if (slot.role != Role::Grad)
      continue;
    auto it = grads.find(slot.name);
    if (it == grads.end())
      grads[slot.name] = outputs[i];
    else
      it->second = add(it->second, outputs[i]);
  }
}

std::vector<Tensor> glimmer_rt::detail::withMicrobatch(const Function &fn,
                                                       std::vector<Tensor> args,
                                                       int64_t micro) {
  for (size_t i = 0; i < fn.arguments.size(); ++i)
    if (fn.arguments[i].role == Role::Microbatch)
      args[i] = full(DType::I64, {}, double(micro));
  return args;
}

Trainer::Inputs
glimmer_rt::detail::readInputs(const std::vector<const Function *> &fns,
                               const SpmdContext &layout,
                               const SafetensorsFile &data) {
  Trainer::Inputs inputs;
  for (const Function *fn : fns)
    for (const Slot &slot : fn->arguments)
      if (slot.role == Role::Input && !inputs.count(slot.name))
        inputs[slot.name] = readFull(data, layout, slot, slot.name, "the data");
  return inputs;
}
