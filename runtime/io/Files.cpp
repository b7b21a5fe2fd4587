//===- Files.cpp - Private directories, atomic writes, content hashes -----===//

#include "glimmer_rt/Files.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

using namespace glimmer_rt;

namespace {

std::string errnoText() { return std::strerror(errno); }

std::string hex(XXH128_hash_t h) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx",
                static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::string homeDirectory() {
  if (const char *home = std::getenv("HOME"); home && *home)
    return home;
  if (const passwd *pw = getpwuid(geteuid()); pw && pw->pw_dir)
    return pw->pw_dir;
  return "";
}

/// "/a/b/c" -> {"/a", "/a/b", "/a/b/c"}.
std::vector<std::string> prefixes(const std::string &abs) {
  std::vector<std::string> out;
  for (size_t i = 1; i <= abs.size(); ++i)
    if (i == abs.size() || abs[i] == '/')
      if (i > 1 || abs.size() == 1)
        if (out.empty() || out.back().size() != i)
          out.push_back(abs.substr(0, i));
  return out;
}

bool ownedByUserOrRoot(const struct stat &st) {
  return st.st_uid == geteuid() || st.st_uid == 0;
}

std::string octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", unsigned(mode & 07777));
  return buf;
}

/// Why a directory above `real` (a resolved path) cannot be trusted: one
/// that another user owns, or that others can write without the sticky bit,
/// lets them rename `real` away and put their own in its place. Empty when
/// every one is safe.
std::string untrustedParent(const std::string &real) {
  std::vector<std::string> above = prefixes(real);
  above.pop_back();
  if (real != "/")
    above.insert(above.begin(), "/");
  for (const std::string &p : above) {
    struct stat a {};
    if (stat(p.c_str(), &a) != 0)
      return "cannot inspect '" + p + "': " + errnoText();
    if (!ownedByUserOrRoot(a))
      return "its parent '" + p + "' is owned by another user (uid " +
             std::to_string(a.st_uid) + ")";
    if ((a.st_mode & (S_IWGRP | S_IWOTH)) && !(a.st_mode & S_ISVTX))
      return "its parent '" + p + "' can be written by others (mode " +
             octal(a.st_mode) + ")";
  }
  return "";
}

} // namespace

std::string glimmer_rt::defaultCacheDir() {
  if (const char *env = std::getenv("GLIMMER_CACHE_DIR"); env && *env)
    return env;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::string(xdg) + "/glimmer";
  return homeDirectory() + "/.cache/glimmer";
}

bool glimmer_rt::preparePrivateDirectory(const std::string &dir,
                                         std::string &error) {
  auto refuse = [&](const std::string &why) {
    error = "refusing cache directory '" + dir + "': " + why;
    return false;
  };
  if (dir.empty())
    return refuse("no directory given (set GLIMMER_CACHE_DIR or HOME)");
  std::string abs = dir;
  if (abs.front() != '/') {
    char cwd[4096];
    if (!getcwd(cwd, sizeof(cwd)))
      return refuse(std::string("cannot read the working directory: ") +
                    errnoText());
    abs = std::string(cwd) + "/" + abs;
  }
  while (abs.size() > 1 && abs.back() == '/')
    abs.pop_back();

  // Missing directories are made private from the start.
  for (const std::string &p : prefixes(abs)) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0)
      continue;
    if (errno != ENOENT || (mkdir(p.c_str(), 0700) != 0 && errno != EEXIST))
      return refuse("cannot create '" + p + "': " + errnoText());
  }
  // A symbolic link on the way that another user owns could be re-pointed
  // after the check.
  for (const std::string &p : prefixes(abs)) {
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0)
      return refuse("cannot inspect '" + p + "': " + errnoText());
    if (S_ISLNK(st.st_mode) && !ownedByUserOrRoot(st))
      return refuse("'" + p + "' is a symbolic link owned by another user");
  }
  char real[PATH_MAX];
  if (!realpath(abs.c_str(), real))
    return refuse("cannot resolve it: " + errnoText());
  struct stat st {};
  if (stat(real, &st) != 0)
    return refuse("cannot inspect it: " + errnoText());
  if (!S_ISDIR(st.st_mode))
    return refuse("it is not a directory");
  if (st.st_uid != geteuid())
    return refuse("it is owned by another user (uid " +
                  std::to_string(st.st_uid) +
                  "); compiled programs are loaded from it, so it must be "
                  "yours");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return refuse("group or others can write it (mode " + octal(st.st_mode) +
                  "); compiled programs are loaded from it, so only you may "
                  "write it (chmod 700)");
  std::string why = untrustedParent(real);
  if (!why.empty())
    return refuse(why);
  return true;
}

