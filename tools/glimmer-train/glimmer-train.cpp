//===- glimmer-train.cpp - Compile a model and run it ---------------------===//
//
//   glimmer-train MODEL.pt --data=BATCH.safetensors --backend=cpu
//       --dtype=f32|f64 --metrics=OUT.jsonl --forward-only
//
//===----------------------------------------------------------------------===//

#include "glimmer/Driver/Driver.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <fstream>

namespace cl = llvm::cl;

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.pt>"));
static cl::opt<std::string>
    dataPath("data", cl::Required,
             cl::desc("Batch (safetensors); tensors bind to forward "
                      "arguments by name"),
             cl::value_desc("file"));
static cl::opt<std::string> backend("backend", cl::init("cpu"),
                                    cl::desc("Execution backend: cpu"),
                                    cl::value_desc("cpu"));
static cl::opt<std::string>
    floatType("dtype", cl::init("f32"),
              cl::desc("Precision of every floating-point tensor: f32 or f64"),
              cl::value_desc("f32|f64"));
static cl::opt<std::string>
    metricsPath("metrics", cl::init(""),
                cl::desc("Append one JSON line per step to this file"),
                cl::value_desc("file"));
static cl::opt<bool> forwardOnly(
    "forward-only", cl::init(false),
    cl::desc("Run the forward pass once and report the loss"));
static cl::opt<std::string>
    cacheDir("cache-dir", cl::init(""),
             cl::desc("Where compiled programs are kept (default: "
                      "$GLIMMER_CACHE_DIR or a temp directory)"),
             cl::value_desc("dir"));
static cl::opt<std::string>
    emitCppPath("emit-cpp", cl::init(""),
                cl::desc("Also write the generated C++ here"),
                cl::value_desc("file"));
static cl::opt<bool> quiet("quiet", cl::init(false),
                           cl::desc("No progress messages"));

static int fail(const std::string &message) {
  llvm::WithColor::error(llvm::errs(), "glimmer-train") << message << "\n";
  return 1;
}

static std::string formatDouble(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "Glimmer: compile a model and train it\n");
  if (backend != "cpu")
    return fail("unknown backend '" + backend + "' (available: cpu)");
  if (floatType != "f32" && floatType != "f64")
    return fail("--dtype must be f32 or f64, got '" + floatType + "'");
  if (!forwardOnly)
    return fail("training is not available yet: pass --forward-only");

  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  std::string dataError;
  auto data = glimmer_rt::SafetensorsFile::read(dataPath, dataError);
  if (!data)
    return fail("--data: " + dataError);

  glimmer::DriverOptions options;
  options.modelPath = modelPath;
  options.dataPath = dataPath;
  options.floatType = floatType;
  options.cacheDir = cacheDir;
  if (!quiet)
    options.progress = [](const std::string &message) {
      llvm::errs() << "[glimmer-train] " << message << "\n";
    };
  auto model = glimmer::compileModel(context, options);
  if (mlir::failed(model))
    return 1;
  if (!emitCppPath.empty()) {
    std::ofstream out(emitCppPath);
    out << model->cppSource;
    if (!out)
      return fail("cannot write '" + emitCppPath + "'");
  }

  glimmer_rt::Frame frame;
  std::string error;
  if (!glimmer::bindArguments(*model, *data, frame.inputs, error))
    return fail(error);

  std::ofstream metrics;
  if (!metricsPath.empty()) {
    metrics.open(metricsPath, std::ios::app);
    if (!metrics)
      return fail("cannot open --metrics file '" + metricsPath + "'");
  }

  auto start = std::chrono::steady_clock::now();
  try {
    model->program->run(frame);
  } catch (const glimmer_rt::RuntimeError &e) {
    return fail(std::string("the program failed: ") + e.what());
  }
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  if (frame.outputs.empty() || frame.outputs[0].numel() != 1)
    return fail("the model's forward does not return a scalar loss");
  double loss = frame.outputs[0].item(0);
  llvm::outs() << "step 0 | loss " << formatDouble(loss) << " | "
               << llvm::format("%.3f", seconds) << " s\n";
  if (metrics.is_open())
    metrics << "{\"step\":0,\"loss\":" << formatDouble(loss)
            << ",\"seconds\":" << formatDouble(seconds) << "}\n";
  return 0;
}
