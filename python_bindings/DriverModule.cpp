//===- DriverModule.cpp - Python bindings for the compile-then-run flow ---===//
//
// `glimmer._driver`: the driver of include/glimmer/Driver/Driver.h (the code
// glimmer-train runs), for glimmer.compile() and glimmer.Program in
// glimmer/__init__.py, which is the API; this module is its engine.
//
//   p = _driver.compile(model_path, example_path, dtype="f32", train=True)
//   b = _driver.Batch.read(path)          # or Batch.parse(bytes, name)
//   t = _driver.Trainer(p)
//   step, loss, grad_norm = t.step(b, 1)
//
// Compiling and running release the GIL. MLIR diagnostics are captured (with
// their locations, formatted like glimmer-train's) and raised as
// glimmer.CompileError; glimmer_rt::RuntimeError from the runtime or a
// kernel is raised as RuntimeError with its message. Tensors cross to Python
// as (dtype name, shape, bytearray), which glimmer/__init__.py turns into
// numpy arrays, so this module does not depend on numpy's ABI.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Driver/Driver.h"
#include "glimmer_rt/Device.h"
#include "glimmer_rt/HfCheckpoint.h"
#include "glimmer_rt/Kernels.h"
#include "glimmer_rt/Safetensors.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <cstring>
#include <stdexcept>
#include <string>

namespace py = pybind11;

