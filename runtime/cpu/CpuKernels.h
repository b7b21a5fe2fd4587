//===- CpuKernels.h - The CPU backend's kernels -----------------*- C++ -*-===//
//
// Internal to the runtime: the reference kernels that Kernels.h's functions
// call for tensors in host memory (the public API checks what does not
// depend on the backend, then routes here or to the CUDA backend). Floating
// point is f32 or f64, computed in the tensor's own precision.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_CPU_CPUKERNELS_H
#define GLIMMER_RT_CPU_CPUKERNELS_H

#include "glimmer_rt/Kernels.h"

namespace glimmer_rt::cpu {

Tensor full(DType dtype, const Shape &shape, double value);
Tensor constant(DType dtype, const Shape &shape,
                const std::vector<double> &values);
Tensor iota(DType dtype, const Shape &shape, int64_t dim);

#include "glimmer_rt/KernelDecls.inc"

// The norms' result type `out` checked (detail::normResultType).
Tensor rmsNorm(const Tensor &x, const Tensor &w, double eps, DType out);
std::tuple<Tensor, Tensor> addRmsNorm(const Tensor &lhs, const Tensor &rhs,
                                      const Tensor &w, double eps, DType out);
Tensor layerNorm(const Tensor &x, const Tensor &w, const Tensor &b, double eps,
                 DType out);

} // namespace glimmer_rt::cpu

#endif // GLIMMER_RT_CPU_CPUKERNELS_H
