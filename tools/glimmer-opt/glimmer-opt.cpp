//===- glimmer-opt.cpp - Glimmer optimizer driver -------------------------===//
//
// mlir-opt for the glimmer dialect, plus --spmd=LAYOUT, which sets the
// thread's SpmdContext for the run (read by glimmer-attach-spmd).
//
//===----------------------------------------------------------------------===//

#include "glimmer/Conversion/Passes.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.h"
#include "glimmer/Dialect/Glimmer/Transforms/Pipelines.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/SpmdContext.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/WithColor.h"

static llvm::cl::opt<std::string> spmdLayout(
    "spmd",
    llvm::cl::desc("Parallel layout for this run, e.g. "
                   "dp_shard=2,cp=2,tp=2,pp=2,sp,microbatches=4"),
    llvm::cl::value_desc("layout"), llvm::cl::init(""));

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<glimmer::GlimmerDialect, mlir::func::FuncDialect,
                  mlir::emitc::EmitCDialect>();
  glimmer::registerGlimmerPasses();
  glimmer::registerGlimmerPipelines();
  glimmer::registerGlimmerConversionPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "Glimmer optimizer driver\n", registry);

  std::string error;
  std::optional<glimmer::SpmdContext> context =
      glimmer::SpmdContext::parse(spmdLayout, &error);
  if (!context) {
    llvm::WithColor::error(llvm::errs(), "glimmer-opt")
        << "invalid --spmd='" << spmdLayout << "': " << error << "\n";
    return 1;
  }
  glimmer::SpmdScope scope(*context);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, inputFilename, outputFilename, registry));
}
