//===- CudnnAttentionTest.cpp - cuDNN attention on a GPU ------------------===//
//
// A plain program for the GPU hosts (integration_test/cudnn-attention.test):
// bf16 attention and its gradient through cuDNN's fused flash attention
// against the runtime's f32 kernels on the same bf16 values (which the
// kernel tests check against PyTorch), for unmasked and index-causal
// masks, grouped-query heads, ragged lengths and fewer queries than keys.
// Checks that cuDNN ran each case, that results are finite and within bf16
// tolerance (relative norm 1e-2, lse to 1e-2), and that the backward is
// bitwise reproducible (run with GLIMMER_CUDA_ATTENTION=cudnn-deterministic:
// by default long sequences take cuDNN's non-deterministic backward, see
// cudnnAttentionDeterminism). Then sequence-major layouts (AttentionLayout:
// q, k, v and out stored [B, T, H, D], read and written by cuDNN through
// strides): cuDNN must run them, the forward must equal the head-major
// call's results transposed bit for bit, the backward within the same
// tolerance. Prints PASS/FAIL per case; exits non-zero on a failure. It is
// a C++ program because cuDNN attention is off in Python processes (see
// glimmer_rt::setCudnnAttention).
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Device.h"
#include "glimmer_rt/Kernels.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace glimmer_rt;

namespace {

struct Case {
  const char *name;
  int64_t B, Hq, Hkv, Tq, Tk, D;
  bool causal;
};

/// Deterministic values in [-2, 2).
Tensor random(const Shape &shape, uint64_t seed) {
  Tensor t(DType::F32, shape);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  float *p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = float((s >> 40) & 0xffff) / 16384.0f - 2.0f;
  }
  return t;
}

std::vector<double> host(const Tensor &t) {
  Tensor h = convert(t, DType::F32).to(Device::cpu());
  const float *p = h.data<float>();
  return std::vector<double>(p, p + h.numel());
}

/// ||a - e|| / ||e||, or infinity when `a` is not finite.
double relative(const std::vector<double> &a, const std::vector<double> &e) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]))
      return INFINITY;
    num += (a[i] - e[i]) * (a[i] - e[i]);
    den += e[i] * e[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

double maxAbs(const std::vector<double> &a, const std::vector<double> &e) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::isfinite(a[i]) ? std::max(m, std::fabs(a[i] - e[i])) : INFINITY;
  return m;
}

bool same(const Tensor &a, const Tensor &b) {
  Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() &&
         std::memcmp(ha.raw(), hb.raw(), ha.nbytes()) == 0;
}

bool run(const Case &c) {
  Device gpu = Device::cuda(0);
  double scale = 0.7 / std::sqrt(double(c.D));
  // bf16 operands, and the same values in f32 for the reference.
  auto make = [&](const Shape &shape, uint64_t seed) {
    Tensor b = convert(random(shape, seed).to(gpu), DType::BF16);
    return std::pair{b, convert(b, DType::F32)};
  };
  auto [q, qf] = make({c.B, c.Hq, c.Tq, c.D}, 1);
  auto [k, kf] = make({c.B, c.Hkv, c.Tk, c.D}, 2);
  auto [v, vf] = make({c.B, c.Hkv, c.Tk, c.D}, 3);
  auto [dout, doutf] = make({c.B, c.Hq, c.Tq, c.D}, 4);
  Tensor none;

  int64_t before = cudnnAttentionCalls();
  auto [out, lse] = attention(q, k, v, none, none, none, none, none, none,
                              c.causal, 0, scale);
  auto [dq, dk, dv] = attentionGrad(dout, q, k, v, out, lse, none, none, none,
                                    none, none, none, c.causal, 0, scale);
  auto [dq2, dk2, dv2] =
      attentionGrad(dout, q, k, v, out, lse, none, none, none, none, none, none,
                    c.causal, 0, scale);
  int64_t ran = cudnnAttentionCalls() - before;

  auto [outf, lsef] = attention(qf, kf, vf, none, none, none, none, none, none,
                                c.causal, 0, scale);
  auto [dqf, dkf, dvf] =
      attentionGrad(doutf, qf, kf, vf, outf, lsef, none, none, none, none, none,
                    none, c.causal, 0, scale);

  double eOut = relative(host(out), host(outf));
  double eLse = maxAbs(host(lse), host(lsef));
  double eDq = relative(host(dq), host(dqf));
  double eDk = relative(host(dk), host(dkf));
  double eDv = relative(host(dv), host(dvf));
  bool deterministic = same(dq, dq2) && same(dk, dk2) && same(dv, dv2);
  bool ok = ran == 3 && eOut <= 1e-2 && eLse <= 1e-2 && eDq <= 1e-2 &&
            eDk <= 1e-2 && eDv <= 1e-2 && deterministic;
  std::printf("%s: %s (cuDNN calls %lld/3; out %.2e, lse %.2e, dq %.2e, "
              "dk %.2e, dv %.2e; backward %s)\n",
              ok ? "PASS" : "FAIL", c.name, (long long)ran, eOut, eLse, eDq,
              eDk, eDv, deterministic ? "reproducible" : "NOT reproducible");
  return ok;
}

