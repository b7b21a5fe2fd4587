//===- Attention.cpp - CPU kernels: Attention -----------------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: rotary embeddings, and
// attention with its gradient over the mask of Kernels.h (max subtracted before
// exponentials).
//
//===----------------------------------------------------------------------===//

#include "../kernels/AttentionLayout.h"
#include "KernelUtil.h"

namespace glimmer_rt::cpu {

Tensor rope(const Tensor &x, const Tensor &positions, double theta,
            RopeStyle style, bool inverse) {
  const char *op = "rope";
  requireFloat(op, x, "input");
  requireRank(op, x, "a [B, T, H, D] input", 4);
  int64_t B = x.dim(0), T_ = x.dim(1), H = x.dim(2), D = x.dim(3);
  check(D % 2 == 0, op,
        "expects an even head dimension, got " + std::to_string(D));
  check(theta > 0, op, "expects theta > 0");
  std::vector<int64_t> pos = indexValues(op, positions, "positions");
  requireShape(op, positions, "positions", {B, T_});
  check(style == RopeStyle::Interleaved || style == RopeStyle::Half, op,
        "unknown rope style");
  int64_t half = D / 2;
  // Frequencies theta^(-2i/D). Angles, cosines and sines are computed in
  // double and rounded once to the tensor's type.
  std::vector<double> freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    freq[size_t(i)] = std::pow(theta, -2.0 * double(i) / double(D));
  return dispatchFloat(op, x, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor y(x.dtype(), x.shape());
    const T *in = x.data<T>();
    T *o = y.data<T>();
    std::vector<T> c(static_cast<size_t>(half)), s(static_cast<size_t>(half));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T_; ++t) {
        double p = double(pos[size_t(b * T_ + t)]);
        for (int64_t i = 0; i < half; ++i) {
          double angle = p * freq[size_t(i)];
          c[size_t(i)] = T(std::cos(angle));
          s[size_t(i)] = T(inverse ? -std::sin(angle) : std::sin(angle));
        }
        for (int64_t h = 0; h < H; ++h) {
          int64_t base = ((b * T_ + t) * H + h) * D;
          for (int64_t i = 0; i < half; ++i) {
            int64_t i0 = style == RopeStyle::Interleaved ? 2 * i : i;
            int64_t i1 = style == RopeStyle::Interleaved ? 2 * i + 1 : i + half;
            T x0 = in[base + i0], x1 = in[base + i1];
            T ci = c[size_t(i)], si = s[size_t(i)];
            o[base + i0] = x0 * ci - x1 * si;
            o[base + i1] = x0 * si + x1 * ci;
          }
        }
      }
    return y;
  });
}

namespace {
/// Validated attention operands and the mask they define.
struct AttentionShape : detail::AttentionDims {
  bool causal;
  int64_t window; // > 0: keys less than `window` positions back; 0: none
  std::vector<int64_t> qPos, kPos, qDoc, kDoc, qBlk, kBlk;

