//===- NcclCommon.h - What the NCCL communicators' parts share -*- C++ -*-===//
//
// Internal to the runtime's NCCL communicators (built with the CUDA backend
// only): the clock, the messages' wording of durations and NCCL errors, and
// the NCCL settings every communicator uses.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMM_NCCLCOMMON_H
#define GLIMMER_RT_COMM_NCCLCOMMON_H

#include "glimmer_rt/Nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace glimmer_rt::nccl_detail {

using Clock = std::chrono::steady_clock;

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

/// "60 s" or "200 ms".
inline std::string durationText(std::chrono::milliseconds t) {
  if (t.count() % 1000 == 0)
    return std::to_string(t.count() / 1000) + " s";
  return std::to_string(t.count()) + " ms";
}

/// NCCL's description of `result` plus its last error message.
inline std::string ncclText(ncclResult_t result) {
  std::string text = ncclGetErrorString(result);
  const char *last = ncclGetLastError(nullptr);
  if (last && *last)
    text += " (" + std::string(last) + ")";
  return text;
}

/// Makes `device` current for the scope, restoring the previous device.
struct DeviceGuard {
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous) != cudaSuccess)
      previous = -1;
    if (previous != device)
      cudaSetDevice(device);
  }
  ~DeviceGuard() {
    if (previous >= 0)
      cudaSetDevice(previous);
  }
  int previous = -1;
};

inline ncclConfig_t nonblockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

/// NVLink multicast (NVLS) must stay off on the GPU hosts; an explicit
/// setting in the environment wins. NCCL reads it once, at its first
/// communicator.
inline void keepNvlsOff() { setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); }

} // namespace glimmer_rt::nccl_detail

#endif // GLIMMER_RT_COMM_NCCLCOMMON_H
