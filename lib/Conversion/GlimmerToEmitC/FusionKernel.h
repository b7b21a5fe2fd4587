//===- FusionKernel.h - CUDA source of a glimmer.fusion --------*- C++ -*-===//
//
// Internal to GlimmerToEmitC: the CUDA C++ kernel that computes a fusion's
// results in one pass over their index space, for the runtime to compile
// with NVRTC (its source starts with runtime/cuda/FusionPrelude.cuh).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONVERSION_GLIMMERTOEMITC_FUSIONKERNEL_H
#define GLIMMER_CONVERSION_GLIMMERTOEMITC_FUSIONKERNEL_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include <string>

namespace glimmer {

/// The kernel's definition with `name` as its (extern "C") symbol. Its
/// parameters are the inputs' then the results' element pointers, in order;
/// one thread computes one element of the results per step of a
/// grid-stride loop. Under GLIMMER_FUSION_HOST (the host build that checks
/// kernels without a GPU) it is followed by `NAME_host(void *const *p)`,
/// which calls it with the pointers p[0], p[1], ... in parameter order.
/// Fails with an error on the op it cannot express.
mlir::FailureOr<std::string> emitFusionKernel(FusionOp fusion,
                                              llvm::StringRef name);

} // namespace glimmer

#endif // GLIMMER_CONVERSION_GLIMMERTOEMITC_FUSIONKERNEL_H
