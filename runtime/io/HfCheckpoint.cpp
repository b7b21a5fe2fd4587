//===- HfCheckpoint.cpp - Hugging Face checkpoints in and out -------------===//

#include "glimmer_rt/HfCheckpoint.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace glimmer_rt;
namespace fs = std::filesystem;

static constexpr char kIndexName[] = "model.safetensors.index.json";
static constexpr char kSingleName[] = "model.safetensors";

/// Reads one safetensors file, or throws with the reader's message.
static std::unique_ptr<SafetensorsFile> readOrThrow(const std::string &path) {
  std::string error;
  auto file = SafetensorsFile::read(path, error);
  if (!file)
    throw RuntimeError(error);
  return file;
}

HfCheckpoint HfCheckpoint::open(const std::string &path) {
  HfCheckpoint checkpoint;
  auto add = [&](const std::string &file) {
    checkpoint.files.push_back(readOrThrow(file));
    const SafetensorsFile &f = *checkpoint.files.back();
    for (const TensorInfo &info : f.tensors())
      checkpoint.entries[info.name] = Entry{&f, &info};
  };
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::exists(path, ec))
      throw RuntimeError("--weights: '" + path + "' does not exist");
    add(path);
    return checkpoint;
  }
  fs::path index = fs::path(path) / kIndexName;
  if (!fs::exists(index, ec)) {
    fs::path single = fs::path(path) / kSingleName;
    if (!fs::exists(single, ec))
      throw RuntimeError("--weights: the directory '" + path +
                         "' has neither " + kIndexName + " nor " + kSingleName +
                         " (a Hugging Face checkpoint as save_pretrained "
                         "writes it)");
    add(single.string());
    return checkpoint;
  }
  nlohmann::json root;
  {
    std::ifstream in(index);
    try {
      root = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception &e) {
      throw RuntimeError("--weights: '" + index.string() +
                         "' is not valid JSON: " + e.what());
    }
  }
  auto map = root.find("weight_map");
  if (!root.is_object() || map == root.end() || !map->is_object())
    throw RuntimeError("--weights: '" + index.string() +
                       "' has no \"weight_map\" object");
  // Each shard once, in name order; then every name the index lists must be
  // in the shard it names.
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto &[name, shard] : map->items()) {
    if (!shard.is_string())
      throw RuntimeError("--weights: '" + index.string() + "' maps '" + name +
                         "' to a non-string");
    shards[shard.get<std::string>()].push_back(name);
  }
  for (const auto &[shard, names] : shards) {
    fs::path file = fs::path(path) / shard;
    if (!fs::exists(file, ec))
      throw RuntimeError("--weights: '" + index.string() +
                         "' names the shard '" + shard +
                         "', which does not exist");
    add(file.string());
    const SafetensorsFile &f = *checkpoint.files.back();
    for (const std::string &name : names)
      if (!f.find(name))
        throw RuntimeError("--weights: '" + index.string() + "' puts '" + name +
                           "' in '" + shard + "', which has no such " +
                           "tensor");
  }
  return checkpoint;
}

const HfCheckpoint::Entry *HfCheckpoint::find(const std::string &name) const {
  auto it = entries.find(name);
  return it == entries.end() ? nullptr : &it->second;
}

uint64_t glimmer_rt::parseShardSize(const std::string &text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit((unsigned char)text[digits]))
    ++digits;
  std::string unit = text.substr(digits);
  static const std::map<std::string, uint64_t> units = {
      {"", 1},
      {"B", 1},
      {"KB", 1000},
      {"MB", 1000'000},
      {"GB", 1000'000'000},
      {"KiB", 1024},
      {"MiB", 1 << 20},
      {"GiB", uint64_t(1) << 30}};
  auto it = units.find(unit);
  if (digits == 0 || digits > 12 || it == units.end() ||
      std::stoull(text.substr(0, digits)) == 0)
    throw RuntimeError("--max-shard-size expects a positive size such as "
                       "5GB, 500MB or 4096, got '" +
                       text + "'");
  return std::stoull(text.substr(0, digits)) * it->second;
}

void glimmer_rt::checkExportDirectory(const std::string &dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw RuntimeError("--export-weights: '" + dir +
                       "' exists and is not a directory");
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec)
      throw RuntimeError("--export-weights: cannot create the directory '" +
                         dir + "': " + ec.message());
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw RuntimeError("--export-weights: the directory '" + dir +
                       "' is not writable");
}

static std::string shardName(size_t i, size_t n) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", i, n);
  return name;
}

void glimmer_rt::exportHfCheckpoint(
    const std::string &dir, const std::map<std::string, Tensor> &tensors,
    uint64_t maxShardBytes) {
  checkExportDirectory(dir);
  std::vector<std::pair<std::string, Tensor>> onHost;
  for (const auto &[name, tensor] : tensors)
    onHost.emplace_back(name, tensor.to(Device::cpu()));
  // Greedy, in order, as transformers' shard_checkpoint: a tensor larger
  // than the limit gets a shard of its own.
  std::vector<std::vector<TensorView>> shards(1);
  uint64_t current = 0, total = 0, parameters = 0;
  for (const auto &[name, t] : onHost) {
    uint64_t bytes = t.nbytes();
    if (!shards.back().empty() && current + bytes > maxShardBytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(TensorView{name, t.dtype(), t.shape(), t.raw()});
    current += bytes;
    total += bytes;
    parameters += uint64_t(t.numel());
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};
  std::string error;
  auto write = [&](const std::string &file,
                   const std::vector<TensorView> &views) {
    std::string path = (fs::path(dir) / file).string();
    if (!writeSafetensors(path, views, metadata, error))
      throw RuntimeError("--export-weights: " + error);
  };
  if (shards.size() == 1) {
    write(kSingleName, shards[0]);
    return;
  }
  // Keys sorted, as transformers writes the index (json.dumps sort_keys).
  nlohmann::json index;
  index["metadata"]["total_parameters"] = parameters;
  index["metadata"]["total_size"] = total;
  nlohmann::json weightMap = nlohmann::json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    std::string file = shardName(i + 1, shards.size());
    write(file, shards[i]);
    for (const TensorView &view : shards[i])
      weightMap[view.name] = file;
  }
  index["weight_map"] = weightMap;
  std::string path = (fs::path(dir) / kIndexName).string();
  std::ofstream out(path);
  out << index.dump(2) << "\n";
  out.close();
  if (!out)
    throw RuntimeError("--export-weights: cannot write '" + path + "'");
}
