//===- ExportNames.cpp - Names in the torch.export data model -------------===//
//
// The names PyTorch uses for the schema's enums and union members, and small
// queries on the data model.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Import/ExportArchive.h"

#include <iterator>

using namespace glimmer;
using namespace glimmer::pt2;

namespace {
struct ScalarTypeInfo {
  ScalarType type;
  const char *name;
  int64_t size;
};
} // namespace

static const ScalarTypeInfo kScalarTypes[] = {
    {ScalarType::Byte, "uint8", 1},
    {ScalarType::Char, "int8", 1},
    {ScalarType::Short, "int16", 2},
    {ScalarType::Int, "int32", 4},
    {ScalarType::Long, "int64", 8},
    {ScalarType::Half, "float16", 2},
    {ScalarType::Float, "float32", 4},
    {ScalarType::Double, "float64", 8},
    {ScalarType::ComplexHalf, "complex32", 4},
    {ScalarType::ComplexFloat, "complex64", 8},
    {ScalarType::ComplexDouble, "complex128", 16},
    {ScalarType::Bool, "bool", 1},
    {ScalarType::BFloat16, "bfloat16", 2},
    {ScalarType::UInt16, "uint16", 2},
    {ScalarType::Float8E4M3FN, "float8_e4m3fn", 1},
    {ScalarType::Float8E5M2, "float8_e5m2", 1},
    {ScalarType::Float8E4M3FNUZ, "float8_e4m3fnuz", 1},
    {ScalarType::Float8E5M2FNUZ, "float8_e5m2fnuz", 1},
};

static const ScalarTypeInfo *lookup(ScalarType type) {
  for (const ScalarTypeInfo &info : kScalarTypes)
    if (info.type == type)
      return &info;
  return nullptr;
}

llvm::StringRef pt2::getScalarTypeName(ScalarType type) {
  const ScalarTypeInfo *info = lookup(type);
  return info ? info->name : "unknown";
}

int64_t pt2::getScalarTypeSize(ScalarType type) {
  const ScalarTypeInfo *info = lookup(type);
  return info ? info->size : 0;
}

llvm::StringRef pt2::getLayoutName(Layout layout) {
  static const char *names[] = {"unknown",    "sparse_coo", "sparse_csr",
                                "sparse_csc", "sparse_bsr", "sparse_bsc",
                                "mkldnn",     "strided"};
  return names[int64_t(layout)];
}

llvm::StringRef pt2::getMemoryFormatName(MemoryFormat format) {
  static const char *names[] = {"unknown", "contiguous_format", "channels_last",
                                "channels_last_3d", "preserve_format"};
  return names[int64_t(format)];
}

llvm::StringRef pt2::getArgKindName(ArgKind kind) {
  static const char *names[] = {"as_none",
                                "as_tensor",
                                "as_tensors",
                                "as_optional_tensor",
                                "as_optional_tensors",
                                "as_int",
                                "as_ints",
                                "as_float",
                                "as_floats",
                                "as_bool",
                                "as_bools",
                                "as_string",
                                "as_strings",
                                "as_sym_int",
                                "as_sym_ints",
                                "as_sym_float",
                                "as_sym_floats",
                                "as_sym_bool",
                                "as_sym_bools",
                                "as_scalar_type",
                                "as_memory_format",
                                "as_layout",
                                "as_device",
                                "as_graph",
                                "as_custom_obj",
                                "as_operator"};
  static_assert(std::size(names) == size_t(ArgKind::Operator) + 1);
  return names[int(kind)];
}

llvm::StringRef pt2::getInputKindName(InputSpec::Kind kind) {
  static const char *names[] = {"user_input",      "parameter",  "buffer",
                                "tensor_constant", "custom_obj", "token",
                                "constant_input"};
  return names[kind];
}

llvm::StringRef pt2::getOutputKindName(OutputSpec::Kind kind) {
  static const char *names[] = {"user_output",
                                "loss_output",
                                "buffer_mutation",
                                "gradient_to_parameter",
                                "gradient_to_user_input",
                                "user_input_mutation",
                                "token",
                                "parameter_mutation"};
  return names[kind];
}

std::optional<std::string> SymInt::getSymbolName() const {
  // srepr of a sympy Symbol: Symbol('s77', positive=True, integer=True).
  llvm::StringRef e(expr);
  if (!e.consume_front("Symbol('"))
    return std::nullopt;
  size_t quote = e.find('\'');
  if (quote == llvm::StringRef::npos || quote == 0)
    return std::nullopt;
  // Only the symbol's assumptions may follow its name.
  llvm::StringRef rest = e.drop_front(quote + 1);
  if (rest != ")" &&
      (!rest.starts_with(", ") || !rest.ends_with(")") || rest.contains('(')))
    return std::nullopt;
  return e.take_front(quote).str();
}

const TensorMeta *Graph::getTensor(llvm::StringRef name) const {
  auto it = tensorValues.find(name.str());
  return it == tensorValues.end() ? nullptr : &it->second;
}

std::string pt2::getValueName(const Argument &arg) {
  switch (arg.kind) {
  case ArgKind::Tensor:
    return arg.get<std::string>();
  case ArgKind::SymInt:
    return arg.get<SymIntArg>().name;
  case ArgKind::SymFloat:
    return arg.get<SymFloatArg>().name;
  case ArgKind::SymBool:
    return arg.get<SymBoolArg>().name;
  case ArgKind::CustomObj:
    return arg.get<CustomObjArg>().name;
  default:
    return "";
  }
}