  /// The mask of Kernels.h: same document, within the window, and causal
  /// unless the query's block (>= 0) is the key's.
  bool allowed(int64_t b, int64_t i, int64_t j) const {
    if (!qDoc.empty() && kDoc[size_t(b * Tk + j)] != qDoc[size_t(b * Tq + i)])
      return false;
    if (!causal)
      return true;
    // Causal without positions: the indices are the positions.
    int64_t qp = qPos.empty() ? i : qPos[size_t(b * Tq + i)];
    int64_t kp = kPos.empty() ? j : kPos[size_t(b * Tk + j)];
    if (window > 0 && qp - kp >= window)
      return false;
    if (kp <= qp)
      return true;
    if (qBlk.empty())
      return false;
    int64_t qb = qBlk[size_t(b * Tq + i)];
    return qb >= 0 && qb == kBlk[size_t(b * Tk + j)];
  }
};

AttentionShape checkAttention(const char *op, const Tensor &q, const Tensor &k,
                              const Tensor &v, const Tensor &qPositions,
                              const Tensor &kPositions,
                              const Tensor &qDocuments,
                              const Tensor &kDocuments, const Tensor &qBlocks,
                              const Tensor &kBlocks, bool causal,
                              int64_t window, double scale) {
  requireFloat(op, q, "query");
  AttentionShape s;
  static_cast<detail::AttentionDims &>(s) = detail::checkAttention(
      op, q, k, v, qPositions, kPositions, qDocuments, kDocuments, qBlocks,
      kBlocks, causal, window, scale);
  s.causal = causal;
  s.window = window;
  if (qPositions.defined()) {
    s.qPos = indexValues(op, qPositions, "query positions");
    s.kPos = indexValues(op, kPositions, "key positions");
  }
  if (qDocuments.defined()) {
    s.qDoc = indexValues(op, qDocuments, "query documents");
    s.kDoc = indexValues(op, kDocuments, "key documents");
  }
  if (qBlocks.defined()) {
    s.qBlk = indexValues(op, qBlocks, "query blocks");
    s.kBlk = indexValues(op, kBlocks, "key blocks");
  }
  return s;
}
} // namespace

std::tuple<Tensor, Tensor>
attention(const Tensor &q, const Tensor &k, const Tensor &v,
          const Tensor &qPositions, const Tensor &kPositions,
          const Tensor &qDocuments, const Tensor &kDocuments,
          const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
          int64_t window, double scale, AttentionLayout layout) {
  if (layout.any())
    return detail::attentionTransposed(q, k, v, qPositions, kPositions,
                                       qDocuments, kDocuments, qBlocks, kBlocks,
                                       causal, window, scale, layout);
  const char *op = "attention";
  AttentionShape s =
      checkAttention(op, q, k, v, qPositions, kPositions, qDocuments,
                     kDocuments, qBlocks, kBlocks, causal, window, scale);
  return dispatchFloat(op, q, "query", [&](auto tag) {
    using T = decltype(tag);
    const int64_t D = s.D, group = s.Hq / s.Hkv;
    Tensor out = Tensor::zeros(q.dtype(), q.shape());
    Tensor lse(q.dtype(), {s.B, s.Hq, s.Tq});
    const T *Q = q.data<T>(), *K = k.data<T>(), *V = v.data<T>();
    T *O = out.data<T>(), *L = lse.data<T>();
    const T sc = T(scale);
    std::vector<T> score(static_cast<size_t>(s.Tk));
    std::vector<char> ok(static_cast<size_t>(s.Tk));
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.Hq; ++h) {
        int64_t kvh = h / group; // as repeat_interleave of the kv heads
        const T *Kh = K + (b * s.Hkv + kvh) * s.Tk * D;
        const T *Vh = V + (b * s.Hkv + kvh) * s.Tk * D;
        for (int64_t i = 0; i < s.Tq; ++i) {
          int64_t row = (b * s.Hq + h) * s.Tq + i;
          const T *qi = Q + row * D;
          T *oi = O + row * D;
          T m = -std::numeric_limits<T>::infinity();
          bool any = false;
          for (int64_t j = 0; j < s.Tk; ++j) {
            ok[size_t(j)] = s.allowed(b, i, j);
            if (!ok[size_t(j)])
              continue;
            T dot = 0;
            for (int64_t d = 0; d < D; ++d)
              dot += qi[d] * Kh[j * D + d];
            score[size_t(j)] = sc * dot;
            m = std::max(m, score[size_t(j)]);
            any = true;
          }
          if (!any) { // fully masked: zero output, lse = -inf
            L[row] = -std::numeric_limits<T>::infinity();
            continue;
          }
          T sum = 0;
          for (int64_t j = 0; j < s.Tk; ++j)
            if (ok[size_t(j)]) {
              score[size_t(j)] = std::exp(score[size_t(j)] - m);
              sum += score[size_t(j)];
            }
          for (int64_t j = 0; j < s.Tk; ++j)
            if (ok[size_t(j)]) {
              T p = score[size_t(j)] / sum;
              for (int64_t d = 0; d < D; ++d)
                oi[d] += p * Vh[j * D + d];
            }
          L[row] = m + std::log(sum);
        }
      }
    return std::make_tuple(out, lse);
  });
}

