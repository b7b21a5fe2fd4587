//===- Program.h - Support for generated programs ---------------*- C++ -*-===//
//
// The only header `glimmer-translate --emit-cpp` output includes. A program
// is a function `void NAME(glimmer_rt::Frame &frame)`: it reads its
// arguments (forward inputs, then parameters and buffers, in the imported
// function's order) from `frame.inputs` and writes its results to
// `frame.outputs`.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_PROGRAM_H
#define GLIMMER_RT_PROGRAM_H

#include "glimmer_rt/Collectives.h"
#include "glimmer_rt/Fusion.h"
#include "glimmer_rt/Kernels.h"

#include <vector>

namespace glimmer_rt {

struct Frame {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
};

/// Argument `index` of the program.
inline Tensor input(Frame &frame, int64_t index) {
  if (index < 0 || size_t(index) >= frame.inputs.size())
    throw RuntimeError("program argument #" + std::to_string(index) +
                       " was not provided (" +
                       std::to_string(frame.inputs.size()) + " given)");
  return frame.inputs[index];
}

/// Sets result `index` of the program.
inline void output(Frame &frame, int64_t index, const Tensor &value) {
  if (frame.outputs.size() <= size_t(index))
    frame.outputs.resize(index + 1);
  frame.outputs[index] = value;
}

/// Drops the program's handle on a value after its last use, so that its
/// storage (unless a view or a frame still holds it) goes back to the
/// allocator before the function returns.
inline void release(Tensor &value) { value = Tensor(); }
inline void release(std::vector<Tensor> &values) { values = {}; }

/// Packs operands for variadic ops (concat).
template <typename... Ts> std::vector<Tensor> tensorList(const Ts &...ts) {
  return {ts...};
}

/// The entry point a compiled program exports (C linkage, for dlsym).
using EntryFn = void (*)(Frame &);

/// Runs a function of the program (an outlined layer) on `inputs` in a
/// frame of its own; returns its results. The frame, and with it the
/// inputs, is gone when the call returns.
inline std::vector<Tensor> callFunction(void (*fn)(Frame &),
                                        std::vector<Tensor> inputs) {
  Frame frame;
  frame.inputs = std::move(inputs);
  fn(frame);
  return std::move(frame.outputs);
}

} // namespace glimmer_rt

#endif // GLIMMER_RT_PROGRAM_H
