//===- CudaBackend.h - The CUDA backend's entry points ----------*- C++ -*-===//
//
// Internal to the runtime: what the device-independent code (Tensor.cpp,
// the kernel API in kernels/Dispatch.cpp, the collectives) calls when a
// tensor lives on a GPU. Plain C++ (no CUDA headers), so host code includes
// it freely; implemented in cuda/*.cu, compiled only when the runtime is
// built with CUDA (GLIMMER_RT_HAVE_CUDA).
//
// The kernel functions mirror Kernels.h exactly (same names, operands and
// semantics: KernelDecls.inc declares both); Kernels.h's functions forward
// to them when an operand lives on a GPU. Results are created on the
// operands' device. Supported element types: F32, F64 and BF16 for floating
// point (BF16 computes in f32 and rounds the result), I64/I32 for integers,
// Bool.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_CUDABACKEND_H
#define GLIMMER_RT_CUDA_CUDABACKEND_H

#include "glimmer_rt/Fusion.h"
#include "glimmer_rt/Kernels.h"

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <string>
#include <unordered_map>

namespace glimmer_rt {
namespace cuda {

/// Whether a tensor's data is 16-byte aligned, as the bf16 tensor-core and
/// cuDNN attention paths need (views at odd offsets may not be).
inline bool aligned16(const Tensor &t) {
  return reinterpret_cast<uintptr_t>(t.raw()) % 16 == 0;
}

/// Device `device`'s object of type C (a library handle and its plans),
/// default-constructed on first use and never destroyed: a library may be
/// unloaded before static destructors run. `init(c)` runs under the lock
/// that guards all of them at every lookup (it creates the handle once).
template <typename C, typename Init>
C &perDevice(int device, Init &&init) {
  static std::mutex mutex;
  static auto *all = new std::unordered_map<int, C>();
  std::lock_guard<std::mutex> lock(mutex);
  C &c = (*all)[device];
  init(c);
  return c;
}

// Memory and devices (cuda/Device.cu).
void *allocate(size_t bytes, int device);
void deallocate(void *ptr, size_t bytes, int device);
void releaseCache();
/// The most bytes (whole buckets) the allocator has had handed out and not
/// got back on `device` since the last resetPeakMemory.
size_t peakMemoryInUse(int device);
void resetPeakMemory(int device);
/// Seconds the host has waited in synchronize(device) for its stream, in
/// all, since the process started.
double hostWaitSeconds(int device);
/// Calls that reached cudaMalloc on `device`, since the process started.
size_t deviceAllocations(int device);

// Per-op device time with GLIMMER_PROFILE (cuda/Profile.cu).
void profileCollect(bool count);
void profileReport(std::ostream &os);
/// With GLIMMER_PROFILE: the blocks live at each device's peak of the last
/// step (resetPeakMemory starts a step), summed by the op that allocated
/// them.
void peakMemoryReport(std::ostream &os);
/// Copies `bytes` between host and/or device memory; returns once the data
/// is in place (device-to-device copies are queued on the destination's
/// stream).
void copy(void *dst, Device dstDevice, const void *src, Device srcDevice,
          size_t bytes);
void zero(void *ptr, size_t bytes, int device);
void setDevice(int device);
int deviceCount();
/// Waits for `device`'s stream. The host never blocks inside CUDA while it
/// waits: it polls the stream and calls the wait hooks between polls, so a
/// collective whose peer died cannot hang it (a hook throws instead).
void synchronize(int device);

/// Kernel `index` of a program's fused kernels on GPU inputs (Fusion.cu);
/// with GLIMMER_CUDA_FUSION=check, compared with `ops(inputs)`.
std::vector<Tensor> runFused(FusedKernels &kernels, int index,
                             const std::vector<Tensor> &inputs,
                             const std::vector<FusedResult> &results,
                             FusedOps ops);

/// Counts a call cuDNN ran (cudnnAttentionCalls in Device.h).
void countCudnnAttentionCall();
/// Counts an attention call the runtime's kernels ran
/// (attentionKernelCalls in Device.h).
void countAttentionKernelCall();
/// Records which engine ran an attention call of `dtype` on the GPU: cuDNN
/// when `why` is empty, else the runtime's kernels, cuDNN not taking it for
/// that reason. Says once per process which engine attention runs in, and
/// warns once per reason when bf16 attention falls back from cuDNN (a
/// fraction of cuDNN's speed on Hopper: docs/CudaBackend.md).
void noteAttentionEngine(DType dtype, const std::string &why);

/// Data checks of kernels on `device` issued by the calling thread: with
/// `on`, read by the next synchronize(device) instead of at once
/// (cuda/DeferredChecks.cu); turning it off drops checks not read yet.
void deferChecks(int device, bool on);
/// Reads the deferred checks (the stream has drained); throws the first
/// failed one's error.
void runDeferredChecks(int device);
/// The deferred checks a captured graph's kernels raise (cuda/Graph.cu):
/// the words they write and the checks those words stand for.
struct GraphChecks;
/// Makes `checks`' words the calling thread's deferred-check words on
/// `device`, none issued yet (before a capture).
void bindGraphChecks(int device, GraphChecks &checks);
/// Moves the checks issued since bindGraphChecks into `checks` (after a
/// capture, which ran none of them).
void keepGraphChecks(int device, GraphChecks &checks);
/// Makes `checks` the calling thread's pending checks on `device`, as if
/// their kernels had just been queued (before each replay).
void restoreGraphChecks(int device, GraphChecks &checks);
/// Forgets the calling thread's pending checks on `device` (a capture that
/// failed queued nothing) and detaches `checks`' words from it.
void unbindGraphChecks(int device, GraphChecks &checks);
GraphChecks *newGraphChecks(int device);
void deleteGraphChecks(GraphChecks *checks);

// CUDA graphs (cuda/Graph.cu, allocator side in cuda/Device.cu).
/// While on, `device`'s allocator serves the capture of a graph: its
/// blocks stay reserved for the graph (see Device.cu). Throws when the
/// device has a graph already.
void setGraphCapture(int device, bool on);
/// Whether `device`'s work is being captured into a graph.
bool graphCapturing(int device);
/// Seconds since a graph was launched on `device`'s stream, while no
/// synchronize has seen the stream drain since (0 when none is known to
/// run): how long the collectives captured in it may have been waiting.
double graphRunningSeconds(int device);
void noteGraphLaunch(int device);
/// Gives the graph's free reserved blocks back to the cache.
void releaseGraphBlocks(int device);
struct Graph;
/// Starts capturing the calling thread's work on `device`'s stream.
Graph *beginGraph(int device);
/// Ends the capture: true, or false and the reason when the captured work
/// cannot make a graph (the capture hit an operation a graph cannot hold).
bool endGraph(Graph *graph, std::string &error);
void launchGraph(Graph *graph);
void destroyGraph(Graph *graph);

/// Called repeatedly while the host waits for `device`'s stream, with the
/// seconds waited so far; throwing gives up the wait (the NCCL
/// communicators notice a dead peer, an abort or a timeout this way and
/// abort their communicators, which releases the stream).
using WaitHook = std::function<void(int device, double secondsWaited)>;
int addWaitHook(WaitHook hook);
void removeWaitHook(int id);

// Kernels (cuda/*.cu): the same contract as Kernels.h.
Tensor full(Device device, DType dtype, const Shape &shape, double value);
Tensor constant(Device device, DType dtype, const Shape &shape,
                const std::vector<double> &values);
Tensor iota(Device device, DType dtype, const Shape &shape, int64_t dim);

#include "glimmer_rt/KernelDecls.inc"

// The norms' result type `out` checked (detail::normResultType).
Tensor rmsNorm(const Tensor &x, const Tensor &w, double eps, DType out);
std::tuple<Tensor, Tensor> addRmsNorm(const Tensor &lhs, const Tensor &rhs,
                                      const Tensor &w, double eps, DType out);
Tensor layerNorm(const Tensor &x, const Tensor &w, const Tensor &b, double eps,
                 DType out);

} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_CUDABACKEND_H
