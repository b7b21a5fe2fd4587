//===- Fusion.cu - Fused kernels compiled with NVRTC ----------------------===//
//
// A program's fused kernels (glimmer.fusion, see glimmer_rt/Fusion.h) are
// one CUDA source in the generated C++. The first time one runs on a GPU of
// some architecture, NVRTC compiles the whole source for it, with the
// runtime's headers the source includes (FusionPrelude.cuh and what it
// includes, embedded at build time), and the cubin is loaded as a CUDA
// library, which serves every device of that architecture. Kernels launch on
// the device's stream like every other kernel.
//
// The options keep the kernels' arithmetic that of the runtime's kernels:
// nvcc's defaults (IEEE division and square root, no flush to zero, fused
// multiply-add contraction inside one op's formula) and explicit
// round-to-nearest intrinsics between ops in the generated code.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseUtil.cuh"
#include "../common/FusionHeaders.h"
#include "glimmer_rt/Fusion.h"

#include <nvrtc.h>

#include <cstdlib>
#include <cstring>
#include <map>

namespace glimmer_rt {

namespace {

struct Module {
  cudaLibrary_t library = nullptr;
  std::vector<cudaKernel_t> kernels; // by index, looked up on first use
};

void checkNvrtc(nvrtcResult status, const char *what) {
  if (status != NVRTC_SUCCESS)
    throw RuntimeError(std::string("glimmer.fusion: ") + what + ": " +
                       nvrtcGetErrorString(status));
}

int architecture(int device) {
  int major = 0, minor = 0;
  GLIMMER_CUDA_CHECK(cudaDeviceGetAttribute(
      &major, cudaDevAttrComputeCapabilityMajor, device));
  GLIMMER_CUDA_CHECK(cudaDeviceGetAttribute(
      &minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

/// The cubin of `source` for sm_<arch>.
std::vector<char> compile(const char *source, int arch) {
  std::vector<const char *> names, texts;
  for (const fusion::Header &h : fusion::headers()) {
    names.push_back(h.name);
    texts.push_back(h.text);
  }
  nvrtcProgram program;
  checkNvrtc(nvrtcCreateProgram(&program, source, "glimmer_fusions.cu",
                                int(names.size()), texts.data(),
                                names.data()),
             "creating the fused kernels' NVRTC program");
  std::string archFlag = "--gpu-architecture=sm_" + std::to_string(arch);
  const char *options[] = {archFlag.c_str(), "--std=c++17", "-w"};
  nvrtcResult status = nvrtcCompileProgram(program, 3, options);
  if (status != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    nvrtcDestroyProgram(&program);
    if (log.size() > 4000)
      log = log.substr(0, 4000) + "\n...";
    throw RuntimeError("glimmer.fusion: NVRTC could not compile the "
                       "program's fused kernels for sm_" +
                       std::to_string(arch) + ":\n" + log);
  }
  size_t size = 0;
  checkNvrtc(nvrtcGetCUBINSize(program, &size), "reading the cubin's size");
  std::vector<char> cubin(size);
  checkNvrtc(nvrtcGetCUBIN(program, cubin.data()), "reading the cubin");
  nvrtcDestroyProgram(&program);
  return cubin;
}

} // namespace

struct FusedKernels::Compiled {
  std::map<int, Module> byArch;
  std::map<int, int> archOfDevice;
};

FusedKernels::~FusedKernels() {
  if (!compiled)
    return;
  // Failures are ignored: at process exit the CUDA runtime may be gone.
  for (auto &[arch, module] : compiled->byArch)
    if (module.library)
      cudaLibraryUnload(module.library);
  delete compiled;
}

namespace {
enum class FusionMode { On, Off, Check };

FusionMode fusionMode() {
  static const FusionMode mode = [] {
    const char *e = std::getenv("GLIMMER_CUDA_FUSION");
    if (!e || std::strcmp(e, "on") == 0)
      return FusionMode::On;
    if (std::strcmp(e, "off") == 0)
      return FusionMode::Off;
    if (std::strcmp(e, "check") == 0)
      return FusionMode::Check;
    throw RuntimeError(std::string("GLIMMER_CUDA_FUSION must be 'on', "
                                   "'off' or 'check', got '") +
                       e + "'");
  }();
  return mode;
}

} // namespace

bool fusedKernelsEnabled() { return fusionMode() != FusionMode::Off; }

namespace cuda {

std::vector<Tensor> runFused(FusedKernels &kernels, int index,
                             const std::vector<Tensor> &inputs,
                             const std::vector<FusedResult> &results,
                             FusedOps ops) {
  Ctx c("fusion", {&inputs.front()});
  for (const Tensor &t : inputs)
    check(t.defined() && t.device() == c.device, "fusion",
          "expects every input on " + c.device.str() + ", got " +
              t.describe());
  cudaKernel_t kernel;
  {
    std::lock_guard<std::mutex> guard(kernels.lock);
    if (!kernels.compiled)
      kernels.compiled = new FusedKernels::Compiled;
    FusedKernels::Compiled &state = *kernels.compiled;
    auto archIt = state.archOfDevice.find(c.device.index);
    if (archIt == state.archOfDevice.end())
      archIt = state.archOfDevice
                   .emplace(c.device.index, architecture(c.device.index))
                   .first;
    Module &module = state.byArch[archIt->second];
    if (!module.library) {
      std::vector<char> cubin = compile(kernels.cudaSource(), archIt->second);
      GLIMMER_CUDA_CHECK(cudaLibraryLoadData(&module.library, cubin.data(),
                                             nullptr, nullptr, 0, nullptr,
                                             nullptr, 0));
    }
    if (index < 0)
      fail("fusion", "kernel index " + std::to_string(index) +
                         " is out of range");
    if (module.kernels.size() <= size_t(index))
      module.kernels.resize(size_t(index) + 1, nullptr);
    if (!module.kernels[size_t(index)]) {
      std::string name = "glimmer_fused_" + std::to_string(index);
      GLIMMER_CUDA_CHECK(cudaLibraryGetKernel(&module.kernels[size_t(index)],
                                              module.library, name.c_str()));
    }
    kernel = module.kernels[size_t(index)];
  }
  std::vector<Tensor> out;
  std::vector<void *> pointers; // the kernel's parameters
  for (const Tensor &t : inputs)
    pointers.push_back(const_cast<void *>(t.raw()));
  for (const FusedResult &r : results) {
    out.push_back(c.empty(r.dtype, r.shape));
    pointers.push_back(out.back().raw());
  }
  std::vector<void *> args;
  for (void *&p : pointers)
    args.push_back(&p);
  int64_t n = numElements(results.front().shape);
  if (n > 0) {
    // A thread per eight elements: the kernels' vector loops take eight per
    // iteration (the element loops stride over the grid, whatever its size).
    GLIMMER_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void *>(kernel),
                                        dim3(blocksFor((n + 7) / 8)),
                                        dim3(kThreads),
                                        args.data(), 0, c.stream));
  }
  if (fusionMode() == FusionMode::Check)
    requireSameResults(index, out, ops(inputs));
  return out;
}

} // namespace cuda
} // namespace glimmer_rt
