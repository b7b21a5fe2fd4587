//===- Export.h - torch.export to glimmer importer --------------*- C++ -*-===//
//
// Imports a torch.export archive (.pt2, as torch.export.save writes it) into
// a func.func in the glimmer dialect: arguments named by the exported
// program's signature (user inputs by name, parameters and buffers by
// state_dict name), each ATen node converted through the table the
// TorchScript importer uses, symbolic sizes specialised to the example
// inputs. The import reads no weight payload; an archive exported on the
// meta device imports as well as one with weights.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_IMPORT_EXPORT_H
#define GLIMMER_IMPORT_EXPORT_H

#include "glimmer/Import/ImportOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace glimmer {

/// Imports the exported program. Problems are reported as MLIR diagnostics
/// on `context` (at the node's Python source line where there is one) and
/// yield null. With `options.weightsOutputPath` set, the parameters and
/// buffers are written there from the archive; an archive without weight
/// data (exported on the meta device) is then an error naming the first
/// weight it lacks.
mlir::OwningOpRef<mlir::ModuleOp>
importExportedProgram(mlir::MLIRContext &context, const ImportOptions &options);

/// Whether `path` names a torch.export archive by its extension (.pt2).
bool isExportArchivePath(llvm::StringRef path);

} // namespace glimmer

#endif // GLIMMER_IMPORT_EXPORT_H
