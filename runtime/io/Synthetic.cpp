//===- Synthetic.cpp - Seeded synthetic multimodal batches ----------------===//

#include "glimmer_rt/Synthetic.h"
#include "glimmer_rt/Kernels.h"
#include "glimmer_rt/Safetensors.h"

#include <cmath>

using namespace glimmer_rt;

namespace {
/// splitmix64: small, fast, and the same on every platform.
class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n).
  int64_t below(int64_t n) { return int64_t(next() % uint64_t(n)); }
  /// Uniform in (0, 1).
  double uniform() { return (double(next() >> 11) + 0.5) / 9007199254740992.0; }
  /// Standard normal (Box-Muller).
  double normal() {
    double u = uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }

private:
  uint64_t state;
};
} // namespace

std::map<std::string, Tensor>
glimmer_rt::makeSyntheticBatch(const SyntheticConfig &cfg) {
  int64_t imageToken = cfg.imageTokenId < 0 ? cfg.vocab - 1 : cfg.imageTokenId;
  int64_t run = cfg.tokensPerImage();
  if (cfg.batch < 1 || cfg.seqLen < 2 || cfg.vocab < 2 ||
      cfg.imageSize % cfg.patch != 0)
    throw RuntimeError("synthetic batch: bad configuration");
  if (cfg.imagesPerSample * run > cfg.seqLen)
    throw RuntimeError("synthetic batch: " +
                       std::to_string(cfg.imagesPerSample) + " images of " +
                       std::to_string(run) + " tokens do not fit in " +
                       std::to_string(cfg.seqLen) + " positions");
  Rng rng(cfg.seed);
  Tensor tokens(DType::I64, {cfg.batch, cfg.seqLen});
  Tensor labels(DType::I64, {cfg.batch, cfg.seqLen});
  int64_t *tok = tokens.data<int64_t>(), *lab = labels.data<int64_t>();
  for (int64_t b = 0; b < cfg.batch; ++b) {
    int64_t *t = tok + b * cfg.seqLen;
    for (int64_t i = 0; i < cfg.seqLen; ++i) {
      int64_t v = rng.below(cfg.vocab - 1);
      t[i] = v >= imageToken ? v + 1 : v; // never the image token
    }
    // Image runs: split the free text among the gaps, seeded.
    int64_t text = cfg.seqLen - cfg.imagesPerSample * run;
    int64_t pos = 0;
    for (int64_t k = 0; k < cfg.imagesPerSample; ++k) {
      int64_t gap = text > 0 ? rng.below(text + 1) : 0;
      text -= gap;
      pos += gap;
      for (int64_t j = 0; j < run; ++j)
        t[pos + j] = imageToken;
      pos += run;
    }
    for (int64_t i = 0; i < cfg.seqLen; ++i) {
      bool last = i + 1 == cfg.seqLen;
      bool ignore = last || t[i] == imageToken || t[i + 1] == imageToken;
      lab[b * cfg.seqLen + i] = ignore ? cfg.ignoreIndex : t[i + 1];
    }
  }
  int64_t images = cfg.batch * cfg.imagesPerSample;
  Tensor pixels(DType::F32,
                {images, cfg.channels, cfg.imageSize, cfg.imageSize});
  float *px = pixels.data<float>();
  for (int64_t i = 0; i < pixels.numel(); ++i)
    px[i] = float(rng.normal());
  return {{"tokens", tokens},
          {"labels", labels},
          {"positions", iota(DType::I64, {cfg.batch, cfg.seqLen}, 1)},
          {"images", pixels}};
}

void glimmer_rt::writeSyntheticBatch(const SyntheticConfig &cfg,
                                     const std::string &path) {
  auto batch = makeSyntheticBatch(cfg);
  std::vector<TensorView> views;
  for (const char *name : {"tokens", "labels", "positions", "images"}) {
    const Tensor &t = batch.at(name);
    views.push_back({name, t.dtype(), t.shape(), t.raw()});
  }
  std::string error;
  if (!writeSafetensors(path, views, {{"format", "pt"}}, error))
    throw RuntimeError(error);
}
