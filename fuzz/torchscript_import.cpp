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
// Mutations are made per record (LLVMFuzzerCustomMutator): one TorchScript
// source file (code/...py) or one tensor storage (data/N, size kept) of the
// archive changes, and the archive is written again with LibTorch's own
// writer. The container and the pickles stay well-formed, so the mutants
// reach what the importer reads (the graph, constants, shapes) instead of
// LibTorch's unpickler, which sizes its allocations from numbers in the
// pickle (tens of GB from one changed byte; AddressSanitizer's throwing
// operator new can only report such a request, where the normal build gets
// the std::bad_alloc the importer turns into an error). Setting
// GLIMMER_FUZZ_ARCHIVE_BYTES=1 mutates the raw archive bytes instead, for
// long runs of the container and unpickler paths (docs/Fuzzing.md).
//
//===----------------------------------------------------------------------===//

#include "glimmer/Import/TorchScript.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringRef.h"

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

// libFuzzer's own mutation of a byte buffer.
extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

std::string privateDirectory;

void removePrivateDirectory() {
  if (privateDirectory.empty())
    return;
  std::remove((privateDirectory + "/model.pt").c_str());
  rmdir(privateDirectory.c_str());
}

bool mutatesArchiveBytes() {
  const char *v = std::getenv("GLIMMER_FUZZ_ARCHIVE_BYTES");
  return v && std::strcmp(v, "1") == 0;
}

// Records that a mutation may change: TorchScript sources and tensor
// storages. Pickles, debug info and the format's own records stay as they
// are.
bool isSource(llvm::StringRef name) { return name.ends_with(".py"); }
bool isMutableRecord(llvm::StringRef name) {
  return isSource(name) || name.starts_with("data/");
}

// Records the writer adds itself on writeEndOfFile.
bool isWriterRecord(const std::string &name) {
  return name == ".data/version" || name == "version" ||
         name == ".data/serialization_id";
}

// The archive with one record mutated, or nothing when `data` is not an
// archive LibTorch can read (then the caller leaves the input as it is).
std::optional<std::string> mutateOneRecord(const uint8_t *data, size_t size,
                                           unsigned seed) {
  try {
    std::istringstream in(
        std::string(reinterpret_cast<const char *>(data), size));
    caffe2::serialize::PyTorchStreamReader reader(&in);
    std::vector<std::string> names = reader.getAllRecords();
    std::vector<size_t> mutable_;
    for (size_t i = 0; i < names.size(); ++i)
      if (isMutableRecord(names[i]))
        mutable_.push_back(i);
    if (mutable_.empty())
      return std::nullopt;
    std::minstd_rand rng(seed);
    size_t pick = mutable_[rng() % mutable_.size()];
    std::string out;
    caffe2::serialize::PyTorchStreamWriter writer(
        [&](const void *buf, size_t n) {
          out.append(static_cast<const char *>(buf), n);
          return n;
        });
    writer.setMinVersion(reader.version());
    for (size_t i = 0; i < names.size(); ++i) {
      if (isWriterRecord(names[i]))
        continue;
      auto [ptr, n] = reader.getRecord(names[i]);
      std::vector<uint8_t> bytes(static_cast<const uint8_t *>(ptr.get()),
                                 static_cast<const uint8_t *>(ptr.get()) + n);
      if (i == pick) {
        // Sources may grow by up to 64 bytes; storages keep their size (the
        // pickle names their element count).
        bool source = isSource(names[i]);
        size_t capacity = source ? n + 64 : n;
        bytes.resize(std::max<size_t>(capacity, 1));
        size_t m = LLVMFuzzerMutate(bytes.data(), n, bytes.size());
        bytes.resize(source ? m : n);
      }
      writer.writeRecord(names[i], bytes.data(), bytes.size());
    }
    writer.writeEndOfFile();
    return out;
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  if (mutatesArchiveBytes())
    return LLVMFuzzerMutate(data, size, maxSize);
  std::optional<std::string> archive = mutateOneRecord(data, size, seed);
  if (!archive || archive->size() > maxSize)
    return size;
  std::memcpy(data, archive->data(), archive->size());
  return archive->size();
}

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
  glimmer::ImportOptions options;
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
