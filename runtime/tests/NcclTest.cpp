//===- NcclTest.cpp - NCCL communicators on real GPUs ---------------------===//
//
// A plain program (the GPU hosts run it by hand or from a script), printing
// PASS/FAIL per case and exiting non-zero when a case fails.
//
//   glimmer-nccl-test
//       Two thread-ranks of an NcclWorld on GPUs 0 and 1: every collective
//       against the in-process (CPU) communicator on the same host data,
//       then the failure cases (a rank that fails and aborts the world, a
//       rank that never joins). Prints "SKIP: needs 2 GPUs" and exits 0 on
//       a machine with fewer.
//   mpirun -np 2 --allow-run-as-root glimmer-nccl-test --process
//   torchrun --nproc-per-node 2 glimmer-nccl-test --process
//       One rank per process: an all_reduce and an all_gather, checked.
//   mpirun -np 2 --allow-run-as-root glimmer-nccl-test --process-die
//       Rank 1 exits(3) before the second all_reduce; the other ranks must
//       stop with a clear error within 60 s (they print PASS and exit 1,
//       since stopping with an error is the expected outcome; exit 2 means
//       they did not). The launcher may kill them once rank 1 has exited.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Nccl.h"
#include "glimmer_rt/Comm.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace glimmer_rt;

