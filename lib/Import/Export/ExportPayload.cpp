//===- ExportPayload.cpp - Weights and constants of a torch.export archive ===//
//
// Reads one weight's or constant's values on demand. A raw payload is the
// whole storage behind the tensor; the tensor is as_strided(storage, sizes,
// strides, storage_offset) of it, checked to lie inside the record. A
// pickled one (tensor subclasses) is loaded with LibTorch's pickle_load.
//
//===----------------------------------------------------------------------===//

#include "ArchiveIO.h"
#include "glimmer/Import/ExportArchive.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

using namespace glimmer;
using namespace glimmer::pt2;
using namespace glimmer::pt2::detail;

namespace {

/// LibTorch's dtype for a schema dtype; nothing for Unknown.
std::optional<c10::ScalarType> toTorch(ScalarType type) {
  switch (type) {
  case ScalarType::Unknown:
    return std::nullopt;
  case ScalarType::Byte:
    return c10::ScalarType::Byte;
  case ScalarType::Char:
    return c10::ScalarType::Char;
  case ScalarType::Short:
    return c10::ScalarType::Short;
  case ScalarType::Int:
    return c10::ScalarType::Int;
  case ScalarType::Long:
    return c10::ScalarType::Long;
  case ScalarType::Half:
    return c10::ScalarType::Half;
  case ScalarType::Float:
    return c10::ScalarType::Float;
  case ScalarType::Double:
    return c10::ScalarType::Double;
  case ScalarType::ComplexHalf:
    return c10::ScalarType::ComplexHalf;
  case ScalarType::ComplexFloat:
    return c10::ScalarType::ComplexFloat;
  case ScalarType::ComplexDouble:
    return c10::ScalarType::ComplexDouble;
  case ScalarType::Bool:
    return c10::ScalarType::Bool;
  case ScalarType::BFloat16:
    return c10::ScalarType::BFloat16;
  case ScalarType::UInt16:
    return c10::ScalarType::UInt16;
  case ScalarType::Float8E4M3FN:
    return c10::ScalarType::Float8_e4m3fn;
  case ScalarType::Float8E5M2:
    return c10::ScalarType::Float8_e5m2;
  case ScalarType::Float8E4M3FNUZ:
    return c10::ScalarType::Float8_e4m3fnuz;
  case ScalarType::Float8E5M2FNUZ:
    return c10::ScalarType::Float8_e5m2fnuz;
  }
  return std::nullopt;
}

std::vector<int64_t> concrete(const std::vector<SymInt> &dims,
                              const std::string &what) {
  std::vector<int64_t> out;
  for (const SymInt &d : dims) {
    if (d.isSymbolic())
      throw ArchiveError(what + " has a symbolic size or stride '" + d.expr +
                         "'");
    out.push_back(d.value);
  }
  return out;
}

/// The tensor as a view of a raw storage record, checked to lie inside it.
at::Tensor viewRawPayload(Zip &zip, const Payload &payload,
                          c10::ScalarType dtype, const std::string &what,
                          at::DataPtr &storage) {
  const TensorMeta &meta = *payload.meta;
  if (meta.layout != Layout::Strided)
    throw ArchiveError(what + " has layout '" +
                       getLayoutName(meta.layout).str() +
                       "'; only strided tensors are read");
  int64_t elementSize = getScalarTypeSize(meta.dtype);
  if (zip.hasRecord("byteorder") && readRecord(zip, "byteorder") != "little")
    throw ArchiveError("stores big-endian payloads; the reader reads "
                       "little-endian ones");
  std::vector<int64_t> sizes = concrete(meta.sizes, what);
  std::vector<int64_t> strides = concrete(meta.strides, what);
  int64_t offset = concrete({meta.storageOffset}, what)[0];
  if (strides.size() != sizes.size() || offset < 0 ||
      llvm::any_of(strides, [](int64_t s) { return s < 0; }) ||
      llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
    throw ArchiveError(what + " has invalid sizes, strides or offset");
  // The last element's index in the storage, which must hold it (sizes
  // are not 0: an empty tensor reads no storage).
  int64_t last = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t step;
    if (llvm::MulOverflow(sizes[i] - 1, strides[i], step) ||
        llvm::AddOverflow(last, step, last))
      throw ArchiveError(what + " has sizes and strides past any storage");
  }
  size_t size;
  std::tie(storage, size) = zip.getRecord(payload.record);
  int64_t elements = int64_t(size) / elementSize;
  if (int64_t(size) % elementSize != 0 || last >= elements)
    throw ArchiveError(what + " needs " + std::to_string(last + 1) +
                       " elements of " + getScalarTypeName(meta.dtype).str() +
                       " but its record '" + payload.record + "' has " +
                       std::to_string(size) + " bytes");
  at::Tensor flat = at::from_blob(storage.get(), {elements},
                                  at::TensorOptions().dtype(dtype));
  return flat.as_strided(sizes, strides, offset);
}

at::Tensor loadPickledPayload(Zip &zip, const Payload &payload,
                              const std::string &what) {
  std::string bytes = readRecord(zip, payload.record);
  c10::IValue value =
      torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  if (!value.isTensor())
    throw ArchiveError(what + " is pickled as a " + value.tagKind() +
                       ", not a tensor");
  return value.toTensor();
}

TensorData readPayload(const ExportedProgram &program, llvm::StringRef name) {
  auto weight = program.weights.find(name.str());
  bool isWeight = weight != program.weights.end();
  auto it = isWeight ? weight : program.constants.find(name.str());
  if (!isWeight && it == program.constants.end())
    throw ArchiveError("has no weight or constant named '" + name.str() + "'");
  const Payload &payload = it->second;
  std::string what = (isWeight ? "weight '" : "constant '") + name.str() + "'";
  if (!payload.meta)
    throw ArchiveError(what + " is a custom object, not a tensor");
  std::optional<c10::ScalarType> dtype = toTorch(payload.meta->dtype);
  if (!dtype)
    throw ArchiveError(what + " has no dtype");

  TensorData data;
  data.dtype = payload.meta->dtype;
  data.sizes = concrete(payload.meta->sizes, what);
  int64_t nbytes = getScalarTypeSize(data.dtype);
  for (int64_t s : data.sizes)
    if (s < 0 || llvm::MulOverflow(nbytes, s, nbytes))
      throw ArchiveError(what + " has a negative or too large size");
  if (nbytes == 0)
    return data;
  if (!payload.hasData())
    throw ArchiveError(what + " has no data: the program was exported "
                              "without weights (on the meta device, or "
                              "with fake tensors)");

  std::unique_ptr<Zip> zip = openZip(program.archivePath);
  at::DataPtr storage;
  at::Tensor tensor;
  try {
    tensor = payload.pickled
                 ? loadPickledPayload(*zip, payload, what)
                 : viewRawPayload(*zip, payload, *dtype, what, storage);
  } catch (const c10::Error &e) {
    throw ArchiveError(what + " could not be read from '" + payload.record +
                       "': " + firstSentence(e.what_without_backtrace()));
  }
  tensor = tensor.to(at::kCPU).contiguous();
  if (tensor.sizes().vec() != data.sizes || tensor.scalar_type() != *dtype)
    throw ArchiveError(what + " does not match its tensor_meta");
  const auto *bytes = static_cast<const uint8_t *>(tensor.data_ptr());
  data.bytes.assign(bytes, bytes + tensor.nbytes());
  return data;
}

} // namespace

llvm::Expected<TensorData>
pt2::readExportPayload(const ExportedProgram &program, llvm::StringRef name) {
  return reportErrors<TensorData>(program.archivePath,
                                  [&] { return readPayload(program, name); });
}
