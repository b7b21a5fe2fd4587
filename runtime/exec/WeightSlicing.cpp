//===- WeightSlicing.cpp - Full tensors and ranks' pieces -----------------===//

#include "WeightSlicing.h"

#include "glimmer_contract/Sharding.h"

#include <map>

using namespace glimmer_rt;
using glimmer::TensorSharding;

std::unique_ptr<SafetensorsFile>
glimmer_rt::detail::readFile(const std::string &path) {
  std::string error;
  auto file = SafetensorsFile::read(path, error);
  if (!file)
    throw RuntimeError(error);
  return file;
}

/// How `slot` is split over the mesh, or throws.
static TensorSharding shardingOf(const Slot &slot) {
  std::string badAxis;
  auto sharding = TensorSharding::fromNames(slot.dimAxes, badAxis);
  if (!sharding)
    throw RuntimeError("tensor '" + slot.name +
                       "' is sharded over unknown "
                       "mesh axis '" +
                       badAxis + "'");
  return *sharding;
}

Tensor glimmer_rt::detail::readFull(const SafetensorsFile &file,
                                    const SpmdContext &layout, const Slot &slot,
                                    const std::string &name, const char *what) {
  const TensorInfo *info = file.find(name);
  if (!info)
    throw RuntimeError(std::string(what) + " has no tensor '" + name + "'");
  Shape expected = shardingOf(slot).globalShape(layout, slot.shape);
  if (info->shape != expected)
    throw RuntimeError(
        "tensor '" + name + "' has shape " + shapeString(info->shape) +
        " but the program was compiled for " + shapeString(expected));
  if (isFloating(slot.dtype) != isFloating(info->dtype))
    throw RuntimeError("tensor '" + name + "' has dtype " +
                       std::string(dtypeName(info->dtype)) +
                       " but the program expects " +
                       std::string(dtypeName(slot.dtype)));
  Tensor t = readTensor(file, *info);
  return t.dtype() == slot.dtype ? t : convert(t, slot.dtype);
}

Tensor glimmer_rt::detail::pieceFor(const Tensor &full,
                                    const SpmdContext &layout, const Slot &slot,
                                    int64_t rank, Device device) {
  if (!slot.isSharded())
    return full.to(device);
  TensorSharding sharding = shardingOf(slot);
  glimmer::MeshCoords coords = glimmer::meshCoords(layout, rank);
  Tensor piece = full;
  for (size_t d = 0; d < sharding.dimAxes.size(); ++d)
    if (!sharding.dimAxes[d].empty())
      piece =
          pieceAlong(piece, int64_t(d), sharding.pieceIndex(layout, coords, d),
                     sharding.pieces(layout, d));
  return piece.clone().to(device);
}

// The blocks that differ only along the last split dimension are joined
// first, then along the one before, and so on.
Tensor glimmer_rt::detail::assemble(
    const Slot &slot, const SpmdContext &layout, const RankContext &holder,
    const std::function<Tensor(int64_t rank)> &pieceOf) {
  TensorSharding sharding = shardingOf(slot);
  std::vector<MeshAxis> all;
  std::vector<size_t> split;
  for (size_t d = 0; d < sharding.dimAxes.size(); ++d) {
    const std::vector<MeshAxis> &axes = sharding.dimAxes[d];
    all.insert(all.end(), axes.begin(), axes.end());
    if (!axes.empty())
      split.push_back(d);
  }
  // Each block by its index along every split dimension.
  std::map<std::vector<int64_t>, Tensor> blocks;
  for (int64_t r : holder.group(all)) {
    glimmer::MeshCoords coords = glimmer::meshCoords(layout, r);
    std::vector<int64_t> at;
    for (size_t d : split)
      at.push_back(sharding.pieceIndex(layout, coords, d));
    blocks.emplace(at, pieceOf(r));
  }
  for (size_t k = split.size(); k-- > 0;) {
    std::map<std::vector<int64_t>, std::vector<Tensor>> rows;
    for (auto &[at, t] : blocks) {
      std::vector<int64_t> rest(at.begin(), at.begin() + k);
      rows[rest].push_back(t); // std::map: in order of the k-th index
    }
    blocks.clear();
    for (auto &[rest, parts] : rows)
      blocks.emplace(rest, concat(parts, int64_t(split[k])));
  }
  return blocks.begin()->second;
}
