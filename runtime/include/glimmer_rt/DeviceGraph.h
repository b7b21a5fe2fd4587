//===- DeviceGraph.h - Work captured once and replayed ----------*- C++ -*-===//
//
// A CUDA graph of the work one thread queues on one device: captured once
// (recorded, not run) and replayed with one launch, which saves the host
// the per-kernel cost of queuing it again (glimmer-run --cuda-graph).
// A replay runs the kernels with the arguments they were captured with:
// inputs must stay at their addresses and be refreshed in place
// (glimmer_rt::copyInto), and the device memory the capture allocated or
// freed stays reserved for the graph until it is destroyed.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_DEVICEGRAPH_H
#define GLIMMER_RT_DEVICEGRAPH_H

#include "glimmer_rt/Tensor.h"

#include <string>

namespace glimmer_rt {

class DeviceGraph {
public:
  /// Starts capturing the work the calling thread queues on `device`.
  /// Throws RuntimeError on the CPU, without the CUDA backend, or when the
  /// device has a graph already.
  explicit DeviceGraph(Device device);
  ~DeviceGraph();
  DeviceGraph(const DeviceGraph &) = delete;
  DeviceGraph &operator=(const DeviceGraph &) = delete;

  /// Ends the capture: true, or false and the reason in `error` when the
  /// work could not be captured (an operation in it made the host wait for
  /// the device). Call it also after the captured work threw.
  bool end(std::string &error);
  /// Queues the captured work; its data checks are read by the next
  /// synchronize, as a step's are (DeferredChecks).
  void replay();

private:
  Device device;
  /// The CUDA backend's graph and deferred-check words (cuda::Graph,
  /// cuda::GraphChecks).
  void *graph = nullptr;
  void *checks = nullptr;
  bool captured = false;
};

} // namespace glimmer_rt

#endif // GLIMMER_RT_DEVICEGRAPH_H
