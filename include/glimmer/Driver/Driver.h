//===- Driver.h - Compile a model to a loaded runtime program ---*- C++ -*-===//
//
// The compile-then-run flow shared by glimmer-train and the Python module:
// import TorchScript, run the pipeline, emit C++, compile it with the system
// C++ compiler into a shared library (cached by content), load it, and bind
// data and weights to its arguments by name.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_DRIVER_DRIVER_H
#define GLIMMER_DRIVER_DRIVER_H

#include "glimmer_rt/Loader.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/LogicalResult.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace glimmer {

struct DriverOptions {
  std::string modelPath;
  /// Example batch (safetensors); binds forward arguments by name.
  std::string dataPath;
  /// "f32" or "f64".
  std::string floatType = "f32";
  /// Where generated sources, compiled programs and exported weights go.
  std::string cacheDir;
  /// Progress messages ("importing ...") go here when set.
  std::function<void(const std::string &)> progress;
};

/// One argument of the compiled program.
struct ProgramArgument {
  enum Kind { Input, Parameter, Buffer } kind;
  std::string name;
  glimmer_rt::DType dtype;
  glimmer_rt::Shape shape;
};

struct CompiledModel {
  std::unique_ptr<glimmer_rt::LoadedProgram> program;
  std::vector<ProgramArgument> arguments;
  /// The imported (pre-lowering) module, for inspection.
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string cppSource;
  std::string weightsPath;
  std::string libraryPath;
};

/// Compiles and loads the model. Diagnostics are reported on `context`;
/// failures of the C++ compiler are reported with its output.
llvm::FailureOr<CompiledModel> compileModel(mlir::MLIRContext &context,
                                            const DriverOptions &options);

/// Builds the program's inputs: forward inputs from `data` and parameters
/// and buffers from the model's exported weights, converted to the dtypes
/// the program was compiled for. On a missing or mis-shaped tensor returns
/// false and sets `error`.
bool bindArguments(const CompiledModel &model,
                   const glimmer_rt::SafetensorsFile &data,
                   std::vector<glimmer_rt::Tensor> &inputs, std::string &error);

} // namespace glimmer

#endif // GLIMMER_DRIVER_DRIVER_H
