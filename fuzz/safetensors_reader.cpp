//===- safetensors_reader.cpp - Fuzz SafetensorsFile::parse ---------------===//
//
// Any byte string is either rejected with a message or yields tensors whose
// byte ranges lie inside the image and match their dtype and shape; every
// byte of every accepted tensor is read, so a range the reader got wrong is
// an ASan finding.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Safetensors.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

using namespace glimmer_rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string error;
  std::unique_ptr<SafetensorsFile> file = SafetensorsFile::parse(
      std::vector<uint8_t>(data, data + size), "fuzz.safetensors", error);
  if (!file) {
    if (error.empty()) {
      std::fprintf(stderr, "rejected without a message\n");
      std::abort();
    }
    return 0;
  }
  unsigned sum = 0;
  for (const TensorInfo &t : file->tensors()) {
    if (t.end < t.begin || t.end - t.begin != uint64_t(t.numElements()) *
                                                  dtypeSize(t.dtype)) {
      std::fprintf(stderr, "tensor '%s': byte range does not match its "
                           "dtype and shape\n", t.name.c_str());
      std::abort();
    }
    if (file->find(t.name) == nullptr) {
      std::fprintf(stderr, "tensor '%s' cannot be found by name\n",
                   t.name.c_str());
      std::abort();
    }
    const uint8_t *p = file->data(t);
    for (uint64_t i = 0; i < t.end - t.begin; ++i)
      sum += p[i];
  }
  for (const auto &[key, value] : file->metadata())
    sum += key.size() + value.size();
  // Keeps the reads above from being optimized away.
  volatile unsigned sink = sum;
  (void)sink;
  return 0;
}
