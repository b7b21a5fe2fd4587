//===- ArchiveIO.h - Records of a torch.export archive ----------*- C++ -*-===//
//
// Private to the export archive reader: opening the archive's zip with
// LibTorch's PyTorchStreamReader, reading records, and turning what LibTorch
// and the reader throw into one llvm::Error naming the file.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_IMPORT_EXPORT_ARCHIVEIO_H
#define GLIMMER_LIB_IMPORT_EXPORT_ARCHIVEIO_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <caffe2/serialize/inline_container.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace glimmer::pt2::detail {

using Zip = caffe2::serialize::PyTorchStreamReader;

/// An error about the archive; its message follows "'<path>' ".
struct ArchiveError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The first sentence of a LibTorch message (the rest is advice about
/// checkpoints or where in LibTorch it was raised).
std::string firstSentence(const char *message);

/// Opens the zip; a file that is not one (or is cut short) is an
/// ArchiveError.
std::unique_ptr<Zip> openZip(llvm::StringRef path);

std::string readRecord(Zip &zip, const std::string &name);

/// Runs `body`, turning what it throws into an llvm::Error naming `path`.
template <typename T, typename F>
llvm::Expected<T> reportErrors(llvm::StringRef path, F &&body) {
  auto error = [&](const std::string &message) {
    return llvm::createStringError("'" + path.str() + "' " + message);
  };
  try {
    return body();
  } catch (const ArchiveError &e) {
    return error(e.what());
  } catch (const c10::Error &e) {
    return error("could not be read: " +
                 firstSentence(e.what_without_backtrace()));
  } catch (const std::exception &e) {
    return error(std::string("could not be read: ") + e.what());
  }
}

} // namespace glimmer::pt2::detail

#endif // GLIMMER_LIB_IMPORT_EXPORT_ARCHIVEIO_H
