//===- Collectives.cpp - Collectives of generated programs ----------------===//

#include "glimmer_rt/Collectives.h"

using namespace glimmer_rt;

namespace {
thread_local Communicator *currentComm = nullptr;

std::vector<MeshAxis> meshAxes(const Axes &axes) {
  std::vector<MeshAxis> out;
  for (const std::string &name : axes) {
    std::optional<MeshAxis> axis = glimmer::meshAxisFromName(name);
    if (!axis)
      throw RuntimeError("unknown mesh axis '" + name + "'");
    out.push_back(*axis);
  }
  return out;
}
} // namespace

CommScope::CommScope(Communicator &comm) : previous(currentComm) {
  currentComm = &comm;
}

CommScope::~CommScope() { currentComm = previous; }

Communicator &glimmer_rt::currentCommunicator() {
  if (!currentComm)
    throw RuntimeError("a collective ran on a thread without a communicator "
                       "(a partitioned program needs one rank per thread)");
  return *currentComm;
}

Tensor glimmer_rt::allGather(const Tensor &x, const Axes &axes, int64_t dim) {
  return currentCommunicator().allGather(
      x, RankContext::current().group(meshAxes(axes)), dim);
}

Tensor glimmer_rt::reduceScatter(Reduction kind, const Tensor &x,
                                 const Axes &axes, int64_t dim) {
  return currentCommunicator().reduceScatter(
      x, RankContext::current().group(meshAxes(axes)), dim, kind);
}

Tensor glimmer_rt::allReduce(Reduction kind, const Tensor &x,
                             const Axes &axes) {
  return currentCommunicator().allReduce(
      x, RankContext::current().group(meshAxes(axes)), kind);
}

Tensor glimmer_rt::allToAll(const Tensor &x, const Axes &axes,
                            int64_t splitDim, int64_t concatDim) {
  return currentCommunicator().allToAll(
      x, RankContext::current().group(meshAxes(axes)), splitDim, concatDim);
}

Tensor glimmer_rt::localShard(const Tensor &x, const Axes &axes, int64_t dim) {
  std::vector<MeshAxis> mesh = meshAxes(axes);
  const RankContext &rank = RankContext::current();
  int64_t n = 1;
  for (MeshAxis a : mesh)
    n *= rank.layout.degree(a);
  if (dim < 0 || dim >= x.rank() || x.dim(dim) % n != 0)
    throw RuntimeError("local_shard: dimension " + std::to_string(dim) +
                       " of " + x.describe() +
                       " is not divisible by the group size " +
                       std::to_string(n));
  return pieceAlong(x, dim, rank.groupIndex(mesh), n);
}
