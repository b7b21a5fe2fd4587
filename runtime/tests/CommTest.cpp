//===- CommTest.cpp - In-process collectives between thread-ranks ---------===//

#include "glimmer_rt/Comm.h"
#include "glimmer_rt/RankContext.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

using namespace glimmer_rt;

namespace {

/// Runs `body(rank, comm)` on `n` threads and rethrows the first failure.
void runRanks(int64_t n, const std::function<void(int64_t, Communicator &)> &body,
              std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  InProcessWorld world(n, timeout);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(n);
  for (int64_t r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      auto comm = world.communicator(r);
      try {
        body(r, *comm);
      } catch (const std::exception &e) {
        errors[r] = e.what();
        world.abort("rank " + std::to_string(r) + " failed");
      }
    });
  for (auto &t : threads)
    t.join();
  for (int64_t r = 0; r < n; ++r)
    ASSERT_EQ(errors[r], "") << "rank " << r;
}

/// A [2, 3] tensor whose values encode the rank.
Tensor rankTensor(int64_t r) {
  std::vector<double> v;
  for (int i = 0; i < 6; ++i)
    v.push_back(r * 10 + i);
  return constant(DType::F64, {2, 3}, v);
}

} // namespace

TEST(InProcessComm, AllGatherConcatenatesInGroupOrder) {
  runRanks(4, [](int64_t r, Communicator &comm) {
    Tensor g = comm.allGather(rankTensor(r), {0, 1, 2, 3}, 0);
    ASSERT_EQ(g.shape(), (Shape{8, 3}));
    for (int64_t src = 0; src < 4; ++src)
      EXPECT_EQ(g.item(src * 6 + 4), src * 10 + 4);
  });
}

TEST(InProcessComm, ReduceScatterIndivisibleThrows) {
  InProcessWorld world(1);
  auto comm = world.communicator(0);
  EXPECT_THROW(comm->reduceScatter(rankTensor(0), {0}, 5, Reduction::Sum),
               RuntimeError);
}

TEST(InProcessComm, ReduceScatterAlongRows) {
  runRanks(2, [](int64_t r, Communicator &comm) {
    Tensor s = comm.reduceScatter(rankTensor(r), {0, 1}, 0, Reduction::Sum);
    ASSERT_EQ(s.shape(), (Shape{1, 3}));
    // Row r of (rank0 + rank1) = 2*i + 10 with i = 3r + j.
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(s.item(j), 2 * (3 * r + j) + 10);
  });
}

TEST(InProcessComm, AllReduceOverMeshAxisGroups) {
  // dp_shard=2 x cp=2: all_reduce over cp pairs ranks (0,1) and (2,3).
  SpmdContext layout = *SpmdContext::parse("dp_shard=2,cp=2");
  runRanks(4, [&](int64_t r, Communicator &comm) {
    RankContext ctx = RankContext::forRank(layout, r);
    Group cpGroup = ctx.group({MeshAxis::Cp});
    Tensor s = comm.allReduce(full(DType::F64, {2}, double(r)), cpGroup,
                              Reduction::Sum);
    double expected = r < 2 ? 0 + 1 : 2 + 3;
    EXPECT_EQ(s.item(0), expected);
    Tensor m = comm.allReduce(full(DType::F64, {1}, double(r)),
                              ctx.group({MeshAxis::DpShard, MeshAxis::Cp}),
                              Reduction::Max);
    EXPECT_EQ(m.item(0), 3);
  });
}

TEST(InProcessComm, AllReduceIsBitIdenticalAcrossRanks) {
  std::vector<double> results(3);
  runRanks(3, [&](int64_t r, Communicator &comm) {
    Tensor x = full(DType::F32, {1}, 0.1 * (r + 1));
    results[r] = comm.allReduce(x, {0, 1, 2}, Reduction::Sum).item(0);
  });
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[1], results[2]);
}

TEST(InProcessComm, AllToAllTransposesPieces) {
  runRanks(2, [](int64_t r, Communicator &comm) {
    // [2, 2]: row i goes to rank i; received rows are concatenated on dim 1.
    Tensor x = constant(DType::F64, {2, 2},
                        {r * 10.0 + 0, r * 10.0 + 1, r * 10.0 + 2,
                         r * 10.0 + 3});
    Tensor y = comm.allToAll(x, {0, 1}, 0, 1);
    ASSERT_EQ(y.shape(), (Shape{1, 4}));
    // From rank 0 row r, then from rank 1 row r.
    EXPECT_EQ(y.item(0), 0 * 10 + 2 * r);
    EXPECT_EQ(y.item(2), 1 * 10 + 2 * r);
  });
}

TEST(InProcessComm, SendRecvRing) {
  runRanks(3, [](int64_t r, Communicator &comm) {
    int64_t next = (r + 1) % 3, prev = (r + 2) % 3;
    comm.send(full(DType::I64, {1}, double(r)), next);
    Tensor got = comm.recv(prev);
    EXPECT_EQ(got.item(0), prev);
  });
}

TEST(InProcessComm, PpermuteShiftsAndZeroFills) {
  runRanks(3, [](int64_t r, Communicator &comm) {
    // 0 -> 1, 1 -> 2; rank 0 receives nothing.
    Tensor y = comm.ppermute(full(DType::F64, {2}, r + 1.0), {0, 1, 2},
                             {0, 1, 1, 2});
    EXPECT_EQ(y.item(0), r == 0 ? 0.0 : double(r));
  });
}

TEST(InProcessComm, ManyCollectivesInSequence) {
  runRanks(4, [](int64_t r, Communicator &comm) {
    for (int step = 0; step < 200; ++step) {
      Tensor s = comm.allReduce(full(DType::I64, {1}, double(step + r)),
                                {0, 1, 2, 3}, Reduction::Sum);
      ASSERT_EQ(s.item(0), 4 * step + 6);
    }
  });
}

TEST(InProcessComm, MissingRankTimesOutWithAClearError) {
  InProcessWorld world(2, std::chrono::milliseconds(200));
  auto comm = world.communicator(0);
  try {
    comm->allReduce(full(DType::F32, {1}, 1.0), {0, 1}, Reduction::Sum);
    FAIL() << "expected a timeout";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("timed out after 200 ms"),
              std::string::npos);
  }
}

TEST(InProcessComm, AbortWakesWaitingRanks) {
  InProcessWorld world(2, std::chrono::seconds(30));
  auto comm = world.communicator(0);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    world.abort("rank 1 died");
  });
  try {
    comm->allGather(full(DType::F32, {1}, 1.0), {0, 1}, 0);
    FAIL() << "expected an abort";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("aborted: rank 1 died"),
              std::string::npos);
  }
  killer.join();
}
