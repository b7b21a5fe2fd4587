//===- DeviceGraph.cpp - Work captured once and replayed ------------------===//

#include "glimmer_rt/DeviceGraph.h"

#ifdef GLIMMER_RT_HAVE_CUDA
#include "../cuda/CudaBackend.h"
#endif

using namespace glimmer_rt;

static void requireCuda(Device device) {
  if (!device.isCuda())
    throw RuntimeError("a device graph needs a CUDA device, got " +
                       device.str());
}

#ifdef GLIMMER_RT_HAVE_CUDA

static cuda::Graph *asGraph(void *p) { return static_cast<cuda::Graph *>(p); }
static cuda::GraphChecks *asChecks(void *p) {
  return static_cast<cuda::GraphChecks *>(p);
}

DeviceGraph::DeviceGraph(Device device) : device(device) {
  requireCuda(device);
  // The graph's own check words, set up before the capture so that their
  // block is not one the capture reserves.
  cuda::GraphChecks *words = cuda::newGraphChecks(device.index);
  try {
    cuda::bindGraphChecks(device.index, *words);
    checks = words;
    graph = cuda::beginGraph(device.index);
  } catch (...) {
    cuda::unbindGraphChecks(device.index, *words);
    cuda::deleteGraphChecks(words);
    throw;
  }
}

DeviceGraph::~DeviceGraph() {
  try {
    cuda::unbindGraphChecks(device.index, *asChecks(checks));
    cuda::destroyGraph(asGraph(graph));
    cuda::deleteGraphChecks(asChecks(checks));
  } catch (...) { // a device in error: nothing left to release
  }
}

bool DeviceGraph::end(std::string &error) {
  captured = cuda::endGraph(asGraph(graph), error);
  if (captured)
    cuda::keepGraphChecks(device.index, *asChecks(checks));
  else
    cuda::unbindGraphChecks(device.index, *asChecks(checks));
  return captured;
}

void DeviceGraph::replay() {
  if (!captured)
    throw RuntimeError("replay of a device graph that was not captured");
  cuda::restoreGraphChecks(device.index, *asChecks(checks));
  cuda::launchGraph(asGraph(graph));
}

#else

DeviceGraph::DeviceGraph(Device device) : device(device) {
  requireCuda(device);
  throw RuntimeError("device graphs need the runtime's CUDA backend, which "
                     "this build does not have");
}
DeviceGraph::~DeviceGraph() = default;
bool DeviceGraph::end(std::string &error) {
  error = "no CUDA backend";
  return false;
}
void DeviceGraph::replay() {}

#endif
