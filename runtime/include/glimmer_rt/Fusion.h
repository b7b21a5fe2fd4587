//===- Fusion.h - Fused kernels of a compiled program -----------*- C++ -*-===//
//
// The compiler turns each glimmer.fusion into a CUDA kernel (one source for
// the whole program, written into the generated C++) and, with it, a
// function that runs the same ops one by one with the runtime's kernels.
// Where the inputs live on a GPU the CUDA backend compiles the source with
// NVRTC, once per program and GPU architecture, and runs the kernel; on the
// CPU (and with GLIMMER_CUDA_FUSION=off) the ops run one by one. Both give
// the same values, bit for bit; GLIMMER_CUDA_FUSION=check runs both on the
// GPU and stops at the first kernel whose results differ.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_FUSION_H
#define GLIMMER_RT_FUSION_H

#include "glimmer_rt/Tensor.h"

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace glimmer_rt {

/// The fused kernels of one program (a static object of the generated
/// code). It owns what the backend built from the source, until the
/// program is unloaded.
class FusedKernels {
public:
  explicit FusedKernels(const char *cudaSource) : source(cudaSource) {}
  ~FusedKernels();
  FusedKernels(const FusedKernels &) = delete;
  FusedKernels &operator=(const FusedKernels &) = delete;

  const char *cudaSource() const { return source; }
  /// The backend's state for these kernels (compiled modules), made on
  /// first use under the lock.
  struct Compiled;
  std::mutex lock;
  Compiled *compiled = nullptr;

private:
  const char *source;
};

/// Element type and shape of one result of a fused kernel.
struct FusedResult {
  DType dtype;
  Shape shape;
};

/// The fusion's ops one by one (generated with the kernel).
using FusedOps = std::vector<Tensor> (*)(const std::vector<Tensor> &inputs);

/// Kernel `index` of `kernels` (`glimmer_fused_<index>` in the source) on
/// `inputs`, returning tensors of `results`' types: the CUDA kernel where
/// the first input lives on a GPU and fused kernels are enabled, else
/// `ops(inputs)`.
std::vector<Tensor> fused(FusedKernels &kernels, int index,
                          const std::vector<Tensor> &inputs,
                          const std::vector<FusedResult> &results,
                          FusedOps ops);

/// Whether the CUDA backend runs fused kernels: built with CUDA, and
/// GLIMMER_CUDA_FUSION is "on" (the default) or "check" (read once per
/// process; another value is an error).
bool fusedKernelsEnabled();

/// The kernels' source as one host C++ translation unit, with the
/// runtime's headers it includes inlined: each kernel a loop over its
/// elements on one thread, callable as `extern "C" void
/// glimmer_fused_<index>_host(void *const *pointers)` (inputs', then
/// results' element pointers). For checking the generated kernels where
/// there is no GPU (glimmer-run --check-fused-kernels).
std::string fusedKernelsHostSource(const FusedKernels &kernels);

/// Throws unless the results of kernel `index` equal its ops' results bit
/// for bit (GLIMMER_CUDA_FUSION=check, glimmer-run --check-fused-kernels),
/// naming the result and its first differing element.
void requireSameResults(int index, const std::vector<Tensor> &kernel,
                        const std::vector<Tensor> &ops);

/// Called by `fused` on the CPU after the ops ran, with their results; none
/// by default. Set before any program runs.
using FusedCheck =
    std::function<void(FusedKernels &kernels, int index,
                       const std::vector<Tensor> &inputs,
                       const std::vector<Tensor> &results)>;
void setFusedCheck(FusedCheck check);

/// Element `index` of a result list, moved out (the list keeps no handle).
inline Tensor take(std::vector<Tensor> &list, size_t index) {
  return std::move(list.at(index));
}
/// Element `index` of an input list.
inline Tensor element(const std::vector<Tensor> &list, size_t index) {
  return list.at(index);
}

} // namespace glimmer_rt

#endif // GLIMMER_RT_FUSION_H
