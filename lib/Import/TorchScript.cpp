//===- TorchScript.cpp - TorchScript to glimmer importer ------------------===//
//
// Walks the inlined graph of `forward` and emits glimmer ops. A saved archive
// carries no shapes, so every converter computes its result shape from its
// operands (all shapes are static, taken from the example inputs). Values
// that TorchScript computes on the host (sizes, lists, dtypes, scalar math)
// are evaluated here, at import time.
//
// The long tail of ATen is decomposed into the dialect's small core; fused
// ops are emitted where the dialect has them (linear, attention, norms,
// cross-entropy, embedding, conv2d).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/script.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

using namespace glimmer;
using namespace glimmer::detail;

static Location sourceLoc(MLIRContext &ctx, const jit::SourceRange &range) {
  // Ranges in a loaded archive point into its serialized code; the archive's
  // debug info maps them back to the user's Python source.
  jit::SourceRange original = range;
  if (auto generated = range.findSourceRangeThatGenerated())
    original = *generated;
  if (auto flc = original.file_line_col()) {
    auto [file, line, col] = *flc;
    return mlir::FileLineColLoc::get(&ctx, file, line, col + 1);
  }
  return mlir::UnknownLoc::get(&ctx);
}

/// The state_dict-style path of the module a call stack runs in. Inlined
/// call stacks record only the attribute name of each called submodule
/// (`layers.0` is recorded as `0` when `layers` is a ModuleList, which is
/// iterated, not called), so each name is resolved against the module tree,
/// searching below the current module when it is not a direct child.
std::string Importer::modulePath(
    const std::vector<jit::InlinedCallStackEntry> &entries) {
  std::string path;
  c10::IValue current = module._ivalue();
  for (const auto &entry : entries) {
    const auto &info = std::get<2>(entry);
    if (!info || info->instance_name().empty())
      continue;
    const std::string &name = info->instance_name();
    // Breadth-first search for the nearest descendant called `name`.
    std::vector<std::pair<std::string, c10::IValue>> queue{{"", current}};
    bool found = false;
    for (size_t q = 0; q < queue.size() && !found; ++q) {
      auto [prefix, object] = queue[q];
      if (!object.isObject())
        continue;
      auto obj = object.toObject();
      const auto &type = obj->type();
      for (size_t i = 0; i < type->numAttributes(); ++i) {
        if (!type->getAttribute(i)->cast<c10::ClassType>())
          continue;
        std::string child = type->getAttributeName(i);
        std::string childPath = prefix.empty() ? child : prefix + "." + child;
        // The class must match too: `0` names the first entry of every
        // Sequential and ModuleList, and the first found is often another
        // container's.
        c10::IValue slot = obj->getSlot(i);
        if (child == name && (!info->class_type() || !slot.isObject() ||
                              slot.toObject()->type() == info->class_type())) {
          path += (path.empty() ? "" : ".") + childPath;
          current = slot;
          found = true;
          break;
        }
        queue.emplace_back(childPath, slot);
      }
    }
    if (!found)
      path += (path.empty() ? "" : ".") + name;
  }
  return path;
}

Location Importer::locOf(jit::Node *node) {
  Location loc = sourceLoc(ctx, node->sourceRange());
  std::string path;
  if (auto cs = node->callstack()) {
    auto entries = (*cs)->vec();
    path = modulePath(entries);
    // Innermost frame first: the call site in each caller, outwards.
    llvm::SmallVector<Location> frames;
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      Location site = sourceLoc(ctx, std::get<1>(*it));
      if (!mlir::isa<mlir::UnknownLoc>(site))
        frames.push_back(site);
    }
    if (!frames.empty())
      loc = mlir::CallSiteLoc::get(loc, frames);
  }
  if (!path.empty())
    loc = mlir::NameLoc::get(b.getStringAttr(path), loc);
  return loc;
}

