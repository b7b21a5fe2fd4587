//===- ProgramLoader.cpp - Load a compiled program and its manifest -------===//

#include "glimmer_rt/Trainer.h"

#include <dlfcn.h>

using namespace glimmer_rt;

std::unique_ptr<CompiledProgram>
CompiledProgram::load(const std::string &libraryPath, std::string &error) {
  auto program = std::unique_ptr<CompiledProgram>(new CompiledProgram());
  program->library = LoadedProgram::load(libraryPath, error);
  if (!program->library)
    return nullptr;
  std::string file = libraryPath.find('/') == std::string::npos
                         ? "./" + libraryPath
                         : libraryPath;
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
  auto manifest = handle ? reinterpret_cast<const char *(*)()>(
                               dlsym(handle, glimmer::kManifestSymbol))
                         : nullptr;
  if (handle)
    dlclose(handle);
  if (!manifest) {
    error = "compiled program '" + libraryPath +
            "' has no manifest (glimmer_program_manifest); was it built from "
            "glimmer-train's generated C++?";
    return nullptr;
  }
  if (!ProgramInfo::parseManifest(manifest(), program->programInfo, error)) {
    error = "compiled program '" + libraryPath + "': " + error;
    return nullptr;
  }
  for (const auto &[name, signature] : program->programInfo.functions) {
    Function &fn = program->functions[name];
    static_cast<Signature &>(fn) = signature;
    fn.entry = program->library->entry(name, error);
    if (!fn.entry)
      return nullptr;
  }
  return program;
}

const Function &CompiledProgram::function(const std::string &name) const {
  auto it = functions.find(name);
  if (it == functions.end())
    throw RuntimeError(
        "the compiled program has no @" + name +
        (name == "forward" ? "" : " (was it compiled for training?)"));
  return it->second;
}
