//===- NcclHub.h - What the ranks of one NCCL world share ------*- C++ -*-===//
//
// Internal to the runtime's NCCL communicators. The hub (NcclWorld::State)
// holds what the ranks of one world share: the NCCL unique id, the abort
// reason, the watchdog thread and, between processes, the TCP connections
// to rank 0 (Liveness). A RankState holds one rank's NCCL communicators
// (the world's and one per group) and the collectives it has enqueued but
// not seen complete. Its mutex serializes every NCCL call on those
// communicators, because the owner thread, the wait hooks, the watchdog and
// abort() all use them.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMM_NCCLHUB_H
#define GLIMMER_RT_COMM_NCCLHUB_H

#include "NcclCommon.h"
#include "Rendezvous.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace glimmer_rt {
namespace nccl_detail {

/// A collective enqueued on the stream and not yet seen complete.
struct PendingOp {
  cudaEvent_t start = nullptr, end = nullptr;
  std::string what; // "all_reduce on ranks [0, 1]"
  bool started = false;
  Clock::time_point startedAt;
};

struct RankState {
  RankState(int64_t rank, int device) : rank(rank), device(device) {}
  ~RankState() {
    for (PendingOp &op : pending) {
      cudaEventDestroy(op.start);
      cudaEventDestroy(op.end);
    }
    for (cudaEvent_t e : spareEvents)
      cudaEventDestroy(e);
  }

  const int64_t rank;
  const int device;
  /// "rank 0 (cuda:0)"
  std::string name() const {
    return "rank " + std::to_string(rank) + " (cuda:" + std::to_string(device) +
           ")";
  }

  std::mutex mutex;
  /// Written by NCCL's initialization thread too, so it lives here (not on
  /// a stack) until the communicator is aborted or destroyed.
  ncclComm_t world = nullptr;
  bool worldReady = false;
  std::map<Group, ncclComm_t> groups;
  /// Set when the communicators were aborted; every later use throws it.
  std::string failure;
  std::deque<PendingOp> pending;
  std::vector<cudaEvent_t> spareEvents;
  /// Collectives were captured into a CUDA graph: they have no events of
  /// their own (an event recorded during a capture cannot be queried), so
  /// while a graph runs on the device the time since its launch stands for
  /// theirs.
  bool graphCollectives = false;
  /// When the rank's thread last polled (a wait hook or one of our waits).
  std::atomic<int64_t> lastPollNs{0};
  std::atomic<int64_t> lastHookCheckNs{0};

  std::vector<ncclComm_t> commsLocked() const {
    std::vector<ncclComm_t> all;
    if (world)
      all.push_back(world);
    for (const auto &entry : groups)
      all.push_back(entry.second);
    return all;
  }

  cudaEvent_t takeEventLocked() {
    if (!spareEvents.empty()) {
      cudaEvent_t e = spareEvents.back();
      spareEvents.pop_back();
      return e;
    }
    DeviceGuard guard(device);
    cudaEvent_t e = nullptr;
    cudaError_t status = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (status != cudaSuccess)
      throw RuntimeError(name() + ": cannot create a CUDA event: " +
                         cudaGetErrorString(status));
    return e;
  }

  /// Forgets the collectives that have completed (in stream order) and
  /// notes when the oldest remaining one started running.
  void retireLocked() {
    while (!pending.empty() &&
           cudaEventQuery(pending.front().end) == cudaSuccess) {
      spareEvents.push_back(pending.front().start);
      spareEvents.push_back(pending.front().end);
      pending.pop_front();
    }
    if (!pending.empty() && !pending.front().started &&
        cudaEventQuery(pending.front().start) == cudaSuccess) {
      pending.front().started = true;
      pending.front().startedAt = Clock::now();
    }
  }

  /// Whether the oldest pending collective has been running (waiting for
  /// the other ranks, in practice) for longer than `timeout`. Counted from
  /// when it started on the GPU, not from when it was queued: work queued
  /// ahead of it is not the other ranks' fault.
  bool overdueLocked(std::chrono::milliseconds timeout) const {
    return !pending.empty() && pending.front().started &&
           Clock::now() - pending.front().startedAt > timeout;
  }
  /// The message when the oldest pending collective, or a replayed graph
  /// with collectives in it, has run longer than `timeout`; else "".
  std::string timedOutLocked(std::chrono::milliseconds timeout) const;

  /// What a failure message is about: the oldest pending collective, else
  /// the rank itself.
  std::string subjectLocked() const {
    return pending.empty() ? name() : name() + ": " + pending.front().what;
  }

  /// An NCCL error of any of the communicators, as a message, or "".
  std::string asyncErrorLocked() {
    for (ncclComm_t comm : commsLocked()) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t r = ncclCommGetAsyncError(comm, &state);
      if (r != ncclSuccess)
        state = r;
      if (state != ncclSuccess && state != ncclInProgress)
        return subjectLocked() + " failed: NCCL error: " + ncclText(state);
    }
    return "";
  }

  /// Aborts every communicator (their queued kernels exit, so the stream
  /// drains) and records why. The first reason stays.
  void abortLocked(const std::string &why) {
    if (!failure.empty())
      return;
    failure = why;
    DeviceGuard guard(device);
    for (ncclComm_t comm : commsLocked())
      ncclCommAbort(comm);
    world = nullptr;
    groups.clear();
  }
};

} // namespace nccl_detail

struct NcclWorld::State {
  State(int64_t size, std::chrono::milliseconds timeout)
      : size(size), timeout(timeout), created(size_t(size), false) {}
  ~State();

  const int64_t size;
  const std::chrono::milliseconds timeout;
  ncclUniqueId id{};

  std::mutex mutex; // guards everything below but the atomics and liveness
  std::atomic<bool> aborted{false};
  std::string reason;
  std::vector<std::shared_ptr<nccl_detail::RankState>> ranks;
  std::vector<bool> created;
  int64_t live = 0;
  /// Communicators of destroyed ranks whose ncclCommFinalize is running.
  std::vector<std::pair<ncclComm_t, int>> finalizing;

  std::mutex livenessMutex;
  std::unique_ptr<nccl_detail::Liveness> liveness;

  std::thread watchdog;
  std::condition_variable wake;
  bool stopping = false;

  /// Records the first reason and tells the other processes.
  void abort(const std::string &why);
  std::string abortReason();
  std::string livenessProgress();
  void add(const std::shared_ptr<nccl_detail::RankState> &s);
  void remove(const std::shared_ptr<nccl_detail::RankState> &s);
  /// Checks the ranks every kWatchdogPeriod until the world is destroyed.
  void startWatchdog();
  void tick();
  /// A destroyed rank's communicators whose ncclCommFinalize was started.
  /// The last communicator of the world waits for all of them at once:
  /// finalization synchronizes the ranks of a node, so waiting rank by rank
  /// would deadlock when one thread destroys several ranks' communicators.
  void release(std::vector<std::pair<ncclComm_t, int>> started);
  /// Waits (up to the timeout) for finalization, then destroys; aborts what
  /// fails, is aborted or takes too long.
  void drainFinalizing();
};

namespace nccl_detail {

using Hub = NcclWorld::State;

/// The wait hook of one rank: gives up a wait on the rank's device when the
/// world was aborted, NCCL reports an error, or the collective being waited
/// for (or a replayed CUDA graph with collectives in it) has been running
/// longer than the timeout. (The time this wait has lasted is no measure:
/// it includes any compute queued ahead.)
void onWait(Hub &hub, RankState &s, int device, double secondsWaited);

} // namespace nccl_detail
} // namespace glimmer_rt

#endif // GLIMMER_RT_COMM_NCCLHUB_H
