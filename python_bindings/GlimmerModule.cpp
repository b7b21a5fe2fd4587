//===- GlimmerModule.cpp - Python bindings for glimmer --------------------===//
//
// Exposes the thread-local SpmdContext as a Python context manager:
//
//   with glimmer.SpmdContext(dp_shard=2, cp=2):
//       assert glimmer.SpmdContext.current().cp == 2
//
// Python threads are OS threads, so each sees its own C++ thread-local
// context.
//
//===----------------------------------------------------------------------===//

#include "glimmer_contract/Attributes.h"
#include "glimmer_contract/SpmdContext.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

namespace py = pybind11;
using glimmer::CpBalancer;
using glimmer::MeshAxis;
using glimmer::PipelineSchedule;
using glimmer::SpmdContext;
using glimmer::SpmdScope;

namespace {
// Scopes entered by `with` on this thread, innermost last. Python's `with`
// exits in reverse order of entry, which SpmdScope requires.
thread_local std::vector<std::unique_ptr<SpmdScope>> pythonScopes;

SpmdContext checked(SpmdContext c) {
  std::string problem = c.validate();
  if (!problem.empty())
    throw py::value_error(problem);
  return c;
}

SpmdContext parseOrThrow(const std::string &text) {
  std::string error;
  std::optional<SpmdContext> c = SpmdContext::parse(text, &error);
  if (!c)
    throw py::value_error("invalid SPMD layout '" + text + "': " + error);
  return *c;
}
} // namespace

PYBIND11_MODULE(_glimmer, m) {
  m.doc() = "Glimmer: an MLIR compiler for context-parallel VLM training";
  // A checkpoint's metadata key of its step count.
  m.attr("_CHECKPOINT_STEP_KEY") = glimmer::kCheckpointStepKey;

  py::class_<SpmdContext>(m, "SpmdContext", R"doc(
A parallel layout. Use as a context manager to make it the current layout of
the calling thread; nested `with` blocks restore the outer layout on exit.)doc")
      .def(py::init([](int64_t dp_replicate, int64_t dp_shard, int64_t cp,
                       int64_t tp, int64_t pp, bool sp, int64_t microbatches,
                       int64_t virtualStages, const std::string &schedule,
                       const std::string &balancer) {
             // Reuse the textual parser so Python and --spmd= validate alike.
             std::string text =
                 "dp_replicate=" + std::to_string(dp_replicate) +
                 ",dp_shard=" + std::to_string(dp_shard) +
                 ",cp=" + std::to_string(cp) + ",tp=" + std::to_string(tp) +
                 ",pp=" + std::to_string(pp) + ",sp=" +
                 (sp ? "true" : "false") +
                 ",microbatches=" + std::to_string(microbatches) +
                 ",virtual_stages=" + std::to_string(virtualStages) +
                 ",schedule=" + schedule + ",balancer=" + balancer;
             std::string error;
             std::optional<SpmdContext> c = SpmdContext::parse(text, &error);
             if (!c)
               throw py::value_error("invalid SPMD layout: " + error);
             return *c;
           }),
           py::kw_only(), py::arg("dp_replicate") = 1, py::arg("dp_shard") = 1,
           py::arg("cp") = 1, py::arg("tp") = 1, py::arg("pp") = 1,
           py::arg("sp") = false, py::arg("microbatches") = 1,
           py::arg("virtual_stages") = 1,
           py::arg("schedule") = "1f1b", py::arg("balancer") = "head_tail")
      .def_static("parse", &parseOrThrow, py::arg("text"),
                  "Parses the --spmd= textual form.")
      .def_static(
          "current", []() { return SpmdContext::current(); },
          "The layout active on the calling thread.")
      .def_property_readonly("dp_replicate", &SpmdContext::dpReplicate)
      .def_property_readonly("dp_shard", &SpmdContext::dpShard)
      .def_property_readonly("cp", &SpmdContext::cp)
      .def_property_readonly("tp", &SpmdContext::tp)
      .def_property_readonly("pp", &SpmdContext::pp)
      .def_property_readonly("sp", [](const SpmdContext &c) { return c.sp; })
      .def_property_readonly("microbatches",
                             [](const SpmdContext &c) { return c.microbatches; })
      .def_property_readonly(
          "virtual_stages",
          [](const SpmdContext &c) { return c.virtualStages; })
      .def_property_readonly("schedule",
                             [](const SpmdContext &c) {
                               return std::string(
                                   glimmer::scheduleName(c.schedule));
                             })
      .def_property_readonly("balancer",
                             [](const SpmdContext &c) {
                               return std::string(
                                   glimmer::balancerName(c.balancer));
                             })
      .def_property_readonly("world_size", &SpmdContext::worldSize)
      .def("__enter__",
           [](const SpmdContext &c) {
             pythonScopes.push_back(std::make_unique<SpmdScope>(checked(c)));
             return c;
           })
      .def("__exit__",
           [](const SpmdContext &, py::object, py::object, py::object) {
             if (!pythonScopes.empty())
               pythonScopes.pop_back();
             return false;
           })
      .def("__eq__", [](const SpmdContext &a,
                        const SpmdContext &b) { return a == b; })
      .def("__str__", &SpmdContext::print)
      .def("__repr__", [](const SpmdContext &c) {
        return "glimmer.SpmdContext.parse('" + c.print() + "')";
      });
}
