//===- DType.h - Element types of tensors -----------------------*- C++ -*-===//
//
// The element types that compiled programs, the runtime and safetensors files
// share, with their names: the manifest and safetensors files name them as
// safetensors does ("F32", "BOOL"); generated C++ spells them as enumerators
// (glimmer_rt::DType::Bool).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONTRACT_DTYPE_H
#define GLIMMER_CONTRACT_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace glimmer {

enum class DType { F64, F32, BF16, F16, I64, I32, I16, I8, U8, Bool };
/// Every element type, in the enum's order.
inline constexpr DType kAllDTypes[] = {
    DType::F64, DType::F32, DType::BF16, DType::F16, DType::I64,
    DType::I32, DType::I16, DType::I8,   DType::U8,  DType::Bool};

/// Bytes per element.
size_t dtypeSize(DType dtype);
/// The safetensors name: "F32", "I64", "BOOL", ...
std::string_view dtypeName(DType dtype);
std::optional<DType> dtypeFromName(std::string_view name);
/// The enumerator's name: "F32", "I64", "Bool", ...
std::string_view dtypeEnumerator(DType dtype);
bool isFloating(DType dtype);

} // namespace glimmer

#endif // GLIMMER_CONTRACT_DTYPE_H
