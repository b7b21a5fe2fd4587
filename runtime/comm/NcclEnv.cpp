//===- NcclEnv.cpp - The launchers' environment ---------------------------===//
//
// Part of the Glimmer runtime: which rank of how many this process is, read
// from its launcher's variables (launchFromEnvironment in Nccl.h).
//
//===----------------------------------------------------------------------===//

#include "NcclEnv.h"
#include "glimmer_rt/Nccl.h"

#include <cstdlib>
#include <vector>

namespace glimmer_rt::nccl_detail {

std::optional<std::string> envValue(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return std::nullopt;
  return std::string(v);
}

bool parseCount(const std::string &text, int64_t &value) {
  if (text.empty() || text.size() > 18)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

} // namespace glimmer_rt::nccl_detail

using namespace glimmer_rt;
using namespace glimmer_rt::nccl_detail;

namespace {

struct LauncherVars {
  const char *launcher;
  const char *rankVar;
  const char *sizeVar;
  std::vector<const char *> localVars; // first one set wins
};

/// Reads one launcher's variables: false with `error` set when they are
/// present but unusable; true with `found` false when they are absent.
bool readLauncher(const LauncherVars &vars, bool &found, LaunchInfo &info,
                  std::string &error) {
  std::optional<std::string> rank = envValue(vars.rankVar);
  std::optional<std::string> size = envValue(vars.sizeVar);
  found = rank || size;
  if (!found)
    return true;
  if (!rank || !size) {
    error = std::string(rank ? vars.rankVar : vars.sizeVar) + " is set but " +
            (rank ? vars.sizeVar : vars.rankVar) + " is not (" + vars.launcher +
            " sets both)";
    return false;
  }
  info.launcher = vars.launcher;
  if (!parseCount(*rank, info.rank)) {
    error = std::string(vars.rankVar) + "='" + *rank +
            "' is not a non-negative integer";
    return false;
  }
  if (!parseCount(*size, info.worldSize) || info.worldSize < 1) {
    error = std::string(vars.sizeVar) + "='" + *size +
            "' is not a positive integer";
    return false;
  }
  if (info.rank >= info.worldSize) {
    error = std::string(vars.rankVar) + "=" + *rank + " is outside " +
            vars.sizeVar + "=" + *size;
    return false;
  }
  // Without a local rank, assume one node: the global rank picks the GPU.
  info.localRank = info.rank;
  for (const char *name : vars.localVars)
    if (std::optional<std::string> local = envValue(name)) {
      if (!parseCount(*local, info.localRank)) {
        error = std::string(name) + "='" + *local +
                "' is not a non-negative integer";
        return false;
      }
      break;
    }
  return true;
}

} // namespace

std::optional<LaunchInfo>
glimmer_rt::launchFromEnvironment(std::string &error) {
  error.clear();
  const LauncherVars launchers[] = {
      {"torchrun", "RANK", "WORLD_SIZE", {"LOCAL_RANK"}},
      {"mpirun",
       "OMPI_COMM_WORLD_RANK",
       "OMPI_COMM_WORLD_SIZE",
       {"OMPI_COMM_WORLD_LOCAL_RANK"}},
      {"pmi",
       "PMI_RANK",
       "PMI_SIZE",
       {"MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"}},
  };
  std::optional<LaunchInfo> chosen;
  for (const LauncherVars &vars : launchers) {
    bool found = false;
    LaunchInfo info;
    if (!readLauncher(vars, found, info, error))
      return std::nullopt;
    if (!found)
      continue;
    if (!chosen) {
      chosen = info;
      continue;
    }
    // A process started by one launcher may inherit another's variables
    // (RANK exported in an mpirun job script): accept them only if they
    // describe the same place.
    if (info.rank != chosen->rank || info.worldSize != chosen->worldSize) {
      error = chosen->launcher + " variables (rank " +
              std::to_string(chosen->rank) + " of " +
              std::to_string(chosen->worldSize) + ") disagree with " +
              info.launcher + " variables (rank " + std::to_string(info.rank) +
              " of " + std::to_string(info.worldSize) + ")";
      return std::nullopt;
    }
  }
  return chosen;
}
