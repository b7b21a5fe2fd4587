//===- ExportArchive.cpp - torch.export archive reader --------------------===//
//
// The archive, as torch.export.save writes it (PyTorch 2.11; the layout is
// torch/csrc/export/pt2_archive_constants.h, archive version 0):
// - a zip written by PyTorchStreamWriter: every record lies under one root
//   folder named after the file's stem ("mlp/models/model.json" in
//   mlp.pt2); PyTorchStreamReader hides that folder, so records are named
//   from below it. Records are stored uncompressed.
// - "archive_format" holds "pt2" (a TorchScript archive has no such
//   record); "archive_version" holds "0"; "byteorder" the payloads' byte
//   order ("little").
// - "models/<model>.json": the ExportedProgram of schema.py as JSON (see
//   ExportJson.cpp). torch.export.save names its one model "model".
// - "data/weights/<model>_weights_config.json" and
//   "data/constants/<model>_constants_config.json": a PayloadConfig, mapping
//   each state_dict (resp. constant) name to a PayloadMeta: the record under
//   data/weights/ (resp. data/constants/) that holds it, whether it is a
//   parameter, whether it is pickled, and its TensorMeta.
// - A raw payload ("weight_0", "tensor_0") is the bytes of the whole
//   untyped storage behind the tensor; tensors that are views of one
//   storage share the record, and each is as_strided(storage, sizes,
//   strides, storage_offset) of it. A payload is pickled (torch.save)
//   only for tensor subclasses ("weight_N") and custom objects
//   ("custom_obj_N").
// - A program exported on the meta device, or with fake tensors, has empty
//   payload records (all its tensors then share one).
// - "data/sample_inputs/<model>.pt" holds the example inputs, pickled; the
//   reader ignores it.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Import/ExportArchive.h"
#include "ExportJson.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cstring>

using namespace glimmer;
using namespace glimmer::pt2;

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

namespace {
struct ScalarTypeInfo {
  ScalarType type;
  const char *name;
  int64_t size;
  c10::ScalarType torchType;
};
} // namespace

static const ScalarTypeInfo kScalarTypes[] = {
    {ScalarType::Byte, "uint8", 1, c10::ScalarType::Byte},
    {ScalarType::Char, "int8", 1, c10::ScalarType::Char},
    {ScalarType::Short, "int16", 2, c10::ScalarType::Short},
    {ScalarType::Int, "int32", 4, c10::ScalarType::Int},
    {ScalarType::Long, "int64", 8, c10::ScalarType::Long},
    {ScalarType::Half, "float16", 2, c10::ScalarType::Half},
    {ScalarType::Float, "float32", 4, c10::ScalarType::Float},
    {ScalarType::Double, "float64", 8, c10::ScalarType::Double},
    {ScalarType::ComplexHalf, "complex32", 4, c10::ScalarType::ComplexHalf},
    {ScalarType::ComplexFloat, "complex64", 8, c10::ScalarType::ComplexFloat},
    {ScalarType::ComplexDouble, "complex128", 16,
     c10::ScalarType::ComplexDouble},
    {ScalarType::Bool, "bool", 1, c10::ScalarType::Bool},
    {ScalarType::BFloat16, "bfloat16", 2, c10::ScalarType::BFloat16},
    {ScalarType::UInt16, "uint16", 2, c10::ScalarType::UInt16},
    {ScalarType::Float8E4M3FN, "float8_e4m3fn", 1,
     c10::ScalarType::Float8_e4m3fn},
    {ScalarType::Float8E5M2, "float8_e5m2", 1, c10::ScalarType::Float8_e5m2},
    {ScalarType::Float8E4M3FNUZ, "float8_e4m3fnuz", 1,
     c10::ScalarType::Float8_e4m3fnuz},
    {ScalarType::Float8E5M2FNUZ, "float8_e5m2fnuz", 1,
     c10::ScalarType::Float8_e5m2fnuz},
};

static const ScalarTypeInfo *lookup(ScalarType type) {
  for (const ScalarTypeInfo &info : kScalarTypes)
    if (info.type == type)
      return &info;
  return nullptr;
}

