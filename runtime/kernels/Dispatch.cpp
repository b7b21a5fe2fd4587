//===- Dispatch.cpp - The kernel API: where each op runs ------------------===//
//
// Part of the Glimmer runtime: Kernels.h's functions. Kernels run where
// their operands live: a GPU operand sends the call to the CUDA backend
// (which checks that all operands share its device), host operands to the
// CPU kernels. Checks that hold for both and decide the backend's contract
// (a norm's result type) run here, before the call is routed.
//
// Kernels are pure functions of their operands and keep no global state, so
// ranks running as threads of one process can call them concurrently.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Kernels.h"

#include "../common/Messages.h"
#include "../cpu/CpuKernels.h"
#include "Checks.h"

#ifdef GLIMMER_RT_HAVE_CUDA
#include "../cuda/CudaBackend.h"
#define GLIMMER_CUDA_CALL(fn, ...) return cuda::fn(__VA_ARGS__)
#else
#define GLIMMER_CUDA_CALL(fn, ...)                                             \
  throw RuntimeError("this runtime was built without the CUDA backend")
#endif

namespace glimmer_rt {
namespace {

template <typename... Ts>
bool onCuda(const Ts &...ts) {
  return (ts.isCuda() || ...);
}

bool anyOnCuda(const std::vector<Tensor> &ts) {
  for (const Tensor &t : ts)
    if (t.isCuda())
      return true;
  return false;
}

} // namespace

Tensor full(DType dtype, const Shape &shape, double value) {
  if (currentDevice().isCuda())
    GLIMMER_CUDA_CALL(full, currentDevice(), dtype, shape, value);
  return cpu::full(dtype, shape, value);
}

Tensor constant(DType dtype, const Shape &shape,
                const std::vector<double> &values) {
  if (currentDevice().isCuda())
    GLIMMER_CUDA_CALL(constant, currentDevice(), dtype, shape, values);
  return cpu::constant(dtype, shape, values);
}

Tensor iota(DType dtype, const Shape &shape, int64_t dim) {
  if (currentDevice().isCuda())
    GLIMMER_CUDA_CALL(iota, currentDevice(), dtype, shape, dim);
  return cpu::iota(dtype, shape, dim);
}

Tensor neg(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(neg, x);
  return cpu::neg(x);
}

Tensor exp(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(exp, x);
  return cpu::exp(x);
}

Tensor log(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(log, x);
  return cpu::log(x);
}

Tensor sqrt(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(sqrt, x);
  return cpu::sqrt(x);
}

Tensor rsqrt(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(rsqrt, x);
  return cpu::rsqrt(x);
}

Tensor tanh(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(tanh, x);
  return cpu::tanh(x);
}

Tensor erf(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(erf, x);
  return cpu::erf(x);
}

Tensor sigmoid(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(sigmoid, x);
  return cpu::sigmoid(x);
}

Tensor silu(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(silu, x);
  return cpu::silu(x);
}

Tensor relu(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(relu, x);
  return cpu::relu(x);
}

Tensor sin(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(sin, x);
  return cpu::sin(x);
}

Tensor cos(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(cos, x);
  return cpu::cos(x);
}

Tensor tan(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(tan, x);
  return cpu::tan(x);
}

Tensor asin(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(asin, x);
  return cpu::asin(x);
}

Tensor acos(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(acos, x);
  return cpu::acos(x);
}

Tensor atan(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(atan, x);
  return cpu::atan(x);
}

Tensor sinh(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(sinh, x);
  return cpu::sinh(x);
}

Tensor cosh(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(cosh, x);
  return cpu::cosh(x);
}

Tensor asinh(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(asinh, x);
  return cpu::asinh(x);
}

Tensor acosh(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(acosh, x);
  return cpu::acosh(x);
}

Tensor atanh(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(atanh, x);
  return cpu::atanh(x);
}

Tensor expm1(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(expm1, x);
  return cpu::expm1(x);
}

Tensor log1p(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(log1p, x);
  return cpu::log1p(x);
}

Tensor abs(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(abs, x);
  return cpu::abs(x);
}

Tensor floor(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(floor, x);
  return cpu::floor(x);
}

Tensor ceil(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(ceil, x);
  return cpu::ceil(x);
}

Tensor trunc(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(trunc, x);
  return cpu::trunc(x);
}

Tensor round(const Tensor &x) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(round, x);
  return cpu::round(x);
}

Tensor gelu(const Tensor &x, bool tanhApproximation) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(gelu, x, tanhApproximation);
  return cpu::gelu(x, tanhApproximation);
}

Tensor add(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(add, a, b);
  return cpu::add(a, b);
}

Tensor sub(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(sub, a, b);
  return cpu::sub(a, b);
}

