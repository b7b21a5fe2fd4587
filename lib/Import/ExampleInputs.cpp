//===- ExampleInputs.cpp - Shapes of a program's inputs -------------------===//

#include "ExampleInputs.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

using namespace glimmer;
using namespace glimmer::detail;

static bool isKnownDtype(const std::string &dtype) {
  return dtype == "f32" || dtype == "f64" || dtype == "bf16" ||
         dtype == "f16" || dtype == "i64" || dtype == "i32" || dtype == "i1";
}

bool glimmer::parseInputShapes(const std::string &text,
                               std::vector<InputShape> &out,
                               std::string &error) {
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    size_t colon = entry.find(':');
    if (colon == std::string::npos || colon == 0) {
      error = "expected NAME:DIMSxDTYPE in --input-shapes, got '" + entry + "'";
      return false;
    }
    InputShape s;
    s.name = entry.substr(0, colon);
    std::string rest = entry.substr(colon + 1);
    std::stringstream parts(rest);
    std::string part;
    std::vector<std::string> pieces;
    while (std::getline(parts, part, 'x'))
      pieces.push_back(part);
    if (pieces.empty() || !isKnownDtype(pieces.back())) {
      error = "input '" + s.name + "': expected an element type (f32, f64, "
              "bf16, f16, i64, i32, i1) after the dimensions in '" + rest + "'";
      return false;
    }
    s.dtype = pieces.back();
    pieces.pop_back();
    for (const std::string &d : pieces) {
      char *end = nullptr;
      long long v = std::strtoll(d.c_str(), &end, 10);
      if (d.empty() || *end != '\0' || v <= 0) {
        error = "input '" + s.name + "': bad dimension '" + d + "' in '" +
                rest + "'";
        return false;
      }
      s.shape.push_back(v);
    }
    out.push_back(std::move(s));
  }
  return true;
}

mlir::LogicalResult ExampleInputs::load(mlir::MLIRContext &context,
                                        const ImportOptions &options) {
  auto unknown = mlir::UnknownLoc::get(&context);
  std::string error;
  if (!options.exampleInputsPath.empty()) {
    values = glimmer_rt::SafetensorsFile::read(options.exampleInputsPath, error);
    if (!values)
      return mlir::emitError(unknown) << "example inputs: " << error;
    sourceName = options.exampleInputsPath;
    return mlir::success();
  }
  if (!options.inputShapes.empty()) {
    if (!parseInputShapes(options.inputShapes, shapes, error))
      return mlir::emitError(unknown) << error;
    sourceName = "--input-shapes";
    return mlir::success();
  }
  return mlir::emitError(unknown)
         << "the forward arguments need shapes: pass --example-inputs=FILE "
            "or --input-shapes=NAME:DIMSxDTYPE,...";
}

std::vector<std::string> ExampleInputs::names() const {
  std::vector<std::string> out;
  if (values)
    for (const auto &t : values->tensors())
      out.push_back(t.name);
  else
    for (const InputShape &s : shapes)
      out.push_back(s.name);
  return out;
}

mlir::LogicalResult
ExampleInputs::checkNames(const std::vector<std::string> &accepted,
                          llvm::StringRef what, llvm::StringRef plural,
                          mlir::Location loc) const {
  for (const std::string &name : names())
    if (std::find(accepted.begin(), accepted.end(), name) == accepted.end())
      return mlir::emitError(loc)
             << "example input '" << name << "' matches no " << what << " ("
             << plural << ": " << joinNames(accepted) << ")";
  return mlir::success();
}

mlir::FailureOr<std::optional<mlir::RankedTensorType>> ExampleInputs::type(
    const std::string &name, mlir::Location loc,
    const std::function<mlir::Type(mlir::Type)> &overrideFloat) const {
  mlir::Builder b(loc.getContext());
  if (values) {
    const glimmer_rt::TensorInfo *t = values->find(name);
    if (!t)
      return std::optional<mlir::RankedTensorType>();
    mlir::Type elem;
    switch (t->dtype) {
    case glimmer_rt::DType::F32: elem = b.getF32Type(); break;
    case glimmer_rt::DType::F64: elem = b.getF64Type(); break;
    case glimmer_rt::DType::BF16: elem = b.getBF16Type(); break;
    case glimmer_rt::DType::F16: elem = b.getF16Type(); break;
    case glimmer_rt::DType::I64: elem = b.getI64Type(); break;
    case glimmer_rt::DType::I32: elem = b.getI32Type(); break;
    case glimmer_rt::DType::Bool: elem = b.getI1Type(); break;
    default:
      return mlir::emitError(loc)
             << "example input '" << name << "' has unsupported dtype "
             << glimmer_rt::dtypeName(t->dtype);
    }
    return std::optional(
        mlir::RankedTensorType::get(t->shape, overrideFloat(elem)));
  }
  for (const InputShape &s : shapes)
    if (s.name == name) {
      mlir::Type elem = llvm::StringSwitch<mlir::Type>(s.dtype)
                            .Case("f32", b.getF32Type())
                            .Case("f64", b.getF64Type())
                            .Case("bf16", b.getBF16Type())
                            .Case("f16", b.getF16Type())
                            .Case("i64", b.getI64Type())
                            .Case("i32", b.getI32Type())
                            .Default(b.getI1Type());
      return std::optional(
          mlir::RankedTensorType::get(s.shape, overrideFloat(elem)));
    }
  return std::optional<mlir::RankedTensorType>();
}

std::string glimmer::detail::joinNames(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? std::string("none") : s;
}
