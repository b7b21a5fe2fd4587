//===- FusionHost.h - Fused kernels compiled for the host ------*- C++ -*-===//
//
// Internal to the runtime: the first lines of fusedKernelsHostSource's
// translation unit. They give the CUDA constructs the generated kernels use
// their meaning on one host thread (a grid of one thread, which runs every
// iteration of the element loop), so that the kernels' index maps and
// arithmetic can be checked against their ops where there is no GPU.
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstring>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict

namespace glimmer_fusion_host {
struct Index {
  unsigned int x;
};
} // namespace glimmer_fusion_host
static const glimmer_fusion_host::Index blockIdx{0}, threadIdx{0},
    blockDim{1}, gridDim{1};

static inline float __uint_as_float(unsigned int x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
static inline unsigned int __float_as_uint(float f) {
  unsigned int x;
  std::memcpy(&x, &f, 4);
  return x;
}
static inline double __longlong_as_double(long long x) {
  double d;
  std::memcpy(&d, &x, 8);
  return d;
}
// One IEEE operation each, rounded to nearest (the file is compiled
// without contraction).
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
