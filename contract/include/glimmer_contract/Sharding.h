//===- Sharding.h - A tensor's pieces under a sharding ----------*- C++ -*-===//
//
// The arithmetic of a tensor split over mesh axes, as #glimmer.sharding and
// the manifest describe it and glimmer.local_shard cuts it: each split
// dimension is cut into as many equal blocks as its axes have ranks
// together, and a rank holds the block at its index in the group over
// those axes (first axis major).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONTRACT_SHARDING_H
#define GLIMMER_CONTRACT_SHARDING_H

#include "glimmer_contract/SpmdContext.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace glimmer {

/// A rank's coordinate on each mesh axis, in mesh order.
using MeshCoords = std::array<int64_t, kNumMeshAxes>;

/// The coordinates of `rank` in `layout`: ranks are numbered row-major over
/// the axes in mesh order (dp_replicate outermost, pp innermost).
MeshCoords meshCoords(const SpmdContext &layout, int64_t rank);
/// The rank at `coords`.
int64_t rankAt(const SpmdContext &layout, const MeshCoords &coords);

/// The ranks a group over `axes` has together.
int64_t groupSize(const SpmdContext &layout, const std::vector<MeshAxis> &axes);
/// The index of the rank at `coords` in its group over `axes` (first axis
/// major).
int64_t groupIndex(const SpmdContext &layout, const MeshCoords &coords,
                   const std::vector<MeshAxis> &axes);

/// A tensor's split: for each dimension the axes it is split over, none
/// where it is whole.
struct TensorSharding {
  std::vector<std::vector<MeshAxis>> dimAxes;

  /// The sharding named by `names` (the manifest's Slot::dimAxes); on an
  /// unknown axis name, that name in `badAxis` and nullopt.
  static std::optional<TensorSharding>
  fromNames(const std::vector<std::vector<std::string>> &names,
            std::string &badAxis);

  /// The axes dimension `dim` is split over (none past the listed ones).
  std::vector<MeshAxis> axes(size_t dim) const;
  /// The blocks dimension `dim` is cut into under `layout`.
  int64_t pieces(const SpmdContext &layout, size_t dim) const;
  /// The full shape of a tensor whose rank-local shape is `local`.
  std::vector<int64_t> globalShape(const SpmdContext &layout,
                                   std::vector<int64_t> local) const;
  /// The index along dimension `dim` of the block the rank at `coords`
  /// holds.
  int64_t pieceIndex(const SpmdContext &layout, const MeshCoords &coords,
                     size_t dim) const;
};

} // namespace glimmer

#endif // GLIMMER_CONTRACT_SHARDING_H