Tensor mul(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(mul, a, b);
  return cpu::mul(a, b);
}

Tensor div(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(div, a, b);
  return cpu::div(a, b);
}

Tensor max(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(max, a, b);
  return cpu::max(a, b);
}

Tensor min(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(min, a, b);
  return cpu::min(a, b);
}

Tensor pow(const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(pow, a, b);
  return cpu::pow(a, b);
}

Tensor compare(CompareDir dir, const Tensor &a, const Tensor &b) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(compare, dir, a, b);
  return cpu::compare(dir, a, b);
}

Tensor select(const Tensor &cond, const Tensor &a, const Tensor &b) {
  if (onCuda(cond, a, b))
    GLIMMER_CUDA_CALL(select, cond, a, b);
  return cpu::select(cond, a, b);
}

Tensor convert(const Tensor &x, DType dtype) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(convert, x, dtype);
  return cpu::convert(x, dtype);
}

std::vector<Tensor> convertList(const std::vector<Tensor> &inputs,
                                DType dtype) {
  if (anyOnCuda(inputs))
    GLIMMER_CUDA_CALL(convertList, inputs, dtype);
  return cpu::convertList(inputs, dtype);
}

Tensor reduce(Reduction kind, const Tensor &x, const std::vector<int64_t> &dims,
              bool keepDims) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(reduce, kind, x, dims, keepDims);
  return cpu::reduce(kind, x, dims, keepDims);
}

Tensor sumSquares(const std::vector<Tensor> &inputs, DType result) {
  if (anyOnCuda(inputs))
    GLIMMER_CUDA_CALL(sumSquares, inputs, result);
  return cpu::sumSquares(inputs, result);
}

Tensor cumsum(const Tensor &x, int64_t dim) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(cumsum, x, dim);
  return cpu::cumsum(x, dim);
}

Tensor argsort(const Tensor &x, int64_t dim, bool descending) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(argsort, x, dim, descending);
  return cpu::argsort(x, dim, descending);
}

Tensor softmax(const Tensor &x, int64_t dim) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(softmax, x, dim);
  return cpu::softmax(x, dim);
}

Tensor softmaxGrad(const Tensor &grad, const Tensor &y, int64_t dim) {
  if (onCuda(grad, y))
    GLIMMER_CUDA_CALL(softmaxGrad, grad, y, dim);
  return cpu::softmaxGrad(grad, y, dim);
}

Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(transpose, x, perm);
  return cpu::transpose(x, perm);
}

Tensor broadcastInDim(const Tensor &x, const Shape &shape,
                      const std::vector<int64_t> &dims) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(broadcastInDim, x, shape, dims);
  return cpu::broadcastInDim(x, shape, dims);
}

Tensor slice(const Tensor &x, const std::vector<int64_t> &start,
             const std::vector<int64_t> &limit,
             const std::vector<int64_t> &stride) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(slice, x, start, limit, stride);
  return cpu::slice(x, start, limit, stride);
}

Tensor concat(const std::vector<Tensor> &inputs, int64_t dim) {
  if (anyOnCuda(inputs))
    GLIMMER_CUDA_CALL(concat, inputs, dim);
  return cpu::concat(inputs, dim);
}

Tensor pad(const Tensor &x, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high, double value) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(pad, x, low, high, value);
  return cpu::pad(x, low, high, value);
}

Tensor cpPermute(const Tensor &x, int64_t dim, int64_t cp, Balancer balancer,
                 bool inverse) {
  if (onCuda(x))
    GLIMMER_CUDA_CALL(cpPermute, x, dim, cp, balancer, inverse);
  return cpu::cpPermute(x, dim, cp, balancer, inverse);
}

Tensor checkIndices(const Tensor &ids, int64_t bound, bool hasIgnore,
                    int64_t ignoreIndex, const char *op) {
  if (onCuda(ids))
    GLIMMER_CUDA_CALL(checkIndices, ids, bound, hasIgnore, ignoreIndex, op);
  return cpu::checkIndices(ids, bound, hasIgnore, ignoreIndex, op);
}

Tensor embedding(const Tensor &table, const Tensor &ids) {
  if (onCuda(table, ids))
    GLIMMER_CUDA_CALL(embedding, table, ids);
  return cpu::embedding(table, ids);
}

Tensor embeddingGrad(const Tensor &grad, const Tensor &ids,
                     int64_t numEmbeddings) {
  if (onCuda(grad, ids))
    GLIMMER_CUDA_CALL(embeddingGrad, grad, ids, numEmbeddings);
  return cpu::embeddingGrad(grad, ids, numEmbeddings);
}

