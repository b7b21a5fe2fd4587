//===- Tensor.h - Runtime tensors -------------------------------*- C++ -*-===//
//
// A dense, row-major tensor whose storage comes from a thread-safe caching
// allocator. Copies share storage (like at::Tensor); reshape is a view.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_TENSOR_H
#define GLIMMER_RT_TENSOR_H

#include "glimmer_rt/Device.h"
#include "glimmer_rt/Safetensors.h" // DType

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace glimmer_rt {

using Shape = std::vector<int64_t>;

/// Raw memory from the caching allocator of `device`; returned to it on
/// destruction.
class Buffer {
public:
  explicit Buffer(size_t bytes, Device device = Device::cpu());
  ~Buffer();
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  void *data() const { return ptr; }
  size_t size() const { return bytes; }
  Device device() const { return where; }

private:
  void *ptr = nullptr;
  size_t bytes = 0;
  Device where;
};

/// Statistics of the caching allocator (for tests and progress output).
struct AllocatorStats {
  size_t allocations = 0; // calls that reached malloc
  size_t reuses = 0;      // calls served from the cache
  size_t cachedBytes = 0; // bytes currently held in the cache
  size_t inUseBytes = 0;  // bytes handed out and not given back (buckets)
  size_t peakBytes = 0;   // high-water mark of inUseBytes since the reset
};
AllocatorStats allocatorStats();
/// Releases all cached (unused) blocks.
void emptyCache();
/// Restarts the host allocator's high-water mark at what is in use now.
void resetHostPeak();

class Tensor {
public:
  /// An undefined tensor (used for absent optional operands).
  Tensor() = default;
  /// A tensor with uninitialized storage on `device`.
  Tensor(DType dtype, Shape shape, Device device = Device::cpu());
  /// A zero-filled tensor.
  static Tensor zeros(DType dtype, Shape shape, Device device = Device::cpu());
  /// Copies `numElements * dtypeSize(dtype)` bytes from host memory `data`.
  static Tensor fromData(DType dtype, Shape shape, const void *data,
                         Device device = Device::cpu());

  bool defined() const { return buffer != nullptr; }
  DType dtype() const { return type; }
  const Shape &shape() const { return dims; }
  int64_t rank() const { return int64_t(dims.size()); }
  int64_t dim(int64_t i) const { return dims[i < 0 ? i + rank() : i]; }
  int64_t numel() const;
  size_t nbytes() const { return size_t(numel()) * dtypeSize(type); }

  /// Where the storage lives (CPU for an undefined tensor).
  Device device() const { return buffer ? buffer->device() : Device::cpu(); }
  bool isCuda() const { return device().isCuda(); }

  /// Pointer to the first element, on the tensor's device.
  void *raw() { return static_cast<char *>(buffer->data()) + offset; }
  const void *raw() const {
    return static_cast<const char *>(buffer->data()) + offset;
  }
  template <typename T> T *data() { return static_cast<T *>(raw()); }
  template <typename T> const T *data() const {
    return static_cast<const T *>(raw());
  }

  /// A view with another shape of the same element count.
  Tensor view(Shape shape) const;
  /// A deep copy on the same device.
  Tensor clone() const;
  /// Whether this handle is the only one on its storage and covers it from
  /// its start: nothing else can read the storage, so a kernel may write a
  /// result there in place of allocating one.
  bool soleOwner() const {
    return buffer && buffer.use_count() == 1 && offset == 0;
  }
  /// This tensor on `device` (itself when already there, else a copy).
  Tensor to(Device device) const;
  /// Element `i` (row-major) converted to double, for tests and printing
  /// (waits for the device when the tensor is on a GPU).
  double item(int64_t i = 0) const;
  /// "f32[2, 16]" ("f32[2, 16] on cuda:0" for device tensors)
  std::string describe() const;

private:
  DType type = DType::F32;
  Shape dims;
  std::shared_ptr<Buffer> buffer;
  size_t offset = 0;
};

/// Storage for a result shaped like `input` that replaces it (an optimizer's
/// new parameter): `input`'s own storage when `input` is its sole owner, so
/// the update runs in place, as torch.optim's do, instead of holding the old
/// and the new state at once; else new storage on its device. Only kernels
/// that read each element before writing it there may use it.
Tensor replacing(const Tensor &input);

/// Copies `src`'s elements into `dst`'s storage (same dtype, shape and
/// device; queued on a GPU): refreshes an input a captured DeviceGraph
/// reads. Throws RuntimeError otherwise.
void copyInto(Tensor &dst, const Tensor &src);

/// Number of elements of a shape.
int64_t numElements(const Shape &shape);
/// "[2, 16]"
std::string shapeString(const Shape &shape);
/// "f32", "bf16", ...: a type's name as messages print it (describe()'s).
std::string dtypeLabel(DType dtype);

/// Thrown by kernels on invalid arguments (shapes, dtypes, out-of-range
/// indices); the driver reports its message.
struct RuntimeError : std::exception {
  explicit RuntimeError(std::string message) : message(std::move(message)) {}
  const char *what() const noexcept override { return message.c_str(); }
  std::string message;
};

} // namespace glimmer_rt

#endif // GLIMMER_RT_TENSOR_H
