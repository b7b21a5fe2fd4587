//===- glimmer-translate.cpp - Glimmer translation driver -----------------===//
//
// Translations into and out of the glimmer dialect:
//   --import-torchscript MODEL.pt --example-inputs=BATCH.safetensors
//       [--input-shapes=...] [--dtype=f32|f64|bf16]
//       [--weights-out=W.safetensors] -o OUT.mlir
//   --import-export MODEL.pt2 (the same options): a torch.export archive
//   --emit-cpp PROGRAM.mlir -o PROGRAM.cpp
//
//===----------------------------------------------------------------------===//

#include "glimmer/Conversion/Passes.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer/Import/Export.h"
#include "glimmer/Import/TorchScript.h"
#include "glimmer_rt/ToolArguments.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

static llvm::cl::opt<std::string> exampleInputs(
    "example-inputs",
    llvm::cl::desc("safetensors file whose tensors bind to forward arguments "
                   "by name (import-torchscript, import-export)"),
    llvm::cl::value_desc("file"), llvm::cl::init(""));
static llvm::cl::opt<std::string> inputShapes(
    "input-shapes",
    llvm::cl::desc("Forward argument shapes instead of --example-inputs, e.g. "
                   "tokens:2x64xi64,images:2x3x224x224xf32"),
    llvm::cl::value_desc("list"), llvm::cl::init(""));
static llvm::cl::opt<std::string> floatType(
    "dtype",
    llvm::cl::desc("Run every floating-point tensor at this precision: f32 or "
                   "f64; or bf16 / bf16-autocast: f32 parameters and loss, "
                   "bf16 compute (an f32 import followed by "
                   "glimmer-mixed-precision, policy bf16 or autocast) "
                   "(import-torchscript, import-export; default: as traced)"),
    llvm::cl::value_desc("f32|f64|bf16|bf16-autocast"), llvm::cl::init(""));
static llvm::cl::opt<std::string> weightsOut(
    "weights-out",
    llvm::cl::desc("Write the model's parameters and buffers here as "
                   "safetensors, keyed by state_dict name (import-torchscript, import-export)"),
    llvm::cl::value_desc("file"), llvm::cl::init(""));

using Importer = mlir::OwningOpRef<mlir::ModuleOp> (*)(
    mlir::MLIRContext &, const glimmer::ImportOptions &);

/// A translation that imports the input file with `importer`, then applies
/// --dtype's mixed-precision policy.
static mlir::TranslateSourceMgrToMLIRFunction importWith(Importer importer) {
  return [importer](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
                    mlir::MLIRContext *context)
             -> mlir::OwningOpRef<mlir::Operation *> {
    glimmer::ImportOptions options;
    options.modelPath = sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID())
                            ->getBufferIdentifier()
                            .str();
    options.exampleInputsPath = exampleInputs;
    options.inputShapes = inputShapes;
    options.weightsOutputPath = weightsOut;
    // The files, before the import (the model file is open already; it may
    // still be empty).
    std::string fileError;
    if (!glimmer_rt::checkInputFile("model", options.modelPath, fileError) ||
        (!exampleInputs.empty() &&
         !glimmer_rt::checkInputFile("--example-inputs", exampleInputs,
                                     fileError)) ||
        (!weightsOut.empty() &&
         !glimmer_rt::checkOutputFile("--weights-out", weightsOut,
                                      fileError))) {
      mlir::emitError(mlir::UnknownLoc::get(context)) << fileError;
      return nullptr;
    }
    llvm::StringRef policy = glimmer::mixedPrecisionPolicy(floatType);
    bool mixedPrecision = !policy.empty();
    if (!floatType.empty() && floatType != "f32" && floatType != "f64" &&
        !mixedPrecision) {
      mlir::emitError(mlir::UnknownLoc::get(context))
          << "--dtype must be f32, f64, bf16 or bf16-autocast, got '"
          << floatType << "'";
      return nullptr;
    }
    options.floatType =
        mixedPrecision ? std::string("f32") : floatType.getValue();
    mlir::OwningOpRef<mlir::ModuleOp> module = importer(*context, options);
    if (!module)
      return nullptr;
    if (mixedPrecision) {
      mlir::PassManager pm(context);
      glimmer::GlimmerMixedPrecisionOptions precision;
      precision.policy = policy.str();
      pm.addPass(glimmer::createGlimmerMixedPrecision(precision));
      if (mlir::failed(pm.run(*module)))
        return nullptr;
    }
    return mlir::OwningOpRef<mlir::Operation *>(module.release());
  };
}

int main(int argc, char **argv) {
  auto importDialects = [](mlir::DialectRegistry &registry) {
    registry.insert<glimmer::GlimmerDialect, mlir::func::FuncDialect>();
  };
  mlir::TranslateToMLIRRegistration importTorchScript(
      "import-torchscript",
      "Import the forward of a TorchScript archive into the glimmer dialect",
      importWith(glimmer::importTorchScript), importDialects);
  mlir::TranslateToMLIRRegistration importExport(
      "import-export",
      "Import a torch.export archive (.pt2) into the glimmer dialect",
      importWith(glimmer::importExportedProgram), importDialects);
  mlir::TranslateFromMLIRRegistration emitCpp(
      "emit-cpp",
      "Lower glimmer functions to runtime calls and print them as C++",
      [](mlir::Operation *op, llvm::raw_ostream &os) -> mlir::LogicalResult {
        auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
        if (!module)
          return op->emitError() << "--emit-cpp expects a builtin.module";
        return glimmer::emitCpp(module, os);
      },
      [](mlir::DialectRegistry &registry) {
        registry.insert<glimmer::GlimmerDialect, mlir::func::FuncDialect,
                        mlir::emitc::EmitCDialect>();
      });
  return mlir::failed(mlir::mlirTranslateMain(argc, argv,
                                              "Glimmer translation driver"))
             ? 1
             : 0;
}
