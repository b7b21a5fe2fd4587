//===- Checkpoint.cpp - Save and resume training state --------------------===//

#include "glimmer_rt/Files.h"
#include "glimmer_rt/Trainer.h"

#include "WeightSlicing.h"

#include <tuple>

using namespace glimmer_rt;
using namespace glimmer_rt::detail;

/// What a checkpoint's glimmer.checksum covers: every tensor's name, dtype,
/// shape and bytes, in file order.
template <typename Range, typename Fn>
static std::string checkpointChecksum(const Range &tensors, Fn describe) {
  ContentHasher hasher;
  for (const auto &t : tensors) {
    auto [name, dtype, shape, data] = describe(t);
    std::string head = name + '\0' + std::string(dtypeName(dtype));
    for (int64_t d : shape)
      head += ',' + std::to_string(d);
    hasher.update(head + '\0');
    hasher.update(data, numElements(shape) * dtypeSize(dtype));
  }
  return "xxh3-128:" + hasher.hex();
}

void Trainer::save(const std::string &path) const {
  State params = gather(&RankState::params);
  State expAvg = gather(&RankState::expAvg);
  State expAvgSq = gather(&RankState::expAvgSq);
  std::vector<TensorView> views;
  auto add = [&](const std::string &prefix, const State &tensors) {
    for (const auto &[name, t] : tensors)
      views.push_back({prefix + name, t.dtype(), t.shape(), t.raw()});
  };
  add("", params);
  add("optimizer.exp_avg.", expAvg);
  add("optimizer.exp_avg_sq.", expAvgSq);
  // The tensors are whole (any layout resumes from them); how this run held
  // them is recorded beside them: the layout, and each sharded parameter's
  // #glimmer.sharding as the manifest writes it (its moments are held
  // alike).
  std::map<std::string, std::string> extra{
      {glimmer::kCheckpointLayoutKey, program.layout().print()}};
  for (const auto &[name, slot] : paramSlots)
    if (slot.isSharded())
      extra[glimmer::kCheckpointShardingPrefix + name] = slot.shardingText();
  writeCheckpoint(path, views, steps, extra);
}

void glimmer_rt::writeCheckpoint(
    const std::string &path, const std::vector<TensorView> &tensors,
    int64_t step, const std::map<std::string, std::string> &extra) {
  std::string checksum = checkpointChecksum(tensors, [](const TensorView &v) {
    return std::make_tuple(v.name, v.dtype, v.shape, v.data);
  });
  std::map<std::string, std::string> metadata = extra;
  metadata["format"] = "pt";
  metadata[glimmer::kCheckpointStepKey] = std::to_string(step);
  metadata[glimmer::kCheckpointChecksumKey] = checksum;
  // Atomic (writeSafetensors writes a temporary file, fsyncs and renames
  // it), so a crash mid-save leaves the previous checkpoint intact.
  std::string error;
  if (!writeSafetensors(path, tensors, metadata, error))
    throw RuntimeError(error);
}

void Trainer::resume(const std::string &path) {
  // The graphs read the state this replaces.
  dropGraphs();
  auto file = readFile(path);
  auto it = file->metadata().find(glimmer::kCheckpointStepKey);
  if (it == file->metadata().end())
    throw RuntimeError("'" + path +
                       "' is not a glimmer checkpoint (no glimmer.step "
                       "metadata)");
  auto recorded = file->metadata().find(glimmer::kCheckpointChecksumKey);
  if (recorded == file->metadata().end())
    throw RuntimeError("checkpoint '" + path +
                       "' has no glimmer.checksum metadata, so its content "
                       "cannot be verified");
  std::string actual =
      checkpointChecksum(file->tensors(), [&](const TensorInfo &info) {
        return std::make_tuple(info.name, info.dtype, info.shape,
                               static_cast<const void *>(file->data(info)));
      });
  if (actual != recorded->second)
    throw RuntimeError("checkpoint '" + path +
                       "' is corrupt: its content does not match the "
                       "checksum recorded when it was saved");
  std::string what = "checkpoint '" + path + "'";
  load(*file, "", &RankState::params, Role::Parameter, what.c_str());
  load(*file, "optimizer.exp_avg.", &RankState::expAvg, Role::ExpAvg,
       what.c_str());
  load(*file, "optimizer.exp_avg_sq.", &RankState::expAvgSq, Role::ExpAvgSq,
       what.c_str());
  steps = std::stoll(it->second);
}
