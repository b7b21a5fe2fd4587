//===- Fusion.cpp - Where a fused kernel runs -----------------------------===//
//
// glimmer_rt::fused: the CUDA backend's kernel for GPU inputs (cuda/Fusion.cu),
// the fusion's ops one by one otherwise; and the host build of the kernels
// that checks them on a CPU.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Fusion.h"

#ifdef GLIMMER_RT_HAVE_CUDA
#include "../cuda/CudaBackend.h"
#endif

#include <cstring>

using namespace glimmer_rt;

namespace {

struct Header {
  const char *name;
  const char *text;
};
// {"Bf16.h", R"(...)"}, ... (generated from the runtime's sources).
const Header kHeaders[] = {
#include "FusionHeaders.inc"
};

FusedCheck &fusedCheck() {
  static FusedCheck check;
  return check;
}

/// `text` without its `#include "NAME"` lines for the embedded headers.
std::string withoutEmbeddedIncludes(std::string text) {
  for (const Header &h : kHeaders) {
    std::string line = std::string("#include \"") + h.name + "\"";
    for (size_t at; (at = text.find(line)) != std::string::npos;)
      text.erase(at, line.size());
  }
  return text;
}

} // namespace

#ifndef GLIMMER_RT_HAVE_CUDA
FusedKernels::~FusedKernels() = default;

bool glimmer_rt::fusedKernelsEnabled() { return false; }
#endif

void glimmer_rt::setFusedCheck(FusedCheck check) {
  fusedCheck() = std::move(check);
}

std::string glimmer_rt::fusedKernelsHostSource(const FusedKernels &kernels) {
  std::string source = "#define GLIMMER_FUSION_HOST 1\n";
  // FusionHost.h first, then the headers in the order they depend on each
  // other (each once: their include lines are dropped).
  for (const char *name : {"FusionHost.h", "Bf16.h", "ElementwiseMath.cuh",
                           "FusionPrelude.cuh"})
    for (const Header &h : kHeaders)
      if (std::strcmp(h.name, name) == 0)
        source += withoutEmbeddedIncludes(h.text) + "\n";
  return source + withoutEmbeddedIncludes(kernels.cudaSource());
}

std::vector<Tensor> glimmer_rt::fused(FusedKernels &kernels, int index,
                                      const std::vector<Tensor> &inputs,
                                      const std::vector<FusedResult> &results,
                                      FusedOps ops) {
  if (inputs.empty() || results.empty())
    throw RuntimeError("glimmer.fusion: expects inputs and results");
#ifdef GLIMMER_RT_HAVE_CUDA
  if (inputs.front().isCuda() && fusedKernelsEnabled())
    return cuda::runFused(kernels, index, inputs, results, ops);
#endif
  std::vector<Tensor> out = ops(inputs);
  if (fusedCheck() && !inputs.front().isCuda())
    fusedCheck()(kernels, index, inputs, out);
  return out;
}
