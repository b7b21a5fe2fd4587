//===- GemmLt.cpp - bf16 GEMMs through cuBLASLt ---------------------------===//
//
// One cuBLASLt handle per device and one plan per GEMM shape (descriptors
// and the heuristic's algorithm), both kept for the process like the cuBLAS
// handles and cuDNN plans. Row-major C = op(A) op(B) is column-major
// C^T = op(B)^T op(A)^T, as in Gemm.cu. The workspace is a tensor from the
// runtime's allocator for each call, so concurrent streams never share one.
//
//===----------------------------------------------------------------------===//

#include "GemmLt.h"
#include "CudaBackend.h"

#include "glimmer_rt/Tensor.h"

#include <cublasLt.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace glimmer_rt {
namespace cuda {
namespace {

/// The most workspace a split-K or stream-K algorithm may take (what
/// PyTorch gives cuBLAS on Hopper).
constexpr size_t kMaxWorkspace = size_t(32) << 20;

[[noreturn]] void fail(const char *op, const char *what,
                       cublasStatus_t status) {
  throw RuntimeError(std::string("glimmer.") + op + ": cuBLASLt error in " +
                     what + ": " + cublasGetStatusString(status));
}

void checkLt(cublasStatus_t status, const char *op, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(op, what, status);
}

/// The largest power of two (up to 16) dividing a pointer: the heuristic
/// only offers kernels whose vector loads the operands' alignment allows.
uint32_t alignment(const void *p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 16;
  while (a > 2 && v % a != 0)
    a /= 2;
  return a;
}

using Key = std::tuple<int64_t, int64_t, int64_t, bool, int64_t, int64_t, bool,
                       int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool,
                       uint32_t, uint32_t, uint32_t>;

struct Plan {
  bool ok = false; // false: no algorithm; the caller falls back
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;
};

/// A device's cuBLASLt handle and plans (perDevice: never destroyed).
struct DeviceCache {
  std::mutex mutex;
  cublasLtHandle_t handle = nullptr;
  std::map<Key, Plan> plans;
};

DeviceCache &cacheFor(const char *op, int device) {
  return perDevice<DeviceCache>(device, [&](DeviceCache &cache) {
    if (!cache.handle)
      checkLt(cublasLtCreate(&cache.handle), op, "cublasLtCreate");
  });
}

/// A column-major layout of `rows` x `cols` bf16 with leading dimension ld,
/// `batch` of them `stride` elements apart.
cublasLtMatrixLayout_t layout(const char *op, int64_t rows, int64_t cols,
                              int64_t ld, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l;
  checkLt(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, uint64_t(rows),
                                     uint64_t(cols), ld),
          op, "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    int32_t count = int32_t(batch);
    checkLt(cublasLtMatrixLayoutSetAttribute(
                l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
            op, "cublasLtMatrixLayoutSetAttribute");
    checkLt(cublasLtMatrixLayoutSetAttribute(
                l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                sizeof(stride)),
            op, "cublasLtMatrixLayoutSetAttribute");
  }
  return l;
}

Plan build(const char *op, cublasLtHandle_t handle, const LtGemm &g,
           uint32_t alignA, uint32_t alignB, uint32_t alignC) {
  Plan p;
  // Column-major: D^T [N, M] = op(B)^T [N, K] * op(A)^T [K, M]; cuBLASLt's
  // first operand is our B, its second our A.
  checkLt(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), op,
          "cublasLtMatmulDescCreate");
  cublasOperation_t opFirst = g.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond = g.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  checkLt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                         &opFirst, sizeof(opFirst)),
          op, "cublasLtMatmulDescSetAttribute");
  checkLt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                         &opSecond, sizeof(opSecond)),
          op, "cublasLtMatmulDescSetAttribute");
  if (g.bias) {
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    checkLt(cublasLtMatmulDescSetAttribute(p.desc,
                                           CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &epilogue, sizeof(epilogue)),
            op, "cublasLtMatmulDescSetAttribute");
    cudaDataType_t biasType = CUDA_R_16BF;
    checkLt(cublasLtMatmulDescSetAttribute(p.desc,
                                           CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                           &biasType, sizeof(biasType)),
            op, "cublasLtMatmulDescSetAttribute");
  }
  // Stored shapes (before op): our B is [N, K] (or [K, N] transposed) in
  // the column-major view, our A [K, M] (or [M, K]).
  p.a = g.b.transposed ? layout(op, g.K, g.N, g.b.ld, g.batch, g.b.stride)
                       : layout(op, g.N, g.K, g.b.ld, g.batch, g.b.stride);
  p.b = g.a.transposed ? layout(op, g.M, g.K, g.a.ld, g.batch, g.a.stride)
                       : layout(op, g.K, g.M, g.a.ld, g.batch, g.a.stride);
  p.c = layout(op, g.N, g.M, g.ldc, g.batch, g.strideC);

  cublasLtMatmulPreference_t pref;
  checkLt(cublasLtMatmulPreferenceCreate(&pref), op,
          "cublasLtMatmulPreferenceCreate");
  size_t workspace = kMaxWorkspace;
  // Split-K partials in f32 only: never summed in bf16.
  uint32_t reduction =
      CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignB},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignA},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignC},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignC}};
  checkLt(cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
              sizeof(workspace)),
          op, "cublasLtMatmulPreferenceSetAttribute");
  checkLt(cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction,
              sizeof(reduction)),
          op, "cublasLtMatmulPreferenceSetAttribute");
  for (auto &[attr, value] : aligns)
    checkLt(
        cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)),
        op, "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result;
  std::memset(&result, 0, sizeof(result));
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_SUCCESS && found > 0 &&
      result.state == CUBLAS_STATUS_SUCCESS) {
    p.ok = true;
    p.algo = result.algo;
    p.workspace = result.workspaceSize;
  }
  return p;
}

} // namespace