llvm::StringRef pt2::getScalarTypeName(ScalarType type) {
  const ScalarTypeInfo *info = lookup(type);
  return info ? info->name : "unknown";
}

int64_t pt2::getScalarTypeSize(ScalarType type) {
  const ScalarTypeInfo *info = lookup(type);
  return info ? info->size : 0;
}

llvm::StringRef pt2::getLayoutName(Layout layout) {
  static const char *names[] = {"unknown",    "sparse_coo", "sparse_csr",
                                "sparse_csc", "sparse_bsr", "sparse_bsc",
                                "mkldnn",     "strided"};
  return names[int64_t(layout)];
}

llvm::StringRef pt2::getMemoryFormatName(MemoryFormat format) {
  static const char *names[] = {"unknown", "contiguous_format", "channels_last",
                                "channels_last_3d", "preserve_format"};
  return names[int64_t(format)];
}

llvm::StringRef pt2::getArgKindName(ArgKind kind) {
  static const char *names[] = {"as_none",
                                "as_tensor",
                                "as_tensors",
                                "as_optional_tensor",
                                "as_optional_tensors",
                                "as_int",
                                "as_ints",
                                "as_float",
                                "as_floats",
                                "as_bool",
                                "as_bools",
                                "as_string",
                                "as_strings",
                                "as_sym_int",
                                "as_sym_ints",
                                "as_sym_float",
                                "as_sym_floats",
                                "as_sym_bool",
                                "as_sym_bools",
                                "as_scalar_type",
                                "as_memory_format",
                                "as_layout",
                                "as_device",
                                "as_graph",
                                "as_custom_obj",
                                "as_operator"};
  static_assert(std::size(names) == size_t(ArgKind::Operator) + 1);
  return names[int(kind)];
}

llvm::StringRef pt2::getInputKindName(InputSpec::Kind kind) {
  static const char *names[] = {"user_input",      "parameter",  "buffer",
                                "tensor_constant", "custom_obj", "token",
                                "constant_input"};
  return names[kind];
}

llvm::StringRef pt2::getOutputKindName(OutputSpec::Kind kind) {
  static const char *names[] = {"user_output",
                                "loss_output",
                                "buffer_mutation",
                                "gradient_to_parameter",
                                "gradient_to_user_input",
                                "user_input_mutation",
                                "token",
                                "parameter_mutation"};
  return names[kind];
}

std::optional<std::string> SymInt::getSymbolName() const {
  // srepr of a sympy Symbol: Symbol('s77', positive=True, integer=True).
  llvm::StringRef e(expr);
  if (!e.consume_front("Symbol('"))
    return std::nullopt;
  size_t quote = e.find('\'');
  if (quote == llvm::StringRef::npos || quote == 0)
    return std::nullopt;
  // Only the symbol's assumptions may follow its name.
  llvm::StringRef rest = e.drop_front(quote + 1);
  if (rest != ")" &&
      (!rest.starts_with(", ") || !rest.ends_with(")") || rest.contains('(')))
    return std::nullopt;
  return e.take_front(quote).str();
}