std::tuple<Tensor, Tensor, Tensor>
attentionGrad(const Tensor &grad, const Tensor &q, const Tensor &k,
              const Tensor &v, const Tensor &out, const Tensor &lse,
              const Tensor &qPositions, const Tensor &kPositions,
              const Tensor &qDocuments, const Tensor &kDocuments,
              const Tensor &qBlocks, const Tensor &kBlocks, bool causal,
              int64_t window, double scale, AttentionLayout layout) {
  if (layout.any())
    return detail::attentionGradTransposed(
        grad, q, k, v, out, lse, qPositions, kPositions, qDocuments, kDocuments,
        qBlocks, kBlocks, causal, window, scale, layout);
  const char *op = "attention_grad";
  AttentionShape s =
      checkAttention(op, q, k, v, qPositions, kPositions, qDocuments,
                     kDocuments, qBlocks, kBlocks, causal, window, scale);
  requireLike(op, grad, "grad", q, "query");
  requireLike(op, out, "output", q, "query");
  requireDefined(op, lse, "lse");
  check(lse.dtype() == q.dtype(), op,
        "expects lse in the query's precision, got " + lse.describe());
  requireShape(op, lse, "lse", {s.B, s.Hq, s.Tq});
  return dispatchFloat(op, q, "query", [&](auto tag) {
    using T = decltype(tag);
    const int64_t D = s.D, group = s.Hq / s.Hkv;
    Tensor dq = Tensor::zeros(q.dtype(), q.shape());
    Tensor dk = Tensor::zeros(k.dtype(), k.shape());
    Tensor dv = Tensor::zeros(v.dtype(), v.shape());
    const T *Q = q.data<T>(), *K = k.data<T>(), *V = v.data<T>();
    const T *G = grad.data<T>(), *O = out.data<T>(), *L = lse.data<T>();
    T *dQ = dq.data<T>(), *dK = dk.data<T>(), *dV = dv.data<T>();
    const T sc = T(scale);
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.Hq; ++h) {
        int64_t kvOff = (b * s.Hkv + h / group) * s.Tk * D;
        for (int64_t i = 0; i < s.Tq; ++i) {
          int64_t row = (b * s.Hq + h) * s.Tq + i;
          T l = L[row];
          if (l == -std::numeric_limits<T>::infinity())
            continue; // fully masked row: no gradient
          const T *qi = Q + row * D, *gi = G + row * D, *oi = O + row * D;
          T *dqi = dQ + row * D;
          T delta = 0; // rowsum(dO * O)
          for (int64_t d = 0; d < D; ++d)
            delta += gi[d] * oi[d];
          for (int64_t j = 0; j < s.Tk; ++j) {
            if (!s.allowed(b, i, j))
              continue;
            const T *kj = K + kvOff + j * D, *vj = V + kvOff + j * D;
            T dot = 0, dp = 0;
            for (int64_t d = 0; d < D; ++d) {
              dot += qi[d] * kj[d];
              dp += gi[d] * vj[d];
            }
            T p = std::exp(sc * dot - l);
            T ds = p * (dp - delta);
            T *dkj = dK + kvOff + j * D, *dvj = dV + kvOff + j * D;
            for (int64_t d = 0; d < D; ++d) {
              dvj[d] += p * gi[d];
              dqi[d] += sc * ds * kj[d];
              dkj[d] += sc * ds * qi[d];
            }
          }
        }
      }
    return std::make_tuple(dq, dk, dv);
  });
}

} // namespace glimmer_rt::cpu
