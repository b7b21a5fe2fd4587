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

#include <initializer_list>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace glimmer_rt {

// The enums programs pass, defined once with the compiler (Enums.h).
using Reduction = glimmer::abi::Reduction;
using CompareDir = glimmer::abi::CompareDir;
using RopeStyle = glimmer::abi::RopeStyle;
using Balancer = glimmer::abi::Balancer;

// Creation.
/// Every element equal to `value` (converted to `dtype`).
Tensor full(DType dtype, const Shape &shape, double value);
/// Row-major values (converted to `dtype`); values.size() == numel.
Tensor constant(DType dtype, const Shape &shape,
                const std::vector<double> &values);
/// Element = its index along `dim`.
Tensor iota(DType dtype, const Shape &shape, int64_t dim);

// Elementwise (operands have equal shapes; binary ops equal dtypes).
Tensor neg(const Tensor &x);
Tensor exp(const Tensor &x);
Tensor log(const Tensor &x);
Tensor sqrt(const Tensor &x);
Tensor rsqrt(const Tensor &x);
Tensor tanh(const Tensor &x);
Tensor erf(const Tensor &x);
Tensor sigmoid(const Tensor &x);
Tensor silu(const Tensor &x);
Tensor relu(const Tensor &x);
Tensor sin(const Tensor &x);
Tensor cos(const Tensor &x);
Tensor gelu(const Tensor &x, bool tanhApproximation);
Tensor add(const Tensor &a, const Tensor &b);
Tensor sub(const Tensor &a, const Tensor &b);
Tensor mul(const Tensor &a, const Tensor &b);
/// Integer division truncates toward zero.
Tensor div(const Tensor &a, const Tensor &b);
Tensor max(const Tensor &a, const Tensor &b);
Tensor min(const Tensor &a, const Tensor &b);
Tensor pow(const Tensor &a, const Tensor &b);
/// Returns a Bool tensor.
Tensor compare(CompareDir dir, const Tensor &a, const Tensor &b);
/// cond (Bool) ? a : b.
Tensor select(const Tensor &cond, const Tensor &a, const Tensor &b);
/// Element type conversion (float->int truncates toward zero; ->Bool is != 0).
Tensor convert(const Tensor &x, DType dtype);
/// convert(inputs[k], dtype) for every k (on a GPU, one launch for all the
/// inputs of one type instead of one per input).
std::vector<Tensor> convertList(const std::vector<Tensor> &inputs, DType dtype);

// Reductions and scans.
/// `dims` sorted and unique; with keepDims the reduced dims stay as 1.
Tensor reduce(Reduction kind, const Tensor &x, const std::vector<int64_t> &dims,
              bool keepDims);
/// sum_k sum_i inputs[k][i]^2 as a scalar of the floating-point type
/// `result`: each input's squares summed in the compute type in an order
/// fixed by its shape, then the inputs' sums added in order. Each input is
/// of the `result` type, or bf16 under an f32 result (widened exactly).
Tensor sumSquares(const std::vector<Tensor> &inputs, DType result);
Tensor cumsum(const Tensor &x, int64_t dim);
Tensor softmax(const Tensor &x, int64_t dim);
Tensor softmaxGrad(const Tensor &grad, const Tensor &y, int64_t dim);

// Shapes.
Tensor reshape(const Tensor &x, const Shape &shape);
/// Result dim i = input dim perm[i].
Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm);
/// Input dim i maps to result dim dims[i] (size 1 or equal).
Tensor broadcastInDim(const Tensor &x, const Shape &shape,
                      const std::vector<int64_t> &dims);
Tensor slice(const Tensor &x, const std::vector<int64_t> &start,
             const std::vector<int64_t> &limit,
             const std::vector<int64_t> &stride);
Tensor concat(const std::vector<Tensor> &inputs, int64_t dim);
/// Piece `index` (a scalar, read on the host) of `pieces` equal pieces of
/// dimension `dim`: the current micro-batch of a full-batch value.
Tensor microbatchSlice(const Tensor &x, const Tensor &index, int64_t pieces,
                       int64_t dim);
Tensor pad(const Tensor &x, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high, double value);

// Model ops.
/// table [V, D], ids [...] -> [..., D]; ids outside [0, V) throw.
Tensor embedding(const Tensor &table, const Tensor &ids);
/// `ids` itself, after checking that every element is in [0, bound) (or is
/// `ignoreIndex` when `hasIgnore`); fails with the message of `op`'s kernel
/// ("embedding": ids of a table, "cross_entropy": labels).
Tensor checkIndices(const Tensor &ids, int64_t bound, bool hasIgnore,
                    int64_t ignoreIndex, const char *op);
