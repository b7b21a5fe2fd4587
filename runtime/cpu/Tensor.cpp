//===- Tensor.cpp - Runtime tensors and the caching allocator -------------===//
//
// Storage comes from a process-wide caching allocator: freed blocks go to a
// free list keyed by their bucket size and are handed out again to requests
// of the same bucket. Buckets are powers of two up to 1 MiB and multiples of
// 1 MiB above, so a steady-state training step reuses its blocks without
// reaching malloc. Every block is 64-byte aligned.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Tensor.h"
#include "../common/Scalar.h"

#ifdef GLIMMER_RT_HAVE_CUDA
#include "../cuda/CudaBackend.h"
#endif

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <sstream>
#include <unordered_map>

using namespace glimmer_rt;

namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kLargeGranule = size_t(1) << 20;

/// The bucket (and allocation size) that serves a request of `bytes`.
size_t bucketSize(size_t bytes) {
  if (bytes <= kAlignment)
    return kAlignment;
  if (bytes <= kLargeGranule) {
    size_t b = kAlignment;
    while (b < bytes)
      b <<= 1;
    return b;
  }
  if (bytes > std::numeric_limits<size_t>::max() - kLargeGranule)
    throw RuntimeError("allocation of " + std::to_string(bytes) +
                       " bytes is too large");
  return (bytes + kLargeGranule - 1) / kLargeGranule * kLargeGranule;
}

class CachingAllocator {
public:
  void *allocate(size_t bytes) {
    size_t bucket = bucketSize(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = freeLists.find(bucket);
      if (it != freeLists.end() && !it->second.empty()) {
        void *p = it->second.back();
        it->second.pop_back();
        stats.reuses++;
        stats.cachedBytes -= bucket;
        noteInUse(bucket);
        return p;
      }
      stats.allocations++;
      noteInUse(bucket);
    }
    void *p = std::aligned_alloc(kAlignment, bucket);
    if (!p) {
      // Memory may be held by the cache: release it and try once more.
      release();
      p = std::aligned_alloc(kAlignment, bucket);
      if (!p) {
        std::lock_guard<std::mutex> lock(mutex);
        stats.inUseBytes -= bucket;
        throw RuntimeError("out of memory allocating " +
                           std::to_string(bucket) + " bytes");
      }
    }
    return p;
  }

  void deallocate(void *p, size_t bytes) {
    if (!p)
      return;
    size_t bucket = bucketSize(bytes);
    std::lock_guard<std::mutex> lock(mutex);
    freeLists[bucket].push_back(p);
    stats.cachedBytes += bucket;
    stats.inUseBytes -= bucket;
  }

  void resetPeak() {
    std::lock_guard<std::mutex> lock(mutex);
    stats.peakBytes = stats.inUseBytes;
  }

  void release() {
    std::unordered_map<size_t, std::vector<void *>> lists;
    {
      std::lock_guard<std::mutex> lock(mutex);
      lists.swap(freeLists);
      stats.cachedBytes = 0;
    }
    for (auto &entry : lists)
      for (void *p : entry.second)
        std::free(p);
  }

  AllocatorStats snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return stats;
  }

private:
  /// Under the lock.
  void noteInUse(size_t bucket) {
    stats.inUseBytes += bucket;
    stats.peakBytes = std::max(stats.peakBytes, stats.inUseBytes);
  }

  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void *>> freeLists;
  AllocatorStats stats;
};

/// Never destroyed: buffers held by static objects may be freed after the
/// end of main, when a function-local static would already be gone.
CachingAllocator &allocator() {
  static CachingAllocator *instance = new CachingAllocator();
  return *instance;
}

} // namespace

//===----------------------------------------------------------------------===//
// Buffer and allocator entry points
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_HAVE_CUDA
[[noreturn]] static void noCuda() {
  throw RuntimeError("this runtime was built without the CUDA backend");
}
#endif

Buffer::Buffer(size_t bytes, Device device) : bytes(bytes), where(device) {
  if (!device.isCuda()) {
    ptr = allocator().allocate(bytes);
    return;
  }
#ifdef GLIMMER_RT_HAVE_CUDA
  ptr = cuda::allocate(bytes, device.index);
#else
  noCuda();
#endif
}

Buffer::~Buffer() {
  if (!where.isCuda()) {
    allocator().deallocate(ptr, bytes);
    return;
  }
#ifdef GLIMMER_RT_HAVE_CUDA
  cuda::deallocate(ptr, bytes, where.index);
#endif
}

AllocatorStats glimmer_rt::allocatorStats() { return allocator().snapshot(); }

