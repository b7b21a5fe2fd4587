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

/// Arguments `indices` of the frame, as a list (an optimizer's parameters).
inline std::vector<Tensor> inputList(Frame &frame,
                                     const std::vector<int64_t> &indices) {
  std::vector<Tensor> values;
  values.reserve(indices.size());
  for (int64_t i : indices)
    values.push_back(input(frame, i));
  return values;
}

/// Like inputList, moving the arguments out of the frame (the compiler
/// emits it for arguments the program reads nowhere else): the list then
/// holds the program's only handle on each, and a kernel may replace one in
/// place where no caller holds it either (an optimizer's state; see
/// glimmer_rt::replacing).
inline std::vector<Tensor> takeInputList(Frame &frame,
                                         const std::vector<int64_t> &indices) {
  std::vector<Tensor> values;
  values.reserve(indices.size());
  for (int64_t i : indices) {
    values.push_back(input(frame, i));
    frame.inputs[i] = Tensor();
  }
  return values;
}

/// Writes element k of `values` as result `indices[k]` of the frame,
/// moving it out of the list.
inline void outputList(Frame &frame, std::vector<Tensor> &values,
                       const std::vector<int64_t> &indices) {
  if (values.size() != indices.size())
    throw RuntimeError("outputList: " + std::to_string(values.size()) +
                       " values for " + std::to_string(indices.size()) +
                       " results");
  for (size_t k = 0; k < indices.size(); ++k)
    output(frame, indices[k], std::move(values[k]));
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

/// The operands of a call: operand p is argument `fromFrame[p]` of `frame`
/// where that is not -1, else the next of `values`.
inline std::vector<Tensor> callInputs(Frame &frame,
                                      const std::vector<int64_t> &fromFrame,
                                      std::vector<Tensor> &values) {
  std::vector<Tensor> operands;
  operands.reserve(fromFrame.size());
  size_t next = 0;
  for (int64_t index : fromFrame)
    operands.push_back(index >= 0 ? input(frame, index)
                                  : std::move(values.at(next++)));
  if (next != values.size())
    throw RuntimeError("callInputs: " + std::to_string(values.size()) +
                       " values for " + std::to_string(next) + " operands");
  return operands;
}

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
