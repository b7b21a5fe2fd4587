//===- Device.h - Where tensors live ----------------------------*- C++ -*-===//
//
// A tensor lives on the host (CPU) or on one CUDA device. Kernels run where
// their operands live (Kernels.h dispatches on the operands' device); ops
// without tensor operands (full, constant, iota) create their result on the
// calling thread's current device, set with DeviceScope. That mirrors the
// thread-local SPMD and rank contexts: N ranks can run as N threads, each
// with its own GPU.
//
// Work on a CUDA device is queued on one stream per device, so buffers can
// be recycled by the caching allocator in stream order. Host reads
// (Tensor::item, Tensor::to(cpu)) wait for that stream.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_DEVICE_H
#define GLIMMER_RT_DEVICE_H

#include <cstdint>
#include <iosfwd>
#include <string>

namespace glimmer_rt {

enum class DeviceKind : uint8_t { CPU = 0, CUDA = 1 };

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index) { return {DeviceKind::CUDA, index}; }
  bool isCuda() const { return kind == DeviceKind::CUDA; }
  bool operator==(const Device &o) const {
    return kind == o.kind && (kind == DeviceKind::CPU || index == o.index);
  }
  bool operator!=(const Device &o) const { return !(*this == o); }
  /// "cpu" or "cuda:N".
  std::string str() const;
};

/// Parses "cpu", "cuda" (device 0) or "cuda:N"; false on anything else.
bool parseDevice(const std::string &text, Device &device);

/// Whether f32 GEMMs on CUDA devices (`linear`, `matmul`, `conv2d`) may
/// round their inputs to TF32 (10 mantissa bits) on the tensor cores,
/// accumulating in f32, as PyTorch's torch.backends.cuda.matmul.allow_tf32.
/// Off by default, so that f32 GEMMs agree with the CPU's; process-wide,
/// read when each GEMM is queued. CPU kernels, f32 attention (3xTF32, as
/// accurate as f32) and bf16/f64 GEMMs do not change.
void setAllowTf32(bool allow);
bool allowTf32();

/// The calling thread's current device (CPU unless a DeviceScope is active).
Device currentDevice();

/// Makes `device` the calling thread's current device (and the current CUDA
/// device) for the scope's lifetime.
class DeviceScope {
public:
  explicit DeviceScope(Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;

private:
  Device previous;
};

/// Whether the runtime was built with the CUDA backend.
bool builtWithCuda();
/// Whether bf16 attention with an index-causal mask or none may run in
/// cuDNN's fused flash attention (when the runtime was built with cuDNN).
/// On by default; the Python modules turn it off when they load: in a
/// Python process on the GPU machine we measure on, building a cuDNN plan
/// crashes inside cudnn-frontend (not in glimmer-train or glimmer-run, and
/// not in a C++ program), which is not understood yet. The environment
/// variable GLIMMER_CUDA_ATTENTION overrides both (`cudnn`: on; `mma` or
/// `simt`: the runtime's own kernels; `cudnn-deterministic` and
/// `cudnn-nondeterministic`: on, with that backward, see below).
void setCudnnAttention(bool on);
bool cudnnAttentionEnabled();
/// What GLIMMER_CUDA_ATTENTION asks for: nothing (unset), cuDNN (with
/// either backward or a forced one), or one of the runtime's own kernels.
enum class AttentionOverride {
  None,
  Cudnn,
  CudnnDeterministic,
  CudnnNondeterministic,
  Mma,
  Simt,
};
/// The override named by `value` (null: None); any other name throws a
/// RuntimeError that lists the accepted ones.
AttentionOverride parseAttentionOverride(const char *value);
/// parseAttentionOverride of the environment's GLIMMER_CUDA_ATTENTION, read
/// once per process (the one place that reads it).
AttentionOverride attentionOverride();
/// Which cuDNN attention backward runs: 1, its deterministic algorithm (the
/// same bits every run, GLIMMER_CUDA_ATTENTION=cudnn-deterministic); 0, the
/// non-deterministic one, which accumulates dQ with atomics in a workspace
/// that does not grow with the square of the sequence (=cudnn-nondeterministic);
/// -1 (the default), the deterministic one while its workspace is at most
/// 256 MiB (short sequences: every test's), else the other.
int cudnnAttentionDeterminism();
/// Attention forward and backward calls cuDNN has run in this process.
int64_t cudnnAttentionCalls();
/// Attention forward and backward calls on GPUs the runtime's own kernels
/// have run in this process.
int64_t attentionKernelCalls();
/// Number of CUDA devices visible (0 without the CUDA backend or a GPU).
int cudaDeviceCount();
/// Waits for the work queued on `device` (no-op on the CPU). Throws
/// RuntimeError when the device reports an error.
void synchronize(Device device);

/// For its lifetime, data checks of kernels on `device` (ids and labels in
/// range, the optimizer's step) do not make the host wait for the device:
/// the next synchronize(device) throws the first failed one, with the
/// message an immediate check gives. Ranks::run holds one around each
/// rank's step, which ends with a synchronize. No-op on the CPU, whose
/// kernels check as they run.
class DeferredChecks {
public:
  explicit DeferredChecks(Device device);
  ~DeferredChecks();
  DeferredChecks(const DeferredChecks &) = delete;
  DeferredChecks &operator=(const DeferredChecks &) = delete;

private:
  Device device;
};

/// The high-water mark, since the last resetPeakDeviceMemory, of the device
/// memory the runtime's allocator has handed out on `device` and not got
/// back (whole allocation buckets). For the CPU: the process's host
/// allocator, shared by every thread rank.
size_t peakDeviceMemory(Device device);
void resetPeakDeviceMemory(Device device);
/// Seconds host threads have spent waiting for `device`'s queued work
/// (synchronize and the copies to the host), in all, since the process
/// started; 0 on the CPU. A step's share of it against the step's time
/// says whether the device or the host that queues its work is the limit.
double hostWaitSeconds(Device device);
/// Calls of the allocator for `device` that reached the system's allocator
/// (cudaMalloc, malloc) rather than its cache, since the process started
/// (on the CPU: of the host allocator every thread rank shares). None in a
/// step that runs as the one before it did is what a step should cost.
size_t deviceAllocations(Device device);

/// Per-op device time, on when GLIMMER_PROFILE is set in the environment
/// (CUDA only): each runtime op's kernels are timed with CUDA events.
bool profilingEnabled();
/// Waits for the ops timed since the last call and adds them to the totals
/// as one step (`count` false: a warm-up step, dropped).
void profileStep(bool count);
/// The totals per op (calls and milliseconds per step, share), as a
/// markdown table; kNothingProfiled when no GPU op was timed.
void profileReport(std::ostream &os);
inline constexpr const char *kNothingProfiled =
    "GLIMMER_PROFILE: no CUDA op was timed (ops on the CPU are not "
    "profiled; the first step is a warm-up and not counted)\n";

} // namespace glimmer_rt

#endif // GLIMMER_RT_DEVICE_H
