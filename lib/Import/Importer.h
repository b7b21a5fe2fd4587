//===- Importer.h - TorchScript importer internals --------------*- C++ -*-===//
//
// Private to lib/Import: the TorchScript front end (TorchScript.cpp, its
// alias tracking in Aliasing.cpp, its prim:: ops in PrimOps.cpp). ATen ops
// go through the shared conversion table (OpConverter.h), each node
// presented as an OpCall.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_IMPORT_IMPORTER_H
#define GLIMMER_LIB_IMPORT_IMPORTER_H

#include "ExampleInputs.h"
#include "OpConverter.h"
#include "glimmer/Import/TorchScript.h"
#include "glimmer_rt/Safetensors.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <torch/script.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace glimmer::detail {
namespace jit = torch::jit;

class Importer : public OpConverter {
public:
  Importer(MLIRContext &context, const ImportOptions &options)
      : OpConverter(context), options(options) {}

  mlir::OwningOpRef<mlir::ModuleOp> run();

private:
  // Setup.
  LogicalResult loadModule();
  LogicalResult bindInputs(llvm::SmallVectorImpl<Type> &argTypes,
                           llvm::SmallVectorImpl<std::string> &argNames);
  void collectStateDict(const jit::Module &m, const std::string &prefix);
  LogicalResult writeWeights();

  // Diagnostics and locations.
  Location locOf(jit::Node *node);
  std::string
  modulePath(const std::vector<jit::InlinedCallStackEntry> &entries);
  std::string describeNode(jit::Node *node);

  // Node conversion.
  void convertNode(jit::Node *node);
  /// Views and in-place writes (Aliasing.cpp): a tensor that aten::select
  /// or aten::slice takes of another is recorded as a view of its root;
  /// an in-place op on a view writes its result back into the root, and
  /// a view read after its root changed is taken again, so reads follow
  /// PyTorch's alias semantics on a functional program.
  void noteView(jit::Node *node);
  void noteInPlaceWrite(jit::Node *node);
  void refreshView(const jit::Value *v);
  /// Evaluates `node` with LibTorch when all its inputs are known at import
  /// time (e.g. masks and position tables built from arange); binds constant
  /// outputs and returns true, or returns false to convert it normally.
  bool tryFold(jit::Node *node);
  /// The value `v` has when `user` reads it as the program runs on the
  /// example inputs, for what the trace fixed by that run (how many entries
  /// a boolean mask selects); `why` starts the error message when it
  /// cannot be had.
  at::Tensor exampleValue(jit::Node *user, jit::Value *v,
                          const std::string &why);
  /// TorchScript's own ops (PrimOps.cpp): constants, module attributes,
  /// lists and tuples, which the TorchScript graph has and export's
  /// does not.
  void registerPrimConverters();
  /// A node as the shared converters see it.
  class NodeCall;
  using OpConverter::in;
  using OpConverter::setOut;
  using OpConverter::setTensor;
  Imp &in(jit::Node *n, size_t i);
  void setOut(jit::Node *n, size_t i, Imp v) { env[n->output(i)] = std::move(v); }
  void setTensor(jit::Node *n, MValue v) { setOut(n, 0, Imp::ofTensor(v)); }

  const ImportOptions &options;

  jit::Module module;
  std::shared_ptr<jit::Graph> graph;
  llvm::DenseMap<const jit::Value *, Imp> env;
  struct View {
    const jit::Value *root;
    std::vector<ViewStep> steps;
    /// The root's version the view was taken from.
    unsigned version;
  };
  llvm::DenseMap<const jit::Value *, View> views;
  /// How many in-place writes each root has had.
  llvm::DenseMap<const jit::Value *, unsigned> versions;
  MValue writeView(MValue base, llvm::ArrayRef<ViewStep> steps, MValue v);
  // state_dict order: (name, tensor, is_parameter).
  std::vector<std::tuple<std::string, at::Tensor, bool>> stateDict;
  // Tied weights: a state_dict key whose tensor is an earlier key's (an
  // output projection sharing the token embedding), mapped to that key.
  // Both names read the same argument, so the gradients of their uses sum,
  // as PyTorch's shared parameter does.
  std::vector<std::pair<std::string, std::string>> aliases;
  llvm::DenseMap<const void *, std::string> tensorNames;
  llvm::StringMap<MValue> stateArgs;
  // Graph input index of each bound tensor argument, in argument order.
  std::vector<size_t> inputGraphIndices;
  // Inputs the traced program never reads (name, digest of the example
  // values): the trace took what the model computed from them as constants.
  std::vector<std::pair<std::string, std::string>> tracedInputs;
  ExampleInputs examples;
  std::map<std::string, std::function<void(jit::Node *)>> primConverters;
};

/// A TorchScript node as the shared converters see it: operands from the
/// importer's environment in the node's input order (the schema's).
class Importer::NodeCall final : public OpCall {
public:
  NodeCall(Importer &importer, jit::Node *node)
      : importer(importer), node(node) {}
  std::string kind() const override { return node->kind().toQualString(); }
  const c10::FunctionSchema *schema() const override {
    return node->maybeSchema();
  }
  size_t numInputs() const override { return node->inputs().size(); }
  Imp &input(size_t i) override { return importer.in(node, i); }
  size_t numOutputs() const override { return node->outputs().size(); }
  void setOutput(size_t i, Imp value) override {
    importer.setOut(node, i, std::move(value));
  }
  bool inputIsLiteral(size_t i) const override {
    return node->input(i)->node()->kind() == c10::prim::Constant;
  }
  at::Tensor exampleValue(size_t i, std::optional<size_t> element,
                          const std::string &why) override {
    jit::Value *v = node->input(i);
    if (element) {
      // A list holding a tensor computed at run time is built on the graph
      // (a constant list holds constants only).
      jit::Node *list = v->node();
      if (list->kind() != c10::prim::ListConstruct ||
          *element >= list->inputs().size())
        fail(kind() + " expects its indices from a list construction");
      v = list->input(*element);
    }
    return importer.exampleValue(node, v, why);
  }

private:
  Importer &importer;
  jit::Node *node;
};

} // namespace glimmer::detail

#endif // GLIMMER_LIB_IMPORT_IMPORTER_H
