//===- Fusion.cpp - Where a fused kernel runs -----------------------------===//
//
// glimmer_rt::fused: the CUDA backend's kernel for GPU inputs (cuda/Fusion.cu),
// the fusion's ops one by one otherwise; and the host build of the kernels
// that checks them on a CPU.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Fusion.h"

#include "../common/FusionHeaders.h"

#ifdef GLIMMER_RT_HAVE_CUDA
#include "../cuda/CudaBackend.h"
#endif

#include <cstring>
#include <string>

using namespace glimmer_rt;

const std::vector<fusion::Header> &fusion::headers() {
  // {"Bf16.h", R"(...)"}, ... (generated from the runtime's sources).
  static const std::vector<Header> table = {
#include "FusionHeaders.inc"
  };
  return table;
}

namespace {

FusedCheck &fusedCheck() {
  static FusedCheck check;
  return check;
}

/// `text` without its `#include "NAME"` lines for the embedded headers.
std::string withoutEmbeddedIncludes(std::string text) {
  for (const fusion::Header &h : fusion::headers()) {
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
    for (const fusion::Header &h : fusion::headers())
      if (std::strcmp(h.name, name) == 0)
        source += withoutEmbeddedIncludes(h.text) + "\n";
  return source + withoutEmbeddedIncludes(kernels.cudaSource());
}

void glimmer_rt::requireSameResults(int index,
                                    const std::vector<Tensor> &kernel,
                                    const std::vector<Tensor> &ops) {
  std::string name =
      "glimmer.fusion: kernel glimmer_fused_" + std::to_string(index);
  if (kernel.size() != ops.size())
    throw RuntimeError(name + " gives " + std::to_string(kernel.size()) +
                       " results, its ops " + std::to_string(ops.size()));
  for (size_t k = 0; k < kernel.size(); ++k) {
    Tensor a = kernel[k].to(Device::cpu()), b = ops[k].to(Device::cpu());
    std::string result = name + " result " + std::to_string(k);
    if (a.dtype() != b.dtype() || a.shape() != b.shape())
      throw RuntimeError(result + " is " + a.describe() + ", its ops give " +
                         b.describe());
    size_t size = dtypeSize(a.dtype());
    const char *pa = static_cast<const char *>(a.raw());
    const char *pb = static_cast<const char *>(b.raw());
    for (int64_t i = 0; i < a.numel(); ++i)
      if (std::memcmp(pa + size_t(i) * size, pb + size_t(i) * size, size))
        throw RuntimeError(result + " (" + a.describe() +
                           ") differs from its ops' at element " +
                           std::to_string(i) + ": " + std::to_string(a.item(i)) +
                           " vs " + std::to_string(b.item(i)));
  }
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
