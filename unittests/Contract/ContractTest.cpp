//===- ContractTest.cpp - Roles, element types and sharding arithmetic ----===//

#include "glimmer_contract/Attributes.h"
#include "glimmer_contract/DType.h"
#include "glimmer_contract/Sharding.h"

#include <gtest/gtest.h>

using namespace glimmer;

TEST(Roles, NamesRoundTrip) {
  for (const RoleAttr &r : kRoleAttrs) {
    EXPECT_EQ(roleAttrNamed(r.attr), &r);
    EXPECT_EQ(roleFromName(roleName(r.role)), r.role);
  }
  EXPECT_EQ(roleName(Role::Parameter), "param");
  EXPECT_EQ(roleName(Role::Other), "other");
  EXPECT_EQ(roleFromName("other"), Role::Other);
  EXPECT_FALSE(roleFromName("glimmer.param"));
  EXPECT_EQ(roleAttrNamed(kShardingAttr), nullptr);
}

TEST(DTypes, NamesRoundTrip) {
  for (DType d : kAllDTypes) {
    EXPECT_EQ(dtypeFromName(dtypeName(d)), d);
    EXPECT_GT(dtypeSize(d), 0u);
  }
  EXPECT_EQ(dtypeName(DType::Bool), "BOOL");
  EXPECT_EQ(dtypeEnumerator(DType::Bool), "Bool");
  EXPECT_FALSE(dtypeFromName("Bool"));
}

TEST(Sharding, CoordinatesAreRowMajor) {
  SpmdContext layout = *SpmdContext::parse("dp_shard=2,cp=3,tp=2");
  for (int64_t r = 0; r < layout.worldSize(); ++r)
    EXPECT_EQ(rankAt(layout, meshCoords(layout, r)), r);
  MeshCoords c = meshCoords(layout, 7); // 7 = (1 * 3 + 0) * 2 + 1
  EXPECT_EQ(c[unsigned(MeshAxis::DpShard)], 1);
  EXPECT_EQ(c[unsigned(MeshAxis::Cp)], 0);
  EXPECT_EQ(c[unsigned(MeshAxis::Tp)], 1);
  // The first axis is major.
  EXPECT_EQ(groupIndex(layout, c, {MeshAxis::DpShard, MeshAxis::Cp}), 3);
  EXPECT_EQ(groupIndex(layout, c, {MeshAxis::Cp, MeshAxis::DpShard}), 1);
  EXPECT_EQ(groupSize(layout, {MeshAxis::DpShard, MeshAxis::Cp}), 6);
}

TEST(Sharding, PiecesOfATensor) {
  SpmdContext layout = *SpmdContext::parse("dp_shard=2,cp=3,tp=2");
  std::string bad;
  auto sharding = TensorSharding::fromNames({{"dp_shard", "cp"}, {}}, bad);
  ASSERT_TRUE(sharding);
  EXPECT_EQ(sharding->pieces(layout, 0), 6);
  EXPECT_EQ(sharding->pieces(layout, 1), 1);
  EXPECT_EQ(sharding->globalShape(layout, {4, 5}),
            (std::vector<int64_t>{24, 5}));
  EXPECT_EQ(sharding->pieceIndex(layout, meshCoords(layout, 7), 0), 3);
  EXPECT_EQ(sharding->pieceIndex(layout, meshCoords(layout, 7), 1), 0);
  EXPECT_FALSE(TensorSharding::fromNames({{"tp", "xy"}}, bad));
  EXPECT_EQ(bad, "xy");
}
