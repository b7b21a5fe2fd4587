//===- torchscript_import.cpp - Fuzz the TorchScript importer -------------===//
//
// Mutated TorchScript archives through glimmer::importTorchScript, with the
// reference VLM's example batch bound to forward's arguments (so a mutant of
// that fixture gets past binding into the graph conversion). Any archive is
// either imported into a module that verifies or rejected with a diagnostic.
//
// LibTorch reads archives from a path, so each input is written to a file in
// a directory private to this process (mkdtemp, mode 0700): a predictable
// name in a shared directory could be replaced by another user.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Import/TorchScript.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

std::string privateDirectory;

void removePrivateDirectory() {
  if (privateDirectory.empty())
    return;
  std::remove((privateDirectory + "/model.pt").c_str());
  rmdir(privateDirectory.c_str());
}

} // namespace

// LibTorch's archive reader leaks its zip state when an archive's central
// directory is malformed: PyTorchStreamReader throws from its constructor
// after mz_zip_reader_init, so its destructor never frees it. That memory is
// LibTorch's, allocated and lost inside it; everything else still counts.
extern "C" const char *__lsan_default_suppressions() {
  return "leak:mz_zip_reader_init\n"
         "leak:mz_zip_reader_read_central_dir\n";
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/glimmer-fuzz-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    std::perror("glimmer-fuzz-torchscript: mkdtemp");
    std::exit(1);
  }
  privateDirectory = pattern;
  std::atexit(removePrivateDirectory);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = privateDirectory + "/model.pt";
  {
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
      std::perror("glimmer-fuzz-torchscript: writing the archive");
      std::abort();
    }
  }
  mlir::MLIRContext context;
  context.disableMultithreading();
  bool diagnosed = false;
  mlir::ScopedDiagnosticHandler quiet(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diagnosed = true;
    return mlir::success();
  });
  glimmer::TorchScriptImportOptions options;
  options.modelPath = path;
  options.exampleInputsPath = GLIMMER_FUZZ_EXAMPLE_INPUTS;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      glimmer::importTorchScript(context, options);
  if (!module) {
    if (!diagnosed) {
      std::fprintf(stderr, "import failed without a diagnostic\n");
      std::abort();
    }
    return 0;
  }
  if (mlir::failed(mlir::verify(*module))) {
    std::fprintf(stderr, "the imported module does not verify\n");
    std::abort();
  }
  return 0;
}