/// [B, H, T, D] <-> [B, T, H, D] when `sequenceMajor`, else `t`.
Tensor stored(const Tensor &t, bool sequenceMajor) {
  return sequenceMajor ? transpose(t, {0, 2, 1, 3}) : t;
}

struct LayoutCase {
  const char *name;
  Case shape;
  AttentionLayout layout;
};

/// cuDNN with `lc.layout` against cuDNN head-major, on the same values.
bool runLayout(const LayoutCase &lc) {
  const Case &c = lc.shape;
  const AttentionLayout &l = lc.layout;
  Device gpu = Device::cuda(0);
  double scale = 0.7 / std::sqrt(double(c.D));
  auto make = [&](const Shape &shape, uint64_t seed) {
    return convert(random(shape, seed).to(gpu), DType::BF16);
  };
  Tensor q = make({c.B, c.Hq, c.Tq, c.D}, 11);
  Tensor k = make({c.B, c.Hkv, c.Tk, c.D}, 12);
  Tensor v = make({c.B, c.Hkv, c.Tk, c.D}, 13);
  Tensor dout = make({c.B, c.Hq, c.Tq, c.D}, 14);
  Tensor none;

  int64_t before = cudnnAttentionCalls();
  auto [out, lse] = attention(q, k, v, none, none, none, none, none, none,
                              c.causal, 0, scale);
  auto [dq, dk, dv] = attentionGrad(dout, q, k, v, out, lse, none, none, none,
                                    none, none, none, c.causal, 0, scale);
  Tensor sq = stored(q, l.query), sk = stored(k, l.key),
         sv = stored(v, l.value);
  auto [sout, slse] = attention(sq, sk, sv, none, none, none, none, none, none,
                                c.causal, 0, scale, l);
  auto [sdq, sdk, sdv] =
      attentionGrad(stored(dout, l.output), sq, sk, sv, sout, slse, none, none,
                    none, none, none, none, c.causal, 0, scale, l);
  int64_t ran = cudnnAttentionCalls() - before;

  bool forward = same(sout, stored(out, l.output)) && same(slse, lse);
  double eDq = relative(host(stored(sdq, l.query)), host(dq));
  double eDk = relative(host(stored(sdk, l.key)), host(dk));
  double eDv = relative(host(stored(sdv, l.value)), host(dv));
  bool ok = ran == 4 && forward && eDq <= 1e-2 && eDk <= 1e-2 && eDv <= 1e-2;
  std::printf("%s: %s (cuDNN calls %lld/4; forward %s; dq %.2e, dk %.2e, "
              "dv %.2e)\n",
              ok ? "PASS" : "FAIL", lc.name, (long long)ran,
              forward ? "bitwise equal" : "DIFFERS", eDq, eDk, eDv);
  return ok;
}

} // namespace

int main() {
  if (cudaDeviceCount() < 1) {
    std::printf("SKIP: needs a GPU\n");
    return 0;
  }
  const Case cases[] = {
      {"plain", 2, 4, 4, 96, 96, 64, false},
      {"gqa_head128", 2, 4, 2, 160, 160, 128, false},
      {"index_causal_gqa", 2, 4, 2, 160, 160, 64, true},
      {"index_causal_mqa_ragged_head96", 1, 4, 1, 200, 200, 96, true},
      {"index_causal_fewer_queries", 2, 4, 2, 64, 160, 64, true},
      {"index_causal_long", 1, 2, 1, 1024, 1024, 128, true},
      {"decoder_like", 1, 16, 8, 2048, 2048, 64, true},
  };
  // Layout flags in AttentionLayout's order: query, key, value, output.
  const LayoutCase layouts[] = {
      {"layout_all_index_causal_gqa",
       {"", 2, 4, 2, 160, 160, 64, true},
       {true, true, true, true}},
      {"layout_value_output_fewer_queries",
       {"", 2, 4, 2, 64, 160, 128, true},
       {false, false, true, true}},
      {"layout_query_key_plain",
       {"", 2, 4, 4, 96, 96, 64, false},
       {true, true, false, false}},
  };
  int failed = 0;
  try {
    for (const Case &c : cases)
      failed += run(c) ? 0 : 1;
    for (const LayoutCase &lc : layouts)
      failed += runLayout(lc) ? 0 : 1;
  } catch (const std::exception &e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  return failed == 0 ? 0 : 1;
}