Tensor visionBankIndices(const Tensor &tokens, int64_t imageTokenId) {
  if (onCuda(tokens))
    GLIMMER_CUDA_CALL(visionBankIndices, tokens, imageTokenId);
  return cpu::visionBankIndices(tokens, imageTokenId);
}

Tensor visionGather(const Tensor &embeds, const Tensor &bank,
                    const Tensor &indices) {
  if (onCuda(embeds, bank, indices))
    GLIMMER_CUDA_CALL(visionGather, embeds, bank, indices);
  return cpu::visionGather(embeds, bank, indices);
}

std::tuple<Tensor, Tensor>
visionGatherGrad(const Tensor &grad, const Tensor &indices, int64_t bankRows) {
  if (onCuda(grad, indices))
    GLIMMER_CUDA_CALL(visionGatherGrad, grad, indices, bankRows);
  return cpu::visionGatherGrad(grad, indices, bankRows);
}

Tensor linear(const Tensor &x, const Tensor &w, const Tensor &bias) {
  if (onCuda(x, w, bias))
    GLIMMER_CUDA_CALL(linear, x, w, bias);
  return cpu::linear(x, w, bias);
}

Tensor matmul(const Tensor &a, const Tensor &b, bool transposeA,
              bool transposeB) {
  if (onCuda(a, b))
    GLIMMER_CUDA_CALL(matmul, a, b, transposeA, transposeB);
  return cpu::matmul(a, b, transposeA, transposeB);
}

Tensor conv2d(const Tensor &x, const Tensor &w, const Tensor &bias,
              const std::vector<int64_t> &stride,
              const std::vector<int64_t> &padding) {
  if (onCuda(x, w, bias))
    GLIMMER_CUDA_CALL(conv2d, x, w, bias, stride, padding);
  return cpu::conv2d(x, w, bias, stride, padding);
}

std::tuple<Tensor, Tensor> conv2dGrad(const Tensor &grad, const Tensor &x,
                                      const Tensor &w,
                                      const std::vector<int64_t> &stride,
                                      const std::vector<int64_t> &padding) {
  if (onCuda(grad, x, w))
    GLIMMER_CUDA_CALL(conv2dGrad, grad, x, w, stride, padding);
  return cpu::conv2dGrad(grad, x, w, stride, padding);
}

Tensor rmsNorm(const Tensor &x, const Tensor &w, double eps,
               std::optional<DType> out) {
  const char *op = "rms_norm";
  DType type = detail::normResultType(op, x, out);
  if (onCuda(x, w))
    GLIMMER_CUDA_CALL(rmsNorm, x, w, eps, type);
  return cpu::rmsNorm(x, w, eps, type);
}

std::tuple<Tensor, Tensor> addRmsNorm(const Tensor &lhs, const Tensor &rhs,
                                      const Tensor &w, double eps,
                                      std::optional<DType> out) {
  const char *op = "add_rms_norm";
  DType type = detail::normResultType(op, rhs, out);
  if (onCuda(lhs, rhs, w))
    GLIMMER_CUDA_CALL(addRmsNorm, lhs, rhs, w, eps, type);
  return cpu::addRmsNorm(lhs, rhs, w, eps, type);
}

std::tuple<Tensor, Tensor> rmsNormGrad(const Tensor &grad, const Tensor &x,
                                       const Tensor &w, double eps) {
  if (onCuda(grad, x, w))
    GLIMMER_CUDA_CALL(rmsNormGrad, grad, x, w, eps);
  return cpu::rmsNormGrad(grad, x, w, eps);
}

Tensor layerNorm(const Tensor &x, const Tensor &w, const Tensor &b, double eps,
                 std::optional<DType> out) {
  const char *op = "layer_norm";
  DType type = detail::normResultType(op, x, out);
  if (onCuda(x, w, b))
    GLIMMER_CUDA_CALL(layerNorm, x, w, b, eps, type);
  return cpu::layerNorm(x, w, b, eps, type);
}

std::tuple<Tensor, Tensor, Tensor> layerNormGrad(const Tensor &grad,
                                                 const Tensor &x,
                                                 const Tensor &w, double eps) {
  if (onCuda(grad, x, w))
    GLIMMER_CUDA_CALL(layerNormGrad, grad, x, w, eps);
  return cpu::layerNormGrad(grad, x, w, eps);
}

Tensor rope(const Tensor &x, const Tensor &positions, double theta,
            RopeStyle style, bool inverse) {
  if (onCuda(x, positions))
    GLIMMER_CUDA_CALL(rope, x, positions, theta, style, inverse);
  return cpu::rope(x, positions, theta, style, inverse);
}

