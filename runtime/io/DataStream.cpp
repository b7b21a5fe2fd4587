//===- DataStream.cpp - Training data: one batch or a stream of shards ----===//

#include "glimmer_rt/DataStream.h"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

using namespace glimmer_rt;

static bool isDirectory(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A directory's `*.safetensors` files (not subdirectories), in name order.
static std::vector<std::string> listDirectory(const std::string &dir) {
  DIR *handle = opendir(dir.c_str());
  if (!handle)
    throw RuntimeError("cannot read the directory '" + dir +
                       "': " + std::strerror(errno));
  std::string prefix = endsWith(dir, "/") ? dir : dir + "/";
  std::vector<std::string> paths;
  while (const dirent *entry = readdir(handle)) {
    std::string path = prefix + entry->d_name;
    if (endsWith(entry->d_name, ".safetensors") && !isDirectory(path))
      paths.push_back(path);
  }
  closedir(handle);
  std::sort(paths.begin(), paths.end());
  if (paths.empty())
    throw RuntimeError("the directory '" + dir +
                       "' holds no .safetensors shard");
  return paths;
}

/// The files `pattern` matches (glob(3); directories left out), in name
/// order.
static std::vector<std::string> listGlob(const std::string &pattern) {
  glob_t matches{};
  int status =
      glob(pattern.c_str(), GLOB_MARK | GLOB_NOSORT, nullptr, &matches);
  std::vector<std::string> paths;
  if (status == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i)
      if (!endsWith(matches.gl_pathv[i], "/"))
        paths.push_back(matches.gl_pathv[i]);
  globfree(&matches);
  if (status != 0 && status != GLOB_NOMATCH)
    throw RuntimeError("cannot expand the pattern '" + pattern + "'" +
                       (status == GLOB_NOSPACE
                            ? ": out of memory"
                            : ": a directory is unreadable"));
  // Name order as bytes, whatever the locale's collation.
  std::sort(paths.begin(), paths.end());
  if (paths.empty())
    throw RuntimeError("the pattern '" + pattern + "' matches no file");
  return paths;
}

DataShards DataShards::list(const std::string &spec) {
  DataShards shards;
  struct stat st {};
  bool exists = stat(spec.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    shards.paths = listDirectory(spec);
    shards.stream = true;
  } else if (!exists && spec.find_first_of("*?[") != std::string::npos) {
    shards.paths = listGlob(spec);
    shards.stream = true;
  } else {
    shards.paths = {spec};
  }
  return shards;
}

std::shared_ptr<const SafetensorsFile>
glimmer_rt::readSafetensors(const std::string &path) {
  std::string error;
  std::shared_ptr<const SafetensorsFile> file =
      SafetensorsFile::read(path, error);
  if (!file)
    throw RuntimeError(error);
  return file;
}

TrainingData TrainingData::open(const std::string &spec) {
  TrainingData data;
  data.shards = DataShards::list(spec);
  data.first = readSafetensors(data.shards.paths.front());
  return data;
}
