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

#include <algorithm>
#include <memory>
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
  std::vector<Tensor> values = inputList(frame, indices);
  for (int64_t i : indices)
    frame.inputs[i] = Tensor();
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

/// The values a rolled run of layer calls (runLayers) keeps for the ops
/// after it: `columns` per iteration. Copies share the values.
class LayerStore {
public:
  LayerStore() = default;
  LayerStore(int64_t iterations, int64_t columns)
      : values(std::make_shared<std::vector<Tensor>>(iterations * columns)),
        columns(columns) {}
  Tensor &at(int64_t iteration, int64_t column) const {
    if (!values || column < 0 || column >= columns || iteration < 0 ||
        size_t((iteration + 1) * columns) > values->size())
      throw RuntimeError("layer store: no value (" +
                         std::to_string(iteration) + ", " +
                         std::to_string(column) + ")");
    return (*values)[iteration * columns + column];
  }

private:
  std::shared_ptr<std::vector<Tensor>> values;
  int64_t columns = 0;
};

inline LayerStore layerStore(int64_t iterations, int64_t columns) {
  return LayerStore(iterations, columns);
}
template <typename... Ts>
std::vector<LayerStore> layerStores(const Ts &...stores) {
  return {stores...};
}
/// A stored value, for an op after the run.
inline Tensor stored(const LayerStore &store, int64_t iteration,
                     int64_t column) {
  return store.at(iteration, column);
}
/// Drops the store's handle on a value after its last use.
inline void releaseStored(const LayerStore &store, int64_t iteration,
                          int64_t column) {
  store.at(iteration, column) = Tensor();
}

/// Where runLayers takes a call operand from (the plan's first field).
enum LayerOperand : int64_t {
  /// Argument frameTable[i * F + a] of the caller's frame.
  LayerFromFrame = 0,
  /// given[a], the same in every iteration.
  LayerFromGiven = 1,
  /// Carry a: the previous iteration's value (given[init] before the first).
  LayerFromCarry = 2,
  /// Result b of this iteration's call a.
  LayerFromLocal = 3,
  /// reads[a].at(c + d * i, b), dropped from the store after the call if e.
  LayerFromStore = 4,
};

/// Runs `iterations` iterations of the calls `fns` (slots), as the
/// unrolled calls would, in order. `operandPlan` is {slots, carries, the
/// given index of each carry's first value, then per slot: its operand
/// count and (kind, a, b, c, d, e) per operand (LayerOperand)}.
/// `resultPlan` is, per slot, its result count and (carry, store column,
/// output column, final index) per result, -1 for none: a result becomes
/// the carry for the next iteration, goes to `store`, to the caller's
/// result outputTable[i * O + column], and (last iteration) to the returned
/// list. Results no later call of the iteration reads are dropped after
/// the call; `given` is emptied.
inline std::vector<Tensor>
runLayers(Frame &frame, const std::vector<void (*)(Frame &)> &fns,
          int64_t iterations, std::vector<Tensor> &given,
          const std::vector<int64_t> &operandPlan,
          const std::vector<int64_t> &resultPlan,
          const std::vector<int64_t> &frameTable,
          const std::vector<int64_t> &outputTable,
          const std::vector<LayerStore> &reads, const LayerStore &store) {
  struct Operand {
    int64_t kind, a, b, c, d, e;
  };
  struct Result {
    int64_t carry, column, output, final;
    bool keep = false;
  };
  auto bad = [](const char *what) {
    return RuntimeError(std::string("runLayers: malformed ") + what);
  };
  size_t slots = size_t(operandPlan.at(0)), carries = operandPlan.at(1);
  if (slots != fns.size() || iterations < 1)
    throw bad("plan");
  std::vector<std::vector<Operand>> operands(slots);
  std::vector<std::vector<Result>> results(slots);
  size_t at = 2 + carries, rat = 0;
  for (size_t s = 0; s < slots; ++s) {
    for (int64_t n = operandPlan.at(at++); n > 0; --n, at += 6)
      operands[s].push_back({operandPlan.at(at), operandPlan.at(at + 1),
                             operandPlan.at(at + 2), operandPlan.at(at + 3),
                             operandPlan.at(at + 4), operandPlan.at(at + 5)});
    for (int64_t n = resultPlan.at(rat++); n > 0; --n, rat += 4)
      results[s].push_back({resultPlan.at(rat), resultPlan.at(rat + 1),
                            resultPlan.at(rat + 2), resultPlan.at(rat + 3)});
  }
  if (at != operandPlan.size() || rat != resultPlan.size())
    throw bad("plan");
  size_t finals = 0;
  for (size_t s = 0; s < slots; ++s) {
    for (const Operand &o : operands[s])
      if (o.kind == LayerFromLocal)
        results.at(o.a).at(o.b).keep = true;
    for (Result &r : results[s]) {
      r.keep |= r.carry >= 0;
      finals = std::max(finals, size_t(r.final + 1));
    }
  }
  std::vector<Tensor> carry(carries), last(finals);
  for (size_t k = 0; k < carries; ++k)
    carry[k] = std::move(given.at(operandPlan.at(2 + k)));
  size_t F = frameTable.size() / iterations;
  size_t O = outputTable.size() / iterations;
  for (int64_t i = 0; i < iterations; ++i) {
    std::vector<std::vector<Tensor>> outs(slots);
    for (size_t s = 0; s < slots; ++s) {
      std::vector<Tensor> inputs;
      inputs.reserve(operands[s].size());
      for (const Operand &o : operands[s]) {
        switch (o.kind) {
        case LayerFromFrame:
          inputs.push_back(input(frame, frameTable.at(i * F + o.a)));
          break;
        case LayerFromGiven:
          inputs.push_back(given.at(o.a));
          break;
        case LayerFromCarry:
          inputs.push_back(carry.at(o.a));
          break;
        case LayerFromLocal:
          inputs.push_back(outs.at(o.a).at(o.b));
          break;
        case LayerFromStore:
          inputs.push_back(reads.at(o.a).at(o.c + o.d * i, o.b));
          break;
        default:
          throw bad("operand");
        }
      }
      outs[s] = callFunction(fns[s], std::move(inputs));
      for (const Operand &o : operands[s])
        if (o.kind == LayerFromStore && o.e)
          releaseStored(reads[o.a], o.c + o.d * i, o.b);
      if (outs[s].size() != results[s].size())
        throw bad("results");
      for (size_t r = 0; r < results[s].size(); ++r) {
        const Result &plan = results[s][r];
        Tensor &value = outs[s][r];
        if (plan.column >= 0)
          store.at(i, plan.column) = value;
        if (plan.output >= 0)
          output(frame, outputTable.at(i * O + plan.output), value);
        if (plan.final >= 0 && i + 1 == iterations)
          last[plan.final] = value;
        if (!plan.keep)
          value = Tensor();
      }
    }
    for (size_t s = 0; s < slots; ++s)
      for (size_t r = 0; r < results[s].size(); ++r)
        if (results[s][r].carry >= 0)
          carry.at(results[s][r].carry) = std::move(outs[s][r]);
  }
  given = {};
  return last;
}

} // namespace glimmer_rt

#endif // GLIMMER_RT_PROGRAM_H
