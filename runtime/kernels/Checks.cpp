//===- Checks.cpp - Operand checks shared by the backends -----------------===//
//
// Part of the Glimmer runtime. See Checks.h.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "../common/Messages.h"

namespace glimmer_rt::detail {

void requireDefined(const char *op, const Tensor &t, const char *name) {
  check(t.defined(), op, std::string("missing ") + name);
}

void requireInt(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(t.dtype() == DType::I32 || t.dtype() == DType::I64, op,
        std::string("expects ") + name + " of type i32 or i64, got " +
            t.describe());
}

void requireRank(const char *op, const Tensor &t, const char *name,
                 int64_t rank) {
  check(t.rank() == rank, op,
        std::string("expects ") + name + " of rank " + std::to_string(rank) +
            ", got " + t.describe());
}

void requireShape(const char *op, const Tensor &t, const char *name,
                  const Shape &shape) {
  check(t.shape() == shape, op,
        std::string("expects ") + name + " of shape " + shapeString(shape) +
            ", got " + t.describe());
}

void requireLike(const char *op, const Tensor &t, const char *name,
                 const Tensor &ref, const char *refName) {
  requireDefined(op, t, name);
  check(t.dtype() == ref.dtype() && t.shape() == ref.shape(), op,
        std::string("expects ") + name + " like " + refName + " (" +
            ref.describe() + "), got " + t.describe());
}

void requireDim(const char *op, int64_t dim, int64_t rank) {
  check(dim >= 0 && dim < rank, op,
        "dim " + std::to_string(dim) + " is out of range for rank " +
            std::to_string(rank));
}

std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

std::vector<int64_t> broadcastStrides(const char *op, const Tensor &x,
                                      const Shape &shape,
                                      const std::vector<int64_t> &dims) {
  requireDefined(op, x, "input");
  check(int64_t(dims.size()) == x.rank(), op,
        "expects one result dimension per input dimension (" +
            std::to_string(x.rank()) + "), got " + shapeString(dims));
  for (int64_t d : shape)
    check(d >= 0, op, "negative dimension in " + shapeString(shape));
  std::vector<int64_t> inStrides = stridesOf(x.shape());
  std::vector<int64_t> srcStrides(shape.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    check(d >= 0 && d < int64_t(shape.size()), op,
          "broadcast dimension " + std::to_string(d) +
              " is out of range for rank " + std::to_string(shape.size()));
    check(i == 0 || d > dims[i - 1], op,
          "expects strictly increasing dims, got " + shapeString(dims));
    int64_t in = x.dim(int64_t(i)), out = shape[size_t(d)];
    check(in == 1 || in == out, op,
          "cannot broadcast input dimension " + std::to_string(i) +
              " of size " + std::to_string(in) + " to result dimension " +
              std::to_string(d) + " of size " + std::to_string(out));
    srcStrides[size_t(d)] = in == 1 ? 0 : inStrides[i];
  }
  return srcStrides;
}

StridedSource transposeSource(const char *op, const Tensor &x,
                              const std::vector<int64_t> &perm) {
  requireDefined(op, x, "input");
  check(int64_t(perm.size()) == x.rank(), op,
        "expects a permutation of " + std::to_string(x.rank()) +
            " dimensions, got " + shapeString(perm));
  std::vector<bool> seen(perm.size(), false);
  Shape outShape;
  std::vector<int64_t> inStrides = stridesOf(x.shape()), srcStrides;
  for (int64_t p : perm) {
    check(p >= 0 && p < x.rank() && !seen[size_t(p)], op,
          shapeString(perm) + " is not a permutation of [0, " +
              std::to_string(x.rank()) + ")");
    seen[size_t(p)] = true;
    outShape.push_back(x.dim(p));
    srcStrides.push_back(inStrides[size_t(p)]);
  }
  return {outShape, srcStrides, 0};
}

StridedSource sliceSource(const char *op, const Tensor &x,
                          const std::vector<int64_t> &start,
                          const std::vector<int64_t> &limit,
                          const std::vector<int64_t> &stride) {
  requireDefined(op, x, "input");
  size_t r = size_t(x.rank());
  check(start.size() == r && limit.size() == r && stride.size() == r, op,
        "expects start, limit and stride of length " + std::to_string(r));
  std::vector<int64_t> inStrides = stridesOf(x.shape()), srcStrides(r);
  Shape outShape(r);
  int64_t base = 0;
  for (size_t d = 0; d < r; ++d) {
    check(stride[d] >= 1, op,
          "stride of dimension " + std::to_string(d) +
              " must be positive, got " + std::to_string(stride[d]));
    check(
        start[d] >= 0 && start[d] <= limit[d] && limit[d] <= x.dim(int64_t(d)),
        op,
        "slice [" + std::to_string(start[d]) + ", " + std::to_string(limit[d]) +
            ") of dimension " + std::to_string(d) +
            " is out of bounds for size " + std::to_string(x.dim(int64_t(d))));
    outShape[d] = (limit[d] - start[d] + stride[d] - 1) / stride[d];
    srcStrides[d] = inStrides[d] * stride[d];
    base += start[d] * inStrides[d];
  }
  return {outShape, srcStrides, base};
}

Shape padShape(const char *op, const Tensor &x, const std::vector<int64_t> &low,
               const std::vector<int64_t> &high) {
  requireDefined(op, x, "input");
  size_t r = size_t(x.rank());
  check(low.size() == r && high.size() == r, op,
        "expects low and high padding of length " + std::to_string(r));
  Shape outShape(r);
  for (size_t d = 0; d < r; ++d) {
    check(low[d] >= 0 && high[d] >= 0, op,
          "padding of dimension " + std::to_string(d) +
              " must be non-negative");
    outShape[d] = x.dim(int64_t(d)) + low[d] + high[d];
  }
  return outShape;
}

int64_t cpChunks(const char *op, const Tensor &x, int64_t dim, int64_t cp,
                 Balancer balancer) {
  requireDefined(op, x, "input");
  requireDim(op, dim, x.rank());
  check(cp >= 1, op, "expects cp >= 1, got " + std::to_string(cp));
  check(balancer == Balancer::HeadTail || balancer == Balancer::Contiguous, op,
        "unknown balancer");
  int64_t chunks = balancer == Balancer::HeadTail ? 2 * cp : cp;
  int64_t L = x.dim(dim);
  check(L % chunks == 0, op,
        "sequence length " + std::to_string(L) + " (dimension " +
            std::to_string(dim) + ") is not divisible by " +
            std::to_string(chunks) + " (the " +
            (balancer == Balancer::HeadTail ? "head_tail" : "contiguous") +
            " balancer with cp = " + std::to_string(cp) + " needs " +
            std::to_string(chunks) + " equal chunks)");
  return chunks;
}

DType normResultType(const char *op, const Tensor &x,
                     std::optional<DType> out) {
  requireDefined(op, x, "input");
  DType type = out.value_or(x.dtype());
  std::string error = messages::badNormType(x, type, "a result");
  check(error.empty(), op, error);
  return type;
}

void requireNormGrad(const char *op, const Tensor &grad, const Tensor &x) {
  requireDefined(op, grad, "grad");
  check(grad.shape() == x.shape(), op,
        "expects grad of the input's shape (" + x.describe() + "), got " +
            grad.describe());
  std::string error = messages::badNormType(x, grad.dtype(), "grad");
  check(error.empty(), op, error);
}

void requireResidualAddend(const char *op, const Tensor &lhs,
                           const Tensor &rhs) {
  requireDefined(op, lhs, "lhs");
  check(lhs.shape() == rhs.shape(), op,
        "expects lhs of rhs's shape (" + rhs.describe() + "), got " +
            lhs.describe());
  check(lhs.dtype() == rhs.dtype() ||
            (lhs.dtype() == DType::BF16 && rhs.dtype() == DType::F32),
        op,
        "expects lhs of rhs's type " + dtypeLabel(rhs.dtype()) +
            " (or bf16 for an f32 rhs), got " + lhs.describe());
}

int64_t
checkNorm(const char *op, const Tensor &x,
          std::initializer_list<std::pair<const Tensor *, const char *>> params,
          double eps) {
  check(x.rank() >= 1, op, "expects an input of rank >= 1");
  int64_t D = x.dim(-1);
  for (auto [p, name] : params) {
    requireDefined(op, *p, name);
    check(p->dtype() == x.dtype() && p->shape() == Shape{D}, op,
          std::string("expects ") + name + " of type " + dtypeLabel(x.dtype()) +
              shapeString({D}) + ", got " + p->describe());
  }
  check(eps > 0, op, "expects eps > 0, got " + std::to_string(eps));
  return D;
}

AttentionDims checkAttention(const char *op, const Tensor &q, const Tensor &k,
                             const Tensor &v, const Tensor &qPositions,
                             const Tensor &kPositions, const Tensor &qDocuments,
                             const Tensor &kDocuments, const Tensor &qBlocks,
                             const Tensor &kBlocks, bool causal, int64_t window,
                             double scale) {
  requireRank(op, q, "query [B, H, T, D]", 4);
  requireDefined(op, k, "key");
  requireRank(op, k, "key [B, H, T, D]", 4);
  requireLike(op, v, "value", k, "key");
  check(k.dtype() == q.dtype(), op,
        "expects query and key of the same type, got " + q.describe() +
            " and " + k.describe());
  AttentionDims s;
  s.B = q.dim(0);
  s.Hq = q.dim(1);
  s.Tq = q.dim(2);
  s.D = q.dim(3);
  s.Hkv = k.dim(1);
  s.Tk = k.dim(2);
  check(k.dim(0) == s.B && k.dim(3) == s.D, op,
        "key " + k.describe() + " does not match query batch and head size " +
            q.describe());
  check(s.Hkv > 0 && s.Hq % s.Hkv == 0, op,
        "query heads (" + std::to_string(s.Hq) +
            ") must be a multiple of key/value heads (" +
            std::to_string(s.Hkv) + ")");
  check(scale > 0, op, "expects scale > 0, got " + std::to_string(scale));
  std::string mask = messages::badAttentionMask(
      qPositions, kPositions, qDocuments, kDocuments, qBlocks, kBlocks, causal,
      window, s.B, s.Tq, s.Tk);
  check(mask.empty(), op, mask);
  return s;
}

GemmDims checkLinear(const char *op, const Tensor &x, const Tensor &w,
                     const Tensor &bias) {
  check(x.rank() >= 1, op, "expects an input of rank >= 1");
  requireDefined(op, w, "weight");
  requireRank(op, w, "an [N, K] weight", 2);
  check(w.dtype() == x.dtype(), op,
        "expects input and weight of the same type, got " + x.describe() +
            " and " + w.describe());
  int64_t K = x.dim(-1), N = w.dim(0);
  check(w.dim(1) == K, op,
        "contraction mismatch: input has K = " + std::to_string(K) +
            " but weight has K = " + std::to_string(w.dim(1)));
  if (bias.defined()) {
    check(bias.dtype() == x.dtype(), op,
          "expects a bias of the input's type, got " + bias.describe());
    requireShape(op, bias, "bias", {N});
  }
  Shape outShape = x.shape();
  outShape.back() = N;
  int64_t M = 1; // rows: the product of the leading dimensions
  for (int64_t d = 0; d + 1 < x.rank(); ++d)
    M *= x.dim(d);
  return {outShape, 1, M, K, N};
}

GemmDims checkMatmul(const char *op, const Tensor &a, const Tensor &b,
                     bool transposeA, bool transposeB) {
  requireDefined(op, b, "rhs");
  check(a.rank() >= 2 && a.rank() == b.rank(), op,
        "expects operands of equal rank >= 2, got " + a.describe() + " and " +
            b.describe());
  check(a.dtype() == b.dtype(), op,
        "expects operands of the same type, got " + a.describe() + " and " +
            b.describe());
  int64_t r = a.rank();
  Shape batch(a.shape().begin(), a.shape().end() - 2);
  check(Shape(b.shape().begin(), b.shape().end() - 2) == batch, op,
        "batch dimensions differ: " + a.describe() + " vs " + b.describe());
  int64_t M = transposeA ? a.dim(r - 1) : a.dim(r - 2);
  int64_t K = transposeA ? a.dim(r - 2) : a.dim(r - 1);
  int64_t Kb = transposeB ? b.dim(r - 1) : b.dim(r - 2);
  int64_t N = transposeB ? b.dim(r - 2) : b.dim(r - 1);
  check(K == Kb, op,
        "contraction mismatch: lhs has K = " + std::to_string(K) +
            " but rhs has K = " + std::to_string(Kb));
  Shape outShape = batch;
  outShape.push_back(M);
  outShape.push_back(N);
  int64_t batches = numElements(batch);
  return {outShape, batches, M, K, N};
}

ConvShape checkConv(const char *op, const Tensor &x, const Tensor &w,
                    const std::vector<int64_t> &stride,
                    const std::vector<int64_t> &padding) {
  requireRank(op, x, "an NCHW input", 4);
  requireDefined(op, w, "weight");
  requireRank(op, w, "an OIHW weight", 4);
  check(w.dtype() == x.dtype(), op,
        "expects input and weight of the same type, got " + x.describe() +
            " and " + w.describe());
  check(stride.size() == 2 && padding.size() == 2, op,
        "expects 2 strides and 2 paddings");
  check(stride[0] >= 1 && stride[1] >= 1 && padding[0] >= 0 && padding[1] >= 0,
        op, "expects positive strides and non-negative padding");
  ConvShape s{x.dim(0),  x.dim(1),   x.dim(2),  x.dim(3), w.dim(0),
              w.dim(2),  w.dim(3),   0,         0,        stride[0],
              stride[1], padding[0], padding[1]};
  check(w.dim(1) == s.C, op,
        "input has " + std::to_string(s.C) + " channels but weight expects " +
            std::to_string(w.dim(1)));
  int64_t spanH = s.H + 2 * s.ph - s.KH, spanW = s.W + 2 * s.pw - s.KW;
  check(spanH >= 0 && spanW >= 0, op, "kernel is larger than the padded input");
  s.OH = spanH / s.sh + 1;
  s.OW = spanW / s.sw + 1;
  return s;
}

void requireOptimizerGrad(const char *op, const Tensor &grad,
                          const Tensor &param, const Tensor &gradScale) {
  std::string error = messages::badOptimizerGrad(grad, param);
  check(error.empty(), op, error);
  error = messages::badGradScale(gradScale, param);
  check(error.empty(), op, error);
}

void checkAdamWOperands(const char *op, const Tensor &param, const Tensor &grad,
                        const Tensor &expAvg, const Tensor &expAvgSq,
                        const Tensor &gradScale) {
  requireOptimizerGrad(op, grad, param, gradScale);
  requireLike(op, expAvg, "exp_avg", param, "param");
  requireLike(op, expAvgSq, "exp_avg_sq", param, "param");
}

void checkAdamWStep(const char *op, const Tensor &step) {
  requireDefined(op, step, "step");
  check(step.dtype() == DType::I64 && step.rank() == 0, op,
        "expects a scalar i64 step, got " + step.describe());
}

void checkAdamWHyperparameters(const char *op, double beta1, double beta2,
                               double eps) {
  check(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, op,
        "expects beta1 and beta2 in [0, 1)");
  check(eps > 0, op, "expects eps > 0");
}

} // namespace glimmer_rt::detail