namespace {

using Clock = std::chrono::steady_clock;

int failures = 0;

void report(const std::string &name, const std::string &problem) {
  if (problem.empty()) {
    std::printf("PASS %s\n", name.c_str());
  } else {
    std::printf("FAIL %s: %s\n", name.c_str(), problem.c_str());
    ++failures;
  }
  std::fflush(stdout);
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A host tensor whose values encode the rank and the position; exactly
/// representable in bf16 and summable without rounding.
Tensor hostInput(DType dtype, const Shape &shape, int64_t rank) {
  DeviceScope onHost(Device::cpu());
  std::vector<double> values(size_t(numElements(shape)));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = double(int64_t(i) % 7) * 0.5 + double(rank) * 8.0 -
                (i % 3 == 0 ? 3.0 : 0.0);
  if (!isFloating(dtype))
    for (double &v : values)
      v = std::floor(v);
  return constant(dtype, shape, values);
}

/// "" when `got` equals `want` (floats within a relative 1e-6).
std::string compare(const Tensor &got, const Tensor &want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "got " + got.describe() + ", want " + want.describe();
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.item(i), w = want.item(i);
    double tolerance =
        isFloating(got.dtype()) ? 1e-6 * std::max(1.0, std::fabs(w)) : 0.0;
    if (!(std::fabs(g - w) <= tolerance))
      return "element " + std::to_string(i) + " is " + std::to_string(g) +
             ", want " + std::to_string(w);
  }
  return "";
}

using Op = std::function<Tensor(Communicator &, int64_t rank, const Tensor &)>;

struct Case {
  std::string name;
  DType dtype;
  Shape shape;
  Op op;
  /// The CPU reference when the in-process communicator cannot run `op`
  /// itself (the CPU kernels have no bf16 arithmetic).
  Op reference;
};

const Group kWorld{0, 1};

Op allReduceOp(Reduction kind, Group group = kWorld) {
  return [kind, group](Communicator &c, int64_t, const Tensor &x) {
    return c.allReduce(x, group, kind);
  };
}

/// Reduces bf16 through f32 on the CPU: exact for hostInput's values.
Op bf16Reference(Reduction kind) {
  return [kind](Communicator &c, int64_t, const Tensor &x) {
    return convert(c.allReduce(convert(x, DType::F32), kWorld, kind),
                   DType::BF16);
  };
}

std::vector<Case> collectiveCases() {
  std::vector<Case> cases;
  auto add = [&](std::string name, DType dtype, Shape shape, Op op,
                 Op reference = nullptr) {
    cases.push_back({std::move(name), dtype, std::move(shape), std::move(op),
                     std::move(reference)});
  };
  for (int64_t dim : {0, 1})
    add("all_gather dim " + std::to_string(dim), DType::F32, {2, 3},
        [dim](Communicator &c, int64_t, const Tensor &x) {
          return c.allGather(x, kWorld, dim);
        });
  add("all_gather dim 1 after a unit dim (no copy)", DType::F32, {1, 3, 2},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.allGather(x, kWorld, 1);
      });
  add("all_gather dim 2 of rank 3", DType::I64, {2, 2, 3},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.allGather(x, kWorld, 2);
      });
  add("reduce_scatter dim 0 sum", DType::F32, {4, 3},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.reduceScatter(x, kWorld, 0, Reduction::Sum);
      });
  add("reduce_scatter dim 1 sum", DType::F32, {3, 4},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.reduceScatter(x, kWorld, 1, Reduction::Sum);
      });
  add("reduce_scatter dim 1 max (f64, rank 3)", DType::F64, {2, 4, 3},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.reduceScatter(x, kWorld, 1, Reduction::Max);
      });
  for (DType dtype : {DType::F32, DType::F64, DType::I64})
    for (Reduction kind : {Reduction::Sum, Reduction::Max})
      add(std::string("all_reduce ") +
              (kind == Reduction::Sum ? "sum " : "max ") +
              std::string(dtypeName(dtype)),
          dtype, {3, 5}, allReduceOp(kind));
  for (Reduction kind : {Reduction::Sum, Reduction::Max})
    add(std::string("all_reduce ") + (kind == Reduction::Sum ? "sum" : "max") +
            " BF16",
        DType::BF16, {3, 5}, allReduceOp(kind), bf16Reference(kind));
  add("all_reduce min I32", DType::I32, {7}, allReduceOp(Reduction::Min));
  add("all_to_all split 0 concat 1", DType::F64, {2, 2},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.allToAll(x, kWorld, 0, 1);
      });
  add("all_to_all split 1 concat 0", DType::F32, {3, 4},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.allToAll(x, kWorld, 1, 0);
      });
  add("all_to_all split 2 concat 2", DType::I32, {2, 3, 4},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.allToAll(x, kWorld, 2, 2);
      });
  for (DType dtype : {DType::I64, DType::F32})
    add("send/recv " + std::string(dtypeName(dtype)), dtype, {2, 2, 3},
        [](Communicator &c, int64_t rank, const Tensor &x) {
          // Rank 0 sends first, rank 1 receives first: NCCL sends complete
          // only when received.
          if (rank == 0) {
            c.send(x, 1);
            return c.recv(1);
          }
          Tensor got = c.recv(0);
          c.send(x, 0);
          return got;
        });
  add("ppermute swap", DType::F32, {2, 3},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.ppermute(x, kWorld, {0, 1, 1, 0});
      });
  add("ppermute shift (rank 0 gets zeros)", DType::I64, {4},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.ppermute(x, kWorld, {0, 1});
      });
  // Group {1, 0} is not the world in rank order: its communicator comes
  // from ncclCommSplit (color 0, rank 1 first).
  add("split group [1, 0] all_gather", DType::F32, {2, 3},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.allGather(x, {1, 0}, 0);
      });
  add("split group [1, 0] all_reduce sum", DType::F64, {5},
      allReduceOp(Reduction::Sum, {1, 0}));
  add("split group [1, 0] reduce_scatter", DType::F32, {4, 2},
      [](Communicator &c, int64_t, const Tensor &x) {
        return c.reduceScatter(x, {1, 0}, 0, Reduction::Sum);
      });
  add("world group after the split", DType::I64, {3},
      allReduceOp(Reduction::Sum));
  add("singleton groups all_reduce", DType::F32, {2, 2},
      [](Communicator &c, int64_t rank, const Tensor &x) {
        return c.allReduce(x, {rank}, Reduction::Sum);
      });
  add("singleton groups all_gather", DType::F32, {2, 2},
      [](Communicator &c, int64_t rank, const Tensor &x) {
        return c.allGather(x, {rank}, 1);
      });
  add("200 all_reduces in a row", DType::I64, {4},
      [](Communicator &c, int64_t, const Tensor &x) {
        Tensor y;
        for (int step = 0; step < 200; ++step)
          y = c.allReduce(x, kWorld,
                          step % 2 ? Reduction::Max : Reduction::Min);
        return y;
      });
  return cases;
}

