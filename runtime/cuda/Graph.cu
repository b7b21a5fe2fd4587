//===- Graph.cu - A step captured as a CUDA graph and replayed ------------===//
//
// Queuing a large model's step costs the host thousands of kernel launches
// (each with its operand checks and its allocation); a CUDA graph queues
// the same kernels with one launch. The step is captured once from the
// device's stream (stream capture records the work instead of running it)
// and replayed; everything the replay must see again is fixed at capture:
// kernel arguments (addresses and scalars), so the caller keeps the
// captured step's inputs at their addresses and refreshes their contents
// before each replay, and the allocator keeps every block the capture
// touched reserved for the graph (Device.cu).
//
// The capture uses cudaStreamCaptureModeRelaxed: the allocator may call
// cudaMalloc while it grows the graph's pool, which the stricter modes
// forbid. An operation that needs the host to wait for the device (a copy
// to the host, a synchronize) cannot be captured: the capture is then
// invalidated, the operation fails, and endGraph says why.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <memory>
#include <string>

namespace glimmer_rt {
namespace cuda {

struct Graph {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  /// Since beginGraph, until endGraph.
  bool capturing = false;
};

Graph *beginGraph(int device) {
  auto graph = std::make_unique<Graph>();
  graph->device = device;
  graph->stream = stream(device);
  setGraphCapture(device, true);
  DeviceGuard current(device);
  cudaError_t status = cudaStreamBeginCapture(graph->stream,
                                              cudaStreamCaptureModeRelaxed);
  if (status != cudaSuccess) {
    setGraphCapture(device, false);
    checkCuda(status, "cudaStreamBeginCapture");
  }
  graph->capturing = true;
  return graph.release();
}

bool endGraph(Graph *graph, std::string &error) {
  DeviceGuard current(graph->device);
  graph->capturing = false;
  cudaGraph_t captured = nullptr;
  cudaError_t status = cudaStreamEndCapture(graph->stream, &captured);
  setGraphCapture(graph->device, false);
  if (status != cudaSuccess || !captured) {
    // The capture was invalidated by an operation it cannot hold (that
    // operation reported the error the caller saw first).
    cudaGetLastError();
    if (captured)
      cudaGraphDestroy(captured);
    error = std::string("the capture was invalidated (") +
            cudaGetErrorString(status) + ")";
    return false;
  }
  graph->graph = captured;
  status = cudaGraphInstantiate(&graph->exec, captured, 0);
  if (status != cudaSuccess) {
    cudaGetLastError();
    graph->exec = nullptr;
    error = std::string("cudaGraphInstantiate failed (") +
            cudaGetErrorString(status) + ")";
    return false;
  }
  return true;
}

void launchGraph(Graph *graph) {
  DeviceGuard current(graph->device);
  // Before the launch, which may block while the device's queue is full.
  noteGraphLaunch(graph->device);
  GLIMMER_CUDA_CHECK(cudaGraphLaunch(graph->exec, graph->stream));
}

void destroyGraph(Graph *graph) {
  if (!graph)
    return;
  {
    DeviceGuard current(graph->device);
    if (graph->capturing) {
      cudaGraph_t dropped = nullptr;
      cudaStreamEndCapture(graph->stream, &dropped);
      cudaGetLastError();
      if (dropped)
        cudaGraphDestroy(dropped);
      setGraphCapture(graph->device, false);
    }
    // The reserved blocks go back to the cache, where the next request
    // may take them: nothing of this graph may still be running.
    cudaStreamSynchronize(graph->stream);
    if (graph->exec)
      cudaGraphExecDestroy(graph->exec);
    if (graph->graph)
      cudaGraphDestroy(graph->graph);
    cudaGetLastError();
  }
  releaseGraphBlocks(graph->device);
  delete graph;
}

} // namespace cuda
} // namespace glimmer_rt
