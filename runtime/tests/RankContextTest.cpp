//===- RankContextTest.cpp - Mesh coordinates of ranks --------------------===//

#include "glimmer_rt/RankContext.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

using namespace glimmer_rt;

static SpmdContext layout(const char *text) {
  return *SpmdContext::parse(text);
}

TEST(RankContext, CoordinatesAreRowMajorInMeshOrder) {
  SpmdContext l = layout("dp_shard=2,cp=2,tp=2");
  // rank = ((dp_shard * cp_size + cp) * tp_size + tp)
  RankContext r5 = RankContext::forRank(l, 5);
  EXPECT_EQ(r5.coord(MeshAxis::DpShard), 1);
  EXPECT_EQ(r5.coord(MeshAxis::Cp), 0);
  EXPECT_EQ(r5.coord(MeshAxis::Tp), 1);
  for (int64_t r = 0; r < l.worldSize(); ++r)
    EXPECT_EQ(RankContext::forRank(l, r).peer(MeshAxis::Cp,
                                              RankContext::forRank(l, r)
                                                  .coord(MeshAxis::Cp)),
              r);
}

TEST(RankContext, GroupsPartitionTheWorld) {
  SpmdContext l = layout("dp_replicate=2,dp_shard=2,cp=2");
  std::set<std::vector<int64_t>> groups;
  for (int64_t r = 0; r < l.worldSize(); ++r) {
    RankContext c = RankContext::forRank(l, r);
    std::vector<int64_t> g = c.group({MeshAxis::DpShard, MeshAxis::Cp});
    ASSERT_EQ(g.size(), 4u);
    EXPECT_EQ(g[c.groupIndex({MeshAxis::DpShard, MeshAxis::Cp})], r);
    groups.insert(g);
  }
  // Two dp_replicate replicas -> two disjoint (dp_shard, cp) groups.
  EXPECT_EQ(groups.size(), 2u);
  EXPECT_EQ(*groups.begin(), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(RankContext, PeerAlongAxis) {
  SpmdContext l = layout("cp=4,pp=2");
  RankContext c = RankContext::forRank(l, 3); // cp=1, pp=1
  EXPECT_EQ(c.peer(MeshAxis::Pp, 0), 2);
  EXPECT_EQ(c.peer(MeshAxis::Cp, 3), 7);
}

TEST(RankScope, EachThreadIsItsOwnRank) {
  SpmdContext l = layout("cp=4");
  std::vector<std::thread> threads;
  std::vector<int64_t> seen(4, -1);
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      RankScope scope(RankContext::forRank(l, r));
      seen[r] = RankContext::current().coord(MeshAxis::Cp);
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(RankContext::current().rank, 0);
}
