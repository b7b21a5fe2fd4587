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
#include "ArchiveIO.h"
#include "ExportJson.h"

#include "llvm/Support/FileSystem.h"

using namespace glimmer;
using namespace glimmer::pt2;
using namespace glimmer::pt2::detail;

std::string detail::firstSentence(const char *message) {
  llvm::StringRef m(message);
  m = m.take_until([](char c) { return c == '\n'; });
  size_t end = m.find(". ");
  return m.take_front(end == llvm::StringRef::npos ? m.size() : end).str();
}

std::unique_ptr<Zip> detail::openZip(llvm::StringRef path) {
  if (std::error_code ec =
          llvm::sys::fs::access(path, llvm::sys::fs::AccessMode::Exist))
    throw ArchiveError("cannot be opened: " + ec.message());
  try {
    return std::make_unique<Zip>(path.str());
  } catch (const c10::Error &e) {
    throw ArchiveError("is not a torch.export archive: " +
                       firstSentence(e.what_without_backtrace()));
  }
}

std::string detail::readRecord(Zip &zip, const std::string &name) {
  auto [data, size] = zip.getRecord(name);
  return std::string(static_cast<const char *>(data.get()), size);
}

namespace {

constexpr const char *kModelsDir = "models/";
constexpr const char *kWeightsDir = "data/weights/";
constexpr const char *kConstantsDir = "data/constants/";

void checkFormat(Zip &zip) {
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

nlohmann::json parseJson(Zip &zip, const std::string &record) {
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
  } catch (const detail::SchemaError &e) {
    throw ArchiveError("has a malformed " + record + ": " + e.what());
  }
}

std::string modelRecord(Zip &zip, llvm::StringRef modelName) {
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
std::map<std::string, Payload> readPayloads(Zip &zip, const char *dir,
                                            llvm::StringRef modelName,
                                            const char *kind) {
  std::string config = dir + modelName.str() + "_" + kind + "_config.json";
  if (!zip.hasRecord(config))
    throw ArchiveError("has no " + std::string(kind) + " config '" + config +
                       "'");
  nlohmann::json root = parseJson(zip, config);
  std::map<std::string, Payload> payloads;
  readJson(config, [&] { payloads = detail::readPayloadConfig(root); });
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
  std::unique_ptr<Zip> zip = openZip(path);
  checkFormat(*zip);
  std::string record = modelRecord(*zip, modelName);
  nlohmann::json root = parseJson(*zip, record);

  ExportedProgram program;
  program.archivePath = path.str();
  program.modelName = modelName.str();
  readJson(record, [&] { detail::readSchemaVersion(root, program); });
  if (program.schemaMajor != kSupportedSchemaMajor)
    throw ArchiveError("has schema version " +
                       std::to_string(program.schemaMajor) + "." +
                       std::to_string(program.schemaMinor) + " in " + record +
                       "; the reader supports major version " +
                       std::to_string(kSupportedSchemaMajor));
  readJson(record, [&] { detail::readProgram(root, program); });
  program.weights = readPayloads(*zip, kWeightsDir, modelName, "weights");
  program.constants = readPayloads(*zip, kConstantsDir, modelName, "constants");
  checkBindings(program);
  return program;
}

} // namespace

llvm::Expected<ExportedProgram>
pt2::readExportArchive(llvm::StringRef path, llvm::StringRef modelName) {
  return reportErrors<ExportedProgram>(
      path, [&] { return readArchive(path, modelName); });
}