namespace {

/// A failed compilation; raised in Python as glimmer.CompileError (defined
/// in glimmer/__init__.py) carrying the diagnostics.
struct CompileFailure : std::exception {
  explicit CompileFailure(std::string message) : message(std::move(message)) {}
  const char *what() const noexcept override { return message.c_str(); }
  std::string message;
};

/// Runs `body`, turning runtime errors into std::runtime_error (Python
/// RuntimeError) whatever translators other modules registered.
template <typename F> auto guarded(F &&body) -> decltype(body()) {
  try {
    return body();
  } catch (const glimmer_rt::RuntimeError &e) {
    throw std::runtime_error(e.message);
  }
}

/// A batch of named tensors (a safetensors image).
struct Batch {
  std::shared_ptr<glimmer_rt::SafetensorsFile> file;
  std::string name;
};

/// A compiled and loaded model, with the MLIR context its module lives in.
struct Program {
  // Declared first, destroyed last: `model.module` lives in it.
  std::unique_ptr<mlir::MLIRContext> context;
  glimmer::CompiledModel model;
  std::string floatType;
  bool train = false;
  /// Warnings and remarks of a successful compilation.
  std::string diagnostics;
  /// Serializes runs: forward() points the model at other weights briefly.
  std::mutex mutex;
};

/// Compiling (re)writes the model's exported weights in the cache directory
/// (not atomically); reading them waits for compiles of this process.
std::shared_mutex weightsMutex;

struct TrainerHandle {
  std::shared_ptr<Program> program;
  std::unique_ptr<glimmer_rt::Ranks> ranks;
  std::unique_ptr<glimmer_rt::Trainer> trainer;
};

/// @forward of `model` on `data` with the weights in `weightsPath`.
double runForwardOf(const glimmer::CompiledModel &model,
                    const std::string &weightsPath,
                    const glimmer_rt::SafetensorsFile &data) {
  glimmer_rt::Ranks ranks(model.layout(), glimmer_rt::Backend::CPU);
  return glimmer_rt::runForward(*model.program, weightsPath, data, ranks);
}

py::tuple shapeTuple(const glimmer_rt::Shape &shape) {
  py::tuple t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    t[i] = py::int_(shape[i]);
  return t;
}

/// (dtype name, shape, bytearray) of a copy of `t`.
py::tuple toPython(const glimmer_rt::Tensor &t) {
  return py::make_tuple(
      std::string(glimmer_rt::dtypeName(t.dtype())), shapeTuple(t.shape()),
      py::bytearray(static_cast<const char *>(t.raw()), t.nbytes()));
}

py::dict toPython(const std::map<std::string, glimmer_rt::Tensor> &tensors) {
  py::dict out;
  for (const auto &[name, t] : tensors)
    out[py::str(name)] = toPython(t);
  return out;
}

std::unique_ptr<glimmer_rt::SafetensorsFile>
readOrThrow(const std::string &path) {
  std::string error;
  auto file = glimmer_rt::SafetensorsFile::read(path, error);
  if (!file)
    throw glimmer_rt::RuntimeError(error);
  return file;
}

std::shared_ptr<Program>
compile(const std::string &modelPath, const std::string &examplePath,
        const std::string &floatType, bool train,
        const glimmer::OptimizerOptions &optimizer,
        const std::string &cacheDir, bool verbose, const std::string &spmd,
        const std::string &tpPlan, const std::string &ppSplit,
        bool weightsOptional, const std::string &ac, int64_t acBudget) {
  auto program = std::make_shared<Program>();
  program->floatType = floatType;
  program->train = train;
  std::string diagnostics;
  bool ok = false;
  {
    py::gil_scoped_release release;
    std::unique_lock<std::shared_mutex> weightsLock(weightsMutex);
    program->context = std::make_unique<mlir::MLIRContext>();
    // An error on an op would otherwise carry the whole module as a note.
    program->context->printOpOnDiagnostic(false);
    llvm::SourceMgr sourceMgr;
    llvm::raw_string_ostream os(diagnostics);
    // Formats "file:line:col: error: message" plus the source line, as
    // glimmer-train prints them.
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr,
                                             program->context.get(), os);
    glimmer::DriverOptions options;
    options.modelPath = modelPath;
    options.dataPath = examplePath;
    options.floatType = floatType;
    options.train = train;
    options.optimizer = optimizer;
    options.cacheDir = cacheDir;
    options.spmd = spmd;
    options.tpPlan = tpPlan;
    options.ppSplit = ppSplit;
    options.activationCheckpointing = ac;
    options.activationBudget = acBudget;
    // Bound from a checkpoint (bind_weights): the archive may hold none.
    if (weightsOptional)
      options.weights = glimmer::DriverOptions::Weights::WriteIfPresent;
    if (verbose)
      options.progress = [](const std::string &message) {
        llvm::errs() << "[glimmer] " << message << "\n";
        llvm::errs().flush();
      };
    try {
      auto model = glimmer::compileModel(*program->context, options);
      if (mlir::succeeded(model)) {
        program->model = std::move(*model);
        ok = true;
      }
    } catch (const std::exception &e) {
      os << "error: " << e.what() << "\n";
    }
    os.flush();
  }
  // Keep the text as the compiler printed it, less the trailing newline
  // and the empty location of diagnostics that have none.
  while (!diagnostics.empty() && diagnostics.back() == '\n')
    diagnostics.pop_back();
  for (size_t at = 0; (at = diagnostics.find("<unknown>:0: ", at)) !=
                      std::string::npos;)
    diagnostics.erase(at, strlen("<unknown>:0: "));
  if (!ok)
    throw CompileFailure(diagnostics.empty()
                             ? "compiling '" + modelPath + "' failed"
                             : diagnostics);
  program->diagnostics = diagnostics;
  return program;
}

