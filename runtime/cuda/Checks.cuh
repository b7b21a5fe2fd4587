//===- Checks.cuh - Host-side operand checks of the CUDA kernels -*- CUDA -*-===//
//
// Internal to the runtime's CUDA backend: the CPU kernels' checks and
// messages ("glimmer.<op>: expects ..."), with bf16 among the floating-point
// types. In an anonymous namespace: each kernel file gets its own copy.
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

void requireDefined(const char *op, const Tensor &t, const char *name) {
  check(t.defined(), op, std::string("missing ") + name);
}

void requireFloat(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(isFloatType(t.dtype()), op,
        std::string("expects ") + name + " of type f32, f64 or bf16, got " +
            t.describe());
}

void requireInt(const char *op, const Tensor &t, const char *name) {
  requireDefined(op, t, name);
  check(t.dtype() == DType::I32 || t.dtype() == DType::I64, op,
        std::string("expects ") + name + " of type i32 or i64, got " +
            t.describe());
}

void requireRank(const char *op, const Tensor &t, const char *name,
                 int64_t rank) {
  check(t.rank() == rank, op,
        std::string("expects ") + name + " of rank " + std::to_string(rank) +
            ", got " + t.describe());
}

void requireShape(const char *op, const Tensor &t, const char *name,
                  const Shape &shape) {
  check(t.shape() == shape, op,
        std::string("expects ") + name + " of shape " + shapeString(shape) +
            ", got " + t.describe());
}

void requireLike(const char *op, const Tensor &t, const char *name,
                 const Tensor &ref, const char *refName) {
  requireDefined(op, t, name);
  check(t.dtype() == ref.dtype() && t.shape() == ref.shape(), op,
        std::string("expects ") + name + " like " + refName + " (" +
            ref.describe() + "), got " + t.describe());
}

} // namespace
} // namespace cuda
} // namespace glimmer_rt

#endif // GLIMMER_RT_CUDA_CHECKS_CUH
