//===- manifest_reader.cpp - Fuzz ProgramInfo::parseManifest --------------===//
//
// The manifest is text embedded in a compiled program (a .so that
// glimmer-run loads from anywhere). Any text is either rejected with a
// message or parsed; an accepted manifest prints back into one that parses.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Trainer.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

using namespace glimmer_rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  ProgramInfo info;
  std::string error;
  if (!ProgramInfo::parseManifest(text, info, error)) {
    if (error.empty()) {
      std::fprintf(stderr, "rejected without a message\n");
      std::abort();
    }
    return 0;
  }
  ProgramInfo again;
  if (!ProgramInfo::parseManifest(info.toManifest(), again, error)) {
    std::fprintf(stderr, "printed manifest does not parse: %s\n",
                 error.c_str());
    std::abort();
  }
  return 0;
}