/// Runs every case on both ranks of `world`, on each rank's thread and
/// GPU; returns the results copied to the host ([case][rank]) and the
/// errors. A rank that fails aborts the world so the other does not wait.
template <typename World>
void runCases(World &world, const std::vector<Case> &cases,
              const std::vector<std::vector<Tensor>> &inputs, bool onGpu,
              std::vector<std::vector<Tensor>> &results,
              std::vector<std::vector<std::string>> &errors) {
  results.assign(cases.size(), std::vector<Tensor>(2));
  errors.assign(cases.size(), std::vector<std::string>(2));
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<Communicator> comm;
      try {
        comm = world.communicator(r);
      } catch (const std::exception &e) {
        for (auto &row : errors)
          row[size_t(r)] = e.what();
        world.abort("rank " + std::to_string(r) + " has no communicator");
        return;
      }
      for (size_t c = 0; c < cases.size(); ++c) {
        try {
          Tensor x = inputs[c][size_t(r)];
          if (onGpu) {
            Device device = Device::cuda(int(r));
            DeviceScope scope(device);
            Tensor y = cases[c].op(*comm, r, x.to(device));
            if (!y.isCuda() || y.device() != device)
              throw RuntimeError("the result lives on " + y.device().str());
            results[c][size_t(r)] = y.to(Device::cpu());
          } else {
            const Op &op =
                cases[c].reference ? cases[c].reference : cases[c].op;
            results[c][size_t(r)] = op(*comm, r, x);
          }
        } catch (const std::exception &e) {
          errors[c][size_t(r)] = e.what();
          world.abort("rank " + std::to_string(r) + " failed " + cases[c].name +
                      ": " + e.what());
        }
      }
    });
  for (std::thread &t : threads)
    t.join();
}

void testCollectives() {
  std::vector<Case> cases = collectiveCases();
  std::vector<std::vector<Tensor>> inputs;
  for (const Case &c : cases)
    inputs.push_back(
        {hostInput(c.dtype, c.shape, 0), hostInput(c.dtype, c.shape, 1)});

  std::vector<std::vector<Tensor>> want, got;
  std::vector<std::vector<std::string>> wantErrors, gotErrors;
  {
    InProcessWorld reference(2, std::chrono::seconds(30));
    runCases(reference, cases, inputs, /*onGpu=*/false, want, wantErrors);
  }
  auto start = Clock::now();
  {
    NcclWorld world(2, std::chrono::seconds(30));
    runCases(world, cases, inputs, /*onGpu=*/true, got, gotErrors);
  }
  std::printf("(NCCL cases and world teardown took %.1f s)\n",
              secondsSince(start));
  for (size_t c = 0; c < cases.size(); ++c) {
    std::string problem;
    for (size_t r = 0; r < 2 && problem.empty(); ++r) {
      std::string rank = "rank " + std::to_string(r) + ": ";
      if (!wantErrors[c][r].empty())
        problem = rank + "the in-process reference failed: " + wantErrors[c][r];
      else if (!gotErrors[c][r].empty())
        problem = rank + gotErrors[c][r];
      else if (std::string diff = compare(got[c][r], want[c][r]); !diff.empty())
        problem = rank + diff;
    }
    report(cases[c].name, problem);
  }
}

