//===- Profile.cu - Device time per runtime op (GLIMMER_PROFILE) ----------===//
//
// With GLIMMER_PROFILE set in the environment, every kernel entry point's
// Ctx records a CUDA event pair around the op on its stream (ops that an
// op calls internally are part of the outer one), and the host time the
// call takes. profileCollect waits for the events and adds their elapsed
// times to per-op totals; profileReport prints them. Without the variable
// nothing is recorded. The host column tells an op that is slow to queue
// (or blocks on the device: a synchronizing copy, a cudaMalloc that waits)
// from one that is slow to run.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <map>
#include <mutex>
#include <ostream>
#include <vector>

namespace glimmer_rt {
namespace cuda {

namespace {

struct Record {
  /// A copy: checkIndices names the op it checks for with the caller's
  /// string.
  std::string op;
  int device;
  cudaEvent_t start, end;
  double hostMs;
};

struct Totals {
  double ms = 0;
  double hostMs = 0;
  int64_t calls = 0;
};

struct Profiler {
  std::mutex mutex;
  std::vector<Record> pending;
  /// Recorded events, ready for reuse, per device.
  std::map<int, std::vector<cudaEvent_t>> pool;
  std::map<std::string, Totals> totals;
  int64_t steps = 0;

  cudaEvent_t take(int device) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      std::vector<cudaEvent_t> &ready = pool[device];
      if (!ready.empty()) {
        cudaEvent_t e = ready.back();
        ready.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    GLIMMER_CUDA_CHECK(cudaEventCreate(&e));
    return e;
  }
};

/// Never destroyed, like the allocator's state.
Profiler &profiler() {
  static Profiler *p = new Profiler();
  return *p;
}

thread_local int depth = 0;
/// When the outermost op of this thread started, on the host.
thread_local std::chrono::steady_clock::time_point hostStart;

} // namespace

cudaEvent_t profileBegin(int device, cudaStream_t stream) {
  if (!glimmer_rt::profilingEnabled() || depth++ > 0)
    return nullptr;
  hostStart = std::chrono::steady_clock::now();
  cudaEvent_t start = profiler().take(device);
  GLIMMER_CUDA_CHECK(cudaEventRecord(start, stream));
  return start;
}

void profileEnd(const char *op, int device, cudaStream_t stream,
                cudaEvent_t start) {
  if (!glimmer_rt::profilingEnabled())
    return;
  --depth;
  if (!start)
    return;
  Profiler &p = profiler();
  cudaEvent_t end = p.take(device);
  // A failure here must not throw from a destructor: the pair is dropped.
  if (cudaEventRecord(end, stream) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  double hostMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - hostStart)
                      .count();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.pending.push_back({op, device, start, end, hostMs});
}

void profileCollect(bool count) {
  Profiler &p = profiler();
  std::vector<Record> done;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    done.swap(p.pending);
  }
  std::map<std::string, Totals> step;
  for (Record &r : done) {
    GLIMMER_CUDA_CHECK(cudaEventSynchronize(r.end));
    float ms = 0;
    GLIMMER_CUDA_CHECK(cudaEventElapsedTime(&ms, r.start, r.end));
    Totals &t = step[r.op];
    t.ms += ms;
    t.hostMs += r.hostMs;
    ++t.calls;
  }
  std::lock_guard<std::mutex> lock(p.mutex);
  for (Record &r : done) {
    p.pool[r.device].push_back(r.start);
    p.pool[r.device].push_back(r.end);
  }
  if (!count)
    return;
  ++p.steps;
  for (auto &[op, t] : step) {
    p.totals[op].ms += t.ms;
    p.totals[op].hostMs += t.hostMs;
    p.totals[op].calls += t.calls;
  }
}

void profileReport(std::ostream &os) {
  Profiler &p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.steps == 0 || p.totals.empty()) {
    os << kNothingProfiled;
    return;
  }
  std::vector<std::pair<std::string, Totals>> rows(p.totals.begin(),
                                                   p.totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.ms > b.second.ms;
  });
  double total = 0, hostTotal = 0;
  for (auto &row : rows) {
    total += row.second.ms;
    hostTotal += row.second.hostMs;
  }
  double steps = double(p.steps);
  os << "device time per step by op (GLIMMER_PROFILE; mean of " << p.steps
     << " step(s), all ranks' GPUs added; ops an op calls are inside it;"
     << " host ms: the time the host spent in the op's call)\n"
     << "| op | calls/step | ms/step | share | host ms/step |\n"
     << "|---|---|---|---|---|\n";
  os << std::fixed;
  for (auto &[op, t] : rows)
    os << "| " << op << " | " << std::setprecision(0) << t.calls / steps
       << " | " << std::setprecision(3) << t.ms / steps << " | "
       << std::setprecision(1) << 100 * t.ms / total << "% | "
       << std::setprecision(3) << t.hostMs / steps << " |\n";
  os << "| all | | " << std::setprecision(3) << total / steps << " | | "
     << hostTotal / steps << " |\n";
  os.unsetf(std::ios::fixed);
}

} // namespace cuda
} // namespace glimmer_rt
