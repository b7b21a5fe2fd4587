//===- RuntimeFiles.cpp - The headers and library generated code uses -----===//
//
// Found from where this process loaded libglimmer_rt.so, so that a build
// tree and an installed package (any prefix, moved or not) each compile
// against their own copies.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/ProgramCache.h"

#include "glimmer_rt/Files.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <utility>

#ifndef GLIMMER_RT_BUILD_LIBRARY_DIR
#error "GLIMMER_RT_BUILD_LIBRARY_DIR must be defined by the build"
#endif
#ifndef GLIMMER_RT_SOURCE_INCLUDE_DIR
#error "GLIMMER_RT_SOURCE_INCLUDE_DIR must be defined by the build"
#endif
#ifndef GLIMMER_CONTRACT_SOURCE_INCLUDE_DIR
#error "GLIMMER_CONTRACT_SOURCE_INCLUDE_DIR must be defined by the build"
#endif

using namespace glimmer_rt;

namespace {

std::string resolved(const std::string &path) {
  char real[PATH_MAX];
  return realpath(path.c_str(), real) ? std::string(real) : std::string();
}

bool isDirectory(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

bool glimmer_rt::locateRuntimeFiles(RuntimeFiles &files, std::string &error) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&locateRuntimeFiles), &info) ||
      !info.dli_fname) {
    error = "cannot tell where libglimmer_rt.so was loaded from";
    return false;
  }
  std::string library = resolved(info.dli_fname);
  if (library.empty()) {
    error = std::string("cannot resolve '") + info.dli_fname +
            "': " + std::strerror(errno);
    return false;
  }
  files.libraryDir = library.substr(0, library.rfind('/'));
  if (files.libraryDir == resolved(GLIMMER_RT_BUILD_LIBRARY_DIR)) {
    // The build tree: the headers are the source tree's.
    files.runtimeIncludeDir = resolved(GLIMMER_RT_SOURCE_INCLUDE_DIR);
    files.contractIncludeDir = resolved(GLIMMER_CONTRACT_SOURCE_INCLUDE_DIR);
  } else {
    // An installed package: include/ beside lib/ holds both.
    std::string include = resolved(files.libraryDir + "/../include");
    files.runtimeIncludeDir = files.contractIncludeDir = include;
  }
  const std::pair<const std::string *, const char *> headers[] = {
      {&files.runtimeIncludeDir, "glimmer_rt"},
      {&files.contractIncludeDir, "glimmer_contract"}};
  for (const auto &[dir, sub] : headers) {
    if (dir->empty() || !isDirectory(*dir + "/" + sub)) {
      error = "the headers generated programs are compiled against are "
              "missing: no " +
              std::string(sub) + "/ in '" +
              (dir->empty() ? files.libraryDir + "/../include" : *dir) +
              "' (libglimmer_rt.so was loaded from '" + files.libraryDir + "')";
      return false;
    }
    if (!checkTrustedDirectory(*dir + "/" + sub, "runtime headers directory",
                               error))
      return false;
  }
  return checkTrustedDirectory(files.libraryDir, "runtime library directory",
                               error);
}