const TensorMeta *Graph::getTensor(llvm::StringRef name) const {
  auto it = tensorValues.find(name.str());
  return it == tensorValues.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// Reading the archive
//===----------------------------------------------------------------------===//

namespace {

/// An error about the archive; the message follows "'<path>' ".
struct ArchiveError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char *kModelsDir = "models/";
constexpr const char *kWeightsDir = "data/weights/";
constexpr const char *kConstantsDir = "data/constants/";

/// The first sentence of a LibTorch message (the rest is advice about
/// checkpoints or where in LibTorch it was raised).
std::string firstSentence(const char *message) {
  llvm::StringRef m(message);
  m = m.take_until([](char c) { return c == '\n'; });
  size_t end = m.find(". ");
  return m.take_front(end == llvm::StringRef::npos ? m.size() : end).str();
}

/// Opens the zip; LibTorch reports a file that is not one (or is cut short)
/// as a c10::Error.
std::unique_ptr<caffe2::serialize::PyTorchStreamReader>
openZip(llvm::StringRef path) {
  if (std::error_code ec =
          llvm::sys::fs::access(path, llvm::sys::fs::AccessMode::Exist))
    throw ArchiveError("cannot be opened: " + ec.message());
  try {
    return std::make_unique<caffe2::serialize::PyTorchStreamReader>(path.str());
  } catch (const c10::Error &e) {
    throw ArchiveError("is not a torch.export archive: " +
                       firstSentence(e.what_without_backtrace()));
  }
}

std::string readRecord(caffe2::serialize::PyTorchStreamReader &zip,
                       const std::string &name) {
  auto [data, size] = zip.getRecord(name);
  return std::string(static_cast<const char *>(data.get()), size);
}

void checkFormat(caffe2::serialize::PyTorchStreamReader &zip) {
  if (!zip.hasRecord("archive_format") ||
      readRecord(zip, "archive_format") != "pt2")
    throw ArchiveError("is not a torch.export archive: it has no "
                       "'archive_format' record saying 'pt2' (a TorchScript "
                       "archive or a torch.save file has none)");
  // Archives from before the versioned spec have no record; they are
  // version 0 as well.
  if (zip.hasRecord("archive_version")) {
    std::string version = readRecord(zip, "archive_version");
    if (version != "0")
      throw ArchiveError("has archive version '" + version +
                         "'; the reader supports version 0");
  }
}

nlohmann::json parseJson(caffe2::serialize::PyTorchStreamReader &zip,
                         const std::string &record) {
  try {
    return nlohmann::json::parse(readRecord(zip, record));
  } catch (const nlohmann::json::parse_error &e) {
    throw ArchiveError("has malformed JSON in " + record + ": " + e.what());
  }
}

/// Runs `read` on the document, prefixing its schema errors with the record.
template <typename F>
void readJson(const std::string &record, F &&read) {
  try {
    read();
  } catch (const pt2::detail::SchemaError &e) {
    throw ArchiveError("has a malformed " + record + ": " + e.what());
  }
}

std::string modelRecord(caffe2::serialize::PyTorchStreamReader &zip,
                        llvm::StringRef modelName) {
  std::string record = kModelsDir + modelName.str() + ".json";
  if (zip.hasRecord(record))
    return record;
  std::string models;
  for (const std::string &r : zip.getAllRecords()) {
    llvm::StringRef name(r);
    if (name.consume_front(kModelsDir) && name.consume_back(".json"))
      models += (models.empty() ? "" : ", ") + name.str();
  }
  throw ArchiveError(
      "has no model JSON '" + record + "' (" +
      (models.empty() ? "no models/*.json at all" : "its models: " + models) +
      ")");
}

/// Reads the payload config `<dir><model>_<kind>_config.json` and the size
/// of each payload's record, without reading the payloads.
std::map<std::string, Payload>
readPayloads(caffe2::serialize::PyTorchStreamReader &zip, const char *dir,
             llvm::StringRef modelName, const char *kind) {
  std::string config = dir + modelName.str() + "_" + kind + "_config.json";
  if (!zip.hasRecord(config))
    throw ArchiveError("has no " + std::string(kind) + " config '" + config +
                       "'");
  nlohmann::json root = parseJson(zip, config);
  std::map<std::string, Payload> payloads;
  readJson(config, [&] { payloads = pt2::detail::readPayloadConfig(root); });
  for (auto &[name, payload] : payloads) {
    payload.record = dir + payload.record;
    if (!zip.hasRecord(payload.record))
      throw ArchiveError("lacks the record '" + payload.record + "' that " +
                         config + " stores '" + name + "' in");
    payload.recordBytes = zip.getRecordSize(payload.record);
  }
  return payloads;
}

/// Checks that each parameter, buffer and constant the signature binds is in
/// the payload config that should hold it (a non-persistent buffer is not
/// in the state_dict; it is stored with the constants).
void checkBindings(const ExportedProgram &program) {
  for (const InputSpec &in : program.inputSpecs) {
    bool isWeight = in.kind == InputSpec::Parameter ||
                    (in.kind == InputSpec::Buffer && in.persistent);
    bool isConstant = in.kind == InputSpec::Buffer ||
                      in.kind == InputSpec::TensorConstant ||
                      in.kind == InputSpec::CustomObj;
    const auto &payloads = isWeight ? program.weights : program.constants;
    if ((isWeight || isConstant) && !payloads.count(in.target))
      throw ArchiveError("binds input '" + in.name + "' to " +
                         getInputKindName(in.kind).str() + " '" + in.target +
                         "', which the archive's " +
                         (isWeight ? "weights" : "constants") +
                         " config does not list");
  }
}

ExportedProgram readArchive(llvm::StringRef path, llvm::StringRef modelName) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip = openZip(path);
  checkFormat(*zip);
  std::string record = modelRecord(*zip, modelName);
  nlohmann::json root = parseJson(*zip, record);

  ExportedProgram program;
  program.archivePath = path.str();
  program.modelName = modelName.str();
  readJson(record, [&] { pt2::detail::readSchemaVersion(root, program); });
  if (program.schemaMajor != kSupportedSchemaMajor)
    throw ArchiveError("has schema version " +
                       std::to_string(program.schemaMajor) + "." +
                       std::to_string(program.schemaMinor) + " in " + record +
                       "; the reader supports major version " +
                       std::to_string(kSupportedSchemaMajor));
  readJson(record, [&] { pt2::detail::readProgram(root, program); });
  program.weights = readPayloads(*zip, kWeightsDir, modelName, "weights");
  program.constants = readPayloads(*zip, kConstantsDir, modelName, "constants");
  checkBindings(program);
  return program;
}

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

} // namespace

