//===- DType.cpp - Element types of tensors -------------------------------===//

#include "glimmer_contract/DType.h"

using namespace glimmer;

namespace {
struct DTypeEntry {
  DType dtype;
  const char *name;
  const char *enumerator;
  size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {DType::F64, "F64", "F64", 8},    {DType::F32, "F32", "F32", 4},
    {DType::BF16, "BF16", "BF16", 2}, {DType::F16, "F16", "F16", 2},
    {DType::I64, "I64", "I64", 8},    {DType::I32, "I32", "I32", 4},
    {DType::I16, "I16", "I16", 2},    {DType::I8, "I8", "I8", 1},
    {DType::U8, "U8", "U8", 1},       {DType::Bool, "BOOL", "Bool", 1}};
} // namespace

size_t glimmer::dtypeSize(DType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e.size;
  return 0;
}

std::string_view glimmer::dtypeName(DType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e.name;
  return "?";
}

std::optional<DType> glimmer::dtypeFromName(std::string_view name) {
  for (const DTypeEntry &e : kDTypes)
    if (name == e.name)
      return e.dtype;
  return std::nullopt;
}

std::string_view glimmer::dtypeEnumerator(DType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e.enumerator;
  return "?";
}

bool glimmer::isFloating(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::BF16 ||
         dtype == DType::F16;
}
