//===- NcclEnv.h - The launchers' environment ------------------*- C++ -*-===//
//
// Internal to the runtime's communicators: reading the variables that
// torchrun, mpirun and PMI launchers set (launchFromEnvironment, the id
// exchange's ports and paths).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMM_NCCLENV_H
#define GLIMMER_RT_COMM_NCCLENV_H

#include <cstdint>
#include <optional>
#include <string>

namespace glimmer_rt::nccl_detail {

/// The value of `name`, or nullopt when it is unset or empty.
std::optional<std::string> envValue(const char *name);

/// A non-negative decimal integer (no sign, no spaces, no overflow).
bool parseCount(const std::string &text, int64_t &value);

} // namespace glimmer_rt::nccl_detail

#endif // GLIMMER_RT_COMM_NCCLENV_H
