//===- Device.cu - CUDA memory, streams and copies -----------------------===//
//
// A caching allocator per device (the same bucket scheme as the host's:
// powers of two up to 1 MiB, multiples of 1 MiB above) over cudaMalloc.
// Every device has one stream and all of its work is queued there, so a
// block freed on the host may be handed out again at once: whatever runs
// next on it is ordered after the work that used it. When the device is
// full, a larger cached block serves the request, and only then are cached
// blocks freed, largest first, until cudaMalloc succeeds: freeing the whole
// cache would make every later request of the step a cudaMalloc (and
// cudaFree waits for the device), so a model whose buckets do not all fit
// at once would pay that on every step.
//
// While a step is captured as a CUDA graph (Graph.cu), the graph's kernels
// keep the addresses they were captured with, so every block the capture
// touches stays reserved for the graph until it is destroyed: requests are
// served from the graph's pool (then from the cache, then cudaMalloc), and
// a block freed during the capture or later, once it is the graph's, goes
// back to the pool, never to the cache. Reserved blocks count as in use.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <string>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace glimmer_rt {
namespace cuda {

void checkCuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw RuntimeError(std::string("CUDA error in ") + what + ": " +
                       cudaGetErrorString(status));
}

namespace {

constexpr size_t kGranule = size_t(1) << 20;

size_t bucketSize(size_t bytes) {
  if (bytes <= 512)
    return 512;
  if (bytes <= kGranule) {
    size_t b = 512;
    while (b < bytes)
      b <<= 1;
    return b;
  }
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

struct DeviceState {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void *>> freeLists;
  /// The bucket of every block cudaMalloc gave (a request may be served
  /// by a larger cached block, which goes back to its own free list).
  std::unordered_map<void *, size_t> blockBuckets;
  /// Calls that reached cudaMalloc, since the process started.
  size_t mallocs = 0;
  cudaStream_t stream = nullptr;
  /// Bytes handed out and not yet given back, and their high-water mark.
  size_t inUse = 0, peak = 0;
  /// Seconds host threads have spent in synchronize waiting for the stream
  /// to drain (what is left of a step is the host's own work).
  double waited = 0;
  /// With GLIMMER_PROFILE: each block handed out, with its bucket and the
  /// op that asked for it, and the blocks live at the peak summed by op.
  struct Block {
    size_t bytes;
    std::string op;
  };
  std::unordered_map<void *, Block> live;
  std::map<std::string, std::pair<int64_t, size_t>> atPeak;
  /// A step is being captured as a CUDA graph on this device.
  bool capturing = false;
  /// When a graph was last launched on the stream, until a synchronize
  /// finds the stream drained.
  std::optional<std::chrono::steady_clock::time_point> graphLaunch;
  /// Blocks reserved for the device's captured graph, and those of them no
  /// tensor holds (still counted in `inUse`: the graph writes them).
  std::unordered_set<void *> graphBlocks;
  std::unordered_map<size_t, std::vector<void *>> graphFree;

  void snapshot() {
    atPeak.clear();
    for (const auto &[ptr, block] : live) {
      auto &[count, bytes] = atPeak[block.op];
      ++count;
      bytes += block.bytes;
    }
  }
  void handOut(void *p, size_t bucket) {
    inUse += bucket;
    bool profiling = glimmer_rt::profilingEnabled();
    if (profiling)
      live[p] = {bucket, Ctx::allocationOp ? Ctx::allocationOp
                                           : "(outside ops: inputs, copies)"};
    if (inUse > peak) {
      peak = inUse;
      if (profiling)
        snapshot();
    }
  }
  void takeBack(void *p, size_t bucket) {
    inUse -= bucket;
    live.erase(p);
  }
  /// A reserved block handed out again (already counted in `inUse`).
  void handOutReserved(void *p, size_t bucket) {
    if (glimmer_rt::profilingEnabled())
      live[p] = {bucket, Ctx::allocationOp ? Ctx::allocationOp
                                           : "(outside ops: inputs, copies)"};
  }
};

constexpr int kMaxDevices = 64;

/// Never destroyed: buffers of static objects may be freed after main.
DeviceState &state(int device) {
  static DeviceState *states = new DeviceState[kMaxDevices];
  if (device < 0 || device >= kMaxDevices)
    throw RuntimeError("CUDA device index " + std::to_string(device) +
                       " is out of range");
  return states[device];
}

void releaseDevice(int device, DeviceState &s) {
  std::unordered_map<size_t, std::vector<void *>> lists;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    lists.swap(s.freeLists);
  }
  if (lists.empty())
    return;
  DeviceGuard guard(device);
  cudaDeviceSynchronize();
  for (auto &entry : lists)
    for (void *p : entry.second)
      cudaFree(p);
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto &entry : lists)
    for (void *p : entry.second)
      s.blockBuckets.erase(p);
}

} // namespace

