//===- Kernels.h - Runtime kernels, one per glimmer op ----------*- C++ -*-===//
//
// The functions generated programs call: one per op of the glimmer dialect,
// same operands, same attributes, same semantics (see
// docs/reference/GlimmerOps.md). Result shapes and dtypes follow the op's
// verifier; kernels check what they rely on and throw RuntimeError.
//
// Floating-point kernels support F32 and F64 on the CPU (compute in the
// tensor's own precision); integer tensors are I64/I32; booleans are Bool
// (one byte, 0 or 1). Absent optional operands are undefined Tensors.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_KERNELS_H
#define GLIMMER_RT_KERNELS_H

#include "glimmer_contract/Enums.h"
#include "glimmer_rt/Tensor.h"

#include <optional>
#include <tuple>
#include <vector>

namespace glimmer_rt {

// The enums programs pass, defined once with the compiler (Enums.h).
using Reduction = glimmer::abi::Reduction;
using CompareDir = glimmer::abi::CompareDir;
using RopeStyle = glimmer::abi::RopeStyle;
using Balancer = glimmer::abi::Balancer;

/// Which of attention's tensors are stored sequence-major, [B, T, H, D],
/// instead of [B, H, T, D]. attentionGrad's grad is stored as output, and dq,
/// dk, dv as q, k, v.
struct AttentionLayout {
  bool query = false, key = false, value = false, output = false;
  bool any() const { return query || key || value || output; }
};

// Creation.
/// Every element equal to `value` (converted to `dtype`).
Tensor full(DType dtype, const Shape &shape, double value);
/// Row-major values (converted to `dtype`); values.size() == numel.
Tensor constant(DType dtype, const Shape &shape,
                const std::vector<double> &values);
/// Element = its index along `dim`.
Tensor iota(DType dtype, const Shape &shape, int64_t dim);

#include "glimmer_rt/KernelDecls.inc"

// Shapes the kernels above compose.
Tensor reshape(const Tensor &x, const Shape &shape);
/// Piece `index` (a scalar, read on the host) of `pieces` equal pieces of
/// dimension `dim`: the current micro-batch of a full-batch value.
Tensor microbatchSlice(const Tensor &x, const Tensor &index, int64_t pieces,
                       int64_t dim);

// Norms.
/// The norms compute in x's accumulation type; the result is of `out`:
/// x's type (the default), or bf16 for an f32 x (rounded once; the CUDA
/// kernels only). A gradient's `grad` is of the forward result's type; dx,
/// dw (and db) are of x's.
Tensor rmsNorm(const Tensor &x, const Tensor &w, double eps,
               std::optional<DType> out = std::nullopt);
/// A residual add and the RMS norm of the sum, in one pass where the
/// backend can: (sum, rmsNorm(sum, w, eps, out)) with sum = a + b, a widened
/// to b's type first when it is narrower (bf16 into f32). The same values
/// as add and rmsNorm (the sum rounded to b's type before the norm reads
/// it); `out` as rmsNorm's, of b's type by default.
std::tuple<Tensor, Tensor> addRmsNorm(const Tensor &a, const Tensor &b,
                                      const Tensor &w, double eps,
                                      std::optional<DType> out = std::nullopt);
Tensor layerNorm(const Tensor &x, const Tensor &w, const Tensor &b, double eps,
                 std::optional<DType> out = std::nullopt);

} // namespace glimmer_rt

#endif // GLIMMER_RT_KERNELS_H
