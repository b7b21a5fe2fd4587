//===- SpmdContextTest.cpp - SpmdContext parsing and scoping --------------===//

#include "glimmer_contract/SpmdContext.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace glimmer;

namespace {

SpmdContext parseOrDie(const std::string &text) {
  std::string error;
  std::optional<SpmdContext> c = SpmdContext::parse(text, &error);
  EXPECT_TRUE(c.has_value()) << text << ": " << error;
  return c.value_or(SpmdContext{});
}

std::string parseError(const std::string &text) {
  std::string error;
  EXPECT_FALSE(SpmdContext::parse(text, &error).has_value()) << text;
  return error;
}

TEST(SpmdContextParse, FullLayout) {
  SpmdContext c = parseOrDie("dp_shard=2,cp=2,tp=2,pp=2,sp,microbatches=4");
  EXPECT_EQ(c.dpReplicate(), 1);
  EXPECT_EQ(c.dpShard(), 2);
  EXPECT_EQ(c.cp(), 2);
  EXPECT_EQ(c.tp(), 2);
  EXPECT_EQ(c.pp(), 2);
  EXPECT_TRUE(c.sp);
  EXPECT_EQ(c.microbatches, 4);
  EXPECT_EQ(c.worldSize(), 16);
}

TEST(SpmdContextParse, DefaultsAndEmpty) {
  SpmdContext c = parseOrDie("");
  EXPECT_EQ(c, SpmdContext{});
  EXPECT_EQ(c.worldSize(), 1);
  EXPECT_EQ(c.print(), "");
  EXPECT_EQ(parseOrDie("   "), SpmdContext{});
}

TEST(SpmdContextParse, WhitespaceIsIgnored) {
  EXPECT_EQ(parseOrDie(" cp = 4 , dp_replicate=2 "),
            parseOrDie("dp_replicate=2,cp=4"));
}

TEST(SpmdContextParse, ScheduleAndBalancer) {
  SpmdContext c = parseOrDie("pp=2,schedule=gpipe,balancer=contiguous,cp=2");
  EXPECT_EQ(c.schedule, PipelineSchedule::GPipe);
  EXPECT_EQ(c.balancer, CpBalancer::Contiguous);
  EXPECT_EQ(c.print(), "cp=2,pp=2,schedule=gpipe,balancer=contiguous");
}

TEST(SpmdContextParse, InterleavedSchedule) {
  SpmdContext c = parseOrDie(
      "pp=2,microbatches=4,virtual_stages=2,schedule=interleaved_1f1b");
  EXPECT_EQ(c.schedule, PipelineSchedule::Interleaved1F1B);
  EXPECT_EQ(c.virtualStages, 2);
  EXPECT_EQ(c.print(),
            "pp=2,microbatches=4,virtual_stages=2,schedule=interleaved_1f1b");
  EXPECT_EQ(parseOrDie(c.print()), c);
  // Interleaving and several stages per rank go together; the micro-batches
  // fill the pipeline in rounds of pp.
  EXPECT_NE(parseError("pp=2,virtual_stages=2").find("needs it"),
            std::string::npos);
  EXPECT_NE(parseError("pp=2,schedule=interleaved_1f1b")
                .find("needs virtual_stages > 1"),
            std::string::npos);
  EXPECT_NE(parseError("pp=2,microbatches=3,virtual_stages=2,"
                       "schedule=interleaved_1f1b")
                .find("micro-batches (3) to be a multiple of pp (2)"),
            std::string::npos);
  EXPECT_NE(parseError("virtual_stages=0").find("'virtual_stages' must be"),
            std::string::npos);
}

TEST(SpmdContextParse, SpValues) {
  EXPECT_TRUE(parseOrDie("tp=2,sp=true").sp);
  EXPECT_FALSE(parseOrDie("tp=2,sp=false").sp);
  EXPECT_TRUE(parseOrDie("tp=2,sp=1").sp);
}

TEST(SpmdContextParse, RoundTrip) {
  for (const char *text :
       {"", "cp=2", "dp_shard=2,cp=2", "dp_replicate=2,cp=2",
        "dp_replicate=2,dp_shard=4,cp=8,tp=2,pp=4,sp,microbatches=8,"
        "schedule=gpipe,balancer=contiguous",
        "tp=4,sp", "pp=3,microbatches=6"}) {
    SpmdContext c = parseOrDie(text);
    EXPECT_EQ(c.print(), text);
    EXPECT_EQ(parseOrDie(c.print()), c);
  }
  // Non-canonical input prints canonically and still round-trips.
  SpmdContext c = parseOrDie("cp=2,dp_shard=2,tp=1");
  EXPECT_EQ(c.print(), "dp_shard=2,cp=2");
  EXPECT_EQ(parseOrDie(c.print()), c);
}

TEST(SpmdContextParse, Errors) {
  EXPECT_NE(parseError("cp=0").find("degree of 'cp' must be a positive "
                                    "integer, got '0'"),
            std::string::npos);
  EXPECT_NE(parseError("cp=-2").find("got '-2'"), std::string::npos);
  EXPECT_NE(parseError("cp=two").find("got 'two'"), std::string::npos);
  EXPECT_NE(parseError("cp=99999999999999999999999").find("positive integer"),
            std::string::npos);
  EXPECT_NE(parseError("cp").find("key 'cp' needs a value"), std::string::npos);
  EXPECT_NE(parseError("cp=2,cp=4").find("duplicate key 'cp'"),
            std::string::npos);
  EXPECT_NE(parseError("ep=2").find("unknown key 'ep'"), std::string::npos);
  EXPECT_NE(parseError("cp=2,,tp=2").find("empty entry"), std::string::npos);
  EXPECT_NE(parseError("cp=2,").find("empty entry"), std::string::npos);
  EXPECT_NE(parseError("sp").find("needs tp > 1"), std::string::npos);
  EXPECT_NE(parseError("tp=2,sp=maybe").find("true|false"), std::string::npos);
  EXPECT_NE(parseError("microbatches=0").find("'microbatches' must be"),
            std::string::npos);
  EXPECT_NE(parseError("schedule=zb").find("unknown pipeline schedule 'zb'"),
            std::string::npos);
  EXPECT_NE(parseError("balancer=random").find("unknown CP load balancer"),
            std::string::npos);
}

// Found by fuzzing (fuzz/spmd_parser.cpp): each degree fits in int64 but
// their product did not, and worldSize() overflowed.
TEST(SpmdContextParse, RejectsWorldSizeOverflow) {
  EXPECT_NE(parseError("cp=5122226222226246464,tp=205")
                .find("world size (the product of the mesh degrees) does not "
                      "fit in a 64-bit integer"),
            std::string::npos);
  EXPECT_NE(parseError("dp_shard=4294967296,cp=4294967296").find("world size"),
            std::string::npos);
  // 2^62 * 2 is one past INT64_MAX; 2^62 - 1 times 2 still fits.
  EXPECT_NE(parseError("cp=4611686018427387904,tp=2").find("world size"),
            std::string::npos);
  SpmdContext c = parseOrDie("cp=4611686018427387903,tp=2");
  EXPECT_EQ(c.worldSize(), INT64_C(9223372036854775806));
}

TEST(SpmdContextParse, NullErrorPointerIsAllowed) {
  EXPECT_FALSE(SpmdContext::parse("cp=0").has_value());
}

TEST(SpmdContextValidate, RejectsHandBuiltBadLayouts) {
  SpmdContext c;
  c.setDegree(MeshAxis::Cp, 0);
  EXPECT_NE(c.validate().find("'cp'"), std::string::npos);
  SpmdContext d;
  d.microbatches = -1;
  EXPECT_NE(d.validate().find("microbatches"), std::string::npos);
  EXPECT_EQ(SpmdContext{}.validate(), "");
}

TEST(MeshAxes, NamesRoundTrip) {
  for (unsigned i = 0; i < kNumMeshAxes; ++i) {
    auto axis = static_cast<MeshAxis>(i);
    EXPECT_EQ(meshAxisFromName(meshAxisName(axis)), axis);
  }
  EXPECT_FALSE(meshAxisFromName("dp").has_value());
}

TEST(SpmdScope, NestsAndRestores) {
  EXPECT_EQ(SpmdContext::current(), SpmdContext{});
  {
    SpmdScope outer(parseOrDie("cp=2"));
    EXPECT_EQ(SpmdContext::current().cp(), 2);
    {
      SpmdScope inner(parseOrDie("dp_shard=4"));
      EXPECT_EQ(SpmdContext::current().cp(), 1);
      EXPECT_EQ(SpmdContext::current().dpShard(), 4);
    }
    EXPECT_EQ(SpmdContext::current().cp(), 2);
    EXPECT_EQ(SpmdContext::current().dpShard(), 1);
  }
  EXPECT_EQ(SpmdContext::current(), SpmdContext{});
}

TEST(SpmdScope, ScopeOwnsACopy) {
  SpmdContext c = parseOrDie("cp=2");
  SpmdScope scope(c);
  c.setDegree(MeshAxis::Cp, 8);
  EXPECT_EQ(SpmdContext::current().cp(), 2);
}

TEST(SpmdScope, ThreadsHoldIndependentContexts) {
  constexpr int kThreads = 8;
  std::atomic<int> ready{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  SpmdScope mainScope(parseOrDie("tp=2"));
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // A new thread starts with the default layout, not the spawner's.
      if (SpmdContext::current() != SpmdContext{})
        ++failures;
      SpmdContext mine;
      mine.setDegree(MeshAxis::Cp, t + 1);
      SpmdScope scope(mine);
      // Wait until every thread has installed its own scope, so the checks
      // below run while all contexts are live at once.
      ++ready;
      while (ready.load() < kThreads)
        std::this_thread::yield();
      for (int i = 0; i < 1000; ++i)
        if (SpmdContext::current().cp() != t + 1)
          ++failures;
      {
        SpmdContext nested = mine;
        nested.setDegree(MeshAxis::DpShard, 2);
        SpmdScope inner(nested);
        if (SpmdContext::current().dpShard() != 2 ||
            SpmdContext::current().cp() != t + 1)
          ++failures;
      }
      if (SpmdContext::current() != mine)
        ++failures;
    });
  }
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(SpmdContext::current().tp(), 2);
}

} // namespace