/// Runs @forward on `batch`; with `trainer`, with its current parameters
/// (written with the buffers to `scratchPath`) instead of the exported ones.
double forward(Program &program, const Batch &batch,
               const TrainerHandle *trainer, const std::string &scratchPath) {
  py::gil_scoped_release release;
  return guarded([&] {
    std::shared_lock<std::shared_mutex> weightsLock(weightsMutex);
    std::unique_lock<std::mutex> lock(program.mutex, std::defer_lock);
    if (!trainer) {
      lock.lock();
      return runForwardOf(program.model, program.model.weightsPath,
                          *batch.file);
    }
    std::unique_lock<std::mutex> trainerLock;
    if (trainer->program.get() != &program) {
      trainerLock =
          std::unique_lock<std::mutex>(trainer->program->mutex, std::defer_lock);
      std::lock(lock, trainerLock);
    } else {
      lock.lock();
    }
    auto weights = readOrThrow(program.model.weightsPath);
    const std::map<std::string, glimmer_rt::Tensor> params =
        trainer->trainer->parameters();
    std::vector<glimmer_rt::TensorView> views;
    for (const glimmer_rt::TensorInfo &info : weights->tensors()) {
      auto it = params.find(info.name);
      if (it != params.end())
        views.push_back({info.name, it->second.dtype(), it->second.shape(),
                         it->second.raw()});
      else
        views.push_back({info.name, info.dtype, info.shape,
                         weights->data(info)});
    }
    std::string error;
    if (!glimmer_rt::writeSafetensors(scratchPath, views, {}, error))
      throw glimmer_rt::RuntimeError(error);
    return runForwardOf(program.model, scratchPath, *batch.file);
  });
}

/// The model's exported parameters, as the program's @forward expects them.
std::map<std::string, glimmer_rt::Tensor> initialParameters(Program &program) {
  std::shared_lock<std::shared_mutex> weightsLock(weightsMutex);
  std::lock_guard<std::mutex> lock(program.mutex);
  auto weights = readOrThrow(program.model.weightsPath);
  std::map<std::string, glimmer_rt::Tensor> out;
  auto fn = program.model.info().functions.find("forward");
  if (fn == program.model.info().functions.end())
    throw glimmer_rt::RuntimeError("the compiled program has no @forward");
  for (const glimmer::Slot &slot : fn->second.arguments) {
    if (slot.role != glimmer::Role::Parameter)
      continue;
    const glimmer_rt::TensorInfo *info = weights->find(slot.name);
    if (!info)
      throw glimmer_rt::RuntimeError("the weights have no tensor '" +
                                     slot.name + "'");
    glimmer_rt::Tensor t = glimmer_rt::readTensor(*weights, *info);
    out[slot.name] =
        t.dtype() == slot.dtype ? t : glimmer_rt::convert(t, slot.dtype);
  }
  return out;
}

} // namespace

