//===- Messages.h - Kernel error messages shared by the backends -*- C++ -*-===//
//
// Internal to the runtime: the text of the data-dependent errors that the
// CPU and the CUDA kernels both raise (prefixed with "glimmer.<op>: " by
// their fail()), written once so the backends say the same; where the
// condition is backend-independent too (grad_scale), the check with it.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMMON_MESSAGES_H
#define GLIMMER_RT_COMMON_MESSAGES_H

#include "glimmer_rt/Tensor.h"

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace glimmer_rt::messages {

/// An embedding (or embedding_grad) id outside a table of `rows` rows.
inline std::string idOutOfRange(int64_t id, int64_t position, int64_t rows) {
  return "id " + std::to_string(id) + " at position " +
         std::to_string(position) + " is out of range for a table of " +
         std::to_string(rows) + " rows";
}

/// A cross-entropy label outside `classes` classes that is not the ignored
/// index.
inline std::string labelOutOfRange(int64_t label, int64_t position,
                                   int64_t classes, int64_t ignoreIndex) {
  return "label " + std::to_string(label) + " at position " +
         std::to_string(position) + " is out of range for " +
         std::to_string(classes) + " classes (ignore_index is " +
         std::to_string(ignoreIndex) + ")";
}

/// An optimizer's grad_scale: absent, or a scalar of the parameter's type.
/// The error message, or "" when `scale` is fine.
inline std::string badGradScale(const Tensor &scale, const Tensor &param) {
  if (!scale.defined() ||
      (scale.rank() == 0 && scale.dtype() == param.dtype()))
    return "";
  return "expects grad_scale to be a scalar of the param's type, got " +
         scale.describe() + " for param " + param.describe();
}

/// The per-token mask operands of attention (positions, documents and
/// blocks, each for queries [B, Tq] and keys [B, Tk], i32 or i64, both or
/// neither) and the window (>= 0; blocks and a window only with causal
/// attention). The error message, or "" when they are fine.
inline std::string badAttentionMask(const Tensor &qPositions,
                                    const Tensor &kPositions,
                                    const Tensor &qDocuments,
                                    const Tensor &kDocuments,
                                    const Tensor &qBlocks,
                                    const Tensor &kBlocks, bool causal,
                                    int64_t window, int64_t B, int64_t Tq,
                                    int64_t Tk) {
  struct Pair {
    const Tensor &q, &k;
    const char *what;
  };
  for (const Pair &p : {Pair{qPositions, kPositions, "positions"},
                        Pair{qDocuments, kDocuments, "documents"},
                        Pair{qBlocks, kBlocks, "blocks"}}) {
    if (p.q.defined() != p.k.defined())
      return std::string("expects query and key ") + p.what +
             " together or neither";
    if (!p.q.defined())
      continue;
    for (auto [t, side, len] : {std::tuple{&p.q, "query", Tq},
                                std::tuple{&p.k, "key", Tk}}) {
      std::string name = std::string(side) + " " + p.what;
      if (t->dtype() != DType::I32 && t->dtype() != DType::I64)
        return "expects " + name + " of type i32 or i64, got " +
               t->describe();
      if (t->shape() != Shape{B, len})
        return "expects " + name + " of shape " + shapeString({B, len}) +
               ", got " + t->describe();
    }
  }
  if (!causal && (qBlocks.defined() || window != 0))
    return "expects blocks and a window only with causal attention";
  if (window < 0)
    return "expects a window >= 0 (0: none), got " + std::to_string(window);
  return "";
}

/// Whether a tensor of `narrow` elements enters an optimizer update or
/// sum_squares computing in `wide`: the same type, or bf16 under f32
/// (widened exactly, so the result is that of the f32 tensor of the same
/// values).
inline bool widensInto(DType narrow, DType wide) {
  return narrow == wide || (narrow == DType::BF16 && wide == DType::F32);
}

/// A norm's result type, or its gradient's cotangent (`name`): the
/// input's type, or bf16 for an f32 input (computed in f32, rounded once).
/// The error message, or "".
inline std::string badNormType(const Tensor &x, DType t, const char *name) {
  if (widensInto(t, x.dtype()))
    return "";
  return std::string("expects ") + name + " in the input's type (" +
         x.describe() + "), or bf16 for an f32 input, got " + dtypeLabel(t);
}

/// An optimizer's gradient: defined, the parameter's shape, its type or
/// one that widens into it. The error message, or "".
inline std::string badOptimizerGrad(const Tensor &grad, const Tensor &param) {
  if (!grad.defined())
    return "missing grad";
  if (grad.shape() == param.shape() && widensInto(grad.dtype(), param.dtype()))
    return "";
  return "expects grad like param (" + param.describe() +
         "), or in bf16 for an f32 param, got " + grad.describe();
}

/// sum_squares' inputs: at least one, all defined, each of the `result`
/// type or one that widens into it (each backend then requires a
/// floating-point type it supports). The error message, or "".
inline std::string badSumSquaresInputs(const std::vector<Tensor> &inputs,
                                       DType result) {
  if (inputs.empty())
    return "expects at least one input";
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].defined())
      return "missing input #" + std::to_string(k);
    if (!widensInto(inputs[k].dtype(), result))
      return "input #" + std::to_string(k) + " " + inputs[k].describe() +
             " is neither " + dtypeLabel(result) +
             " nor bf16 under an f32 result";
  }
  return "";
}

/// adamw_update_list's four lists, which pair up by index: the error
/// message when their lengths differ, or "".
inline std::string badAdamWListLengths(size_t params, size_t grads,
                                       size_t expAvgs, size_t expAvgSqs) {
  if (grads == params && expAvgs == params && expAvgSqs == params)
    return "";
  return "expects as many grads, exp_avgs and exp_avg_sqs as params, got " +
         std::to_string(params) + " params, " + std::to_string(grads) +
         " grads, " + std::to_string(expAvgs) + " exp_avgs and " +
         std::to_string(expAvgSqs) + " exp_avg_sqs";
}

} // namespace glimmer_rt::messages

#endif // GLIMMER_RT_COMMON_MESSAGES_H
