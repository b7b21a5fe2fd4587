//===- NcclKernels.cu - Device helpers of the NCCL communicators ---------===//
//
// send() passes a tensor's dtype and shape ahead of its data as a small
// header in device memory. Writing it with a kernel, instead of copying it
// from the host, keeps send() asynchronous: a copy from pageable host
// memory would make the host wait for the stream (and so for every
// collective queued before it).
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>

#include <cstdint>

namespace glimmer_rt {
namespace nccl_detail {

constexpr int kMaxWords = 32;

/// Passed by value: kernel parameters are copied when the launch is queued.
struct Words {
  int64_t values[kMaxWords];
};

__global__ void writeWordsKernel(int64_t *dst, Words words, int count) {
  int i = int(threadIdx.x);
  if (i < count)
    dst[i] = words.values[i];
}

/// Queues a write of `count` (at most 32) words to device memory `dst` on
/// `stream`; the caller's `words` may be reused as soon as this returns.
cudaError_t writeWords(int64_t *dst, const int64_t *words, int count,
                       cudaStream_t stream) {
  if (count < 0 || count > kMaxWords)
    return cudaErrorInvalidValue;
  Words w{};
  for (int i = 0; i < count; ++i)
    w.values[i] = words[i];
  writeWordsKernel<<<1, kMaxWords, 0, stream>>>(dst, w, count);
  return cudaGetLastError();
}

} // namespace nccl_detail
} // namespace glimmer_rt