PYBIND11_MODULE(_driver, m) {
  // cuDNN attention crashes while building its plan inside Python
  // processes (glimmer_rt::setCudnnAttention says more): off here.
  glimmer_rt::setCudnnAttention(false);
  m.doc() = "Glimmer's compile-then-run driver (use glimmer.compile)";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const CompileFailure &e) {
      py::object cls = py::module_::import("glimmer").attr("CompileError");
      PyErr_SetString(cls.ptr(), e.message.c_str());
    }
  });

  m.def("default_cache_dir", &glimmer_rt::defaultCacheDir,
        "$GLIMMER_CACHE_DIR, else $XDG_CACHE_HOME/glimmer, else "
        "~/.cache/glimmer");

  m.def(
      "write_checkpoint",
      [](const std::string &tensorsPath, const std::string &path,
         int64_t step) {
        py::gil_scoped_release release;
        guarded([&] {
          auto file = readOrThrow(tensorsPath);
          std::vector<glimmer_rt::TensorView> views;
          for (const glimmer_rt::TensorInfo &info : file->tensors())
            views.push_back({info.name, info.dtype, info.shape,
                             file->data(info)});
          glimmer_rt::writeCheckpoint(path, views, step);
        });
      },
      py::arg("tensors"), py::arg("path"), py::arg("step"),
      "Writes the tensors of a safetensors file as a checkpoint at `path` "
      "(step count and checksum added, as Trainer.save writes them).");

  py::class_<Batch>(m, "Batch", "Named tensors (a safetensors image).")
      .def_static(
          "read",
          [](const std::string &path) {
            std::unique_ptr<glimmer_rt::SafetensorsFile> file;
            {
              py::gil_scoped_release release;
              file = guarded([&] { return readOrThrow(path); });
            }
            return Batch{std::move(file), path};
          },
          py::arg("path"))
      .def_static(
          "parse",
          [](const py::bytes &image, const std::string &name) {
            std::string bytes = image;
            std::string error;
            auto file = glimmer_rt::SafetensorsFile::parse(
                std::vector<uint8_t>(bytes.begin(), bytes.end()), name,
                error);
            if (!file)
              throw std::runtime_error(error);
            return Batch{std::move(file), name};
          },
          py::arg("image"), py::arg("name"))
      .def_readonly("name", &Batch::name)
      .def_property_readonly("names", [](const Batch &b) {
        std::vector<std::string> names;
        for (const auto &info : b.file->tensors())
          names.push_back(info.name);
        return names;
      });

  py::class_<Program, std::shared_ptr<Program>>(m, "Program",
                                                 "A compiled, loaded model.")
      .def_property_readonly("mlir",
                             [](Program &p) {
                               std::string text;
                               llvm::raw_string_ostream os(text);
                               p.model.module->print(os);
                               os.flush();
                               return text;
                             })
      .def_property_readonly(
          "cpp", [](const Program &p) { return p.model.cppSource; })
      .def_property_readonly(
          "library_path", [](const Program &p) { return p.model.libraryPath; })
      .def_property_readonly(
          "weights_path", [](const Program &p) { return p.model.weightsPath; })
      .def_readonly("dtype", &Program::floatType)
      .def_readonly("train", &Program::train)
      .def_readonly("diagnostics", &Program::diagnostics)
      .def(
          "slots",
          [](const Program &p, const std::string &function, bool results) {
            auto it = p.model.info().functions.find(function);
            if (it == p.model.info().functions.end())
              throw py::key_error("the compiled program has no @" + function);
            py::list out;
            for (const glimmer::Slot &s :
                 results ? it->second.results : it->second.arguments)
              out.append(
                  py::make_tuple(std::string(glimmer::roleName(s.role)), s.name,
                                 std::string(glimmer_rt::dtypeName(s.dtype)),
                                 shapeTuple(s.shape)));
            return out;
          },
          py::arg("function"), py::arg("results") = false,
          "(role, name, dtype, shape) of each argument (or result).")
      .def_property_readonly("functions",
                             [](const Program &p) {
                               std::vector<std::string> names;
                               for (const auto &entry : p.model.info().functions)
                                 names.push_back(entry.first);
                               return names;
                             })
      .def(
          "forward",
          [](Program &p, const Batch &b, const TrainerHandle *trainer,
             const std::string &scratchPath) {
            return forward(p, b, trainer, scratchPath);
          },
          py::arg("batch"), py::arg("trainer") = nullptr,
          py::arg("scratch_path") = "")
      .def(
          "bind_weights",
          [](Program &p, const std::string &checkpoint,
             const std::string &outPath) {
            py::gil_scoped_release release;
            std::shared_lock<std::shared_mutex> weightsLock(weightsMutex);
            std::lock_guard<std::mutex> lock(p.mutex);
            guarded([&] {
              glimmer_rt::bindCheckpoint(p.model.info(), p.model.weightsPath,
                                         checkpoint, outPath);
            });
            p.model.weightsPath = outPath;
          },
          py::arg("checkpoint"), py::arg("out_path"),
          "Binds a safetensors file or Hugging Face checkpoint directory by "
          "state_dict name (as glimmer-train --weights), written to "
          "out_path, which the program's weights become.")
      .def("initial_parameters", [](Program &p) {
        std::map<std::string, glimmer_rt::Tensor> params;
        {
          py::gil_scoped_release release;
          params = guarded([&] { return initialParameters(p); });
        }
        return toPython(params);
      });

  m.def(
      "compile",
      [](const std::string &modelPath, const std::string &examplePath,
         const std::string &dtype, bool train, const std::string &optimizer,
         double lr, double weightDecay, double beta1, double beta2, double eps,
         double maxNorm, const std::string &cacheDir, bool verbose,
         const std::string &spmd, const std::string &tpPlan,
         const std::string &ppSplit, bool weightsOptional,
         const std::string &ac, int64_t acBudget) {
        glimmer::OptimizerOptions o{optimizer, lr,          beta1,  beta2,
                                    eps,       weightDecay, maxNorm};
        return compile(modelPath, examplePath, dtype, train, o, cacheDir,
                       verbose, spmd, tpPlan, ppSplit, weightsOptional, ac,
                       acBudget);
      },
      py::arg("model_path"), py::arg("example_path"), py::arg("dtype") = "f32",
      py::arg("train") = true, py::arg("optimizer") = "adamw",
      py::arg("lr") = 1e-3, py::arg("weight_decay") = -1.0,
      py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("eps") = 1e-8,
      py::arg("max_norm") = 0.0, py::arg("cache_dir") = "",
      py::arg("verbose") = false, py::arg("spmd") = "",
      py::arg("tp_plan") = "", py::arg("pp_split") = "",
      py::arg("weights_optional") = false, py::arg("ac") = "none",
      py::arg("ac_budget") = -1,
      "Imports, runs the pipeline (partitioned for `spmd` when given; the "
      "ranks then run as threads), emits C++, compiles and loads it "
      "(glimmer::compileModel). Raises glimmer.CompileError.");

  py::class_<TrainerHandle>(m, "Trainer",
                            "Parameters and optimizer state over a program "
                            "compiled for training (glimmer_rt::Trainer).")
      .def(py::init([](std::shared_ptr<Program> program) {
             auto handle = std::make_unique<TrainerHandle>();
             handle->program = program;
             py::gil_scoped_release release;
             std::shared_lock<std::shared_mutex> weightsLock(weightsMutex);
             std::lock_guard<std::mutex> lock(program->mutex);
             handle->trainer = guarded([&] {
               handle->ranks = std::make_unique<glimmer_rt::Ranks>(
                   program->model.layout(), glimmer_rt::Backend::CPU);
               return std::make_unique<glimmer_rt::Trainer>(
                   *program->model.program, program->model.weightsPath,
                   *handle->ranks);
             });
             return handle;
           }),
           py::arg("program"))
      .def_readonly("program", &TrainerHandle::program)
      .def(
          "step",
          [](TrainerHandle &t, const Batch &b) {
            glimmer_rt::Trainer::StepResult r;
            {
              py::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(t.program->mutex);
              r = guarded([&] { return t.trainer->step(*b.file); });
            }
            return py::make_tuple(r.step, r.loss, r.gradNorm);
          },
          py::arg("batch"),
          "One optimizer step; returns (step, loss, grad_norm).")
      .def(
          "save",
          [](const TrainerHandle &t, const std::string &path) {
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(t.program->mutex);
            guarded([&] { t.trainer->save(path); });
          },
          py::arg("path"))
      .def(
          "resume",
          [](TrainerHandle &t, const std::string &path) {
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(t.program->mutex);
            guarded([&] { t.trainer->resume(path); });
          },
          py::arg("path"))
      .def_property_readonly(
          "steps_done",
          [](const TrainerHandle &t) { return t.trainer->stepsDone(); })
      .def(
          "export_weights",
          [](TrainerHandle &t, const std::string &dir,
             const std::string &maxShardSize) {
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(t.program->mutex);
            guarded([&] {
              glimmer_rt::exportHfCheckpoint(
                  dir, t.trainer->parameters(),
                  glimmer_rt::parseShardSize(maxShardSize));
            });
          },
          py::arg("dir"), py::arg("max_shard_size") = "5GB",
          "Writes the parameters as save_pretrained does "
          "(glimmer-train --export-weights).")
      .def("parameters", [](const TrainerHandle &t) {
        return toPython(t.trainer->parameters());
      });
}