llvm::Expected<ExportedProgram>
pt2::readExportArchive(llvm::StringRef path, llvm::StringRef modelName) {
  return reportErrors<ExportedProgram>(
      path, [&] { return readArchive(path, modelName); });
}

//===----------------------------------------------------------------------===//
// Payloads
//===----------------------------------------------------------------------===//

namespace {

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
at::Tensor viewRawPayload(caffe2::serialize::PyTorchStreamReader &zip,
                          const Payload &payload, const std::string &what,
                          at::DataPtr &storage) {
  const TensorMeta &meta = *payload.meta;
  if (meta.layout != Layout::Strided)
    throw ArchiveError(what + " has layout '" +
                       getLayoutName(meta.layout).str() +
                       "'; only strided tensors are read");
  const ScalarTypeInfo *info = lookup(meta.dtype);
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
  int64_t elements = int64_t(size) / info->size;
  if (int64_t(size) % info->size != 0 || last >= elements)
    throw ArchiveError(what + " needs " + std::to_string(last + 1) +
                       " elements of " + info->name + " but its record '" +
                       payload.record + "' has " + std::to_string(size) +
                       " bytes");
  at::Tensor flat = at::from_blob(storage.get(), {elements},
                                  at::TensorOptions().dtype(info->torchType));
  return flat.as_strided(sizes, strides, offset);
}

at::Tensor loadPickledPayload(caffe2::serialize::PyTorchStreamReader &zip,
                              const Payload &payload, const std::string &what) {
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
  const ScalarTypeInfo *info = lookup(payload.meta->dtype);
  if (!info)
    throw ArchiveError(what + " has no dtype");

  TensorData data;
  data.dtype = payload.meta->dtype;
  data.sizes = concrete(payload.meta->sizes, what);
  int64_t nbytes = info->size;
  for (int64_t s : data.sizes)
    if (s < 0 || llvm::MulOverflow(nbytes, s, nbytes))
      throw ArchiveError(what + " has a negative or too large size");
  if (nbytes == 0)
    return data;
  if (!payload.hasData())
    throw ArchiveError(what + " has no data: the program was exported "
                              "without weights (on the meta device, or "
                              "with fake tensors)");

  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip =
      openZip(program.archivePath);
  at::DataPtr storage;
  at::Tensor tensor;
  try {
    tensor = payload.pickled ? loadPickledPayload(*zip, payload, what)
                             : viewRawPayload(*zip, payload, what, storage);
  } catch (const c10::Error &e) {
    throw ArchiveError(what + " could not be read from '" + payload.record +
                       "': " + firstSentence(e.what_without_backtrace()));
  }
  tensor = tensor.to(at::kCPU).contiguous();
  if (tensor.sizes().vec() != data.sizes ||
      tensor.scalar_type() != info->torchType)
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
