//===- Checks.cuh - Host-side operand checks of the CUDA kernels -*- CUDA -*-===//
//
// Internal to the runtime's CUDA backend: the backends' shared checks
// (kernels/Checks.h) and the floating-point type check with bf16 among the
// types ("glimmer.<op>: expects ..."). In an anonymous namespace: each kernel
// file gets its own copy.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CUDA_CHECKS_CUH
#define GLIMMER_RT_CUDA_CHECKS_CUH

#include "Common.cuh"

namespace glimmer_rt {
namespace cuda {
namespace {

bool isFloatType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16;
}

using detail::requireDefined;
using detail::requireInt;
using detail::requireLike;
using detail::requireRank;
using detail::requireShape;

void requireFloat(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isFloatType(t.dtype()), op,
        std::string("expects ") + name + " of type f32, f64 or bf16, got " +
            t.describe());
}

} // namespace
} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_CHECKS_CUH
