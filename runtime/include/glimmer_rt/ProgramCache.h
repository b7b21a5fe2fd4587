//===- ProgramCache.h - Build generated programs into a private cache -*- C++ -*-===//
//
// Generated C++ is compiled into a shared library once and kept in the
// per-user cache, named by a hash of everything the build depends on (the
// source, the compiler, its flags, the runtime headers). The cache is
// trusted only after preparePrivateDirectory accepts it, every file in it is
// written 0600 and renamed into place, and a cached library is reused only
// when its content still matches the hash recorded when it was built:
// nothing else is ever dlopened from it. glimmer-train, the Python module
// and glimmer-run (which has no compiler of its own) share this one build.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_PROGRAMCACHE_H
#define GLIMMER_RT_PROGRAMCACHE_H

#include <functional>
#include <string>

namespace glimmer_rt {

/// What generated programs are compiled and linked against: the
/// directories holding the runtime's headers (glimmer_rt/...), the contract's
/// plain-C++ headers (glimmer_contract/...) and libglimmer_rt.so.
struct RuntimeFiles {
  std::string runtimeIncludeDir, contractIncludeDir, libraryDir;
};

/// The files of the libglimmer_rt.so this process loaded: in the build tree
/// (the library in the build's lib/), the source tree's headers; anywhere
/// else (an installed package), include/ beside the library's directory.
/// Each directory must pass checkTrustedDirectory, since what is built from
/// it is loaded. False and `error` when missing or untrusted.
bool locateRuntimeFiles(RuntimeFiles &files, std::string &error);

struct ProgramBuildOptions {
  /// The cache directory (checked with preparePrivateDirectory).
  std::string cacheDir;
  /// Progress messages ("compiling ...") go here when set.
  std::function<void(const std::string &)> progress;
};

/// Compiles `source` with $GLIMMER_CXX (default `c++`) against
/// locateRuntimeFiles' headers and library, or reuses the
/// cached build whose recorded content hash matches. Returns the library's
/// path, or an empty string and `error` (with the compiler's output when
/// it failed).
std::string buildProgram(const std::string &source,
                         const ProgramBuildOptions &options,
                         std::string &error);

} // namespace glimmer_rt

#endif // GLIMMER_RT_PROGRAMCACHE_H
