//===- ExportJson.cpp - torch.export JSON to the data model ---------------===//
//
// Follows torch/_export/serde/schema.py (schema 8.x) and how serialize.py
// writes it as JSON:
// - a dataclass is an object keyed by field name; a field with a default
//   may be absent (the writer's forward compatibility), the others are
//   required;
// - a union (_Union) is an object with exactly one member, keyed by the
//   alternative's name ("as_tensor", "parameter", ...);
// - enums (ScalarType, Layout, MemoryFormat, ArgumentKind) are integers;
// - a float is a number, or one of the strings "Infinity", "-Infinity" and
//   "NaN" (written with allow_nan=False);
// - Optional fields are null when unset.
// Members the schema does not name are ignored, as the Python reader does.
//
//===----------------------------------------------------------------------===//

#include "ExportJson.h"
#include "JsonField.h"

#include "llvm/ADT/StringSwitch.h"

using namespace glimmer::pt2;
using namespace glimmer::pt2::detail;
using json = nlohmann::json;

namespace {

//===----------------------------------------------------------------------===//
// Enums and scalars
//===----------------------------------------------------------------------===//

/// The values schema.py's ScalarType defines: 0-13 and 28-32.
ScalarType readScalarType(const Field &f) {
  int64_t v = f.getInt();
  if ((v >= 0 && v <= 13) || (v >= 28 && v <= 32))
    return ScalarType(v);
  f.fail("unknown scalar type " + std::to_string(v));
}

Layout readLayout(const Field &f) {
  int64_t v = f.getInt();
  if (v < 0 || v > 7)
    f.fail("unknown layout " + std::to_string(v));
  return Layout(v);
}

MemoryFormat readMemoryFormat(const Field &f) {
  int64_t v = f.getInt();
  if (v < 0 || v > 4)
    f.fail("unknown memory format " + std::to_string(v));
  return MemoryFormat(v);
}

Device readDevice(const Field &f) {
  Device d;
  d.type = f.at("type").getString();
  if (auto index = f.find("index"))
    d.index = index->getInt();
  return d;
}

int64_t readInt(const Field &f) { return f.getInt(); }
double readFloat(const Field &f) { return f.getFloat(); }
bool readBool(const Field &f) { return f.getBool(); }
std::string readString(const Field &f) { return f.getString(); }

/// A SymInt, SymFloat or SymBool: `as_expr` or the literal `literalKey`.
template <typename T, typename Read>
T readSymValue(const Field &f, const char *literalKey, Read readLiteral) {
  auto [kind, v] = f.alternative();
  T out;
  if (kind == literalKey) {
    out.value = readLiteral(v);
    return out;
  }
  if (kind != "as_expr")
    v.fail("unknown symbolic value kind '" + kind + "'");
  out.expr = v.at("expr_str").getString();
  if (out.expr.empty())
    v.fail("empty symbolic expression");
  return out;
}

SymInt readSymInt(const Field &f) {
  SymInt s = readSymValue<SymInt>(f, "as_int", readInt);
  if (!s.isSymbolic())
    return s;
  // The hint is a union too; sizes only ever have integer hints.
  if (auto hint = f.at("as_expr").find("hint")) {
    auto [kind, v] = hint->alternative();
    if (kind == "as_int")
      s.hint = v.getInt();
  }
  return s;
}

SymFloat readSymFloat(const Field &f) {
  return readSymValue<SymFloat>(f, "as_float", readFloat);
}

SymBool readSymBool(const Field &f) {
  return readSymValue<SymBool>(f, "as_bool", readBool);
}

TensorMeta readTensorMeta(const Field &f) {
  TensorMeta m;
  m.dtype = readScalarType(f.at("dtype"));
  m.sizes = f.at("sizes").list<SymInt>(readSymInt);
  m.requiresGrad = f.at("requires_grad").getBool();
  m.device = readDevice(f.at("device"));
  m.strides = f.at("strides").list<SymInt>(readSymInt);
  m.storageOffset = readSymInt(f.at("storage_offset"));
  m.layout = readLayout(f.at("layout"));
  return m;
}

//===----------------------------------------------------------------------===//
// Arguments
//===----------------------------------------------------------------------===//

/// SymIntArgument, SymFloatArgument, SymBoolArgument: a union of `as_name`
/// and the literal `literalKey`.
template <typename T, typename Read>
SymArg<T> readSymArg(const Field &f, const char *literalKey, Read readLiteral) {
  auto [kind, v] = f.alternative();
  SymArg<T> out;
  if (kind == "as_name")
    out.name = v.getString();
  else if (kind == literalKey)
    out.value = readLiteral(v);
  else
    v.fail("unknown symbolic argument kind '" + kind + "'");
  return out;
}

SymIntArg readSymIntArg(const Field &f) {
  return readSymArg<int64_t>(f, "as_int", readInt);
}
SymFloatArg readSymFloatArg(const Field &f) {
  return readSymArg<double>(f, "as_float", readFloat);
}
SymBoolArg readSymBoolArg(const Field &f) {
  return readSymArg<bool>(f, "as_bool", readBool);
}

std::string readTensorName(const Field &f) { return f.at("name").getString(); }

std::optional<std::string> readOptionalTensor(const Field &f) {
  auto [kind, v] = f.alternative();
  if (kind == "as_none")
    return std::nullopt;
  if (kind != "as_tensor")
    v.fail("unknown optional tensor kind '" + kind + "'");
  return readTensorName(v);
}

Graph readGraph(const Field &f);

/// The members of schema.py's Argument union that the data model has no
/// kind for.
bool isUnsupportedArgKind(llvm::StringRef key) {
  return key == "as_complex" || key == "as_nested_tensors" ||
         key == "as_int_lists" || key == "as_string_to_argument";
}

/// Sets `arg.value` to the member `v` of an Argument of kind `kind`.
void readArgValue(ArgKind kind, const Field &v, Argument &arg) {
  auto set = [&](auto value) { arg.value = std::move(value); };
  switch (kind) {
  case ArgKind::None:
    return;
  case ArgKind::Tensor:
    return set(readTensorName(v));
  case ArgKind::Tensors:
    return set(v.list<std::string>(readTensorName));
  case ArgKind::OptionalTensor:
    return set(readOptionalTensor(v));
  case ArgKind::OptionalTensors:
    return set(v.list<std::optional<std::string>>(readOptionalTensor));
  case ArgKind::Int:
    return set(v.getInt());
  case ArgKind::Ints:
    return set(v.list<int64_t>(readInt));
  case ArgKind::Float:
    return set(v.getFloat());
  case ArgKind::Floats:
    return set(v.list<double>(readFloat));
  case ArgKind::Bool:
    return set(v.getBool());
  case ArgKind::Bools:
    return set(v.list<bool>(readBool));
  case ArgKind::String:
  case ArgKind::Operator:
    return set(v.getString());
  case ArgKind::Strings:
    return set(v.list<std::string>(readString));
  case ArgKind::SymInt:
    return set(readSymIntArg(v));
  case ArgKind::SymInts:
    return set(v.list<SymIntArg>(readSymIntArg));
  case ArgKind::SymFloat:
    return set(readSymFloatArg(v));
  case ArgKind::SymFloats:
    return set(v.list<SymFloatArg>(readSymFloatArg));
  case ArgKind::SymBool:
    return set(readSymBoolArg(v));
  case ArgKind::SymBools:
    return set(v.list<SymBoolArg>(readSymBoolArg));
  case ArgKind::ScalarType:
    return set(readScalarType(v));
  case ArgKind::MemoryFormat:
    return set(readMemoryFormat(v));
  case ArgKind::Layout:
    return set(readLayout(v));
  case ArgKind::Device:
    return set(readDevice(v));
  case ArgKind::Graph:
    return set(GraphArg{v.at("name").getString(),
                        std::make_shared<Graph>(readGraph(v.at("graph")))});
  case ArgKind::CustomObj:
    return set(
        CustomObjArg{v.at("name").getString(), v.at("class_fqn").getString()});
  }
}

Argument readArgument(const Field &f) {
  auto [key, v] = f.alternative();
  std::optional<ArgKind> kind;
  for (int k = 0; k <= int(ArgKind::Operator); ++k)
    if (getArgKindName(ArgKind(k)) == key)
      kind = ArgKind(k);
  if (!kind) {
    if (isUnsupportedArgKind(key))
      f.fail("unsupported argument kind '" + key + "'");
    f.fail("unknown argument kind '" + key + "'");
  }
  Argument arg;
  arg.kind = *kind;
  readArgValue(*kind, v, arg);
  return arg;
}

NamedArgument readNamedArgument(const Field &f) {
  NamedArgument a;
  a.name = f.at("name").getString();
  a.arg = readArgument(f.at("arg"));
  if (auto kind = f.find("kind")) {
    int64_t k = kind->getInt();
    if (k < 0 || k > 2)
      kind->fail("unknown argument passing kind " + std::to_string(k));
    a.passing = Passing(k);
  }
  return a;
}

//===----------------------------------------------------------------------===//
// Nodes and graphs
//===----------------------------------------------------------------------===//

/// Splits at the commas that are outside brackets, as serialize.py's
/// metadata_split does (module paths may contain "[0]" or "('a', 1)").
std::vector<std::string> splitTopLevel(llvm::StringRef s) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '[' || c == '(')
      ++depth;
    else if (c == ']' || c == ')')
      --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(s.slice(start, i).str());
      start = i + 1;
    }
  }
  out.push_back(s.substr(start).str());
  return out;
}

