//===- Driver.cpp - Compile a model to a loaded runtime program -----------===//

#include "glimmer/Driver/Driver.h"
#include "glimmer/Conversion/Passes.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer/Import/TorchScript.h"
#include "glimmer_rt/Kernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <chrono>
#include <cstdlib>

using namespace glimmer;
using namespace mlir;

#ifndef GLIMMER_RT_INCLUDE_DIR
#error "GLIMMER_RT_INCLUDE_DIR must be defined by the build"
#endif
#ifndef GLIMMER_RT_LIBRARY_DIR
#error "GLIMMER_RT_LIBRARY_DIR must be defined by the build"
#endif

namespace {

class Stopwatch {
public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }

private:
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
};

std::string fixed(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::optional<glimmer_rt::DType> dtypeOf(Type t) {
  using glimmer_rt::DType;
  if (t.isF32())
    return DType::F32;
  if (t.isF64())
    return DType::F64;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF16())
    return DType::F16;
  if (t.isInteger(64))
    return DType::I64;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(1))
    return DType::Bool;
  return std::nullopt;
}

std::string defaultCacheDir() {
  if (const char *env = std::getenv("GLIMMER_CACHE_DIR"))
    return env;
  llvm::SmallString<128> dir;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, dir);
  llvm::sys::path::append(dir, "glimmer-cache");
  return std::string(dir);
}

/// Compiles `source` into a shared library under `cacheDir`, reusing an
/// earlier build of the same source.
FailureOr<std::string> compileCpp(MLIRContext &context,
                                  const std::string &source,
                                  const std::string &cacheDir,
                                  const DriverOptions &options) {
  std::string cxx = "c++";
  if (const char *env = std::getenv("GLIMMER_CXX"))
    cxx = env;
  std::vector<std::string> flags = {
      "-std=c++17", "-O2", "-fPIC", "-shared", "-Wall",
      "-I" GLIMMER_RT_INCLUDE_DIR, "-L" GLIMMER_RT_LIBRARY_DIR,
      "-Wl,-rpath," GLIMMER_RT_LIBRARY_DIR};
  std::string key = source + cxx;
  for (const std::string &f : flags)
    key += f;
  std::string hash = llvm::utohexstr(llvm::xxh3_64bits(key), true);
  if (auto ec = llvm::sys::fs::create_directories(cacheDir)) {
    emitError(UnknownLoc::get(&context))
        << "cannot create cache directory '" << cacheDir
        << "': " << ec.message();
    return failure();
  }
  llvm::SmallString<256> cpp(cacheDir), so(cacheDir), log(cacheDir);
  llvm::sys::path::append(cpp, "program-" + hash + ".cpp");
  llvm::sys::path::append(so, "program-" + hash + ".so");
  llvm::sys::path::append(log, "program-" + hash + ".log");
  if (llvm::sys::fs::exists(so))
    return std::string(so);

  {
    std::error_code ec;
    llvm::raw_fd_ostream out(cpp, ec);
    if (ec) {
      emitError(UnknownLoc::get(&context))
          << "cannot write '" << cpp << "': " << ec.message();
      return failure();
    }
    out << source;
  }
  auto program = llvm::sys::findProgramByName(cxx);
  if (!program) {
    emitError(UnknownLoc::get(&context))
        << "C++ compiler '" << cxx
        << "' not found (set GLIMMER_CXX to choose another)";
    return failure();
  }
  std::string tmp = std::string(so) + ".tmp";
  std::vector<llvm::StringRef> args = {*program};
  for (const std::string &f : flags)
    args.push_back(f);
  args.insert(args.end(), {llvm::StringRef(cpp), "-o", tmp, "-lglimmer_rt"});
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(),
                                                log.str()};
  if (options.progress)
    options.progress("compiling " + std::string(cpp) + " with " + cxx);
  Stopwatch watch;
  std::string errMsg;
  int rc = llvm::sys::ExecuteAndWait(*program, args, std::nullopt, redirects,
                                     0, 0, &errMsg);
  if (rc != 0) {
    auto text = llvm::MemoryBuffer::getFile(log);
    emitError(UnknownLoc::get(&context))
        << "compiling the generated program failed (" << cxx << " exit " << rc
        << (errMsg.empty() ? "" : ", " + errMsg) << "):\n"
        << (text ? (*text)->getBuffer().take_back(4000) : "");
    return failure();
  }
  if (auto ec = llvm::sys::fs::rename(tmp, so)) {
    emitError(UnknownLoc::get(&context))
        << "cannot move '" << tmp << "' to '" << so << "': " << ec.message();
    return failure();
  }
  if (options.progress)
    options.progress("compiled in " + fixed(watch.seconds()) + " s");
  return std::string(so);
}

} // namespace