cudaStream_t stream(int device) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.stream) {
    DeviceGuard guard(device);
    GLIMMER_CUDA_CHECK(
        cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  }
  return s.stream;
}

using FreeLists = std::unordered_map<size_t, std::vector<void *>>;

/// A block of `bucket` bytes from `lists`, or null.
void *takeExact(FreeLists &lists, size_t bucket) {
  auto it = lists.find(bucket);
  if (it == lists.end() || it->second.empty())
    return nullptr;
  void *p = it->second.back();
  it->second.pop_back();
  return p;
}

/// The smallest block of `lists` larger than `bucket`, or null.
void *takeSmallestLarger(FreeLists &lists, size_t bucket) {
  size_t best = 0;
  for (const auto &[size, list] : lists)
    if (size > bucket && !list.empty() && (!best || size < best))
      best = size;
  return best ? takeExact(lists, best) : nullptr;
}

/// Frees the largest cached block; false when the cache is empty (lock
/// held). cudaFree waits for the device, so nothing queued still uses it.
bool freeLargestCached(DeviceState &s) {
  size_t largest = 0;
  for (const auto &[size, list] : s.freeLists)
    if (!list.empty() && size > largest)
      largest = size;
  if (!largest)
    return false;
  void *p = takeExact(s.freeLists, largest);
  s.blockBuckets.erase(p);
  cudaFree(p);
  return true;
}

/// A request made while a graph is captured (lock held): the graph's free
/// blocks first, then the cache's, then cudaMalloc; a larger free block
/// only when the device is full. No cached block is freed: cudaFree would
/// wait for the device, which a capture forbids.
void *allocateForGraph(DeviceState &s, size_t bucket, int device) {
  if (void *p = takeExact(s.graphFree, bucket)) {
    s.handOutReserved(p, s.blockBuckets.at(p));
    return p;
  }
  auto reserve = [&](void *p) {
    s.graphBlocks.insert(p);
    s.handOut(p, s.blockBuckets.at(p));
    return p;
  };
  if (void *p = takeExact(s.freeLists, bucket))
    return reserve(p);
  DeviceGuard guard(device);
  void *p = nullptr;
  if (cudaMalloc(&p, bucket) == cudaSuccess) {
    ++s.mallocs;
    s.blockBuckets[p] = bucket;
    return reserve(p);
  }
  cudaGetLastError();
  if (void *larger = takeSmallestLarger(s.graphFree, bucket)) {
    s.handOutReserved(larger, s.blockBuckets.at(larger));
    return larger;
  }
  if (void *larger = takeSmallestLarger(s.freeLists, bucket))
    return reserve(larger);
  throw RuntimeError("out of GPU memory allocating " + std::to_string(bucket) +
                     " bytes on cuda:" + std::to_string(device) +
                     " while capturing a CUDA graph");
}

