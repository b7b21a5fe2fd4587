//===- ExportChecks.cpp - Consistency of a read torch.export program -----===//
//
// What the schema cannot say: the names a graph uses refer to its values, and
// its inputs and outputs are the signature's.
//
//===----------------------------------------------------------------------===//

#include "ExportJson.h"

using namespace glimmer::pt2;
using namespace glimmer::pt2::detail;

namespace {

//===----------------------------------------------------------------------===//
// References
//===----------------------------------------------------------------------===//

/// Checks that the tensors `arg` names are values of `graph`.
void checkTensorRefs(const Graph &graph, const Argument &arg,
                     const std::string &path) {
  auto check = [&](const std::optional<std::string> &name) {
    if (name && !graph.tensorValues.count(*name))
      throw SchemaError("tensor '" + *name +
                        "' is not in the graph's tensor_values at '" + path +
                        "'");
  };
  switch (arg.kind) {
  case ArgKind::Tensor:
    return check(arg.get<std::string>());
  case ArgKind::Tensors:
    for (const std::string &name : arg.get<std::vector<std::string>>())
      check(name);
    return;
  case ArgKind::OptionalTensor:
    return check(arg.get<std::optional<std::string>>());
  case ArgKind::OptionalTensors:
    for (const auto &name : arg.get<std::vector<std::optional<std::string>>>())
      check(name);
    return;
  default:
    return;
  }
}

void checkGraph(const Graph &graph, const std::string &path) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node &node = graph.nodes[i];
    std::string nodePath = path + ".nodes[" + std::to_string(i) + "]";
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const Argument &arg = node.inputs[j].arg;
      std::string argPath = nodePath + ".inputs[" + std::to_string(j) + "]";
      checkTensorRefs(graph, arg, argPath);
      if (arg.kind == ArgKind::Graph)
        checkGraph(*arg.get<GraphArg>().graph, argPath + ".arg.as_graph.graph");
    }
    for (size_t j = 0; j < node.outputs.size(); ++j)
      checkTensorRefs(graph, node.outputs[j],
                      nodePath + ".outputs[" + std::to_string(j) + "]");
  }
}

/// The graph's inputs (outputs) are the signature's, in order.
template <typename Spec>
void checkSpecs(const std::vector<Argument> &values,
                const std::vector<Spec> &specs, const char *valuesPath,
                const char *specsPath) {
  if (values.size() != specs.size())
    throw SchemaError(std::string(valuesPath) + " has " +
                      std::to_string(values.size()) + " entries but " +
                      specsPath + " has " + std::to_string(specs.size()));
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string name = getValueName(values[i]);
    if (!name.empty() && name != specs[i].name)
      throw SchemaError(std::string(valuesPath) + "[" + std::to_string(i) +
                        "] is '" + name + "' but " + specsPath + "[" +
                        std::to_string(i) + "] names '" + specs[i].name + "'");
  }
}

} // namespace

void detail::checkProgram(const ExportedProgram &program) {
  checkGraph(program.graph, "graph_module.graph");
  checkSpecs(program.graph.inputs, program.inputSpecs,
             "graph_module.graph.inputs", "graph_module.signature.input_specs");
  checkSpecs(program.graph.outputs, program.outputSpecs,
             "graph_module.graph.outputs",
             "graph_module.signature.output_specs");
}
