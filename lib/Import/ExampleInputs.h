//===- ExampleInputs.h - Shapes of a program's inputs -----------*- C++ -*-===//
//
// Private to lib/Import: the shapes and dtypes of a program's inputs, from
// --example-inputs (a safetensors batch, bound to inputs by name) or
// --input-shapes, shared by the front ends.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_IMPORT_EXAMPLEINPUTS_H
#define GLIMMER_LIB_IMPORT_EXAMPLEINPUTS_H

#include "glimmer/Import/ImportOptions.h"
#include "glimmer_rt/Safetensors.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace glimmer::detail {

class ExampleInputs {
public:
  /// Reads the example inputs `options` names; errors are emitted on
  /// `context` (no shapes given, an unreadable batch, malformed
  /// --input-shapes).
  mlir::LogicalResult load(mlir::MLIRContext &context,
                           const ImportOptions &options);
  /// The names the inputs are given under, in their order.
  std::vector<std::string> names() const;
  /// Fails (emitting at `loc`) when an example input names none of
  /// `accepted`: "example input 'x' matches no <what> (<plural>: a, b)".
  mlir::LogicalResult checkNames(const std::vector<std::string> &accepted,
                                 llvm::StringRef what, llvm::StringRef plural,
                                 mlir::Location loc) const;
  /// Where they come from: the batch's path or "--input-shapes".
  const std::string &source() const { return sourceName; }
  /// The type of input `name`, its floating-point element type passed
  /// through `overrideFloat`; nothing when none is given. Fails (emitting
  /// at `loc`) on a batch dtype the importer has no type for.
  mlir::FailureOr<std::optional<mlir::RankedTensorType>>
  type(const std::string &name, mlir::Location loc,
       const std::function<mlir::Type(mlir::Type)> &overrideFloat) const;
  /// The batch with the example values, or null under --input-shapes.
  const glimmer_rt::SafetensorsFile *batch() const { return values.get(); }

private:
  std::unique_ptr<glimmer_rt::SafetensorsFile> values;
  std::vector<InputShape> shapes;
  std::string sourceName;
};

/// "a, b, c", or "none" for an empty list.
std::string joinNames(const std::vector<std::string> &names);

} // namespace glimmer::detail

#endif // GLIMMER_LIB_IMPORT_EXAMPLEINPUTS_H