std::string Importer::describeNode(jit::Node *node) {
  std::string text = "'" + std::string(node->kind().toQualString()) + "'";
  if (const c10::FunctionSchema *schema = node->maybeSchema()) {
    std::ostringstream os;
    os << *schema;
    text += " (schema: " + os.str() + ")";
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Setup: load, bind inputs, parameters
//===----------------------------------------------------------------------===//

LogicalResult Importer::loadModule() {
  auto unknown = mlir::UnknownLoc::get(&ctx);
  if (!llvm::sys::fs::exists(options.modelPath))
    return mlir::emitError(unknown)
           << "cannot open TorchScript file '" << options.modelPath
           << "': no such file";
  try {
    module = jit::load(options.modelPath);
  } catch (const c10::Error &e) {
    std::string what = e.what_without_backtrace();
    return mlir::emitError(unknown)
           << "'" << options.modelPath
           << "' is not a loadable TorchScript archive: "
           << what.substr(0, what.find('\n'));
  } catch (const std::exception &e) {
    std::string what = e.what();
    return mlir::emitError(unknown)
           << "'" << options.modelPath
           << "' is not a loadable TorchScript archive: "
           << what.substr(0, what.find('\n'));
  }
  auto method = module.find_method("forward");
  if (!method)
    return mlir::emitError(unknown)
           << "TorchScript module '" << options.modelPath
           << "' has no forward method";
  graph = method->graph()->copy();
  jit::Inline(*graph);
  jit::LowerSimpleTuples(graph);
  jit::EliminateDeadCode(graph);
  return success();
}

void Importer::collectStateDict(const jit::Module &m,
                                const std::string &prefix) {
  auto add = [&](const std::string &name, const at::Tensor &t, bool isParam) {
    auto [it, inserted] = tensorNames.try_emplace(t.unsafeGetTensorImpl(), name);
    if (!inserted) {
      aliases.push_back({name, it->second});
      return;
    }
    stateDict.emplace_back(name, t, isParam);
  };
  for (const auto &p : m.named_parameters(/*recurse=*/false))
    add(prefix + p.name, p.value, true);
  for (const auto &p : m.named_buffers(/*recurse=*/false))
    add(prefix + p.name, p.value, false);
  for (const auto &child : m.named_children())
    collectStateDict(child.value, prefix + child.name + ".");
}

LogicalResult
Importer::bindInputs(llvm::SmallVectorImpl<Type> &argTypes,
                     llvm::SmallVectorImpl<std::string> &argNames) {
  auto unknown = mlir::UnknownLoc::get(&ctx);
  const c10::FunctionSchema &schema =
      module.get_method("forward").function().getSchema();
  if (failed(examples.load(ctx, options)))
    return failure();

  std::vector<std::string> forwardNames;
  for (size_t i = 1; i < schema.arguments().size(); ++i)
    forwardNames.push_back(schema.arguments()[i].name());
  if (failed(examples.checkNames(forwardNames, "argument of forward",
                                 "arguments", unknown)))
    return failure();
  std::vector<std::string> provided = examples.names();

  const glimmer_rt::SafetensorsFile *batch = examples.batch();
  for (size_t i = 1; i < schema.arguments().size(); ++i) {
    const c10::Argument &arg = schema.arguments()[i];
    std::string name = arg.name();
    auto type = examples.type(name, unknown,
                              [&](Type t) { return overrideFloat(t); });
    if (failed(type))
      return failure();
    jit::Value *graphInput = graph->inputs()[i];
    if (*type) {
      if (!graphInput->type()->cast<c10::TensorType>())
        return mlir::emitError(unknown)
               << "forward argument '" << name
               << "' is not a tensor but an example input was given for it";
      // A traced program that never reads an input computed nothing from it
      // on the graph: the model read its values in Python (`.tolist()`,
      // `int(...)`), and the trace kept what followed as constants. The
      // program is right only for batches with these values; the runtime
      // checks them against the example's (--input-shapes gives none).
      if (graphInput->uses().empty()) {
        mlir::InFlightDiagnostic remark =
            mlir::emitRemark(
                mlir::FileLineColLoc::get(&ctx, options.modelPath, 0, 0))
            << "the traced program never reads input '" << name
            << "': the model used its values in Python, so the program holds "
               "what it computed from them as constants";
        if (batch) {
          tracedInputs.push_back(
              {name, glimmer_rt::tensorDigest(*batch, *batch->find(name))});
          remark << "; batches must carry the example's '" << name
                 << "' (checked at run time)";
        } else {
          remark << "; this cannot be checked without example inputs";
        }
      }
      argTypes.push_back(**type);
      argNames.push_back(name);
      inputGraphIndices.push_back(i);
      continue;
    }
    if (arg.default_value()) {
      // Keep non-tensor defaults (e.g. flags) as import-time constants.
      const c10::IValue &d = *arg.default_value();
      Imp v;
      if (d.isNone())
        v.kind = Imp::None;
      else if (d.isBool())
        v = Imp::ofBool(d.toBool());
      else if (d.isInt())
        v = Imp::ofInt(d.toInt());
      else if (d.isDouble())
        v = Imp::ofFloat(d.toDouble());
      else
        return mlir::emitError(unknown)
               << "forward argument '" << name
               << "' has a default of an unsupported kind";
      env[graphInput] = v;
      continue;
    }
    return mlir::emitError(unknown)
           << "forward argument '" << name << "' has no example input in '"
           << examples.source() << "' (it provides: " << joinNames(provided)
           << ")";
  }
  return success();
}

LogicalResult Importer::writeWeights() {
  std::vector<glimmer_rt::TensorView> views;
  std::vector<at::Tensor> keep;
  for (auto &[name, tensor, isParam] : stateDict) {
    at::Tensor t = tensor.detach().contiguous().cpu();
    keep.push_back(t);
    std::optional<glimmer_rt::DType> dtype = runtimeDtype(t.scalar_type());
    if (!dtype)
      return mlir::emitError(mlir::UnknownLoc::get(&ctx))
             << "cannot export '" << name << "' of dtype "
             << c10::toString(t.scalar_type());
    views.push_back({name, *dtype,
                     std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
                     t.data_ptr()});
  }
  std::string error;
  if (!glimmer_rt::writeSafetensors(options.weightsOutputPath, views,
                                    {{"format", "pt"}}, error,
                                    options.weightsFileMode))
    return mlir::emitError(mlir::UnknownLoc::get(&ctx)) << error;
  return success();
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

mlir::OwningOpRef<mlir::ModuleOp> Importer::run() {
  if (!setFloatType(options.floatType))
    return nullptr;
  if (failed(loadModule()))
    return nullptr;
  llvm::SmallVector<Type> argTypes;
  llvm::SmallVector<std::string> argNames;
  if (failed(bindInputs(argTypes, argNames)))
    return nullptr;
  collectStateDict(module, "");
  size_t numInputs = argTypes.size();
  for (auto &[name, tensor, isParam] : stateDict) {
    std::vector<int64_t> shape(tensor.sizes().begin(), tensor.sizes().end());
    try {
      argTypes.push_back(
          RankedTensorType::get(shape, elementTypeFor(tensor.scalar_type())));
    } catch (const ImportError &e) {
      mlir::emitError(mlir::UnknownLoc::get(&ctx))
          << "state_dict entry '" << name << "': " << e.message;
      return nullptr;
    }
  }

  // Owned, so that every error return below frees what was built so far.
  mlir::OwningOpRef<mlir::ModuleOp> owned = mlir::ModuleOp::create(
      mlir::FileLineColLoc::get(&ctx, options.modelPath, 0, 0));
  mlir::ModuleOp moduleOp = *owned;
  if (!tracedInputs.empty()) {
    llvm::SmallVector<mlir::NamedAttribute> entries;
    for (const auto &[name, digest] : tracedInputs)
      entries.push_back(b.getNamedAttr(name, b.getStringAttr(digest)));
    moduleOp->setAttr(kTracedInputsAttr, b.getDictionaryAttr(entries));
  }
  b.setInsertionPointToEnd(moduleOp.getBody());
  auto funcType = b.getFunctionType(argTypes, {});
  auto func = mlir::func::FuncOp::create(b, moduleOp.getLoc(),
                                         options.functionName, funcType);
  mlir::Block *entry = func.addEntryBlock();
  for (size_t i = 0; i < numInputs; ++i) {
    func.setArgAttr(i, kInputAttr, b.getStringAttr(argNames[i]));
    env[graph->inputs()[inputGraphIndices[i]]] =
        Imp::ofTensor(entry->getArgument(i));
  }
  for (size_t i = 0; i < stateDict.size(); ++i) {
    auto &[name, tensor, isParam] = stateDict[i];
    func.setArgAttr(numInputs + i, isParam ? kParamAttr : kBufferAttr,
                    b.getStringAttr(name));
    stateArgs[name] = entry->getArgument(numInputs + i);
  }
  for (const auto &[alias, name] : aliases) {
    stateArgs[alias] = stateArgs[name];
    mlir::emitRemark(moduleOp.getLoc())
        << "'" << alias << "' is tied to '" << name
        << "': one parameter, named '" << name
        << "', whose gradient sums both uses";
  }
  // `self`.
  Imp self;
  self.kind = Imp::Module;
  env[graph->inputs()[0]] = self;

  registerConverters();
  registerPrimConverters();
  b.setInsertionPointToEnd(entry);
  for (jit::Node *node : graph->nodes()) {
    // LibTorch reads an archive's debug info (which maps the serialized code
    // back to the Python source) lazily, here, and throws when it is corrupt.
    auto badDebugInfo = [&](const std::string &what) {
      mlir::emitError(mlir::UnknownLoc::get(&ctx))
          << "'" << options.modelPath
          << "' has malformed debug information (source ranges): "
          << what.substr(0, what.find('\n'));
      return nullptr;
    };
    try {
      loc = locOf(node);
    } catch (const c10::Error &e) {
      return badDebugInfo(e.what_without_backtrace());
    } catch (const std::exception &e) {
      return badDebugInfo(e.what());
    }
    try {
      for (const jit::Value *input : node->inputs())
        refreshView(input);
      if (!tryFold(node))
        convertNode(node);
      noteView(node);
      noteInPlaceWrite(node);
    } catch (const ImportError &e) {
      mlir::emitError(loc) << e.message;
      return nullptr;
    } catch (const c10::Error &e) {
      std::string what = e.what_without_backtrace();
      mlir::emitError(loc) << "while importing " << describeNode(node) << ": "
                           << what.substr(0, what.find('\n'));
      return nullptr;
    }
  }

  // Results.
  llvm::SmallVector<MValue> results;
  std::function<bool(const Imp &)> collect = [&](const Imp &v) {
    if (v.kind == Imp::Tensor) {
      results.push_back(v.tensor);
      return true;
    }
    if (v.kind == Imp::List) {
      for (const Imp &e : v.list)
        if (!collect(e))
          return false;
      return true;
    }
    if (v.isNumber()) {
      results.push_back(splat({}, v.kind == Imp::Float ? f32() : i64(),
                              v.asDouble()));
      return true;
    }
    return false;
  };
  for (jit::Value *out : graph->outputs()) {
    auto it = env.find(out);
    if (it == env.end() || !collect(it->second)) {
      mlir::emitError(mlir::UnknownLoc::get(&ctx))
          << "forward returns a value that is not a tensor or a tuple of "
             "tensors";
      return nullptr;
    }
  }
  loc = func.getLoc();
  finishFunction(func, results);

  if (!options.weightsOutputPath.empty() && failed(writeWeights()))
    return nullptr;
  if (mlir::failed(mlir::verify(moduleOp)))
    return nullptr;
  return owned;
}

at::Tensor Importer::exampleValue(jit::Node *user, jit::Value *v,
                                  const std::string &why) {
  const glimmer_rt::SafetensorsFile *batch = examples.batch();
  if (!batch)
    fail(why + ", which needs the example inputs (--example-inputs)");
  // The graph's nodes before `user`, v the output. All of them run: an
  // in-place write through a view of v (`mask[0] |= ...`), after v's node,
  // has no output that v depends on. The importer converts straight-line
  // graphs only, so `user` is one of the graph's own nodes.
  auto g = std::make_shared<jit::Graph>();
  std::unordered_map<jit::Value *, jit::Value *> map;
  for (jit::Value *input : graph->inputs())
    map[input] = g->addInput()->copyMetadata(input);
  for (jit::Node *node : graph->nodes()) {
    if (node == user)
      break;
    jit::Node *clone =
        g->createClone(node, [&](jit::Value *x) { return map.at(x); });
    g->insertNode(clone);
    for (size_t i = 0; i < node->outputs().size(); ++i)
      map[node->output(i)] = clone->output(i);
  }
  g->registerOutput(map.at(v));

  jit::Stack stack{module._ivalue()};
  const c10::FunctionSchema &schema = module.get_method("forward").function().getSchema();
  for (size_t i = 1; i < schema.arguments().size(); ++i) {
    const c10::Argument &arg = schema.arguments()[i];
    const glimmer_rt::TensorInfo *t = batch->find(arg.name());
    if (!t) {
      stack.push_back(arg.default_value() ? *arg.default_value()
                                          : c10::IValue());
      continue;
    }
    std::optional<c10::ScalarType> st = torchDtype(t->dtype);
    if (!st)
      fail("example input '" + arg.name() + "' has an unsupported dtype");
    stack.push_back(at::from_blob(const_cast<uint8_t *>(batch->data(*t)),
                                  t->shape, at::TensorOptions().dtype(*st))
                        .clone());
  }
  jit::Code code(g, "example");
  jit::InterpreterState(code).run(stack);
  return stack.back().toTensor();
}


/// Imp -> IValue for folding; `type` is the node input's TorchScript type.
static std::optional<c10::IValue> toFoldIValue(const Imp &v,
                                               const c10::TypePtr &type) {
  switch (v.kind) {
  case Imp::Int:
    if (type->kind() == c10::TypeKind::TensorType)
      return c10::IValue(at::scalar_tensor(v.i, at::kLong));
    return c10::IValue(v.i);
  case Imp::Float:
    if (type->kind() == c10::TypeKind::TensorType)
      return c10::IValue(at::scalar_tensor(v.f, at::kDouble));
    return c10::IValue(v.f);
  case Imp::Bool:
    return c10::IValue(v.b);
  case Imp::None:
    return c10::IValue();
  case Imp::Str:
    return c10::IValue(v.s);
  case Imp::Device:
    return c10::IValue(c10::Device(c10::kCPU));
  case Imp::Tensor:
    if (!v.value.defined())
      return std::nullopt;
    return c10::IValue(v.value);
  case Imp::List: {
    auto listType = type->cast<c10::ListType>();
    c10::TypePtr elemType =
        listType ? listType->getElementType() : c10::TypePtr();
    if (elemType && elemType->kind() == c10::TypeKind::OptionalType) {
      c10::List<std::optional<at::Tensor>> out;
      for (const Imp &e : v.list) {
        if (e.kind == Imp::None)
          out.push_back(std::nullopt);
        else if (e.kind == Imp::Tensor && e.value.defined())
          out.push_back(e.value);
        else
          return std::nullopt;
      }
      return c10::IValue(out);
    }
    if (elemType && elemType->kind() == c10::TypeKind::TensorType) {
      c10::List<at::Tensor> out;
      for (const Imp &e : v.list) {
        if (e.kind != Imp::Tensor || !e.value.defined())
          return std::nullopt;
        out.push_back(e.value);
      }
      return c10::IValue(out);
    }
    if (elemType && elemType->kind() == c10::TypeKind::FloatType) {
      std::vector<double> out;
      for (const Imp &e : v.list)
        out.push_back(e.asDouble());
      return c10::IValue(out);
    }
    std::vector<int64_t> out;
    for (const Imp &e : v.list) {
      if (!e.isNumber())
        return std::nullopt;
      out.push_back(e.asInt());
    }
    return c10::IValue(out);
  }
  case Imp::Module:
    return std::nullopt;
  }
  return std::nullopt;
}

/// `t` on the meta device: its sizes, strides and dtype, no data.
static at::Tensor onMeta(const at::Tensor &t) {
  return at::empty_strided(t.sizes(), t.strides(),
                           t.options().device(c10::kMeta));
}

/// The outputs of `node` run on meta tensors (device arguments set to meta),
/// or nothing when the op has no meta kernel or needs tensor data.
static std::optional<jit::Stack> runOnMeta(jit::Node *node,
                                           const jit::Stack &inputs) {
  const auto &args = node->schema().arguments();
  jit::Stack stack;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const c10::IValue &v = inputs[i];
    c10::TypePtr real = i < args.size() ? args[i].real_type() : nullptr;
    if (real)
      if (auto opt = real->cast<c10::OptionalType>())
        real = opt->getElementType();
    if (real && real->kind() == c10::TypeKind::DeviceObjType) {
      stack.push_back(c10::IValue(c10::Device(c10::kMeta)));
    } else if (v.isTensor()) {
      stack.push_back(c10::IValue(onMeta(v.toTensor())));
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor &t : v.toTensorVector())
        out.push_back(onMeta(t));
      stack.push_back(c10::IValue(out));
    } else if (v.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> out;
      for (const std::optional<at::Tensor> &t : v.toOptionalTensorList())
        out.push_back(t && t->defined() ? std::optional(onMeta(*t))
                                        : std::nullopt);
      stack.push_back(c10::IValue(out));
    } else {
      stack.push_back(v);
    }
  }
  try {
    node->getOperation()(stack);
  } catch (const std::exception &) {
    return std::nullopt;
  }
  return stack;
}

bool Importer::tryFold(jit::Node *node) {
  std::string kind = node->kind().toQualString();
  if (kind.rfind("aten::", 0) != 0 || !node->maybeSchema())
    return false;
  // Random ops must not be frozen into constants.
  if (kind == "aten::dropout" || kind == "aten::rand" ||
      kind == "aten::randn" || kind == "aten::randint" ||
      kind == "aten::bernoulli" || kind == "aten::normal")
    return false;
  bool anyTensor = false;
  jit::Stack stack;
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    auto it = env.find(node->input(i));
    if (it == env.end())
      return false;
    const Imp &v = it->second;
    if (v.kind == Imp::Tensor) {
      if (!v.value.defined())
        return false;
      anyTensor = true;
    }
    if (v.kind == Imp::List)
      for (const Imp &e : v.list)
        if (e.kind == Imp::Tensor) {
          if (!e.value.defined())
            return false;
          anyTensor = true;
        }
    std::optional<c10::IValue> iv = toFoldIValue(v, node->input(i)->type());
    if (!iv)
      return false;
    if (floatOverride) {
      // Fold at the program's precision: float tensors and float dtype
      // arguments take the --dtype type.
      if (iv->isTensor() && iv->toTensor().is_floating_point())
        *iv = iv->toTensor().to(floatOverrideScalar);
      const auto &args = node->schema().arguments();
      if (i < args.size() && iv->isInt()) {
        c10::TypePtr real = args[i].real_type();
        if (auto opt = real->cast<c10::OptionalType>())
          real = opt->getElementType();
        if (real->kind() == c10::TypeKind::ScalarTypeType &&
            c10::isFloatingType(c10::ScalarType(iv->toInt())))
          *iv = c10::IValue(int64_t(floatOverrideScalar));
      }
    }
    stack.push_back(std::move(*iv));
  }
  // Creation ops (arange, ones, ...) fold too: their operands are all host
  // values. Pure host arithmetic is left to the converters.
  bool creates = false;
  for (const jit::Value *out : node->outputs())
    creates |= out->type()->kind() == c10::TypeKind::TensorType;
  if (!anyTensor && !creates)
    return false;
  // Keep folded constants small; large ones are emitted as ops instead. The
  // sizes come from a run on the meta device first, so that a large result
  // (an arange or a broadcast of a graph's sizes) is never allocated.
  constexpr int64_t kMaxFoldedElements = int64_t(1) << 22;
  if (std::optional<jit::Stack> shapes = runOnMeta(node, stack))
    for (const c10::IValue &r : *shapes)
      if (r.isTensor() && r.toTensor().numel() > kMaxFoldedElements)
        return false;
  try {
    node->getOperation()(stack);
  } catch (const std::exception &) {
    return false;
  }
  if (stack.size() != node->outputs().size())
    return false;
  // Ops without a meta kernel are checked after the run.
  for (const c10::IValue &r : stack)
    if (r.isTensor() && r.toTensor().numel() > kMaxFoldedElements)
      return false;
  for (size_t i = 0; i < stack.size(); ++i) {
    const c10::IValue &r = stack[i];
    Imp out;
    if (r.isTensor()) {
      at::Tensor t = r.toTensor().detach().clone();
      if (t.is_complex())
        return false;
      out = Imp::ofTensor(constantFromTensor(t));
      out.value = t;
    } else if (r.isTensorList()) {
      std::vector<Imp> parts;
      for (const at::Tensor &t : r.toTensorVector()) {
        Imp p = Imp::ofTensor(constantFromTensor(t));
        p.value = t.detach().clone();
        parts.push_back(p);
      }
      out = Imp::ofList(parts);
    } else if (r.isInt()) {
      out = Imp::ofInt(r.toInt());
    } else if (r.isDouble()) {
      out = Imp::ofFloat(r.toDouble());
    } else if (r.isBool()) {
      out = Imp::ofBool(r.toBool());
    } else {
      return false;
    }
    env[node->output(i)] = out;
  }
  return true;
}

