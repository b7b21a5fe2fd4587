//===- Device.cpp - Devices and the thread's current device --------------===//

#include "glimmer_rt/Device.h"
#include "glimmer_rt/Tensor.h"

#ifdef GLIMMER_RT_HAVE_CUDA
#include "../cuda/CudaBackend.h"
#endif

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <utility>

using namespace glimmer_rt;

namespace {
std::atomic<bool> tf32{false};
} // namespace

void glimmer_rt::setAllowTf32(bool allow) { tf32.store(allow); }
bool glimmer_rt::allowTf32() { return tf32.load(); }

std::string Device::str() const {
  return isCuda() ? "cuda:" + std::to_string(index) : "cpu";
}

bool glimmer_rt::parseDevice(const std::string &text, Device &device) {
  if (text == "cpu") {
    device = Device::cpu();
    return true;
  }
  if (text == "cuda") {
    device = Device::cuda(0);
    return true;
  }
  if (text.rfind("cuda:", 0) != 0 || text.size() == 5 || text.size() > 8)
    return false;
  int index = 0;
  for (char c : text.substr(5)) {
    if (c < '0' || c > '9')
      return false;
    index = index * 10 + (c - '0');
  }
  device = Device::cuda(index);
  return true;
}

static thread_local Device threadDevice;

Device glimmer_rt::currentDevice() { return threadDevice; }

DeviceScope::DeviceScope(Device device) : previous(threadDevice) {
  if (device.isCuda()) {
#ifdef GLIMMER_RT_HAVE_CUDA
    cuda::setDevice(device.index);
#else
    throw RuntimeError("this runtime was built without the CUDA backend");
#endif
  }
  threadDevice = device;
}

DeviceScope::~DeviceScope() {
#ifdef GLIMMER_RT_HAVE_CUDA
  if (previous.isCuda())
    cuda::setDevice(previous.index);
#endif
  threadDevice = previous;
}

namespace {
std::atomic<bool> cudnnAttention{true};
std::atomic<int64_t> cudnnCalls{0};
std::atomic<int64_t> kernelCalls{0};
} // namespace

#ifdef GLIMMER_RT_HAVE_CUDA
void glimmer_rt::cuda::countCudnnAttentionCall() { ++cudnnCalls; }
void glimmer_rt::cuda::countAttentionKernelCall() { ++kernelCalls; }
#endif

int64_t glimmer_rt::cudnnAttentionCalls() { return cudnnCalls.load(); }
int64_t glimmer_rt::attentionKernelCalls() { return kernelCalls.load(); }

void glimmer_rt::setCudnnAttention(bool on) { cudnnAttention = on; }

glimmer_rt::AttentionOverride
glimmer_rt::parseAttentionOverride(const char *value) {
  if (!value)
    return AttentionOverride::None;
  static const std::pair<const char *, AttentionOverride> names[] = {
      {"cudnn", AttentionOverride::Cudnn},
      {"cudnn-deterministic", AttentionOverride::CudnnDeterministic},
      {"cudnn-nondeterministic", AttentionOverride::CudnnNondeterministic},
      {"mma", AttentionOverride::Mma},
      {"simt", AttentionOverride::Simt},
  };
  std::string accepted;
  for (const auto &[name, mode] : names) {
    if (std::strcmp(value, name) == 0)
      return mode;
    accepted += std::string(accepted.empty() ? "'" : ", '") + name + "'";
  }
  throw RuntimeError("GLIMMER_CUDA_ATTENTION must be one of " + accepted +
                     ", got '" + value + "'");
}

glimmer_rt::AttentionOverride glimmer_rt::attentionOverride() {
  static const AttentionOverride mode =
      parseAttentionOverride(std::getenv("GLIMMER_CUDA_ATTENTION"));
  return mode;
}

bool glimmer_rt::cudnnAttentionEnabled() {
  switch (attentionOverride()) {
  case AttentionOverride::None:
    return cudnnAttention.load();
  case AttentionOverride::Mma:
  case AttentionOverride::Simt:
    return false;
  default:
    return true;
  }
}

int glimmer_rt::cudnnAttentionDeterminism() {
  switch (attentionOverride()) {
  case AttentionOverride::CudnnDeterministic:
    return 1;
  case AttentionOverride::CudnnNondeterministic:
    return 0;
  default:
    return -1;
  }
}

bool glimmer_rt::builtWithCuda() {
#ifdef GLIMMER_RT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int glimmer_rt::cudaDeviceCount() {
#ifdef GLIMMER_RT_HAVE_CUDA
  return cuda::deviceCount();
#else
  return 0;
#endif
}

void glimmer_rt::synchronize(Device device) {
  if (!device.isCuda())
    return;
#ifdef GLIMMER_RT_HAVE_CUDA
  cuda::synchronize(device.index);
#endif
}

glimmer_rt::DeferredChecks::DeferredChecks(Device device) : device(device) {
#ifdef GLIMMER_RT_HAVE_CUDA
  if (device.isCuda())
    cuda::deferChecks(device.index, true);
#endif
}

glimmer_rt::DeferredChecks::~DeferredChecks() {
#ifdef GLIMMER_RT_HAVE_CUDA
  if (device.isCuda()) {
    try {
      cuda::deferChecks(device.index, false);
    } catch (...) { // a device already in error: nothing left to check
    }
  }
#endif
}

size_t glimmer_rt::peakDeviceMemory(Device device) {
#ifdef GLIMMER_RT_HAVE_CUDA
  if (device.isCuda())
    return cuda::peakMemoryInUse(device.index);
#endif
  return allocatorStats().peakBytes;
}

void glimmer_rt::resetPeakDeviceMemory(Device device) {
#ifdef GLIMMER_RT_HAVE_CUDA
  if (device.isCuda())
    cuda::resetPeakMemory(device.index);
  else
#endif
    resetHostPeak();
}

double glimmer_rt::hostWaitSeconds(Device device) {
#ifdef GLIMMER_RT_HAVE_CUDA
  if (device.isCuda())
    return cuda::hostWaitSeconds(device.index);
#endif
  (void)device;
  return 0;
}

size_t glimmer_rt::deviceAllocations(Device device) {
#ifdef GLIMMER_RT_HAVE_CUDA
  if (device.isCuda())
    return cuda::deviceAllocations(device.index);
#endif
  (void)device;
  return allocatorStats().allocations;
}

bool glimmer_rt::profilingEnabled() {
  static const bool on = std::getenv("GLIMMER_PROFILE") != nullptr;
  return on;
}

void glimmer_rt::profileStep(bool count) {
#ifdef GLIMMER_RT_HAVE_CUDA
  cuda::profileCollect(count);
#else
  (void)count;
#endif
}

void glimmer_rt::profileReport(std::ostream &os) {
#ifdef GLIMMER_RT_HAVE_CUDA
  cuda::profileReport(os);
  cuda::peakMemoryReport(os);
#else
  os << kNothingProfiled;
#endif
}
