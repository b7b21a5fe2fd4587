//===- RankContext.cpp - This thread's place in the device mesh -----------===//

#include "glimmer_rt/RankContext.h"

#include <cassert>

using namespace glimmer_rt;

RankContext RankContext::forRank(const SpmdContext &layout, int64_t rank) {
  assert(rank >= 0 && rank < layout.worldSize() && "rank out of range");
  RankContext ctx;
  ctx.layout = layout;
  ctx.rank = rank;
  int64_t rest = rank;
  for (int i = kNumMeshAxes - 1; i >= 0; --i) {
    int64_t size = layout.degrees[i];
    ctx.coords[i] = rest % size;
    rest /= size;
  }
  return ctx;
}

/// Row-major rank of a full coordinate vector.
static int64_t rankOf(const SpmdContext &layout,
                      const std::array<int64_t, kNumMeshAxes> &coords) {
  int64_t rank = 0;
  for (unsigned i = 0; i < kNumMeshAxes; ++i)
    rank = rank * layout.degrees[i] + coords[i];
  return rank;
}

std::vector<int64_t>
RankContext::group(const std::vector<MeshAxis> &axes) const {
  int64_t size = 1;
  for (MeshAxis a : axes)
    size *= layout.degree(a);
  std::vector<int64_t> ranks;
  ranks.reserve(size);
  for (int64_t index = 0; index < size; ++index) {
    std::array<int64_t, kNumMeshAxes> c = coords;
    int64_t rest = index;
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      int64_t s = layout.degree(*it);
      c[static_cast<unsigned>(*it)] = rest % s;
      rest /= s;
    }
    ranks.push_back(rankOf(layout, c));
  }
  return ranks;
}

int64_t RankContext::groupIndex(const std::vector<MeshAxis> &axes) const {
  int64_t index = 0;
  for (MeshAxis a : axes)
    index = index * layout.degree(a) + coord(a);
  return index;
}

int64_t RankContext::peer(MeshAxis axis, int64_t coord) const {
  std::array<int64_t, kNumMeshAxes> c = coords;
  c[static_cast<unsigned>(axis)] = coord;
  return rankOf(layout, c);
}

namespace {
thread_local const RankContext *currentRank = nullptr;
const RankContext kDefaultRank{};
} // namespace

const RankContext &RankContext::current() {
  return currentRank ? *currentRank : kDefaultRank;
}

RankScope::RankScope(const RankContext &context)
    : context(context), previous(currentRank) {
  currentRank = &this->context;
}

RankScope::~RankScope() { currentRank = previous; }