/// grad [..., D], ids [...] -> [numEmbeddings, D] (scatter-add).
Tensor embeddingGrad(const Tensor &grad, const Tensor &ids,
                     int64_t numEmbeddings);
/// x [..., K], w [N, K], bias [N] or undefined -> [..., N].
Tensor linear(const Tensor &x, const Tensor &w, const Tensor &bias);
/// Batched over leading dims (equal); optional transposes of the last two.
Tensor matmul(const Tensor &a, const Tensor &b, bool transposeA,
              bool transposeB);
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
/// (dx, dw)
std::tuple<Tensor, Tensor> rmsNormGrad(const Tensor &grad, const Tensor &x,
                                       const Tensor &w, double eps);
Tensor layerNorm(const Tensor &x, const Tensor &w, const Tensor &b, double eps,
                 std::optional<DType> out = std::nullopt);
/// (dx, dw, db)
std::tuple<Tensor, Tensor, Tensor> layerNormGrad(const Tensor &grad,
                                                 const Tensor &x,
                                                 const Tensor &w, double eps);
/// x [B, T, H, D], positions [B, T] (integer).
Tensor rope(const Tensor &x, const Tensor &positions, double theta,
            RopeStyle style, bool inverse);
/// Which of attention's tensors are stored sequence-major, [B, T, H, D],
/// instead of [B, H, T, D]. attentionGrad's grad is stored as output, and dq,
/// dk, dv as q, k, v.
struct AttentionLayout {
  bool query = false, key = false, value = false, output = false;
  bool any() const { return query || key || value || output; }
};
/// q [B, Hq, Tq, D], k/v [B, Hkv, Tk, D]; positions [B, T] (integer, both
/// or undefined), documents likewise, blocks likewise. Query i of batch b
/// sees key j when
///   (no documents || kdoc[b, j] == qdoc[b, i])
///   && (window <= 0 || qpos[b, i] - kpos[b, j] < window)
///   && (!causal || kpos[b, j] <= qpos[b, i]
///       || (blocks && qblk[b, i] >= 0 && qblk[b, i] == kblk[b, j])),
/// causal without positions reading the indices i, j as positions. Blocks
/// (bidirectional spans inside causal attention: a prefix-LM's prefix,
/// images) and a window (> 0: the keys less than `window` positions back;
/// 0: none) need `causal`. Returns (out, lse [B, Hq, Tq]); lse is in the
/// query's precision (F32 or F64). A query that sees no key gets a zero
/// output and lse = -inf. `layout` says which of q, k, v and out are
/// sequence-major (shapes and messages above are in [B, H, T, D] terms).
std::tuple<Tensor, Tensor>
attention(const Tensor &q, const Tensor &k, const Tensor &v,
          const Tensor &qPositions, const Tensor &kPositions,
          const Tensor &qDocuments, const Tensor &kDocuments,
          const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
          int64_t window, double scale, AttentionLayout layout = {});
/// (dq, dk, dv), the mask as in attention; queries that see no key get no
/// gradient.
std::tuple<Tensor, Tensor, Tensor>
attentionGrad(const Tensor &grad, const Tensor &q, const Tensor &k,
              const Tensor &v, const Tensor &out, const Tensor &lse,
              const Tensor &qPositions, const Tensor &kPositions,
              const Tensor &qDocuments, const Tensor &kDocuments,
              const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
              int64_t window, double scale, AttentionLayout layout = {});