bool gemmLtEnabled() {
  static const bool on = [] {
    const char *e = std::getenv("GLIMMER_CUDA_GEMM");
    if (!e || !*e || std::string(e) == "cublaslt")
      return true;
    if (std::string(e) == "cublas")
      return false;
    throw RuntimeError(std::string("GLIMMER_CUDA_GEMM must be 'cublaslt' or "
                                   "'cublas', got '") +
                       e + "'");
  }();
  return on;
}

bool gemmLt(const char *op, int device, cudaStream_t stream, const LtGemm &g) {
  if (g.bias && (g.batch != 1 || g.accumulate))
    return false;
  DeviceCache &cache = cacheFor(op, device);
  std::lock_guard<std::mutex> lock(cache.mutex);
  uint32_t alignA = alignment(g.a.ptr), alignB = alignment(g.b.ptr),
           alignC = alignment(g.c);
  Key key{g.M,
          g.N,
          g.K,
          g.a.transposed,
          g.a.ld,
          g.a.stride,
          g.b.transposed,
          g.b.ld,
          g.b.stride,
          g.ldc,
          g.strideC,
          g.batch,
          g.accumulate,
          g.bias != nullptr,
          alignA,
          alignB,
          alignC};
  auto it = cache.plans.find(key);
  if (it == cache.plans.end())
    it = cache.plans
             .emplace(key, build(op, cache.handle, g, alignA, alignB, alignC))
             .first;
  Plan &p = it->second;
  if (!p.ok)
    return false;
  if (g.bias)
    checkLt(cublasLtMatmulDescSetAttribute(p.desc,
                                           CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                           &g.bias, sizeof(g.bias)),
            op, "cublasLtMatmulDescSetAttribute");
  Tensor workspace;
  if (p.workspace > 0)
    workspace = Tensor(DType::U8, {int64_t(p.workspace)}, Device::cuda(device));
  const float one = 1.0f, zero = 0.0f;
  checkLt(cublasLtMatmul(cache.handle, p.desc, &one, g.b.ptr, p.a, g.a.ptr, p.b,
                         g.accumulate ? &one : &zero, g.c, p.c, g.c, p.c,
                         &p.algo, p.workspace > 0 ? workspace.raw() : nullptr,
                         p.workspace, stream),
          op, "cublasLtMatmul");
  return true;
}

} // namespace cuda
} // namespace glimmer_rt
