//===- FusionHeaders.h - The headers fused kernels include -----*- C++ -*-===//
//
// Internal to the runtime: the runtime's headers that the generated fused
// kernels include (FusionPrelude.cuh and what it includes, plus the host
// shim FusionHost.h), embedded at build time (cuda/EmbedHeaders.cmake). One
// table for NVRTC (cuda/Fusion.cu) and for the host build (cpu/Fusion.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMMON_FUSIONHEADERS_H
#define GLIMMER_RT_COMMON_FUSIONHEADERS_H

#include <vector>

namespace glimmer_rt::fusion {

struct Header {
  const char *name;
  const char *text;
};
const std::vector<Header> &headers();

} // namespace glimmer_rt::fusion

#endif // GLIMMER_RT_COMMON_FUSIONHEADERS_H
