//===- Loader.cpp - Load compiled programs and their data -----------------===//

#include "glimmer_rt/Loader.h"

#include <dlfcn.h>

using namespace glimmer_rt;

std::unique_ptr<LoadedProgram> LoadedProgram::load(const std::string &path,
                                                   std::string &error) {
  // A bare file name would make dlopen search the library path instead.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    error = "cannot load compiled program '" + path +
            "': " + (why ? why : "unknown error");
    return nullptr;
  }
  auto program = std::unique_ptr<LoadedProgram>(new LoadedProgram());
  program->path = file;
  program->handle = handle;
  return program;
}

EntryFn LoadedProgram::entry(const std::string &function,
                             std::string &error) const {
  std::string symbol = "glimmer_entry_" + function;
  void *fn = dlsym(handle, symbol.c_str());
  if (!fn)
    error = "compiled program '" + path + "' has no entry '" + symbol + "'";
  return reinterpret_cast<EntryFn>(fn);
}

LoadedProgram::~LoadedProgram() {
  if (handle)
    dlclose(handle);
}

Tensor glimmer_rt::readTensor(const SafetensorsFile &file,
                              const TensorInfo &info) {
  return Tensor::fromData(info.dtype, info.shape, file.data(info));
}
