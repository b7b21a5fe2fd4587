//===- ManifestTest.cpp - The program manifest's description of slots ----===//

#include "glimmer_rt/Trainer.h"

#include <gtest/gtest.h>

using namespace glimmer_rt;

namespace {

Slot parsed(const std::string &text, size_t rank, std::string *error = nullptr) {
  Slot slot;
  slot.name = "w";
  std::string why;
  bool ok = slot.parseSharding(text, rank, why);
  if (error)
    *error = ok ? "" : why;
  return slot;
}

} // namespace

TEST(Manifest, ShardingTextRoundTrips) {
  Slot slot;
  slot.dimAxes = {{"dp_shard", "cp"}, {"tp"}};
  EXPECT_EQ(slot.shardingText(), "[dp_shard,cp][tp]");
  EXPECT_TRUE(slot.isSharded());
  Slot back = parsed(slot.shardingText(), 2);
  EXPECT_EQ(back.dimAxes, slot.dimAxes);
  // A dimension left whole is an empty list.
  Slot rows = parsed("[tp][]", 2);
  ASSERT_EQ(rows.dimAxes.size(), 2u);
  EXPECT_EQ(rows.dimAxes[0], std::vector<std::string>{"tp"});
  EXPECT_TRUE(rows.dimAxes[1].empty());
  EXPECT_EQ(rows.shardingText(), "[tp][]");
}

TEST(Manifest, ReplicatedIsADash) {
  Slot slot = parsed("-", 3);
  EXPECT_FALSE(slot.isSharded());
  EXPECT_EQ(slot.shardingText(), "-");
  Slot whole;
  whole.dimAxes = {{}, {}};
  EXPECT_EQ(whole.shardingText(), "-");
}

TEST(Manifest, MalformedShardingsAreErrors) {
  std::string error;
  parsed("tp", 1, &error);
  EXPECT_EQ(error, "malformed sharding 'tp' of slot 'w'");
  parsed("[tp", 1, &error);
  EXPECT_EQ(error, "malformed sharding '[tp' of slot 'w'");
  parsed("[tp][]", 3, &error);
  EXPECT_EQ(error, "the sharding '[tp][]' of slot 'w' has 2 dimensions, its "
                   "shape 3");
}

TEST(Manifest, TracedInputsRoundTrip) {
  // The digests of inputs the trace held as constants survive the manifest,
  // so that a loaded program still checks its batches.
  ProgramInfo info;
  info.tracedInputs = {{"mm_token_type_ids", "xxh3-128:0123abcd"},
                       {"grid", "xxh3-128:ffff"}};
  ProgramInfo back;
  std::string error;
  ASSERT_TRUE(ProgramInfo::parseManifest(info.toManifest(), back, error))
      << error;
  ASSERT_EQ(back.tracedInputs.size(), 2u);
  EXPECT_EQ(back.tracedInputs[0].name, "mm_token_type_ids");
  EXPECT_EQ(back.tracedInputs[0].digest, "xxh3-128:0123abcd");
  EXPECT_EQ(back.tracedInputs[1].name, "grid");
  EXPECT_EQ(back.tracedInputs[1].digest, "xxh3-128:ffff");
}
