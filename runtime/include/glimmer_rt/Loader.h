//===- Loader.h - Load compiled programs and their data ---------*- C++ -*-===//

#ifndef GLIMMER_RT_LOADER_H
#define GLIMMER_RT_LOADER_H

#include "glimmer_rt/Program.h"
#include "glimmer_rt/Safetensors.h"

#include <memory>
#include <string>

namespace glimmer_rt {

/// A program compiled to a shared library by the driver; it exports one
/// entry point per function (`glimmer_entry_<function>`).
class LoadedProgram {
public:
  /// dlopens `path`; null and `error` on failure.
  static std::unique_ptr<LoadedProgram> load(const std::string &path,
                                             std::string &error);
  ~LoadedProgram();
  LoadedProgram(const LoadedProgram &) = delete;
  LoadedProgram &operator=(const LoadedProgram &) = delete;

  /// The entry point of `function`, or null and `error`.
  EntryFn entry(const std::string &function, std::string &error) const;

private:
  LoadedProgram() = default;
  std::string path;
  void *handle = nullptr;
};

/// Reads tensor `info` of `file` as a Tensor of the same dtype and shape.
Tensor readTensor(const SafetensorsFile &file, const TensorInfo &info);

} // namespace glimmer_rt

#endif // GLIMMER_RT_LOADER_H