/// nn_module_stack: "key,path,type" entries joined by ';'.
std::vector<ModuleStackEntry> readModuleStack(const Field &f) {
  std::vector<ModuleStackEntry> out;
  std::string stack = f.getString();
  llvm::SmallVector<llvm::StringRef> entries;
  llvm::StringRef(stack).split(entries, ';');
  for (llvm::StringRef entry : entries) {
    std::vector<std::string> parts = splitTopLevel(entry);
    if (parts.size() != 3)
      f.fail("expected nn_module_stack entries 'key,path,type', got '" +
             entry.str() + "'");
    out.push_back({parts[0], parts[1], parts[2]});
  }
  return out;
}

Node readNode(const Field &f) {
  Node n;
  n.target = f.at("target").getString();
  n.inputs = f.at("inputs").list<NamedArgument>(readNamedArgument);
  n.outputs = f.at("outputs").list<Argument>(readArgument);
  for (const auto &[key, v] : f.at("metadata").members()) {
    if (key == "stack_trace")
      n.stackTrace = v.getString();
    else if (key == "nn_module_stack")
      n.nnModuleStack = readModuleStack(v);
    else
      n.metadata.emplace(key, v.getString());
  }
  if (auto name = f.find("name"))
    n.name = name->getString();
  return n;
}

