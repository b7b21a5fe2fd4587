//===- RankContext.h - This thread's place in the device mesh ---*- C++ -*-===//
//
// The runtime's counterpart of SpmdContext: which rank the calling thread is
// and its coordinate on each mesh axis. Thread-local, so N ranks can run as
// N threads of one process (the CPU backend) or one process per GPU.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_RANKCONTEXT_H
#define GLIMMER_RT_RANKCONTEXT_H

#include "glimmer_contract/Sharding.h"
#include "glimmer_contract/SpmdContext.h"

#include <cstdint>
#include <vector>

namespace glimmer_rt {

using glimmer::kNumMeshAxes;
using glimmer::MeshAxis;
using glimmer::SpmdContext;

/// A rank's coordinates on the mesh. Ranks are numbered row-major over the
/// axes in mesh order (dp_replicate outermost, pp innermost).
struct RankContext {
  SpmdContext layout;
  int64_t rank = 0;
  glimmer::MeshCoords coords{0, 0, 0, 0, 0};

  /// The context of `rank` in `layout`; `rank` must be in [0, worldSize).
  static RankContext forRank(const SpmdContext &layout, int64_t rank);

  int64_t coord(MeshAxis axis) const {
    return coords[static_cast<unsigned>(axis)];
  }

  /// The ranks that differ from this one only along `axes`, ordered by their
  /// coordinates along those axes (first axis major). This is the group a
  /// collective over `axes` runs in; this rank's index in it is
  /// groupIndex(axes).
  std::vector<int64_t> group(const std::vector<MeshAxis> &axes) const;
  int64_t groupIndex(const std::vector<MeshAxis> &axes) const;

  /// The rank with this rank's coordinates except `coord` along `axis`.
  int64_t peer(MeshAxis axis, int64_t coord) const;

  /// The context of the calling thread (rank 0 of the default layout when no
  /// RankScope is live).
  static const RankContext &current();
};

/// Makes a context the calling thread's rank for the scope's lifetime.
using RankScope = glimmer::CurrentScope<RankContext>;

} // namespace glimmer_rt

template <>
const glimmer_rt::RankContext *&
glimmer::ThreadCurrent<glimmer_rt::RankContext>::slot();

#endif // GLIMMER_RT_RANKCONTEXT_H
