//===- Nccl.cpp - Communicators over NCCL, between GPU ranks -------------===//
//
// The entry points of Nccl.h. Their parts:
//  - NcclEnv: which rank of how many a process is (launchFromEnvironment);
//  - Rendezvous: how the processes of a world exchange the NCCL id and
//    notice lost ranks (processCommunicator);
//  - NcclHub: what the ranks of one world share (NcclWorld::State), each
//    rank's NCCL state, the watchdog and the wait hooks;
//  - NcclCommunicator: the Communicator a rank's thread calls.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Nccl.h"

#ifdef GLIMMER_RT_HAVE_CUDA
#include "../cuda/CudaBackend.h"
#include "NcclCommunicator.h"
#include "NcclEnv.h"
#include "NcclHub.h"
#include "Rendezvous.h"

using namespace glimmer_rt;
using namespace glimmer_rt::nccl_detail;

namespace {

/// The visible GPU count, or a RuntimeError naming `who`.
int requireGpus(const std::string &who) {
  int count = cuda::deviceCount();
  if (count < 1)
    throw RuntimeError(who + " needs a CUDA device, but none is visible");
  return count;
}

} // namespace

NcclWorld::NcclWorld(int64_t size, std::chrono::milliseconds timeout) {
  if (size < 1)
    throw RuntimeError("a world needs at least one rank");
  int count = requireGpus("NcclWorld");
  if (size > count)
    throw RuntimeError("NcclWorld of " + std::to_string(size) +
                       " ranks needs " + std::to_string(size) +
                       " GPUs (NCCL runs one rank per GPU), but " +
                       std::to_string(count) + " are visible");
  keepNvlsOff();
  state = std::make_shared<State>(size, timeout);
  ncclResult_t r = ncclGetUniqueId(&state->id);
  if (r != ncclSuccess)
    throw RuntimeError("NcclWorld: ncclGetUniqueId failed: " + ncclText(r));
  state->startWatchdog();
}

NcclWorld::~NcclWorld() = default;

int64_t NcclWorld::size() const { return state->size; }

Device NcclWorld::deviceOf(int64_t rank) const {
  if (rank < 0 || rank >= state->size)
    throw RuntimeError("rank " + std::to_string(rank) + " outside a world of " +
                       std::to_string(state->size));
  return Device::cuda(int(rank % cuda::deviceCount()));
}

std::unique_ptr<Communicator> NcclWorld::communicator(int64_t rank) {
  Device device = deviceOf(rank);
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (state->created[size_t(rank)])
      throw RuntimeError("NcclWorld: the communicator of rank " +
                         std::to_string(rank) + " was already created");
    state->created[size_t(rank)] = true;
  }
  return makeCommunicator(state, rank, device.index);
}

void NcclWorld::abort(const std::string &why) { state->abort(why); }

std::unique_ptr<Communicator>
glimmer_rt::processCommunicator(const LaunchInfo &info,
                                std::chrono::milliseconds timeout) {
  if (info.worldSize < 1 || info.rank < 0 || info.rank >= info.worldSize ||
      info.localRank < 0)
    throw RuntimeError(
        "processCommunicator: rank " + std::to_string(info.rank) + " (local " +
        std::to_string(info.localRank) + ") of " +
        std::to_string(info.worldSize) + " is not a valid place");
  std::string who =
      "rank " + std::to_string(info.rank) + " (" + info.launcher + ")";
  int count = requireGpus(who);
  int device = int(info.localRank % count);
  keepNvlsOff();
  cuda::setDevice(device);
  auto hub = std::make_shared<Hub>(info.worldSize, timeout);
  auto deadline = Clock::now() + timeout;
  if (info.worldSize == 1) {
    ncclResult_t r = ncclGetUniqueId(&hub->id);
    if (r != ncclSuccess)
      throw RuntimeError(who + ": ncclGetUniqueId failed: " + ncclText(r));
  } else if (envValue("MASTER_ADDR")) {
    exchangeOverTcp(*hub, info, deadline);
  } else {
    exchangeThroughFile(*hub, info, deadline);
  }
  hub->startWatchdog();
  return makeCommunicator(hub, info.rank, device);
}

#else // !GLIMMER_RT_HAVE_CUDA

using namespace glimmer_rt;

// Without the CUDA backend the entry points exist (the driver links them
// unconditionally) and fail like DeviceScope does.

struct NcclWorld::State {};

[[noreturn]] static void noCuda() {
  throw RuntimeError("this runtime was built without the CUDA backend (NCCL "
                     "communicators need it)");
}

NcclWorld::NcclWorld(int64_t, std::chrono::milliseconds) { noCuda(); }
NcclWorld::~NcclWorld() = default;
int64_t NcclWorld::size() const { noCuda(); }
std::unique_ptr<Communicator> NcclWorld::communicator(int64_t) { noCuda(); }
void NcclWorld::abort(const std::string &) { noCuda(); }
Device NcclWorld::deviceOf(int64_t) const { noCuda(); }

std::unique_ptr<Communicator>
glimmer_rt::processCommunicator(const LaunchInfo &, std::chrono::milliseconds) {
  noCuda();
}

#endif // GLIMMER_RT_HAVE_CUDA