/// Rank 1 throws instead of joining an all_reduce and its runner aborts the
/// world; rank 0, waiting for the all_reduce's result in Tensor::item(),
/// must get a RuntimeError.
void testAbort() {
  const std::string name =
      "failure: rank 1 throws, world.abort, rank 0 in item()";
  NcclWorld world(2, std::chrono::seconds(20));
  std::promise<void> enqueued;
  std::shared_future<void> isEnqueued = enqueued.get_future().share();
  std::string problem, detail;
  std::thread rank0([&] {
    try {
      DeviceScope scope(world.deviceOf(0));
      auto comm = world.communicator(0);
      Tensor x = hostInput(DType::F32, {1024}, 0).to(world.deviceOf(0));
      // A first all_reduce that both ranks join: initialization is done.
      comm->allReduce(x, kWorld, Reduction::Sum).item(0);
      Tensor y = comm->allReduce(x, kWorld, Reduction::Sum);
      enqueued.set_value();
      auto start = Clock::now();
      try {
        double v = y.item(0);
        problem = "item() returned " + std::to_string(v) + " after " +
                  std::to_string(secondsSince(start)) +
                  " s without an error (was the host blocked inside a CUDA "
                  "copy, where the wait hooks cannot run?)";
        return;
      } catch (const RuntimeError &e) {
        double waited = secondsSince(start);
        detail = "rank 0 got an error after " + std::to_string(waited) +
                 " s: " + e.what();
        if (waited >= 60)
          problem = detail + " (not within 60 s)";
        else if (std::string(e.what()).find("aborted") == std::string::npos)
          problem = "unexpected error: " + detail;
      }
      // Every later collective fails too.
      try {
        comm->allReduce(x, kWorld, Reduction::Sum).item(0);
        problem = "a collective after the abort succeeded";
      } catch (const RuntimeError &) {
      }
    } catch (const std::exception &e) {
      problem = std::string("rank 0 failed outside the wait: ") + e.what();
      try {
        enqueued.set_value();
      } catch (...) {
      }
    }
  });
  std::thread rank1([&] {
    // As a runner does: the communicator outlives the failure, and the
    // runner aborts the world with the rank's error.
    DeviceScope scope(world.deviceOf(1));
    std::unique_ptr<Communicator> comm;
    try {
      comm = world.communicator(1);
      Tensor x = hostInput(DType::F32, {1024}, 1).to(world.deviceOf(1));
      comm->allReduce(x, kWorld, Reduction::Sum).item(0);
      isEnqueued.wait_for(std::chrono::seconds(60));
      // Let rank 0 reach item() first.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      throw RuntimeError("rank 1 failed on purpose before its all_reduce");
    } catch (const std::exception &e) {
      world.abort(std::string("rank 1 failed: ") + e.what());
    }
  });
  rank0.join();
  rank1.join();
  if (problem.empty())
    std::printf("  %s\n", detail.c_str());
  report(name, problem);
}

/// Rank 1 never joins the all_reduce and nobody aborts: rank 0's wait must
/// time out with an error naming the collective.
void testTimeout() {
  const std::string name =
      "failure: rank 1 skips an all_reduce, rank 0 times out";
  const auto timeout = std::chrono::seconds(5);
  NcclWorld world(2, timeout);
  std::promise<void> finished;
  std::shared_future<void> isFinished = finished.get_future().share();
  std::string problem, detail;
  std::thread rank0([&] {
    try {
      DeviceScope scope(world.deviceOf(0));
      auto comm = world.communicator(0);
      Tensor x = hostInput(DType::F64, {16}, 0).to(world.deviceOf(0));
      // A first all_reduce that both ranks join: initialization is done.
      comm->allReduce(x, kWorld, Reduction::Sum).item(0);
      Tensor y = comm->allReduce(x, kWorld, Reduction::Max);
      auto start = Clock::now();
      try {
        y.item(0);
        problem = "item() returned without an error";
      } catch (const RuntimeError &e) {
        double waited = secondsSince(start);
        detail = "rank 0 got an error after " + std::to_string(waited) +
                 " s: " + e.what();
        if (std::string(e.what()).find("timed out") == std::string::npos)
          problem = "unexpected error: " + detail;
        else if (waited < 4 || waited > 30)
          problem = "the timeout was 5 s: " + detail;
      }
    } catch (const std::exception &e) {
      problem = std::string("rank 0 failed outside the wait: ") + e.what();
    }
    finished.set_value();
  });
  std::thread rank1([&] {
    try {
      DeviceScope scope(world.deviceOf(1));
      auto comm = world.communicator(1);
      Tensor x = hostInput(DType::F64, {16}, 1).to(world.deviceOf(1));
      comm->allReduce(x, kWorld, Reduction::Sum).item(0);
      // Skips the second all_reduce, but stays alive until rank 0 is done.
      isFinished.wait_for(std::chrono::seconds(120));
    } catch (const std::exception &e) {
      world.abort(std::string("rank 1 failed: ") + e.what());
    }
  });
  rank0.join();
  rank1.join();
  if (problem.empty())
    std::printf("  %s\n", detail.c_str());
  report(name, problem);
}

