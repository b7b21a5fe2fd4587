//===- Checks.h - Operand checks shared by the backends ---------*- C++ -*-===//
//
// Internal to the runtime: the checks of ranks, shapes, dtypes and
// attributes that do not depend on the backend, written once and called by
// the CPU and the CUDA kernels alike (plain C++, so the .cu files include
// it too). Every failure throws RuntimeError("glimmer.<op>: <message>").
// The element types the backends accept differ (the CUDA kernels take
// bf16): each backend checks those itself, before these.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_KERNELS_CHECKS_H
#define GLIMMER_RT_KERNELS_CHECKS_H

#include "glimmer_rt/Kernels.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace glimmer_rt::detail {

[[noreturn]] inline void fail(const char *op, const std::string &message) {
  throw RuntimeError(std::string("glimmer.") + op + ": " + message);
}

inline void check(bool condition, const char *op, const std::string &message) {
  if (!condition)
    fail(op, message);
}

void requireDefined(const char *op, const Tensor &t, const char *name);
/// Defined and of type i32 or i64.
void requireInt(const char *op, const Tensor &t, const char *name);
void requireRank(const char *op, const Tensor &t, const char *name,
                 int64_t rank);
void requireShape(const char *op, const Tensor &t, const char *name,
                  const Shape &shape);
/// Defined, and of the same dtype and shape as `ref`.
void requireLike(const char *op, const Tensor &t, const char *name,
                 const Tensor &ref, const char *refName);
void requireDim(const char *op, int64_t dim, int64_t rank);

/// Contiguous row-major strides (in elements).
std::vector<int64_t> stridesOf(const Shape &shape);

/// broadcast_in_dim's operands (x defined, `dims` strictly increasing into
/// `shape`, each input dimension 1 or the result's); returns the input's
/// stride along each result dimension (0 where it broadcasts).
std::vector<int64_t> broadcastStrides(const char *op, const Tensor &x,
                                      const Shape &shape,
                                      const std::vector<int64_t> &dims);

/// Where a strided copy reads its input: the result's shape, the input's
/// stride along each result dimension and the offset of the first element
/// (all in elements).
struct StridedSource {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t base = 0;
};

/// transpose's operands (x defined, `perm` a permutation of its dims).
StridedSource transposeSource(const char *op, const Tensor &x,
                              const std::vector<int64_t> &perm);
/// slice's operands (x defined, one positive stride and one in-bounds
/// [start, limit) per dimension).
StridedSource sliceSource(const char *op, const Tensor &x,
                          const std::vector<int64_t> &start,
                          const std::vector<int64_t> &limit,
                          const std::vector<int64_t> &stride);
/// pad's operands (x defined, non-negative low and high padding per
/// dimension); returns the result's shape.
Shape padShape(const char *op, const Tensor &x, const std::vector<int64_t> &low,
               const std::vector<int64_t> &high);
/// cp_permute's operands (x defined, `dim` in range, cp >= 1, a known
/// balancer, dimension `dim` cut into equal chunks); returns the chunk count.
int64_t cpChunks(const char *op, const Tensor &x, int64_t dim, int64_t cp,
                 Balancer balancer);

// Norms.
/// A norm's result type (`out`, or x's), checked before the call goes to a
/// backend (throws as `op`).
DType normResultType(const char *op, const Tensor &x, std::optional<DType> out);
/// A norm gradient's `grad`: x's shape, x's type or bf16 for an f32 x.
void requireNormGrad(const char *op, const Tensor &grad, const Tensor &x);
/// add_rms_norm's addends: lhs of rhs's shape, of rhs's type or bf16 for
/// an f32 rhs (rhs's element type each backend checks first).
void requireResidualAddend(const char *op, const Tensor &lhs,
                           const Tensor &rhs);
/// The norms' operand checks: x [..., D], each named parameter [D] of x's
/// type, eps > 0. Returns D.
int64_t
checkNorm(const char *op, const Tensor &x,
          std::initializer_list<std::pair<const Tensor *, const char *>> params,
          double eps);

// Attention.
/// Attention's sizes: q [B, Hq, Tq, D], k and v [B, Hkv, Tk, D].
struct AttentionDims {
  int64_t B, Hq, Hkv, Tq, Tk, D;
};

/// Attention's operands in [B, H, T, D] terms (the query's element type
/// checked by the backend): key and value like each other and of the
/// query's type, batch and head size, grouped heads, scale > 0 and the mask
/// operands (Messages.h's badAttentionMask).
AttentionDims checkAttention(const char *op, const Tensor &q, const Tensor &k,
                             const Tensor &v, const Tensor &qPositions,
                             const Tensor &kPositions, const Tensor &qDocuments,
                             const Tensor &kDocuments, const Tensor &qBlocks,
                             const Tensor &kBlocks, bool causal, int64_t window,
                             double scale);

// Linear algebra.
/// A product's sizes: M rows (of each of `batches` matrices), contraction
/// K, N columns, and the result's shape.
struct GemmDims {
  Shape outShape;
  int64_t batches, M, K, N;
};

/// linear's operands (the input's element type checked by the backend): x
/// [..., K], w [N, K] of x's type, bias [N] of x's type or undefined.
/// batches is 1.
GemmDims checkLinear(const char *op, const Tensor &x, const Tensor &w,
                     const Tensor &bias);
/// matmul's operands (the lhs's element type checked by the backend): of
/// one type and rank >= 2, equal batch dimensions, matching contraction
/// dimensions after the optional transposes of the last two.
GemmDims checkMatmul(const char *op, const Tensor &a, const Tensor &b,
                     bool transposeA, bool transposeB);

// Convolutions.
struct ConvShape {
  int64_t N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw;
};

/// conv2d's operands (the input's element type checked by the backend): an
/// NCHW input and an OIHW weight of its type, 2 positive strides and 2
/// non-negative paddings, a kernel that fits the padded input.
ConvShape checkConv(const char *op, const Tensor &x, const Tensor &w,
                    const std::vector<int64_t> &stride,
                    const std::vector<int64_t> &padding);

// Optimizers.
/// An optimizer's grad (the parameter's shape; its type, or bf16 for an f32
/// parameter) and grad_scale (absent, or a scalar of the parameter's type).
void requireOptimizerGrad(const char *op, const Tensor &grad,
                          const Tensor &param, const Tensor &gradScale);
/// adamw_update's per-parameter operands: grad and grad_scale as above,
/// exp_avg and exp_avg_sq like the parameter.
void checkAdamWOperands(const char *op, const Tensor &param, const Tensor &grad,
                        const Tensor &expAvg, const Tensor &expAvgSq,
                        const Tensor &gradScale);
/// adamw_update's step: a scalar i64 (its value, 1-based, each backend
/// checks where it reads it).
void checkAdamWStep(const char *op, const Tensor &step);
/// adamw_update's hyperparameters: beta1 and beta2 in [0, 1), eps > 0.
void checkAdamWHyperparameters(const char *op, double beta1, double beta2,
                               double eps);

} // namespace glimmer_rt::detail

#endif // GLIMMER_RT_KERNELS_CHECKS_H