FailureOr<CompiledModel> glimmer::compileModel(MLIRContext &context,
                                               const DriverOptions &options) {
  context.loadDialect<GlimmerDialect, func::FuncDialect,
                      emitc::EmitCDialect>();
  std::string cacheDir =
      options.cacheDir.empty() ? defaultCacheDir() : options.cacheDir;
  CompiledModel model;

  // Import. The weights are exported next to the compiled programs, keyed
  // by the model file's content.
  Stopwatch watch;
  auto modelBuffer = llvm::MemoryBuffer::getFile(options.modelPath);
  std::string modelHash =
      modelBuffer ? llvm::utohexstr(llvm::xxh3_64bits(
                        (*modelBuffer)->getBuffer()), true)
                  : "missing";
  if (auto ec = llvm::sys::fs::create_directories(cacheDir)) {
    emitError(UnknownLoc::get(&context))
        << "cannot create cache directory '" << cacheDir
        << "': " << ec.message();
    return failure();
  }
  llvm::SmallString<256> weights(cacheDir);
  llvm::sys::path::append(weights, "weights-" + modelHash + ".safetensors");
  TorchScriptImportOptions importOptions;
  importOptions.modelPath = options.modelPath;
  importOptions.exampleInputsPath = options.dataPath;
  importOptions.floatType = options.floatType;
  importOptions.weightsOutputPath = std::string(weights);
  if (options.progress)
    options.progress("importing " + options.modelPath);
  model.module = importTorchScript(context, importOptions);
  if (!model.module)
    return failure();
  model.weightsPath = std::string(weights);
  if (options.progress)
    options.progress("imported in " + fixed(watch.seconds()) + " s");

  auto func = *model.module->getOps<func::FuncOp>().begin();
  for (BlockArgument arg : func.getArguments()) {
    ProgramArgument a;
    unsigned i = arg.getArgNumber();
    if (auto n = func.getArgAttrOfType<StringAttr>(i, "glimmer.input")) {
      a.kind = ProgramArgument::Input;
      a.name = n.getValue().str();
    } else if (auto p = func.getArgAttrOfType<StringAttr>(i, "glimmer.param")) {
      a.kind = ProgramArgument::Parameter;
      a.name = p.getValue().str();
    } else if (auto b = func.getArgAttrOfType<StringAttr>(i, "glimmer.buffer")) {
      a.kind = ProgramArgument::Buffer;
      a.name = b.getValue().str();
    } else {
      return func.emitError() << "argument #" << i << " has no name";
    }
    auto type = cast<RankedTensorType>(arg.getType());
    auto dtype = dtypeOf(type.getElementType());
    if (!dtype)
      return func.emitError() << "argument #" << i << " has unsupported type "
                              << type;
    a.dtype = *dtype;
    a.shape.assign(type.getShape().begin(), type.getShape().end());
    model.arguments.push_back(std::move(a));
  }

  // Pipeline.
  watch = Stopwatch();
  PassManager pm(&context);
  pm.addNestedPass<func::FuncOp>(createGlimmerRecognizeVisionMerge());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(*model.module)))
    return failure();
  llvm::raw_string_ostream os(model.cppSource);
  if (failed(emitCpp(*model.module, os)))
    return failure();
  if (options.progress)
    options.progress("lowered to C++ (" +
                     std::to_string(llvm::count(model.cppSource, '\n')) +
                     " lines) in " + fixed(watch.seconds()) + " s");

  FailureOr<std::string> so =
      compileCpp(context, model.cppSource, cacheDir, options);
  if (failed(so))
    return failure();
  model.libraryPath = *so;
  std::string error;
  model.program =
      glimmer_rt::LoadedProgram::load(*so, func.getName().str(), error);
  if (!model.program) {
    emitError(UnknownLoc::get(&context)) << error;
    return failure();
  }
  return model;
}

bool glimmer::bindArguments(const CompiledModel &model,
                            const glimmer_rt::SafetensorsFile &data,
                            std::vector<glimmer_rt::Tensor> &inputs,
                            std::string &error) {
  auto weights = glimmer_rt::SafetensorsFile::read(model.weightsPath, error);
  if (!weights)
    return false;
  inputs.clear();
  for (const ProgramArgument &arg : model.arguments) {
    const glimmer_rt::SafetensorsFile &file =
        arg.kind == ProgramArgument::Input ? data : *weights;
    const glimmer_rt::TensorInfo *info = file.find(arg.name);
    if (!info) {
      error = (arg.kind == ProgramArgument::Input
                   ? "the data has no tensor '"
                   : "the model's weights have no tensor '") +
              arg.name + "'";
      return false;
    }
    if (info->shape != arg.shape) {
      error = "tensor '" + arg.name + "' has shape " +
              glimmer_rt::shapeString(info->shape) +
              " but the program was compiled for " +
              glimmer_rt::shapeString(arg.shape);
      return false;
    }
    bool wantFloat = glimmer_rt::isFloating(arg.dtype);
    if (wantFloat != glimmer_rt::isFloating(info->dtype)) {
      error = "tensor '" + arg.name + "' has dtype " +
              std::string(glimmer_rt::dtypeName(info->dtype)) +
              " but the program expects " +
              std::string(glimmer_rt::dtypeName(arg.dtype));
      return false;
    }
    glimmer_rt::Tensor t = glimmer_rt::readTensor(file, *info);
    if (t.dtype() != arg.dtype)
      t = glimmer_rt::convert(t, arg.dtype);
    inputs.push_back(std::move(t));
  }
  return true;
}
