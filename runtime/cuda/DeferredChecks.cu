//===- DeferredChecks.cu - Data checks read at the end of a step ----------===//
//
// Kernels that check data (ids and labels in range, the optimizer's step)
// record the first offending position in a device word. Read at once, each
// such check makes the host wait for the stream: ~150 waits per training
// step of a medium model (one per AdamW update). While checks are deferred
// (a step, see DeferredChecks in Device.h), the words come from a
// per-thread, per-device pool set to "no error" in advance, and
// synchronize() reads the whole pool with one copy after the stream drained
// and throws the first failed check's message, as the immediate check
// would have. Work after a failed check runs on whatever the failing kernel
// left (kernels skip the offending elements, so nothing reads out of
// bounds); the step's results are not used, since it throws.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseUtil.cuh"

#include <unordered_map>
#include <vector>

namespace glimmer_rt {
namespace cuda {
namespace {

/// Checks a pool holds between two reads; a step with more checks than this
/// reads its further ones at once.
constexpr size_t kPoolWords = 4096;

struct Pending {
  const char *op;
  size_t slot;
  std::function<std::string(int64_t)> message;
};

struct Pool {
  int device = 0;
  bool deferred = false;
  unsigned long long *words = nullptr; // kPoolWords, "no error" = ~0
  /// The words are a captured graph's (GraphChecks), not the pool's.
  bool borrowed = false;
  size_t used = 0;
  std::vector<Pending> pending;

  Pool() = default;
  Pool(const Pool &) = delete;
  Pool &operator=(const Pool &) = delete;
  /// Rank threads come and go with each step: the words go back to the
  /// caching allocator.
  ~Pool() {
    if (words && !borrowed)
      deallocate(words, kPoolWords * sizeof(unsigned long long), device);
  }
};

/// The calling thread's pools (a rank's thread drives its device).
Pool &pool(int device) {
  thread_local std::unordered_map<int, Pool> pools;
  Pool &p = pools[device];
  p.device = device;
  return p;
}

/// Marks the first `n` words "no error" again, queued before later work.
void resetWords(int device, unsigned long long *words, size_t n) {
  if (n == 0)
    return;
  DeviceGuard current(device);
  GLIMMER_CUDA_CHECK(cudaMemsetAsync(
      words, 0xff, n * sizeof(unsigned long long), stream(device)));
}

} // namespace

/// A graph's own words: its kernels write the addresses they were captured
/// with, on every replay, whichever thread launches it.
struct GraphChecks {
  int device = 0;
  unsigned long long *words = nullptr;
  size_t used = 0;
  std::vector<Pending> pending;
};

GraphChecks *newGraphChecks(int device) {
  auto *checks = new GraphChecks;
  checks->device = device;
  checks->words = static_cast<unsigned long long *>(
      allocate(kPoolWords * sizeof(unsigned long long), device));
  resetWords(device, checks->words, kPoolWords);
  return checks;
}

void deleteGraphChecks(GraphChecks *checks) {
  if (!checks)
    return;
  deallocate(checks->words, kPoolWords * sizeof(unsigned long long),
             checks->device);
  delete checks;
}

/// The calling thread's pool on `device`, its words `checks`' (its own
/// freed), deferring, with no check issued. Checks still unread would be
/// lost: `when` names the moment in the error.
static Pool &borrow(int device, GraphChecks &checks, const char *when) {
  Pool &p = pool(device);
  if (p.used != 0)
    throw RuntimeError("data checks of earlier work on cuda:" +
                       std::to_string(device) + " are unread when " + when);
  if (p.words != checks.words) {
    if (p.words && !p.borrowed)
      deallocate(p.words, kPoolWords * sizeof(unsigned long long), device);
    p.words = checks.words;
    p.borrowed = true;
  }
  p.deferred = true;
  return p;
}

void bindGraphChecks(int device, GraphChecks &checks) {
  borrow(device, checks, "a graph capture starts");
}

void keepGraphChecks(int device, GraphChecks &checks) {
  Pool &p = pool(device);
  checks.used = p.used;
  checks.pending = std::move(p.pending);
  // Nothing ran: the words are still "no error" for the first replay.
  p.used = 0;
  p.pending.clear();
}

void restoreGraphChecks(int device, GraphChecks &checks) {
  Pool &p = borrow(device, checks, "a graph is replayed");
  p.used = checks.used;
  p.pending = checks.pending;
}

void unbindGraphChecks(int device, GraphChecks &checks) {
  Pool &p = pool(device);
  if (p.words != checks.words)
    return;
  resetWords(device, p.words, p.used);
  p.used = 0;
  p.pending.clear();
  p.words = nullptr;
  p.borrowed = false;
  if (p.deferred) {
    p.deferred = false;
    deferChecks(device, true);
  }
}

void deferChecks(int device, bool on) {
  Pool &p = pool(device);
  if (on && !p.words) {
    p.words = static_cast<unsigned long long *>(
        allocate(kPoolWords * sizeof(unsigned long long), device));
    resetWords(device, p.words, kPoolWords);
  }
  if (!on) {
    // Checks not read yet (the scope ends by an exception): dropped.
    resetWords(device, p.words, p.used);
    p.used = 0;
    p.pending.clear();
  }
  p.deferred = on;
}

namespace util {

unsigned long long *deferredFlag(int device) {
  Pool &p = pool(device);
  if (!p.deferred || p.used == kPoolWords)
    return nullptr;
  return p.words + p.used++;
}

void deferCheck(int device, const char *op, const unsigned long long *flag,
                std::function<std::string(int64_t)> message) {
  Pool &p = pool(device);
  p.pending.push_back({op, size_t(flag - p.words), std::move(message)});
}

} // namespace util

void runDeferredChecks(int device) {
  Pool &p = pool(device);
  if (p.used == 0)
    return;
  std::vector<unsigned long long> host(p.used);
  DeviceGuard current(device);
  GLIMMER_CUDA_CHECK(cudaMemcpy(host.data(), p.words,
                                p.used * sizeof(unsigned long long),
                                cudaMemcpyDeviceToHost));
  std::vector<Pending> pending = std::move(p.pending);
  p.pending.clear();
  resetWords(device, p.words, p.used);
  p.used = 0;
  // In program order: the first failed check is the one the immediate
  // checks would have stopped at.
  for (Pending &c : pending)
    if (host[c.slot] != ~0ull)
      fail(c.op, c.message(int64_t(host[c.slot])));
}

} // namespace cuda
} // namespace glimmer_rt