// Shared by the CPU and CUDA attention entry points; not for programs.
namespace detail {
/// Attention's tensors in [B, H, T, D] terms: the sequence-major ones of a
/// layout viewed with dims 1 and 2 swapped (sharing storage; for shape and
/// type checks only, a view is not a transpose). Undefined ones stay so.
struct AttentionViews {
  Tensor q, k, v, grad, out;
};
/// Throws (as `op`) when a sequence-major tensor is not of rank 4.
AttentionViews attentionViews(const char *op, AttentionLayout layout,
                              const Tensor &q, const Tensor &k, const Tensor &v,
                              const Tensor &grad = Tensor(),
                              const Tensor &out = Tensor());
/// attention and attentionGrad for kernels that read [B, H, T, D] only:
/// `layout`'s sequence-major tensors transposed to head-major, the call
/// made with the default layout, its results transposed back.
std::tuple<Tensor, Tensor>
attentionTransposed(const Tensor &q, const Tensor &k, const Tensor &v,
                    const Tensor &qPositions, const Tensor &kPositions,
                    const Tensor &qDocuments, const Tensor &kDocuments,
                    const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
                    int64_t window, double scale, AttentionLayout layout);
std::tuple<Tensor, Tensor, Tensor> attentionGradTransposed(
    const Tensor &grad, const Tensor &q, const Tensor &k, const Tensor &v,
    const Tensor &out, const Tensor &lse, const Tensor &qPositions,
    const Tensor &kPositions, const Tensor &qDocuments,
    const Tensor &kDocuments, const Tensor &qBlocks, const Tensor &kBlocks,
    bool causal, int64_t window, double scale, AttentionLayout layout);
/// A norm's result type (`out`, or x's), checked as both backends do
/// before they dispatch (throws as `op`).
DType normResultType(const char *op, const Tensor &x, std::optional<DType> out);
/// A norm gradient's `grad`: x's shape, x's type or bf16 for an f32 x.
void requireNormGrad(const char *op, const Tensor &grad, const Tensor &x);
/// add_rms_norm's addends: lhs of rhs's shape, of rhs's type or bf16 for
/// an f32 rhs (both backends; rhs's element type each checks first).
void requireResidualAddend(const char *op, const Tensor &lhs,
                           const Tensor &rhs);
/// The norms' operand checks, shared by both backends: x [..., D], each
/// named parameter [D] of x's type, eps > 0 (x's element type, which the
/// backends accept differently, each checks first). Returns D.
int64_t checkNorm(
    const char *op, const Tensor &x,
    std::initializer_list<std::pair<const Tensor *, const char *>> params,
    double eps);
} // namespace detail
/// logits [..., V], labels [...] -> (sum of -log softmax at the label over
/// positions with label != ignoreIndex, as a 0-d tensor of sumDType; count
/// of such positions, 0-d I64). Labels outside [0, V) (other than
/// ignoreIndex) throw.
std::tuple<Tensor, Tensor> crossEntropy(const Tensor &logits,
                                        const Tensor &labels,
                                        int64_t ignoreIndex, DType sumDType);
/// grad: 0-d; -> dlogits like logits.
Tensor crossEntropyGrad(const Tensor &grad, const Tensor &logits,
                        const Tensor &labels, int64_t ignoreIndex);
/// NCHW x, OIHW w, bias [O] or undefined.
Tensor conv2d(const Tensor &x, const Tensor &w, const Tensor &bias,
              const std::vector<int64_t> &stride,
              const std::vector<int64_t> &padding);
/// (dx, dw)
std::tuple<Tensor, Tensor> conv2dGrad(const Tensor &grad, const Tensor &x,
                                      const Tensor &w,
                                      const std::vector<int64_t> &stride,
                                      const std::vector<int64_t> &padding);

// Optimizers (torch.optim semantics). step: 0-d I64, 1-based. gradScale,
// when defined, is a 0-d tensor of the param's type that multiplies grad
// first (gradient clipping's coefficient), rounded as a separate mul. grad
// has the param's type, or is bf16 for an f32 param (widened exactly).
/// (param, exp_avg, exp_avg_sq)
std::tuple<Tensor, Tensor, Tensor>
adamwUpdate(const Tensor &param, const Tensor &grad, const Tensor &expAvg,
            const Tensor &expAvgSq, const Tensor &step, double lr,
            double beta1, double beta2, double eps, double weightDecay,
            const Tensor &gradScale = Tensor());
/// adamwUpdate of (params[k], grads[k], expAvgs[k], expAvgSqs[k]) for every
/// k, with one step, one set of hyperparameters and one gradScale: the new
/// params, then the new exp_avgs, then the new exp_avg_sqs (3 n tensors),
/// each the bits adamwUpdate gives. On a GPU the updates share a few
/// launches instead of one each.
std::vector<Tensor> adamwUpdateList(
    const std::vector<Tensor> &params, const std::vector<Tensor> &grads,
    const std::vector<Tensor> &expAvgs, const std::vector<Tensor> &expAvgSqs,
    const Tensor &step, double lr, double beta1, double beta2, double eps,
    double weightDecay, const Tensor &gradScale = Tensor());
Tensor sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                 double weightDecay, const Tensor &gradScale = Tensor());

// Multimodal.
/// cumsum(tokens == id) - 1 over the flattened batch, -1 on other tokens.
Tensor visionBankIndices(const Tensor &tokens, int64_t imageTokenId);
/// where(idx >= 0, bank[idx], embeds); idx >= N throws.
Tensor visionGather(const Tensor &embeds, const Tensor &bank,
                    const Tensor &indices);
/// (d_embeds, d_bank [bankRows, D])
std::tuple<Tensor, Tensor> visionGatherGrad(const Tensor &grad,
                                            const Tensor &indices,
                                            int64_t bankRows);

// Context parallelism.
/// The load-balancing reorder of dimension `dim` for `cp` ranks (inverse
/// when `inverse`).
Tensor cpPermute(const Tensor &x, int64_t dim, int64_t cp, Balancer balancer,
                 bool inverse);

} // namespace glimmer_rt

#endif // GLIMMER_RT_KERNELS_H
