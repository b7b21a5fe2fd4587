//===- Files.h - Private directories, atomic writes, content hashes -*- C++ -*-===//
//
// What every file the project writes or loads code from relies on:
// - a directory is trusted only when no other user can write it or any
//   directory above it (a world-writable parent without the sticky bit lets
//   others swap the directory out);
// - files are written to a temporary file beside the target, fsynced and
//   renamed into place, so a reader (or a process killed mid-write) never
//   sees a half-written file;
// - content hashes (XXH3-128, from libxxhash) identify what was written.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_FILES_H
#define GLIMMER_RT_FILES_H

#include <functional>
#include <string>
#include <string_view>

namespace glimmer_rt {

/// The per-user cache of compiled programs and exported weights:
/// $GLIMMER_CACHE_DIR, else $XDG_CACHE_HOME/glimmer, else
/// $HOME/.cache/glimmer (the home directory from the password database when
/// HOME is unset).
std::string defaultCacheDir();

/// Creates `dir` (and missing parents) with mode 0700 when it does not
/// exist, then checks that it is a directory owned by this user that
/// neither group nor others can write, and that every directory above it is
/// owned by this user or root and not writable by others (unless sticky).
/// False and `error` (saying which directory and why) otherwise.
bool preparePrivateDirectory(const std::string &dir, std::string &error);

/// Checks that an existing directory that code is built from or loaded from
/// (`what`, for the message: "runtime headers directory") is owned by this
/// user or root and that neither group nor others can write it, the files
/// in it, or (unless sticky) any directory above it. False and `error`
/// otherwise.
bool checkTrustedDirectory(const std::string &dir, const std::string &what,
                           std::string &error);

/// Hex XXH3-128 of `bytes`.
std::string contentHash(std::string_view bytes);
/// The same, fed in pieces.
class ContentHasher {
public:
  ContentHasher();
  ~ContentHasher();
  ContentHasher(const ContentHasher &) = delete;
  ContentHasher &operator=(const ContentHasher &) = delete;
  void update(const void *data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  /// Hex XXH3-128 of everything fed so far.
  std::string hex() const;

private:
  void *state;
};
/// Hex XXH3-128 of a file's content; false and `error` when unreadable.
bool hashFile(const std::string &path, std::string &hash, std::string &error);

/// Writes a file atomically: `write` streams the content through `append`
/// (any number of calls) into a fresh temporary file beside `path`, created
/// with `mode`; the file is fsynced, renamed over `path`, and the directory
/// fsynced. On failure the temporary file is removed, `path` is untouched,
/// and `error` says why.
using AppendFn = std::function<bool(const void *data, size_t size)>;
bool writeFileAtomically(const std::string &path, unsigned mode,
                         const std::function<bool(const AppendFn &)> &write,
                         std::string &error);
/// The same for content already in memory.
bool writeFileAtomically(const std::string &path, unsigned mode,
                         std::string_view bytes, std::string &error);

} // namespace glimmer_rt

#endif // GLIMMER_RT_FILES_H
