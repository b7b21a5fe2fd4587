//===- ToolArguments.cpp - Files named on a tool's command line -----------===//

#include "glimmer_rt/ToolArguments.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

using namespace glimmer_rt;

bool glimmer_rt::checkInputFile(const std::string &what,
                                const std::string &path, std::string &error) {
  std::string named = what + " '" + path + "'";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    error = "cannot open " + named + ": " + std::strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    error = named + " is a directory, not a file";
    return false;
  }
  // open() rather than access(): it also answers for root and ACLs.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read " + named + ": " + std::strerror(errno);
    return false;
  }
  ::close(fd);
  if (S_ISREG(st.st_mode) && st.st_size == 0) {
    error = named + " is empty";
    return false;
  }
  return true;
}

bool glimmer_rt::checkOutputFile(const std::string &what,
                                 const std::string &path, std::string &error) {
  std::string prefix = "cannot write " + what + " file '" + path + "': ";
  if (path.empty()) {
    error = prefix + "the name is empty";
    return false;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      error = prefix + "it is a directory";
      return false;
    }
    // Opened without O_TRUNC or O_CREAT: the file stays as it is.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      error = prefix + std::strerror(errno);
      return false;
    }
    ::close(fd);
    return true;
  }
  if (errno != ENOENT) {
    error = prefix + std::strerror(errno);
    return false;
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0) {
    error = prefix + std::strerror(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    error = prefix + "'" + dir + "' is not a directory";
    return false;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    error = prefix + std::strerror(errno);
    return false;
  }
  return true;
}
