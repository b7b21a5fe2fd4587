//===- spmd_parser.cpp - Fuzz SpmdContext::parse --------------------------===//
//
// Any text is either rejected with a message or parsed into a layout whose
// canonical form parses back to the same layout (the header's promise), and
// whose world size is well defined.
//
//===----------------------------------------------------------------------===//

#include "glimmer_contract/SpmdContext.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<glimmer::SpmdContext> layout =
      glimmer::SpmdContext::parse(text, &error);
  if (!layout) {
    if (error.empty()) {
      std::fprintf(stderr, "rejected without a message\n");
      std::abort();
    }
    return 0;
  }
  if (layout->worldSize() < 1 || !layout->validate().empty()) {
    std::fprintf(stderr, "accepted an invalid layout\n");
    std::abort();
  }
  std::string printed = layout->print();
  std::optional<glimmer::SpmdContext> again =
      glimmer::SpmdContext::parse(printed, &error);
  if (!again || *again != *layout || again->print() != printed) {
    std::fprintf(stderr, "'%s' does not round-trip\n", printed.c_str());
    std::abort();
  }
  return 0;
}
