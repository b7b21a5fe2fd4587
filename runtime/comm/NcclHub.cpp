//===- NcclHub.cpp - What the ranks of one NCCL world share ---------------===//
//
// Part of the Glimmer runtime. See NcclHub.h. Who aborts: a thread waiting
// for the device runs the wait hooks, and the hook of the device's rank
// aborts and throws (so the thread that waits for a result is the one that
// gets the error). A rank whose thread is not in such a wait (it computes on
// the host, or is blocked inside a CUDA call) is aborted by the watchdog
// after a grace period.
//
//===----------------------------------------------------------------------===//

#include "NcclHub.h"
#include "../cuda/CudaBackend.h"

#include <algorithm>
#include <cstdio>
#include <exception>

namespace glimmer_rt {
namespace nccl_detail {
namespace {

/// How long a rank's thread may go without polling (in a wait hook or our
/// own waits) before the watchdog, rather than that thread, aborts it.
constexpr std::chrono::seconds kWatchdogGrace(2);
constexpr std::chrono::milliseconds kWatchdogPeriod(50);
/// Minimum interval between the NCCL state checks of one wait hook.
constexpr std::chrono::milliseconds kHookCheckPeriod(5);

} // namespace

std::string RankState::timedOutLocked(std::chrono::milliseconds timeout) const {
  if (overdueLocked(timeout))
    return subjectLocked() + " timed out after " + durationText(timeout) +
           " waiting for the other ranks";
  if (graphCollectives &&
      cuda::graphRunningSeconds(device) * 1e3 > double(timeout.count()))
    return name() +
           ": a step replayed from a CUDA graph, whose collectives are timed "
           "together, did not finish within the collective timeout (" +
           durationText(timeout) + ", glimmer-run --timeout)";
  return "";
}

void onWait(Hub &hub, RankState &s, int device, double /*secondsWaited*/) {
  if (device != s.device)
    return;
  int64_t now = nowNs();
  s.lastPollNs.store(now);
  std::string message;
  bool tellOthers = false;
  if (hub.aborted.load()) {
    std::string why = hub.abortReason();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.failure.empty())
      throw RuntimeError(s.failure);
    s.retireLocked();
    message = s.subjectLocked() + " aborted: " + why;
    s.abortLocked(message);
    throw RuntimeError(message);
  }
  if (now - s.lastHookCheckNs.load() <
      std::chrono::nanoseconds(kHookCheckPeriod).count())
    return;
  s.lastHookCheckNs.store(now);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.failure.empty())
      throw RuntimeError(s.failure);
    s.retireLocked();
    message = s.asyncErrorLocked();
    if (message.empty())
      message = s.timedOutLocked(hub.timeout);
    if (message.empty())
      return;
    s.abortLocked(message);
    tellOthers = true;
  }
  if (tellOthers)
    hub.abort(message);
  throw RuntimeError(message);
}

} // namespace nccl_detail

using namespace nccl_detail;

NcclWorld::State::~State() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  if (watchdog.joinable())
    watchdog.join();
  // Communicators destroyed while others were alive left theirs here.
  drainFinalizing();
}

void NcclWorld::State::abort(const std::string &why) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (aborted.load())
      return;
    reason = why;
    aborted.store(true);
  }
  std::lock_guard<std::mutex> lock(livenessMutex);
  if (liveness)
    liveness->broadcast(kAbortMessage, why);
}

std::string NcclWorld::State::abortReason() {
  std::lock_guard<std::mutex> lock(mutex);
  return reason;
}

std::string NcclWorld::State::livenessProgress() {
  std::lock_guard<std::mutex> lock(livenessMutex);
  return liveness ? liveness->progress() : "";
}

void NcclWorld::State::add(const std::shared_ptr<RankState> &s) {
  std::lock_guard<std::mutex> lock(mutex);
  ranks.push_back(s);
  ++live;
}

void NcclWorld::State::remove(const std::shared_ptr<RankState> &s) {
  std::lock_guard<std::mutex> lock(mutex);
  ranks.erase(std::remove(ranks.begin(), ranks.end(), s), ranks.end());
}

void NcclWorld::State::startWatchdog() {
  watchdog = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex);
    while (!wake.wait_for(lock, kWatchdogPeriod, [&] { return stopping; })) {
      lock.unlock();
      try {
        tick();
      } catch (const std::exception &e) {
        // The watchdog must outlive any one failure.
        std::fprintf(stderr, "glimmer NCCL watchdog: %s\n", e.what());
      }
      lock.lock();
    }
  });
}

void NcclWorld::State::tick() {
  std::string lost;
  {
    std::lock_guard<std::mutex> lock(livenessMutex);
    if (liveness)
      lost = liveness->poll();
  }
  if (!lost.empty())
    abort(lost);

  std::vector<std::shared_ptr<RankState>> list;
  {
    std::lock_guard<std::mutex> lock(mutex);
    list = ranks;
  }
  bool isAborted = aborted.load();
  std::string why = isAborted ? abortReason() : "";
  for (const std::shared_ptr<RankState> &s : list) {
    std::string message;
    bool tellOthers = false;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      if (!s->failure.empty())
        continue;
      s->retireLocked();
      // A thread that polls gets the error from its own poll.
      if (nowNs() - s->lastPollNs.load() <
          std::chrono::nanoseconds(kWatchdogGrace).count())
        continue;
      if (isAborted) {
        message = s->subjectLocked() + " aborted: " + why;
      } else {
        message = s->asyncErrorLocked();
        if (message.empty())
          message = s->timedOutLocked(timeout);
        tellOthers = !message.empty();
      }
      if (!message.empty())
        s->abortLocked(message);
    }
    if (tellOthers)
      abort(message);
  }
}

void NcclWorld::State::release(
    std::vector<std::pair<ncclComm_t, int>> started) {
  bool last;
  {
    std::lock_guard<std::mutex> lock(mutex);
    finalizing.insert(finalizing.end(), started.begin(), started.end());
    last = --live == 0;
  }
  if (last)
    drainFinalizing();
}

void NcclWorld::State::drainFinalizing() {
  std::vector<std::pair<ncclComm_t, int>> list;
  {
    std::lock_guard<std::mutex> lock(mutex);
    list.swap(finalizing);
  }
  auto deadline = Clock::now() + timeout;
  while (!list.empty()) {
    bool giveUp = aborted.load() || Clock::now() > deadline;
    for (size_t i = 0; i < list.size();) {
      DeviceGuard guard(list[i].second);
      ncclResult_t state = ncclInProgress;
      if (ncclCommGetAsyncError(list[i].first, &state) != ncclSuccess)
        state = ncclInternalError;
      if (state == ncclInProgress && !giveUp) {
        ++i;
        continue;
      }
      if (state == ncclSuccess)
        ncclCommDestroy(list[i].first);
      else
        ncclCommAbort(list[i].first);
      list.erase(list.begin() + long(i));
    }
    if (!list.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

} // namespace glimmer_rt