std::string readClassFqn(const Field &f) {
  return f.at("class_fqn").getString();
}

Graph readGraph(const Field &f) {
  Graph g;
  g.inputs = f.at("inputs").list<Argument>(readArgument);
  g.outputs = f.at("outputs").list<Argument>(readArgument);
  g.nodes = f.at("nodes").list<Node>(readNode);
  g.tensorValues = f.at("tensor_values").map<TensorMeta>(readTensorMeta);
  g.symIntValues = f.at("sym_int_values").map<SymInt>(readSymInt);
  g.symBoolValues = f.at("sym_bool_values").map<SymBool>(readSymBool);
  if (auto single = f.find("is_single_tensor_return"))
    g.isSingleTensorReturn = single->getBool();
  if (auto objs = f.find("custom_obj_values"))
    g.customObjValues = objs->map<std::string>(readClassFqn);
  if (auto floats = f.find("sym_float_values"))
    g.symFloatValues = floats->map<SymFloat>(readSymFloat);
  return g;
}

//===----------------------------------------------------------------------===//
// Signature
//===----------------------------------------------------------------------===//

/// ConstantValue: a union of none, int, float, string and bool.
Argument readConstantValue(const Field &f) {
  auto [key, v] = f.alternative();
  Argument arg;
  if (key == "as_none")
    return arg;
  if (key == "as_int")
    arg.kind = ArgKind::Int;
  else if (key == "as_float")
    arg.kind = ArgKind::Float;
  else if (key == "as_string")
    arg.kind = ArgKind::String;
  else if (key == "as_bool")
    arg.kind = ArgKind::Bool;
  else
    v.fail("unknown constant kind '" + key + "'");
  readArgValue(arg.kind, v, arg);
  return arg;
}