void *allocate(size_t bytes, int device) {
  size_t bucket = bucketSize(bytes);
  DeviceState &s = state(device);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.capturing)
      return allocateForGraph(s, bucket, device);
    if (void *p = takeExact(s.freeLists, bucket)) {
      s.handOut(p, bucket);
      return p;
    }
  }
  DeviceGuard guard(device);
  void *p = nullptr;
  if (cudaMalloc(&p, bucket) == cudaSuccess) {
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.mallocs;
    s.blockBuckets[p] = bucket;
    s.handOut(p, bucket);
    return p;
  }
  cudaGetLastError(); // clear the sticky-free error state
  std::lock_guard<std::mutex> lock(s.mutex);
  // The device is full: a larger cached block, else free cached blocks
  // until the request fits.
  if (void *larger = takeSmallestLarger(s.freeLists, bucket)) {
    s.handOut(larger, s.blockBuckets.at(larger));
    return larger;
  }
  while (freeLargestCached(s)) {
    if (cudaMalloc(&p, bucket) == cudaSuccess) {
      ++s.mallocs;
      s.blockBuckets[p] = bucket;
      s.handOut(p, bucket);
      return p;
    }
    cudaGetLastError();
  }
  throw RuntimeError("out of GPU memory allocating " + std::to_string(bucket) +
                     " bytes on cuda:" + std::to_string(device));
}

void deallocate(void *ptr, size_t bytes, int device) {
  if (!ptr)
    return;
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.blockBuckets.find(ptr);
  size_t bucket = it != s.blockBuckets.end() ? it->second : bucketSize(bytes);
  // A block freed during a capture may be one the graph reads or writes
  // (the capture ran nothing yet): it is the graph's from now on.
  if (s.capturing && it != s.blockBuckets.end())
    s.graphBlocks.insert(ptr);
  if (s.graphBlocks.count(ptr)) {
    s.graphFree[bucket].push_back(ptr);
    s.live.erase(ptr);
    return;
  }
  s.freeLists[bucket].push_back(ptr);
  s.takeBack(ptr, bucket);
}

void setGraphCapture(int device, bool on) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (on && (s.capturing || !s.graphBlocks.empty()))
    throw RuntimeError("cuda:" + std::to_string(device) +
                       " already has a captured CUDA graph");
  s.capturing = on;
}

void noteGraphLaunch(int device) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.graphLaunch = std::chrono::steady_clock::now();
}

double graphRunningSeconds(int device) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.graphLaunch)
    return 0.0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       *s.graphLaunch)
      .count();
}

bool graphCapturing(int device) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.capturing;
}

void releaseGraphBlocks(int device) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto &[bucket, list] : s.graphFree)
    for (void *p : list) {
      s.graphBlocks.erase(p);
      s.freeLists[bucket].push_back(p);
      s.inUse -= bucket;
    }
  s.graphFree.clear();
  // Blocks tensors still hold go back to the cache when they are freed.
  s.graphBlocks.clear();
  s.capturing = false;
}

size_t deviceAllocations(int device) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.mallocs;
}

size_t peakMemoryInUse(int device) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.peak;
}

double hostWaitSeconds(int device) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.waited;
}

void resetPeakMemory(int device) {
  DeviceState &s = state(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.peak = s.inUse;
  if (glimmer_rt::profilingEnabled())
    s.snapshot();
}

void peakMemoryReport(std::ostream &os) {
  for (int d = 0; d < kMaxDevices; ++d) {
    DeviceState &s = state(d);
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.atPeak.empty())
      continue;
    std::vector<std::pair<std::string, std::pair<int64_t, size_t>>> rows(
        s.atPeak.begin(), s.atPeak.end());
    std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
      return a.second.second > b.second.second;
    });
    size_t total = 0;
    for (const auto &row : rows)
      total += row.second.second;
    os << "device memory live at the last step's peak on cuda:" << d
       << ", by the op that allocated it (GLIMMER_PROFILE; allocator buckets)\n"
       << "| op | tensors | GiB | share |\n|---|---|---|---|\n"
       << std::fixed;
    for (const auto &[op, use] : rows)
      os << "| " << op << " | " << use.first << " | " << std::setprecision(3)
         << double(use.second) / double(size_t(1) << 30) << " | "
         << std::setprecision(1) << 100.0 * double(use.second) / double(total)
         << "% |\n";
    os << "| all | | " << std::setprecision(3)
       << double(total) / double(size_t(1) << 30) << " | |\n";
    os.unsetf(std::ios::fixed);
  }
}

