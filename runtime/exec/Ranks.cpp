//===- Ranks.cpp - The ranks a process runs -------------------------------===//

#include "glimmer_rt/Collectives.h"
#include "glimmer_rt/Trainer.h"

#ifdef GLIMMER_RT_HAVE_CUDA
#include "glimmer_rt/Nccl.h"
#endif

#include <thread>

using namespace glimmer_rt;

bool glimmer_rt::parseBackend(const std::string &text, Backend &backend) {
  if (text == "cpu")
    backend = Backend::CPU;
  else if (text == "cuda")
    backend = Backend::CUDA;
  else
    return false;
  return true;
}

struct Ranks::Impl {
  // Thread mode.
  std::unique_ptr<InProcessWorld> inProcess;
#ifdef GLIMMER_RT_HAVE_CUDA
  std::unique_ptr<NcclWorld> nccl;
#endif
  std::chrono::milliseconds timeout{60000};
  /// Indexed like local(); created on the ranks' threads at the first run.
  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<Device> devices;
  bool processMode = false;

  void abort(const std::string &why) {
    if (inProcess)
      inProcess->abort(why);
#ifdef GLIMMER_RT_HAVE_CUDA
    if (nccl)
      nccl->abort(why);
#endif
  }
};

Ranks::Ranks(const SpmdContext &layout, Backend backend,
             std::chrono::milliseconds timeout)
    : spmd(layout), kind(backend), impl(std::make_unique<Impl>()) {
  int64_t n = layout.worldSize();
  impl->timeout = timeout;
  for (int64_t r = 0; r < n; ++r)
    localRanks.push_back(r);
  impl->comms.resize(n);
  if (backend == Backend::CPU) {
    impl->devices.assign(n, Device::cpu());
    if (n > 1)
      impl->inProcess = std::make_unique<InProcessWorld>(n, timeout);
    return;
  }
  if (!builtWithCuda())
    throw RuntimeError("--backend=cuda: this runtime was built without the "
                       "CUDA backend (configure with nvcc available)");
  int gpus = cudaDeviceCount();
  if (gpus == 0)
    throw RuntimeError("--backend=cuda: no CUDA device is visible");
  if (n > gpus)
    throw RuntimeError("the layout '" + layout.print() + "' has " +
                       std::to_string(n) + " ranks but only " +
                       std::to_string(gpus) +
                       " GPUs are visible (one rank per GPU)");
  for (int64_t r = 0; r < n; ++r)
    impl->devices.push_back(Device::cuda(int(r)));
#ifdef GLIMMER_RT_HAVE_CUDA
  if (n > 1)
    impl->nccl = std::make_unique<NcclWorld>(n, timeout);
#endif
}

Ranks::Ranks(const SpmdContext &layout, Backend backend, int64_t rank,
             Device device, std::unique_ptr<Communicator> comm)
    : spmd(layout), kind(backend), impl(std::make_unique<Impl>()) {
  if (rank < 0 || rank >= layout.worldSize())
    throw RuntimeError("rank " + std::to_string(rank) +
                       " is outside the layout's " +
                       std::to_string(layout.worldSize()) + " ranks");
  localRanks = {rank};
  impl->processMode = true;
  impl->devices = {device};
  impl->comms.push_back(std::move(comm));
}

Ranks::~Ranks() = default;

Device Ranks::device(int64_t rank) const {
  for (size_t i = 0; i < localRanks.size(); ++i)
    if (localRanks[i] == rank)
      return impl->devices[i];
  throw RuntimeError("rank " + std::to_string(rank) +
                     " does not run in this process");
}

void Ranks::run(const std::function<void(int64_t rank)> &fn) {
  size_t n = localRanks.size();
  auto body = [&](size_t i) {
    int64_t r = localRanks[i];
    RankScope rank(RankContext::forRank(spmd, r));
    DeviceScope device(impl->devices[i]);
    // Data checks are read once, by the synchronize that ends the step.
    DeferredChecks checks(impl->devices[i]);
    if (!impl->comms[i]) {
      if (impl->inProcess)
        impl->comms[i] = impl->inProcess->communicator(r);
#ifdef GLIMMER_RT_HAVE_CUDA
      else if (impl->nccl)
        impl->comms[i] = impl->nccl->communicator(r);
#endif
    }
    if (impl->comms[i]) {
      CommScope comm(*impl->comms[i]);
      fn(r);
    } else {
      fn(r);
    }
    // Device errors surface here rather than in a later step.
    synchronize(impl->devices[i]);
  };
  if (n == 1) {
    try {
      body(0);
    } catch (const std::exception &e) {
      if (spmd.worldSize() == 1)
        throw RuntimeError(e.what());
      throw RuntimeError("rank " + std::to_string(localRanks[0]) + ": " +
                         e.what());
    }
    return;
  }
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        body(i);
      } catch (const std::exception &e) {
        errors[i] = e.what();
        impl->abort("rank " + std::to_string(localRanks[i]) + " failed");
      }
    });
  for (std::thread &t : threads)
    t.join();
  // Report the failure that caused the others, not their aborts.
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < n; ++i)
      if (!errors[i].empty() &&
          (pass == 1 || errors[i].find("aborted") == std::string::npos))
        throw RuntimeError("rank " + std::to_string(localRanks[i]) + ": " +
                           errors[i]);
}