InputSpec readInputSpec(const Field &f) {
  auto [key, v] = f.alternative();
  InputSpec s;
  auto kind = llvm::StringSwitch<std::optional<InputSpec::Kind>>(key)
                  .Case("user_input", InputSpec::UserInput)
                  .Case("parameter", InputSpec::Parameter)
                  .Case("buffer", InputSpec::Buffer)
                  .Case("tensor_constant", InputSpec::TensorConstant)
                  .Case("custom_obj", InputSpec::CustomObj)
                  .Case("token", InputSpec::Token)
                  .Case("constant_input", InputSpec::ConstantInput)
                  .Default(std::nullopt);
  if (!kind)
    v.fail("unknown input spec kind '" + key + "'");
  s.kind = *kind;
  switch (s.kind) {
  case InputSpec::UserInput:
    s.value = readArgument(v.at("arg"));
    s.name = getValueName(s.value);
    break;
  case InputSpec::ConstantInput:
    s.name = v.at("name").getString();
    s.value = readConstantValue(v.at("value"));
    break;
  case InputSpec::Token:
    s.name = readTensorName(v.at("arg"));
    break;
  case InputSpec::Parameter:
  case InputSpec::Buffer:
  case InputSpec::TensorConstant:
  case InputSpec::CustomObj: {
    const char *targetKey = s.kind == InputSpec::Parameter ? "parameter_name"
                            : s.kind == InputSpec::Buffer  ? "buffer_name"
                            : s.kind == InputSpec::CustomObj
                                ? "custom_obj_name"
                                : "tensor_constant_name";
    s.name = readTensorName(v.at("arg"));
    s.target = v.at(targetKey).getString();
    if (s.kind == InputSpec::Buffer)
      s.persistent = v.at("persistent").getBool();
    break;
  }
  }
  return s;
}

OutputSpec readOutputSpec(const Field &f) {
  auto [key, v] = f.alternative();
  OutputSpec s;
  // The member naming the target, for the kinds that have one.
  const char *targetKey = nullptr;
  if (key == "user_output") {
    s.kind = OutputSpec::UserOutput;
    s.value = readArgument(v.at("arg"));
    s.name = getValueName(s.value);
    return s;
  }
  if (key == "loss_output") {
    s.kind = OutputSpec::LossOutput;
  } else if (key == "buffer_mutation") {
    s.kind = OutputSpec::BufferMutation;
    targetKey = "buffer_name";
  } else if (key == "gradient_to_parameter") {
    s.kind = OutputSpec::GradientToParameter;
    targetKey = "parameter_name";
  } else if (key == "gradient_to_user_input") {
    s.kind = OutputSpec::GradientToUserInput;
    targetKey = "user_input_name";
  } else if (key == "user_input_mutation") {
    s.kind = OutputSpec::UserInputMutation;
    targetKey = "user_input_name";
  } else if (key == "token") {
    s.kind = OutputSpec::Token;
  } else if (key == "parameter_mutation") {
    s.kind = OutputSpec::ParameterMutation;
    targetKey = "parameter_name";
  } else {
    v.fail("unknown output spec kind '" + key + "'");
  }
  s.name = readTensorName(v.at("arg"));
  if (targetKey)
    s.target = v.at(targetKey).getString();
  return s;
}

RangeConstraint readRangeConstraint(const Field &f) {
  RangeConstraint r;
  if (auto min = f.find("min_val"))
    r.min = min->getInt();
  if (auto max = f.find("max_val"))
    r.max = max->getInt();
  return r;
}

Payload readPayloadMeta(const Field &f) {
  Payload p;
  p.record = f.at("path_name").getString();
  p.isParam = f.at("is_param").getBool();
  p.pickled = f.at("use_pickle").getBool();
  if (auto meta = f.find("tensor_meta"))
    p.meta = readTensorMeta(*meta);
  else if (!p.pickled)
    f.fail("a payload stored as raw bytes needs tensor_meta");
  return p;
}

} // namespace

void detail::readSchemaVersion(const json &root, ExportedProgram &program) {
  Field version = Field{root, ""}.at("schema_version");
  program.schemaMajor = version.at("major").getInt();
  program.schemaMinor = version.at("minor").getInt();
}

void detail::readProgram(const json &root, ExportedProgram &program) {
  Field f{root, ""};
  Field module = f.at("graph_module");
  program.graph = readGraph(module.at("graph"));
  Field signature = module.at("signature");
  program.inputSpecs =
      signature.at("input_specs").list<InputSpec>(readInputSpec);
  program.outputSpecs =
      signature.at("output_specs").list<OutputSpec>(readOutputSpec);
  program.opsetVersion = f.at("opset_version").map<int64_t>(readInt);
  program.rangeConstraints =
      f.at("range_constraints").map<RangeConstraint>(readRangeConstraint);
  checkProgram(program);
  if (auto verifiers = f.find("verifiers"))
    program.verifiers = verifiers->list<std::string>(readString);
  if (auto torchVersion = f.find("torch_version"))
    program.torchVersion = torchVersion->getString();
}

std::map<std::string, Payload> detail::readPayloadConfig(const json &root) {
  return Field{root, ""}.at("config").map<Payload>(readPayloadMeta);
}
