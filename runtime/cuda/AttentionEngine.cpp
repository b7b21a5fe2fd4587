//===- AttentionEngine.cpp - Which engine runs attention ---------*- C++ -*-===//
//
// bf16 attention runs in cuDNN's fused flash attention where cuDNN takes it
// and in the runtime's own kernels otherwise, at a fraction of the speed on
// Hopper. A run should say which, and never lose that speed silently: the
// first attention call of a process names its engine, and each distinct
// reason a bf16 call falls back from cuDNN is warned about once.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <cstdio>
#include <mutex>
#include <set>

namespace glimmer_rt {
namespace cuda {

void noteAttentionEngine(DType dtype, const std::string &why) {
  bool cudnn = why.empty();
  if (!cudnn)
    countAttentionKernelCall();
  static std::mutex mutex;
  static bool named = false;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (!named) {
    named = true;
    std::fprintf(stderr, "glimmer: attention engine: %s\n",
                 cudnn ? "cuDNN fused flash attention"
                 : dtype == DType::BF16
                     ? "the runtime's kernels"
                     : "the runtime's kernels (cuDNN's attention runs bf16)");
  }
  if (!cudnn && dtype == DType::BF16 && warned.insert(why).second)
    std::fprintf(stderr,
                 "glimmer: warning: bf16 attention falls back from cuDNN to "
                 "the runtime's slower kernels: %s\n",
                 why.c_str());
}

} // namespace cuda
} // namespace glimmer_rt
