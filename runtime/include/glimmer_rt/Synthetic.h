//===- Synthetic.h - Seeded synthetic multimodal batches --------*- C++ -*-===//
//
// Deterministic batches for the reference VLM's inputs (tokens, labels,
// positions, images): each image is a contiguous run of image tokens at a
// seeded position; text tokens are never the image token; labels are the
// next token (pre-shifted) with ignore_index on image positions, on
// positions whose target is an image token, and on the last position.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_SYNTHETIC_H
#define GLIMMER_RT_SYNTHETIC_H

#include "glimmer_rt/Tensor.h"

#include <map>
#include <string>

namespace glimmer_rt {

struct SyntheticConfig {
  int64_t batch = 2;
  int64_t seqLen = 16;
  int64_t vocab = 64;
  /// Defaults to vocab - 1.
  int64_t imageTokenId = -1;
  int64_t imagesPerSample = 1;
  int64_t channels = 3;
  int64_t imageSize = 8;
  int64_t patch = 4;
  int64_t ignoreIndex = -100;
  uint64_t seed = 0;

  int64_t tokensPerImage() const {
    return (imageSize / patch) * (imageSize / patch);
  }
};

/// Returns {"tokens", "labels", "positions", "images"}; images has one row
/// per image of the batch, in batch order. Throws RuntimeError when the
/// images do not fit in the sequence.
std::map<std::string, Tensor> makeSyntheticBatch(const SyntheticConfig &cfg);

/// makeSyntheticBatch written to `path` as safetensors; throws RuntimeError.
void writeSyntheticBatch(const SyntheticConfig &cfg, const std::string &path);

} // namespace glimmer_rt

#endif // GLIMMER_RT_SYNTHETIC_H
