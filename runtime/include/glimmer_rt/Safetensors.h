//===- Safetensors.h - Read and write .safetensors files --------*- C++ -*-===//
//
// The safetensors format: an 8-byte little-endian header length, a JSON
// header mapping tensor names to {dtype, shape, data_offsets} (plus an
// optional "__metadata__" object of strings), then the raw row-major data.
// Plain C++ (no LLVM): the runtime reads batches and checkpoints with it, and
// the importer reads example inputs and writes weights with it.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_SAFETENSORS_H
#define GLIMMER_RT_SAFETENSORS_H

#include "glimmer_contract/DType.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glimmer_rt {

/// Element types, named as safetensors names them.
using glimmer::DType;
using glimmer::dtypeFromName;
using glimmer::dtypeName;
using glimmer::dtypeSize;
using glimmer::isFloating;

/// One tensor of a safetensors file.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Byte range within the data section.
  uint64_t begin = 0, end = 0;

  int64_t numElements() const;
};

/// A safetensors file read into memory and validated.
class SafetensorsFile {
public:
  /// Reads and validates `path`; on failure returns null and sets `error` to
  /// a message naming the file and the problem.
  static std::unique_ptr<SafetensorsFile> read(const std::string &path,
                                               std::string &error);
  /// Parses an in-memory image (`name` is used in messages).
  static std::unique_ptr<SafetensorsFile>
  parse(std::vector<uint8_t> bytes, const std::string &name,
        std::string &error);

  /// Tensors in file order.
  const std::vector<TensorInfo> &tensors() const { return infos; }
  const TensorInfo *find(std::string_view name) const;
  /// Pointer to the first byte of the tensor's data.
  const uint8_t *data(const TensorInfo &info) const {
    return bytes.data() + dataStart + info.begin;
  }
  const std::map<std::string, std::string> &metadata() const { return meta; }

private:
  std::vector<uint8_t> bytes;
  size_t dataStart = 0;
  std::vector<TensorInfo> infos;
  std::map<std::string, std::string> meta;
};

/// A digest of a tensor of `file`: its dtype, shape and bytes (XXH3-128).
/// Two tensors have the same digest when they hold the same values.
std::string tensorDigest(const SafetensorsFile &file, const TensorInfo &info);

/// A tensor to write.
struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data;
};

/// Writes `tensors` (in the given order) and `metadata` to `path`,
/// atomically (a temporary file, fsynced, renamed into place) and with
/// file mode `mode`. Returns false and sets `error` on failure.
bool writeSafetensors(const std::string &path,
                      const std::vector<TensorView> &tensors,
                      const std::map<std::string, std::string> &metadata,
                      std::string &error, unsigned mode = 0644);

} // namespace glimmer_rt

#endif // GLIMMER_RT_SAFETENSORS_H
