//===- RankContext.cpp - This thread's place in the device mesh -----------===//

#include "glimmer_rt/RankContext.h"

#include <cassert>

using namespace glimmer_rt;

RankContext RankContext::forRank(const SpmdContext &layout, int64_t rank) {
  assert(rank >= 0 && rank < layout.worldSize() && "rank out of range");
  RankContext ctx;
  ctx.layout = layout;
  ctx.rank = rank;
  ctx.coords = glimmer::meshCoords(layout, rank);
  return ctx;
}

std::vector<int64_t>
RankContext::group(const std::vector<MeshAxis> &axes) const {
  int64_t size = glimmer::groupSize(layout, axes);
  std::vector<int64_t> ranks;
  ranks.reserve(size);
  for (int64_t index = 0; index < size; ++index) {
    glimmer::MeshCoords c = coords;
    int64_t rest = index;
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      int64_t s = layout.degree(*it);
      c[static_cast<unsigned>(*it)] = rest % s;
      rest /= s;
    }
    ranks.push_back(glimmer::rankAt(layout, c));
  }
  return ranks;
}

int64_t RankContext::groupIndex(const std::vector<MeshAxis> &axes) const {
  return glimmer::groupIndex(layout, coords, axes);
}

int64_t RankContext::peer(MeshAxis axis, int64_t coord) const {
  glimmer::MeshCoords c = coords;
  c[static_cast<unsigned>(axis)] = coord;
  return glimmer::rankAt(layout, c);
}

template <>
const RankContext *&glimmer::ThreadCurrent<RankContext>::slot() {
  thread_local const RankContext *current = nullptr;
  return current;
}

const RankContext &RankContext::current() {
  static const RankContext kDefault{};
  return glimmer::ThreadCurrent<RankContext>::get(kDefault);
}
