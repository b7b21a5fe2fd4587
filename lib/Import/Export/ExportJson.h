//===- ExportJson.h - torch.export JSON to the data model -------*- C++ -*-===//
//
// Private to the export archive reader: converts the model JSON and the
// payload configs of a .pt2 archive (already parsed by nlohmann/json) into
// the data model of glimmer/Import/ExportArchive.h.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_IMPORT_EXPORT_EXPORTJSON_H
#define GLIMMER_LIB_IMPORT_EXPORT_EXPORTJSON_H

#include "glimmer/Import/ExportArchive.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace glimmer::pt2::detail {

/// A JSON document that does not follow the schema. The message names the
/// offending field by its path ("graph_module.graph.nodes[0].target").
struct SchemaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads schema_version only, so that an archive of another major version
/// is refused before its other fields are interpreted.
void readSchemaVersion(const nlohmann::json &root, ExportedProgram &program);

/// Reads everything else of an ExportedProgram JSON into `program`.
void readProgram(const nlohmann::json &root, ExportedProgram &program);

/// Checks what the schema cannot say: every tensor a node names is a tensor
/// value of its graph, and the graph's inputs and outputs are the
/// signature's, in order. readProgram runs it.
void checkProgram(const ExportedProgram &program);

/// Reads a payload config ({"config": {name: PayloadMeta}}). The records'
/// sizes are left for the caller, which has the archive.
std::map<std::string, Payload> readPayloadConfig(const nlohmann::json &root);

} // namespace glimmer::pt2::detail

#endif // GLIMMER_LIB_IMPORT_EXPORT_EXPORTJSON_H
