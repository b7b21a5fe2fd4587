//===- Vector.cuh - Several neighbouring elements per memory access -*- CUDA -*-===//
//
// Internal to the CUDA backend: the vectorized kernels (elementwise ops,
// conversions, the optimizers) load and store kVec neighbouring elements
// as one 8- or 16-byte word (bf16, f32) or two (f64), a quarter of a scalar
// loop's memory instructions; each element is computed as in the scalar
// loop, so the results are the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_VECTOR_CUH
#define GLIMMER_RT_CUDA_VECTOR_CUH

#include "glimmer_rt/Tensor.h"

#include <cstdint>
#include <initializer_list>
#include <utility>

namespace glimmer_rt {
namespace cuda {

/// Elements per thread and access.
constexpr int kVec = 4;

/// The alignment of one access to kVec elements of `bytes` bytes: at most
/// 16 (an f64 vector is two 16-byte accesses).
constexpr int packAlignment(int bytes) {
  return bytes * kVec < 16 ? bytes * kVec : 16;
}

/// kVec elements of `Bytes` bytes each, aligned as one access.
template <int Bytes> struct alignas(packAlignment(Bytes)) ElemPack {
  unsigned char b[Bytes * kVec];
};

constexpr int bytesOf(DType t) {
  return t == DType::F64 || t == DType::I64 ? 8
         : t == DType::F32 || t == DType::I32 ? 4
         : t == DType::BF16                  ? 2
                                             : 1;
}

/// Whether every pointer is aligned for the ElemPack accesses of its
/// element size (the allocator's buffers are; views at odd offsets may not
/// be).
inline bool packAligned(std::initializer_list<std::pair<const void *, int>> ps) {
  for (auto [p, bytes] : ps)
    if (reinterpret_cast<uintptr_t>(p) % uintptr_t(packAlignment(bytes)) != 0)
      return false;
  return true;
}

} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_VECTOR_CUH
