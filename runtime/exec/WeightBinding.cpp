//===- WeightBinding.cpp - A program's weights from a checkpoint ----------===//

#include "glimmer_rt/HfCheckpoint.h"
#include "glimmer_rt/Trainer.h"

#include "glimmer_contract/Sharding.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

using namespace glimmer_rt;
using glimmer::TensorSharding;

namespace {
/// A tensor the program takes: its full (unsharded) shape and dtype.
struct Expected {
  std::vector<int64_t> shape;
  DType dtype;
  bool parameter;
};
} // namespace

/// "f32[64, 32]"
static std::string describe(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + shapeString(shape);
}

/// Every parameter and buffer some function of `info` takes.
static std::map<std::string, Expected>
expectedTensors(const ProgramInfo &info) {
  std::map<std::string, Expected> out;
  for (const auto &[fnName, fn] : info.functions)
    for (const Slot &slot : fn.arguments) {
      if (slot.role != Role::Parameter && slot.role != Role::Buffer)
        continue;
      std::string badAxis;
      auto sharding = TensorSharding::fromNames(slot.dimAxes, badAxis);
      if (!sharding)
        throw RuntimeError("tensor '" + slot.name +
                           "' is sharded over unknown mesh axis '" + badAxis +
                           "'");
      out.emplace(slot.name,
                  Expected{sharding->globalShape(info.layout, slot.shape),
                           slot.dtype, slot.role == Role::Parameter});
    }
  return out;
}

void glimmer_rt::bindCheckpoint(const ProgramInfo &info,
                                const std::string &basePath,
                                const std::string &checkpointPath,
                                const std::string &outPath) {
  std::map<std::string, Expected> expected = expectedTensors(info);
  HfCheckpoint checkpoint = HfCheckpoint::open(checkpointPath);
  std::unique_ptr<SafetensorsFile> base;
  if (!basePath.empty()) {
    std::string error;
    base = SafetensorsFile::read(basePath, error);
    if (!base)
      throw RuntimeError(error);
  }
  std::vector<TensorView> views;
  std::vector<std::string> missing, misfit, unexpected;
  std::set<std::string> boundDigests;
  for (const auto &[name, want] : expected) {
    const SafetensorsFile *file = nullptr;
    const TensorInfo *found = nullptr;
    if (const HfCheckpoint::Entry *entry = checkpoint.find(name)) {
      file = entry->file;
      found = entry->info;
      // A float checkpoint converts to the program's precision on loading;
      // an integer tensor must stay integer.
      if (found->shape != want.shape ||
          isFloating(found->dtype) != isFloating(want.dtype)) {
        misfit.push_back(name + ": expected " +
                         describe(want.dtype, want.shape) + ", found " +
                         describe(found->dtype, found->shape));
        continue;
      }
      boundDigests.insert(tensorDigest(*file, *found));
    } else if (!want.parameter && base && base->find(name)) {
      // Non-persistent buffers (rotary inv_freq) are not in a state_dict.
      file = base.get();
      found = base->find(name);
    } else {
      missing.push_back(name + " " + describe(want.dtype, want.shape));
      continue;
    }
    views.push_back(
        TensorView{name, found->dtype, found->shape, file->data(*found)});
  }
  // The model's state_dict keys the program does not take (a tied copy such
  // as lm_head.weight, folded into the embedding) are ignored, as
  // transformers ignores tied weights; without the model's state_dict, a key
  // holding the same values as a bound tensor is such a copy.
  for (const auto &[name, entry] : checkpoint.tensors())
    if (!expected.count(name) && !(base && base->find(name)) &&
        !boundDigests.count(tensorDigest(*entry.file, *entry.info)))
      unexpected.push_back(name + " " +
                           describe(entry.info->dtype, entry.info->shape));
  if (!missing.empty() || !misfit.empty() || !unexpected.empty()) {
    std::ostringstream message;
    message << "--weights: '" << checkpointPath
            << "' does not fit the model's state_dict";
    for (auto [what, names] :
         {std::pair{"missing", &missing}, std::pair{"unexpected", &unexpected},
          std::pair{"mis-shaped or mis-typed", &misfit}}) {
      if (names->empty())
        continue;
      message << "\n  " << names->size() << " " << what << ":";
      for (const std::string &n : *names)
        message << "\n    " << n;
    }
    throw RuntimeError(message.str());
  }
  std::string error;
  if (!writeSafetensors(outPath, views, {{"format", "pt"}}, error, 0600))
    throw RuntimeError(error);
}

BoundWeights::BoundWeights(const ProgramInfo &info,
                           const std::string &weightsPath,
                           const std::string &pretrainedPath)
    : file(weightsPath) {
  if (pretrainedPath.empty()) {
    if (weightsPath.empty())
      throw RuntimeError("the model holds no weights (it was exported on "
                         "the meta device): give them with "
                         "--weights=FILE|HF_DIR");
    return;
  }
  std::string pattern =
      (std::filesystem::temp_directory_path() / "glimmer-weights-XXXXXX")
          .string();
  int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    throw RuntimeError("cannot create a temporary file in '" +
                       std::filesystem::temp_directory_path().string() + "'");
  ::close(fd);
  file = pattern;
  temporary = true;
  try {
    bindCheckpoint(info, weightsPath, pretrainedPath, file);
  } catch (...) {
    std::remove(file.c_str());
    throw;
  }
}

BoundWeights::~BoundWeights() {
  if (temporary)
    std::remove(file.c_str());
}
