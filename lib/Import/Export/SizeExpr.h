//===- SizeExpr.h - Symbolic sizes of torch.export programs -----*- C++ -*-===//
//
// Private to lib/Import: the value of a symbolic size as torch.export writes
// it (sympy's srepr, such as "Mul(Integer(2), Symbol('s77', positive=True,
// integer=True))"), given the values of its symbols.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_IMPORT_EXPORT_SIZEEXPR_H
#define GLIMMER_LIB_IMPORT_EXPORT_SIZEEXPR_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace glimmer::detail {

/// Evaluates `srepr` (Integer, Symbol, Add, Mul, FloorDiv, Mod and Pow with
/// an integer exponent) with `symbols`; nothing, with `error` set, for
/// another function, a symbol without a value or malformed text.
std::optional<int64_t>
evaluateSizeExpr(llvm::StringRef srepr,
                 const std::map<std::string, int64_t> &symbols,
                 std::string &error);

} // namespace glimmer::detail

#endif // GLIMMER_LIB_IMPORT_EXPORT_SIZEEXPR_H