std::tuple<Tensor, Tensor>
attention(const Tensor &q, const Tensor &k, const Tensor &v,
          const Tensor &qPositions, const Tensor &kPositions,
          const Tensor &qDocuments, const Tensor &kDocuments,
          const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
          int64_t window, double scale, AttentionLayout layout) {
  if (onCuda(q, k, v, qPositions, kPositions, qDocuments, kDocuments, qBlocks,
             kBlocks))
    GLIMMER_CUDA_CALL(attention, q, k, v, qPositions, kPositions, qDocuments,
                      kDocuments, qBlocks, kBlocks, causal, window, scale,
                      layout);
  return cpu::attention(q, k, v, qPositions, kPositions, qDocuments, kDocuments,
                        qBlocks, kBlocks, causal, window, scale, layout);
}

std::tuple<Tensor, Tensor, Tensor>
attentionGrad(const Tensor &grad, const Tensor &q, const Tensor &k,
              const Tensor &v, const Tensor &out, const Tensor &lse,
              const Tensor &qPositions, const Tensor &kPositions,
              const Tensor &qDocuments, const Tensor &kDocuments,
              const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
              int64_t window, double scale, AttentionLayout layout) {
  if (onCuda(grad, q, k, v, out, lse, qPositions, kPositions, qDocuments,
             kDocuments, qBlocks, kBlocks))
    GLIMMER_CUDA_CALL(attentionGrad, grad, q, k, v, out, lse, qPositions,
                      kPositions, qDocuments, kDocuments, qBlocks, kBlocks,
                      causal, window, scale, layout);
  return cpu::attentionGrad(grad, q, k, v, out, lse, qPositions, kPositions,
                            qDocuments, kDocuments, qBlocks, kBlocks, causal,
                            window, scale, layout);
}

std::tuple<Tensor, Tensor> crossEntropy(const Tensor &logits,
                                        const Tensor &labels,
                                        int64_t ignoreIndex, DType sumDType) {
  if (onCuda(logits, labels))
    GLIMMER_CUDA_CALL(crossEntropy, logits, labels, ignoreIndex, sumDType);
  return cpu::crossEntropy(logits, labels, ignoreIndex, sumDType);
}

Tensor crossEntropyGrad(const Tensor &grad, const Tensor &logits,
                        const Tensor &labels, int64_t ignoreIndex) {
  if (onCuda(grad, logits, labels))
    GLIMMER_CUDA_CALL(crossEntropyGrad, grad, logits, labels, ignoreIndex);
  return cpu::crossEntropyGrad(grad, logits, labels, ignoreIndex);
}

std::tuple<Tensor, Tensor, Tensor>
adamwUpdate(const Tensor &param, const Tensor &grad, const Tensor &expAvg,
            const Tensor &expAvgSq, const Tensor &step, double lr, double beta1,
            double beta2, double eps, double weightDecay,
            const Tensor &gradScale) {
  if (onCuda(param, grad, expAvg, expAvgSq, step, gradScale))
    GLIMMER_CUDA_CALL(adamwUpdate, param, grad, expAvg, expAvgSq, step, lr,
                      beta1, beta2, eps, weightDecay, gradScale);
  return cpu::adamwUpdate(param, grad, expAvg, expAvgSq, step, lr, beta1, beta2,
                          eps, weightDecay, gradScale);
}

std::vector<Tensor> adamwUpdateList(
    const std::vector<Tensor> &params, const std::vector<Tensor> &grads,
    const std::vector<Tensor> &expAvgs, const std::vector<Tensor> &expAvgSqs,
    const Tensor &step, double lr, double beta1, double beta2, double eps,
    double weightDecay, const Tensor &gradScale) {
  // The backends index the four lists alike.
  std::string lengths = messages::badAdamWListLengths(
      params.size(), grads.size(), expAvgs.size(), expAvgSqs.size());
  detail::check(lengths.empty(), "adamw_update_list", lengths);
  if (anyOnCuda(params) || anyOnCuda(grads) || anyOnCuda(expAvgs) ||
      anyOnCuda(expAvgSqs) || onCuda(step, gradScale))
    GLIMMER_CUDA_CALL(adamwUpdateList, params, grads, expAvgs, expAvgSqs, step,
                      lr, beta1, beta2, eps, weightDecay, gradScale);
  return cpu::adamwUpdateList(params, grads, expAvgs, expAvgSqs, step, lr,
                              beta1, beta2, eps, weightDecay, gradScale);
}

Tensor sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                 double weightDecay, const Tensor &gradScale) {
  if (onCuda(param, grad, gradScale))
    GLIMMER_CUDA_CALL(sgdUpdate, param, grad, lr, weightDecay, gradScale);
  return cpu::sgdUpdate(param, grad, lr, weightDecay, gradScale);
}

} // namespace glimmer_rt
