//===- ProgramCache.cpp - Build generated programs into a private cache ---===//

#include "glimmer_rt/ProgramCache.h"

#include "glimmer_rt/Files.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

extern char **environ;

using namespace glimmer_rt;

namespace {

/// A digest of the headers a program is compiled against.
std::string headersDigest(const RuntimeFiles &runtime) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const std::string &dir :
       {runtime.runtimeIncludeDir + "/glimmer_rt",
        runtime.contractIncludeDir + "/glimmer_contract"})
    for (std::filesystem::directory_iterator it(dir, ec), end;
         !ec && it != end; it.increment(ec))
      files.push_back(it->path().string());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const std::string &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    all += f + '\0' + text.str() + '\0';
  }
  return contentHash(all);
}

std::string readTail(const std::string &path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  return s.size() > n ? s.substr(s.size() - n) : s;
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

/// Runs `args` with stdout and stderr to `log`; the exit status, or -1 and
/// `error` when it could not start.
int run(const std::vector<std::string> &args, const std::string &log,
        std::string &error) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(),
                        environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    error = rc == ENOENT ? "C++ compiler '" + args[0] +
                               "' not found (set GLIMMER_CXX to choose "
                               "another)"
                         : "cannot start '" + args[0] +
                               "': " + std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      error = std::string("waiting for the C++ compiler: ") +
              std::strerror(errno);
      return -1;
    }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool readRecordedHash(const std::string &path, std::string &hash) {
  std::ifstream in(path);
  return bool(in >> hash);
}

} // namespace

std::string glimmer_rt::buildProgram(const std::string &source,
                                     const ProgramBuildOptions &options,
                                     std::string &error) {
  error.clear();
  if (!preparePrivateDirectory(options.cacheDir, error))
    return "";
  RuntimeFiles runtime;
  if (!locateRuntimeFiles(runtime, error))
    return "";
  const char *env = std::getenv("GLIMMER_CXX");
  std::string cxx = env && *env ? env : "c++";
  std::vector<std::string> flags = {
      // The program is glue: one runtime call per op (the kernels are
      // compiled, optimized, in the runtime library). -O0 compiles it 8x
      // faster than -O2 (measured on the reference VLM, 2000 lines: 1.0 s
      // vs 8.5 s) at no measurable cost per step.
      "-std=c++17",
      "-O0",
      "-fPIC",
      "-shared",
      "-Wall",
      "-I" + runtime.runtimeIncludeDir,
      "-I" + runtime.contractIncludeDir,
      "-L" + runtime.libraryDir,
      "-Wl,-rpath," + runtime.libraryDir};
  std::string key = source + '\0' + cxx + '\0' + headersDigest(runtime);
  for (const std::string &f : flags)
    key += '\0' + f;
  std::string base = options.cacheDir + "/program-" + contentHash(key);
  std::string cpp = base + ".cpp", so = base + ".so", log = base + ".log",
              recorded = so + ".xxh128";

  // Reuse only a library whose content is what this cache recorded when it
  // built it.
  std::string want, have, hashError;
  if (readRecordedHash(recorded, want) && hashFile(so, have, hashError)) {
    if (have == want)
      return so;
    if (options.progress)
      options.progress("cached " + so +
                       " does not match its recorded hash; rebuilding");
  }

  if (!writeFileAtomically(cpp, 0600, source, error))
    return "";
  // A private temporary name: concurrent builds of one program must not
  // write the same file.
  std::string tmp = so + ".tmp-XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) {
    error = "cannot create a file in '" + options.cacheDir +
            "': " + std::strerror(errno);
    return "";
  }
  close(fd);
  std::vector<std::string> args = {cxx};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {cpp, "-o", tmp, "-lglimmer_rt"});
  if (options.progress)
    options.progress("compiling " + cpp + " with " + cxx);
  auto start = std::chrono::steady_clock::now();
  int rc = run(args, log, error);
  if (rc != 0) {
    unlink(tmp.c_str());
    if (rc > 0)
      error = "compiling the generated program failed (" + cxx + " exit " +
              std::to_string(rc) + "):\n" + readTail(log, 4000);
    return "";
  }
  std::string hash;
  if (chmod(tmp.c_str(), 0600) != 0 || !hashFile(tmp, hash, error) ||
      !writeFileAtomically(recorded, 0600, hash + "\n", error) ||
      std::rename(tmp.c_str(), so.c_str()) != 0) {
    if (error.empty())
      error = "cannot move '" + tmp + "' to '" + so +
              "': " + std::strerror(errno);
    unlink(tmp.c_str());
    return "";
  }
  if (options.progress)
    options.progress(
        "compiled in " +
        fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            start)
                  .count()) +
        " s");
  return so;
}
