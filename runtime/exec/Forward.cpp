//===- Forward.cpp - Run a program's forward ------------------------------===//

#include "Binding.h"
#include "WeightSlicing.h"

using namespace glimmer_rt;
using namespace glimmer_rt::detail;

double glimmer_rt::runForward(const CompiledProgram &program,
                              const std::string &weightsPath,
                              const SafetensorsFile &data, Ranks &ranks) {
  const Function &fn = program.function("forward");
  auto weights = readFile(weightsPath);
  const SpmdContext &layout = program.layout();
  Trainer::Inputs inputs = readInputs({&fn}, layout, data);
  std::vector<Tensor> full;
  for (const Slot &slot : fn.arguments)
    full.push_back(
        slot.role == Role::Input || slot.role == Role::Microbatch
            ? Tensor()
            : readFull(*weights, layout, slot, slot.name, "the weights"));
  // After binding, so that a mis-shaped batch is reported as such.
  checkBatch(program.info(), data);
  std::vector<double> losses(ranks.local().size());
  ranks.run([&](int64_t rank) {
    Frame frame;
    Device device = ranks.device(rank);
    for (size_t i = 0; i < fn.arguments.size(); ++i)
      frame.inputs.push_back(
          fn.arguments[i].role == Role::Input
              ? inputs.at(fn.arguments[i].name).to(device)
          : fn.arguments[i].role == Role::Microbatch
              ? Tensor()
              : pieceFor(full[i], layout, fn.arguments[i], rank, device));
    double loss = 0;
    std::vector<Tensor> args = frame.inputs;
    for (int64_t micro = 0; micro < layout.microbatches; ++micro) {
      frame.inputs = withMicrobatch(fn, args, micro);
      frame.outputs.clear();
      fn.entry(frame);
      if (frame.outputs.empty() || frame.outputs[0].numel() != 1)
        throw RuntimeError("the model's forward does not return a scalar "
                           "loss");
      loss += frame.outputs[0].item(0);
    }
    size_t index = 0;
    while (ranks.local()[index] != rank)
      ++index;
    losses[index] = loss;
  });
  return losses[0];
}
