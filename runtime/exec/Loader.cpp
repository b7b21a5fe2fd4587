//===- Loader.cpp - Load compiled programs and their data -----------------===//

#include "glimmer_rt/Loader.h"

#include <dlfcn.h>

using namespace glimmer_rt;

std::unique_ptr<LoadedProgram>
LoadedProgram::load(const std::string &path, const std::string &function,
                    std::string &error) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    error = "cannot load compiled program '" + path +
            "': " + (why ? why : "unknown error");
    return nullptr;
  }
  std::string symbol = "glimmer_entry_" + function;
  void *entry = dlsym(handle, symbol.c_str());
  if (!entry) {
    error = "compiled program '" + path + "' has no entry '" + symbol + "'";
    dlclose(handle);
    return nullptr;
  }
  auto program = std::unique_ptr<LoadedProgram>(new LoadedProgram());
  program->handle = handle;
  program->entry = reinterpret_cast<EntryFn>(entry);
  return program;
}

LoadedProgram::~LoadedProgram() {
  if (handle)
    dlclose(handle);
}

Tensor glimmer_rt::readTensor(const SafetensorsFile &file,
                              const TensorInfo &info) {
  return Tensor::fromData(info.dtype, info.shape, file.data(info));
}