bool glimmer_rt::checkTrustedDirectory(const std::string &dir,
                                       const std::string &what,
                                       std::string &error) {
  auto refuse = [&](const std::string &why) {
    error = "refusing " + what + " '" + dir + "': " + why;
    return false;
  };
  char real[PATH_MAX];
  if (!realpath(dir.c_str(), real))
    return refuse(errnoText());
  struct stat st {};
  if (stat(real, &st) != 0)
    return refuse("cannot inspect it: " + errnoText());
  if (!S_ISDIR(st.st_mode))
    return refuse("it is not a directory");
  auto writableByOthers = [&](const std::string &path,
                              const struct stat &s) -> std::string {
    if (!ownedByUserOrRoot(s))
      return "'" + path + "' is owned by another user (uid " +
             std::to_string(s.st_uid) + ")";
    if (s.st_mode & (S_IWGRP | S_IWOTH))
      return "group or others can write '" + path + "' (mode " +
             octal(s.st_mode) +
             "); programs are built from it and loaded, "
             "so only you or root may write it";
    return "";
  };
  std::string why = writableByOthers(real, st);
  if (why.empty())
    why = untrustedParent(real);
  // The files in it too: a header or library others can rewrite is as bad.
  if (DIR *d = why.empty() ? opendir(real) : nullptr) {
    while (const dirent *e = readdir(d)) {
      std::string path = std::string(real) + "/" + e->d_name;
      struct stat f {};
      if (e->d_name[0] == '.' || lstat(path.c_str(), &f) != 0 ||
          S_ISDIR(f.st_mode))
        continue;
      why = writableByOthers(path, f);
      if (!why.empty())
        break;
    }
    closedir(d);
  }
  return why.empty() || refuse(why);
}

std::string glimmer_rt::contentHash(std::string_view bytes) {
  return hex(XXH3_128bits(bytes.data(), bytes.size()));
}

ContentHasher::ContentHasher() : state(XXH3_createState()) {
  XXH3_128bits_reset(static_cast<XXH3_state_t *>(state));
}

ContentHasher::~ContentHasher() {
  XXH3_freeState(static_cast<XXH3_state_t *>(state));
}

void ContentHasher::update(const void *data, size_t size) {
  XXH3_128bits_update(static_cast<XXH3_state_t *>(state), data, size);
}

std::string ContentHasher::hex() const {
  return ::hex(XXH3_128bits_digest(static_cast<XXH3_state_t *>(state)));
}

bool glimmer_rt::hashFile(const std::string &path, std::string &hash,
                          std::string &error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + errnoText();
    return false;
  }
  ContentHasher hasher;
  std::vector<char> buf(1 << 20);
  while (true) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = "cannot read '" + path + "': " + errnoText();
      close(fd);
      return false;
    }
    if (n == 0)
      break;
    hasher.update(buf.data(), size_t(n));
  }
  close(fd);
  hash = hasher.hex();
  return true;
}

bool glimmer_rt::writeFileAtomically(
    const std::string &path, unsigned mode,
    const std::function<bool(const AppendFn &)> &write, std::string &error) {
  std::string tmp = path + ".tmp-XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) {
    error = "cannot write '" + path + "': " + errnoText();
    return false;
  }
  auto fail = [&](const std::string &why) {
    error = "cannot write '" + path + "': " + why;
    if (fd >= 0)
      close(fd);
    unlink(tmp.c_str());
    return false;
  };
  if (fchmod(fd, mode_t(mode)) != 0)
    return fail(errnoText());
  std::string writeError;
  AppendFn append = [&](const void *data, size_t size) {
    const char *p = static_cast<const char *>(data);
    while (size > 0) {
      ssize_t n = ::write(fd, p, size);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        writeError = errnoText();
        return false;
      }
      p += n;
      size -= size_t(n);
    }
    return true;
  };
  if (!write(append))
    return fail(writeError.empty() ? "the content could not be produced"
                                   : writeError);
  if (fsync(fd) != 0)
    return fail(errnoText());
  if (close(fd) != 0) {
    fd = -1;
    return fail(errnoText());
  }
  fd = -1;
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return fail(errnoText());
  // The rename is durable once the directory entry is.
  size_t slash = path.rfind('/');
  std::string parent = slash == std::string::npos ? "."
                       : slash == 0               ? "/"
                                                  : path.substr(0, slash);
  int dfd = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return true;
}

bool glimmer_rt::writeFileAtomically(const std::string &path, unsigned mode,
                                     std::string_view bytes,
                                     std::string &error) {
  return writeFileAtomically(
      path, mode,
      [&](const AppendFn &append) {
        return append(bytes.data(), bytes.size());
      },
      error);
}
