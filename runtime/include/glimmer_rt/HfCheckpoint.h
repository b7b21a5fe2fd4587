//===- HfCheckpoint.h - Hugging Face checkpoints in and out -----*- C++ -*-===//
//
// Weights as Hugging Face stores them: one .safetensors file, or a directory
// that save_pretrained wrote (model.safetensors, or shards listed by
// model.safetensors.index.json). Read to bind a program's parameters by
// state_dict name; written from trained parameters in the same layout.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_HFCHECKPOINT_H
#define GLIMMER_RT_HFCHECKPOINT_H

#include "glimmer_contract/Manifest.h"
#include "glimmer_rt/Safetensors.h"
#include "glimmer_rt/Tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace glimmer_rt {

/// The tensors of a safetensors file or a Hugging Face checkpoint directory.
class HfCheckpoint {
public:
  /// Opens `path` and reads every file it names; throws RuntimeError naming
  /// the file and the problem (no safetensors, a missing or corrupt shard,
  /// an index naming a tensor its shard lacks).
  static HfCheckpoint open(const std::string &path);

  struct Entry {
    const SafetensorsFile *file;
    const TensorInfo *info;
  };
  /// Every tensor by name.
  const std::map<std::string, Entry> &tensors() const { return entries; }
  const Entry *find(const std::string &name) const;

private:
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, Entry> entries;
};

/// Writes to `outPath` (mode 0600) the weights of the program `info`
/// describes: each parameter and buffer by state_dict name from
/// `checkpointPath` (HfCheckpoint::open), in the checkpoint's precision (a
/// bf16 or f16 checkpoint converts to an f32 or f64 program when loaded); a
/// buffer the checkpoint lacks (non-persistent, such as rotary inv_freq)
/// from `basePath`, the model archive's weights (may be empty). Keys of the
/// archive's state_dict that the program does not take (a tied copy) are
/// ignored. Throws RuntimeError listing every missing, unexpected,
/// mis-shaped and mis-typed tensor at once.
void bindCheckpoint(const glimmer::ProgramInfo &info,
                    const std::string &basePath,
                    const std::string &checkpointPath,
                    const std::string &outPath);

/// The weights file a run reads: `weightsPath`; or, given a checkpoint
/// `pretrainedPath`, a private temporary file that bindCheckpoint writes,
/// removed with this object.
class BoundWeights {
public:
  BoundWeights(const glimmer::ProgramInfo &info, const std::string &weightsPath,
               const std::string &pretrainedPath);
  ~BoundWeights();
  BoundWeights(const BoundWeights &) = delete;
  BoundWeights &operator=(const BoundWeights &) = delete;
  const std::string &path() const { return file; }

private:
  std::string file;
  bool temporary = false;
};

/// transformers' default max_shard_size ("5GB").
inline constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000;

/// Parses a shard size: bytes, or a number with KB, MB, GB (powers of 1000)
/// or KiB, MiB, GiB (powers of 1024), as transformers reads max_shard_size.
/// Throws RuntimeError.
uint64_t parseShardSize(const std::string &text);

/// Throws RuntimeError unless `dir` is, or can be created as, a directory
/// this process can write (checked before training).
void checkExportDirectory(const std::string &dir);

/// Writes `tensors` (host or device) to `dir` as save_pretrained does: in
/// name order, a new shard when the next tensor would take the current one
/// past `maxShardBytes`; one shard is model.safetensors, several are
/// model-0000i-of-0000n.safetensors listed by model.safetensors.index.json
/// (metadata.total_size and total_parameters, weight_map; keys sorted). Every
/// file has metadata
/// {"format": "pt"}. Throws RuntimeError.
void exportHfCheckpoint(const std::string &dir,
                        const std::map<std::string, Tensor> &tensors,
                        uint64_t maxShardBytes = kDefaultMaxShardBytes);

} // namespace glimmer_rt

#endif // GLIMMER_RT_HFCHECKPOINT_H
