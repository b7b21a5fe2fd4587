//===- Common.cuh - Shared helpers of the CUDA kernels -----------*- CUDA -*-===//
//
// Internal to the runtime's CUDA backend. Every kernel file includes this:
// error checks that throw RuntimeError naming the op, the per-device stream
// all work is queued on, launch geometry, element-type dispatch and the
// bf16 <-> f32 conversions (bf16 tensors compute in f32).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_COMMON_CUH
#define GLIMMER_RT_CUDA_COMMON_CUH

#include "../kernels/Checks.h"
#include "CudaBackend.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>

namespace glimmer_rt {
namespace cuda {

using bf16 = __nv_bfloat16;

using detail::check;
using detail::fail;

/// Throws RuntimeError("<what>: <CUDA error string>") on failure.
void checkCuda(cudaError_t status, const char *what);
#define GLIMMER_CUDA_CHECK(expr) ::glimmer_rt::cuda::checkCuda((expr), #expr)
/// After a kernel launch: reports launch errors (bad configuration).
#define GLIMMER_CUDA_LAUNCHED(op)                                              \
  ::glimmer_rt::cuda::checkCuda(cudaGetLastError(), op)

/// The stream all work on `device` is queued on (created on first use).
cudaStream_t stream(int device);

/// Makes `device` current for the calling thread for the scope, restoring
/// the previous one (a rank thread starts on device 0; a memset or a graph
/// call must run with its stream's device current).
struct DeviceGuard {
  explicit DeviceGuard(int device) {
    GLIMMER_CUDA_CHECK(cudaGetDevice(&previous));
    if (previous != device)
      GLIMMER_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous); }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;
  int previous = 0;
};

/// Makes the operands' device current for the calling thread and checks
/// that every defined operand lives on it. Kernels construct one first:
///   Ctx c("add", {&a, &b});  ... kernel<<<grid, block, 0, c.stream>>>(...)
// Per-op device time (Profile.cu): Ctx brackets every entry point.
cudaEvent_t profileBegin(int device, cudaStream_t stream);
void profileEnd(const char *op, int device, cudaStream_t stream,
                cudaEvent_t start);

struct Ctx {
  Ctx(const char *op, std::initializer_list<const Tensor *> operands);
  ~Ctx() {
    profileEnd(op, device.index, stream, profileStart);
    allocationOp = outerOp;
  }
  Ctx(const Ctx &) = delete;
  Ctx &operator=(const Ctx &) = delete;
  const char *op;
  Device device;
  cudaStream_t stream;
  /// The op's start event when GLIMMER_PROFILE is set (Profile.cu).
  cudaEvent_t profileStart = nullptr;
  /// The op that the device allocator charges allocations to while this
  /// one runs (GLIMMER_PROFILE's peak-memory table), and the enclosing
  /// op's, restored at the end.
  static thread_local const char *allocationOp;
  const char *outerOp = nullptr;
  /// A new tensor on the operands' device.
  Tensor empty(DType dtype, const Shape &shape) const {
    return Tensor(dtype, shape, device);
  }
};

constexpr int kThreads = 256;
/// Blocks for a grid-stride loop over `n` elements.
inline unsigned blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1)
    b = 1;
  if (b > 65535 * 8)
    b = 65535 * 8;
  return unsigned(b);
}

// Loads and stores through f32 for bf16 (compute type of each storage
// type: float for bf16, itself otherwise).
template <typename T> struct Acc { using type = T; };
template <> struct Acc<bf16> { using type = float; };
template <typename T> using acc_t = typename Acc<T>::type;

template <typename T> __device__ __forceinline__ acc_t<T> ld(const T *p) {
  return *p;
}
template <> __device__ __forceinline__ float ld<bf16>(const bf16 *p) {
  return __bfloat162float(*p);
}
template <typename T>
__device__ __forceinline__ void st(T *p, acc_t<T> v) {
  *p = v;
}
template <> __device__ __forceinline__ void st<bf16>(bf16 *p, float v) {
  *p = __float2bfloat16(v);
}

/// Calls `f(T{})` with T = double, float or bf16 per `dtype`; throws for
/// other types.
template <typename F>
auto dispatchFloat(const char *op, DType dtype, F &&f) {
  switch (dtype) {
  case DType::F64:
    return f(double{});
  case DType::F32:
    return f(float{});
  case DType::BF16:
    return f(bf16{});
  default:
    fail(op, "expects a floating-point tensor (f32, f64 or bf16), got " +
                 std::string(dtypeName(dtype)));
  }
}

/// Like dispatchFloat, plus int64_t / int32_t.
template <typename F>
auto dispatchNumeric(const char *op, DType dtype, F &&f) {
  switch (dtype) {
  case DType::I64:
    return f(int64_t{});
  case DType::I32:
    return f(int32_t{});
  default:
    return dispatchFloat(op, dtype, f);
  }
}

} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_COMMON_CUH
