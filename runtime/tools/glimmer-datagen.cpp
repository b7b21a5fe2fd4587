//===- glimmer-datagen.cpp - Write a synthetic multimodal batch -----------===//
//
//   glimmer-datagen --batch=2 --seq=16 --vocab=64 --images-per-sample=1
//       --image-size=8 --patch=4 --channels=3 --seed=0 -o batch.safetensors
//
// No MLIR: part of the runtime, usable on machines without LLVM.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Safetensors.h"
#include "glimmer_rt/Synthetic.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace glimmer_rt;

static int usage(const char *why) {
  std::fprintf(stderr,
               "glimmer-datagen: error: %s\n"
               "usage: glimmer-datagen [--batch=N] [--seq=N] [--vocab=N] "
               "[--image-token=N] [--images-per-sample=N] [--image-size=N] "
               "[--patch=N] [--channels=N] [--seed=N] -o FILE\n",
               why);
  return 1;
}

int main(int argc, char **argv) {
  SyntheticConfig cfg;
  std::string out;
  struct Flag {
    const char *name;
    int64_t *value;
  } flags[] = {{"--batch=", &cfg.batch},
               {"--seq=", &cfg.seqLen},
               {"--vocab=", &cfg.vocab},
               {"--image-token=", &cfg.imageTokenId},
               {"--images-per-sample=", &cfg.imagesPerSample},
               {"--image-size=", &cfg.imageSize},
               {"--patch=", &cfg.patch},
               {"--channels=", &cfg.channels}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      out = argv[++i];
      continue;
    }
    bool matched = false;
    auto parse = [&](const char *prefix, auto &value, bool allowZero) {
      size_t n = std::strlen(prefix);
      if (arg.compare(0, n, prefix) != 0)
        return true;
      matched = true;
      char *end = nullptr;
      long long v = std::strtoll(arg.c_str() + n, &end, 10);
      if (*end != '\0' || v < 0 || (!allowZero && v == 0))
        return false;
      value = v;
      return true;
    };
    for (Flag &f : flags)
      if (!parse(f.name, *f.value, std::strcmp(f.name, "--images-per-sample=") == 0))
        return usage(("bad value in '" + arg + "'").c_str());
    if (!parse("--seed=", cfg.seed, true))
      return usage(("bad value in '" + arg + "'").c_str());
    if (!matched)
      return usage(("unknown argument '" + arg + "'").c_str());
  }
  if (out.empty())
    return usage("missing -o FILE");
  try {
    writeSyntheticBatch(cfg, out);
  } catch (const RuntimeError &e) {
    return usage(e.what());
  }
  return 0;
}