/// One rank per process (--process, --process-die).
int processMain(bool die) {
  std::string error;
  std::optional<LaunchInfo> info = launchFromEnvironment(error);
  if (!info) {
    std::printf("FAIL process: %s\n", error.empty()
                                          ? "not started by torchrun or mpirun"
                                          : error.c_str());
    return 2;
  }
  std::string me = "rank " + std::to_string(info->rank) + " of " +
                   std::to_string(info->worldSize) + " (" + info->launcher +
                   ")";
  if (cudaDeviceCount() < 1) {
    std::printf("SKIP %s: no GPU\n", me.c_str());
    return 0;
  }
  bool afterExit = false;
  try {
    auto comm = processCommunicator(*info, std::chrono::seconds(30));
    Device device = Device::cuda(int(info->localRank % cudaDeviceCount()));
    DeviceScope scope(device);
    Group world;
    for (int64_t r = 0; r < info->worldSize; ++r)
      world.push_back(r);
    int64_t n = info->worldSize;
    Tensor x = hostInput(DType::F32, {8}, info->rank).to(device);
    Tensor sum = comm->allReduce(x, world, Reduction::Sum).to(Device::cpu());
    for (int64_t i = 0; i < 8; ++i) {
      double want = 0;
      for (int64_t r = 0; r < n; ++r)
        want += hostInput(DType::F32, {8}, r).item(i);
      if (sum.item(i) != want) {
        std::printf("FAIL %s: all_reduce element %lld is %g, want %g\n",
                    me.c_str(), (long long)i, sum.item(i), want);
        return 1;
      }
    }
    if (!die) {
      Tensor all = comm->allGather(x, world, 0).to(Device::cpu());
      for (int64_t r = 0; r < n; ++r) {
        Tensor want = hostInput(DType::F32, {8}, r);
        for (int64_t i = 0; i < 8; ++i)
          if (all.item(r * 8 + i) != want.item(i)) {
            std::printf("FAIL %s: all_gather element %lld of rank %lld's "
                        "piece is %g, want %g\n",
                        me.c_str(), (long long)i, (long long)r,
                        all.item(r * 8 + i), want.item(i));
            return 1;
          }
      }
      std::printf("PASS %s: all_reduce and all_gather\n", me.c_str());
      return 0;
    }
    if (info->rank == 1) {
      std::printf("%s: exiting with status 3 before the second all_reduce\n",
                  me.c_str());
      std::fflush(stdout);
      std::exit(3);
    }
    afterExit = true;
    Tensor y = comm->allReduce(x, world, Reduction::Sum);
    auto start = Clock::now();
    try {
      double v = y.item(0);
      std::printf("FAIL %s: item() returned %g after %.1f s without an error\n",
                  me.c_str(), v, secondsSince(start));
      return 2;
    } catch (const RuntimeError &e) {
      double waited = secondsSince(start);
      std::printf("%s %s: stopped with an error after %.1f s: %s\n",
                  waited < 60 ? "PASS" : "FAIL", me.c_str(), waited, e.what());
      std::fflush(stdout);
      return waited < 60 ? 1 : 2;
    }
  } catch (const std::exception &e) {
    // Rank 1's exit may be noticed before the all_reduce is even enqueued.
    if (die && afterExit) {
      std::printf("PASS %s: stopped with an error: %s\n", me.c_str(), e.what());
      return 1;
    }
    std::printf("FAIL %s: %s\n", me.c_str(), e.what());
    return 2;
  }
}

} // namespace

int main(int argc, char **argv) {
  // A launcher may kill this process right after a peer fails: print lines
  // as they come.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--process" || mode == "--process-die")
    return processMain(mode == "--process-die");
  if (!mode.empty()) {
    std::fprintf(stderr, "usage: %s [--process | --process-die]\n", argv[0]);
    return 2;
  }
  if (!builtWithCuda() || cudaDeviceCount() < 2) {
    std::printf("SKIP: needs 2 GPUs\n");
    return 0;
  }
  testCollectives();
  testAbort();
  testTimeout();
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "OK", failures);
  return failures ? 1 : 0;
}
