//===- ImportOptions.h - What every front end is given ----------*- C++ -*-===//
//
// The options the importers share: the program file, the shapes of its
// inputs (example inputs or --input-shapes), where its weights go, and the
// precision override.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_IMPORT_IMPORTOPTIONS_H
#define GLIMMER_IMPORT_IMPORTOPTIONS_H

#include <cstdint>
#include <string>
#include <vector>

namespace glimmer {

struct ImportOptions {
  /// Path of the program: a TorchScript archive (.pt) or a torch.export
  /// archive (.pt2).
  std::string modelPath;
  /// A safetensors file whose tensors are bound to forward arguments by
  /// name; gives their shapes and dtypes.
  std::string exampleInputsPath;
  /// Alternative to exampleInputsPath: "name:2x64xi64,name2:2x3x8x8xf32".
  std::string inputShapes;
  /// When non-empty, the parameters and buffers are written here as
  /// safetensors, keyed by their state_dict names (atomically, with file
  /// mode weightsFileMode: 0600 inside the private program cache).
  std::string weightsOutputPath;
  unsigned weightsFileMode = 0644;
  /// With weightsOutputPath: an archive that holds no data for some weight
  /// (exported on the meta device) writes no file instead of failing.
  bool weightsOptional = false;
  /// Name of the emitted function.
  std::string functionName = "forward";
  /// When "f32" or "f64", every floating-point tensor of the program (inputs,
  /// parameters, constants, and the targets of casts the model traced, e.g.
  /// `.float()`) gets this precision, and values folded at import time are
  /// computed in it. Empty keeps the traced dtypes.
  std::string floatType;
};

/// One entry of --input-shapes ("name:2x64xi64").
struct InputShape {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype; // "f32", "f64", "bf16", "f16", "i64", "i32", "i1"
};
/// Parses the --input-shapes syntax; on error returns false and sets `error`.
bool parseInputShapes(const std::string &text, std::vector<InputShape> &out,
                      std::string &error);

} // namespace glimmer

#endif // GLIMMER_IMPORT_IMPORTOPTIONS_H