void releaseCache() {
  int n = deviceCount();
  for (int d = 0; d < n && d < kMaxDevices; ++d)
    releaseDevice(d, state(d));
}

void copy(void *dst, Device dstDevice, const void *src, Device srcDevice,
          size_t bytes) {
  if (!bytes)
    return;
  if (dstDevice.isCuda() && srcDevice.isCuda()) {
    cudaStream_t s = stream(dstDevice.index);
    if (dstDevice.index == srcDevice.index) {
      DeviceGuard guard(dstDevice.index);
      GLIMMER_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
      return;
    }
    // The source's pending work must finish before another device reads it.
    synchronize(srcDevice.index);
    DeviceGuard guard(dstDevice.index);
    GLIMMER_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dstDevice.index, src,
                                           srcDevice.index, bytes, s));
    synchronize(dstDevice.index);
    return;
  }
  int device = dstDevice.isCuda() ? dstDevice.index : srcDevice.index;
  cudaStream_t s = stream(device);
  DeviceGuard guard(device);
  // A copy to or from pageable host memory blocks inside CUDA until the
  // stream drains; draining it first, by polling, keeps a collective whose
  // peer died from hanging the host (the wait hooks run while we poll).
  synchronize(device);
  GLIMMER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  // Host memory is pageable and may be reused by the caller right away.
  synchronize(device);
}

void zero(void *ptr, size_t bytes, int device) {
  if (!bytes)
    return;
  DeviceGuard guard(device);
  GLIMMER_CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, stream(device)));
}

void setDevice(int device) { GLIMMER_CUDA_CHECK(cudaSetDevice(device)); }

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

namespace {
std::mutex hookMutex;
std::map<int, WaitHook> &hooks() {
  static auto *h = new std::map<int, WaitHook>();
  return *h;
}
int nextHook = 0;
} // namespace

int addWaitHook(WaitHook hook) {
  std::lock_guard<std::mutex> lock(hookMutex);
  hooks()[nextHook] = std::move(hook);
  return nextHook++;
}

void removeWaitHook(int id) {
  std::lock_guard<std::mutex> lock(hookMutex);
  hooks().erase(id);
}

void synchronize(int device) {
  DeviceGuard guard(device);
  cudaStream_t s = stream(device);
  auto start = std::chrono::steady_clock::now();
  int polls = 0;
  while (true) {
    cudaError_t status = cudaStreamQuery(s);
    if (status == cudaSuccess) {
      DeviceState &st = state(device);
      {
        std::lock_guard<std::mutex> lock(st.mutex);
        st.graphLaunch.reset();
        if (polls > 0)
          st.waited += std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      }
      runDeferredChecks(device);
      return;
    }
    if (status != cudaErrorNotReady)
      checkCuda(status, "waiting for the device");
    double waited = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    std::vector<WaitHook> current;
    {
      std::lock_guard<std::mutex> lock(hookMutex);
      for (auto &entry : hooks())
        current.push_back(entry.second);
    }
    for (WaitHook &hook : current)
      hook(device, waited);
    // Spin briefly (short kernels), then back off to keep a core free.
    if (++polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

Ctx::Ctx(const char *op, std::initializer_list<const Tensor *> operands)
    : op(op) {
  bool found = false;
  for (const Tensor *t : operands) {
    if (!t || !t->defined())
      continue;
    if (!found) {
      device = t->device();
      found = true;
    } else if (t->device() != device) {
      fail(op, "operands live on different devices (" + device.str() +
                   " and " + t->device().str() + ")");
    }
  }
  if (!found)
    device = currentDevice();
  if (!device.isCuda())
    fail(op, "expects operands on a CUDA device");
  int current = -1;
  GLIMMER_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device.index)
    GLIMMER_CUDA_CHECK(cudaSetDevice(device.index));
  stream = cuda::stream(device.index);
  profileStart = profileBegin(device.index, stream);
  outerOp = allocationOp;
  allocationOp = op;
}

thread_local const char *Ctx::allocationOp = nullptr;

} // namespace cuda
} // namespace glimmer_rt