void glimmer_rt::resetHostPeak() { allocator().resetPeak(); }

void glimmer_rt::emptyCache() {
  allocator().release();
#ifdef GLIMMER_RT_HAVE_CUDA
  cuda::releaseCache();
#endif
}

/// Copies between any two devices (the host included).
static void copyBytes(void *dst, Device dstDevice, const void *src,
                      Device srcDevice, size_t bytes) {
  if (!bytes)
    return;
  if (!dstDevice.isCuda() && !srcDevice.isCuda()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef GLIMMER_RT_HAVE_CUDA
  cuda::copy(dst, dstDevice, src, srcDevice, bytes);
#else
  noCuda();
#endif
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

int64_t glimmer_rt::numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string glimmer_rt::dtypeLabel(DType dtype) {
  std::string name(dtypeName(dtype));
  for (char &c : name)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string glimmer_rt::shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

static void checkShape(DType dtype, const Shape &shape) {
  if (dtypeSize(dtype) == 0)
    throw RuntimeError("unknown element type");
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw RuntimeError("negative dimension in shape " + shapeString(shape));
    if (d != 0 &&
        n > std::numeric_limits<int64_t>::max() / d / int64_t(dtypeSize(dtype)))
      throw RuntimeError("shape " + shapeString(shape) + " is too large");
    n *= d;
  }
}

Tensor::Tensor(DType dtype, Shape shape, Device device)
    : type(dtype), dims(std::move(shape)) {
  checkShape(type, dims);
  buffer = std::make_shared<Buffer>(nbytes(), device);
}

Tensor Tensor::zeros(DType dtype, Shape shape, Device device) {
  Tensor t(dtype, std::move(shape), device);
  if (!device.isCuda()) {
    std::memset(t.raw(), 0, t.nbytes());
    return t;
  }
#ifdef GLIMMER_RT_HAVE_CUDA
  cuda::zero(t.raw(), t.nbytes(), device.index);
#endif
  return t;
}

Tensor Tensor::fromData(DType dtype, Shape shape, const void *data,
                        Device device) {
  Tensor t(dtype, std::move(shape), device);
  copyBytes(t.raw(), device, data, Device::cpu(), t.nbytes());
  return t;
}

int64_t Tensor::numel() const { return numElements(dims); }

Tensor Tensor::view(Shape shape) const {
  if (!defined())
    throw RuntimeError("view of an undefined tensor");
  checkShape(type, shape);
  if (numElements(shape) != numel())
    throw RuntimeError("cannot view " + describe() + " as shape " +
                       shapeString(shape) + ": element counts differ");
  Tensor t = *this;
  t.dims = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined())
    return Tensor();
  Tensor t(type, dims, device());
  copyBytes(t.raw(), device(), raw(), device(), nbytes());
  return t;
}

Tensor glimmer_rt::replacing(const Tensor &input) {
  if (input.soleOwner())
    return input;
  return Tensor(input.dtype(), input.shape(), input.device());
}

void glimmer_rt::copyInto(Tensor &dst, const Tensor &src) {
  if (!dst.defined() || !src.defined() || dst.dtype() != src.dtype() ||
      dst.shape() != src.shape() || dst.device() != src.device())
    throw RuntimeError("copyInto expects two tensors of one dtype, shape and "
                       "device, got " +
                       (dst.defined() ? dst.describe() : "undefined") +
                       " and " +
                       (src.defined() ? src.describe() : "undefined"));
  if (dst.raw() != src.raw())
    copyBytes(dst.raw(), dst.device(), src.raw(), src.device(), src.nbytes());
}

Tensor Tensor::to(Device target) const {
  if (!defined() || device() == target)
    return *this;
  Tensor t(type, dims, target);
  copyBytes(t.raw(), target, raw(), device(), nbytes());
  return t;
}

double Tensor::item(int64_t i) const {
  if (!defined())
    throw RuntimeError("item() of an undefined tensor");
  if (i < 0 || i >= numel())
    throw RuntimeError("item(" + std::to_string(i) + ") is out of range for " +
                       describe());
  const char *p = static_cast<const char *>(raw()) + i * dtypeSize(type);
  alignas(8) char host[8];
  if (isCuda()) {
    copyBytes(host, Device::cpu(), p, device(), dtypeSize(type));
    p = host;
  }
  scalar::Scalar v = scalar::loadScalar(type, p, 0);
  return v.isFloat ? v.f : double(v.i);
}

std::string Tensor::describe() const {
  if (!defined())
    return "<undefined>";
  std::string name = dtypeLabel(type) + shapeString(dims);
  if (isCuda())
    name += " on " + device().str();
  return name;
}
