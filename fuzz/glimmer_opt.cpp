//===- glimmer_opt.cpp - Fuzz the parser, verifiers and pass pipeline -----===//
//
// Mutated IR (seeded from the lit suite) is parsed in the dialects
// glimmer-opt registers, verified, and run through the pipeline that
// glimmer-train builds for a training program (vision-merge recognition,
// the SPMD pipeline for dp_shard=2,cp=2, autodiff, partial reductions), with
// the verifier after every pass. Each step may reject the input with a
// diagnostic; none may crash or leave IR that fails to verify.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer/Dialect/Glimmer/Transforms/Pipelines.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: attributes and types uniqued for one input
  // must not make another behave differently (and memory stays bounded).
  mlir::DialectRegistry registry;
  registry.insert<glimmer::GlimmerDialect, mlir::func::FuncDialect,
                  mlir::emitc::EmitCDialect>();
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });

  // The MLIR lexer stops at a NUL after the text and reads one past the end
  // of a buffer without one. glimmer-opt reads files into NUL-terminated
  // buffers; so does this (std::string keeps a NUL after its data).
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::ParserConfig config(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, config, "fuzz.mlir");
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;

  mlir::PassManager pm(&context);
  pm.addNestedPass<mlir::func::FuncOp>(
      glimmer::createGlimmerRecognizeVisionMerge());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  glimmer::buildSpmdPipeline(pm, "dp_shard=2,cp=2");
  pm.addPass(glimmer::createGlimmerAutodiff());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  glimmer::buildPostAutodiffPipeline(pm);
  if (mlir::succeeded(pm.run(*module)) && mlir::failed(mlir::verify(*module))) {
    std::fprintf(stderr, "the pipeline succeeded on IR that does not verify\n");
    std::abort();
  }
  return 0;
}
