//===- Common.h - Helpers shared by the converter families ------*- C++ -*-===//
//
// Private to lib/Import/Converters: small helpers that more than one op
// family uses and that need no importer state.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_IMPORT_CONVERTERS_COMMON_H
#define GLIMMER_LIB_IMPORT_CONVERTERS_COMMON_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace glimmer::detail {

/// The number of elements of a tensor of `shape`.
inline int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace glimmer::detail

#endif // GLIMMER_LIB_IMPORT_CONVERTERS_COMMON_H