Imp &Importer::in(jit::Node *n, size_t i) {
  auto it = env.find(n->input(i));
  if (it == env.end())
    fail("operand #" + std::to_string(i) + " has no imported value");
  return it->second;
}

void Importer::convertNode(jit::Node *node) {
  auto prim = primConverters.find(node->kind().toQualString());
  if (prim != primConverters.end()) {
    prim->second(node);
    return;
  }
  NodeCall call(*this, node);
  if (!convert(call))
    fail("unsupported operator " + describeNode(node));
}

mlir::OwningOpRef<mlir::ModuleOp>
glimmer::importTorchScript(MLIRContext &context,
                           const ImportOptions &options) {
  context.loadDialect<GlimmerDialect, mlir::func::FuncDialect>();
  Importer importer(context, options);
  ScopedDefaultNewHandler defaultNewHandler;
  try {
    return importer.run();
  } catch (const ImportError &e) {
    mlir::emitError(mlir::UnknownLoc::get(&context)) << e.message;
    return nullptr;
  } catch (const std::bad_alloc &) {
    mlir::emitError(mlir::UnknownLoc::get(&context))
        << "'" << options.modelPath
        << "' cannot be imported: it asks for more memory than is available "
           "(a corrupt archive?)";
    return nullptr;
  }
}

