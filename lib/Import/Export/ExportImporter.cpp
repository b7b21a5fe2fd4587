//===- ExportImporter.cpp - torch.export to glimmer importer --------------===//
//
// The torch.export front end. The archive's exported program (read by
// ExportArchive.cpp) is a flat graph of ATen calls over named values, with
// a signature naming every placeholder: user inputs, parameters and
// buffers (by state_dict name), lifted tensor constants. Each call is
// presented to the shared conversion table (OpConverter) as an OpCall: its
// operator's schema comes from LibTorch's dispatcher, its named arguments
// are put in the schema's order, absent ones take the schema's defaults.
// Symbolic sizes are specialised to the example inputs (a symbol's value is
// the size of the input dimension it names); a size the export fixed must
// equal the example's. Python operators on sizes (operator.mul, getitem,
// ...) are evaluated at import time.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Import/Export.h"

#include "ExampleInputs.h"
#include "OpConverter.h"
#include "SizeExpr.h"
#include "glimmer/Import/ExportArchive.h"
#include "glimmer_contract/Attributes.h"
#include "glimmer_rt/Safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <cmath>
#include <map>
#include <sstream>

using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// LibTorch's dtype of an archive's.
std::optional<c10::ScalarType> torchScalarType(pt2::ScalarType t) {
  using S = c10::ScalarType;
  switch (t) {
  case pt2::ScalarType::Byte: return S::Byte;
  case pt2::ScalarType::Char: return S::Char;
  case pt2::ScalarType::Short: return S::Short;
  case pt2::ScalarType::Int: return S::Int;
  case pt2::ScalarType::Long: return S::Long;
  case pt2::ScalarType::Half: return S::Half;
  case pt2::ScalarType::Float: return S::Float;
  case pt2::ScalarType::Double: return S::Double;
  case pt2::ScalarType::ComplexHalf: return S::ComplexHalf;
  case pt2::ScalarType::ComplexFloat: return S::ComplexFloat;
  case pt2::ScalarType::ComplexDouble: return S::ComplexDouble;
  case pt2::ScalarType::Bool: return S::Bool;
  case pt2::ScalarType::BFloat16: return S::BFloat16;
  case pt2::ScalarType::UInt16: return S::UInt16;
  case pt2::ScalarType::Float8E4M3FN: return S::Float8_e4m3fn;
  case pt2::ScalarType::Float8E5M2: return S::Float8_e5m2;
  case pt2::ScalarType::Float8E4M3FNUZ: return S::Float8_e4m3fnuz;
  case pt2::ScalarType::Float8E5M2FNUZ: return S::Float8_e5m2fnuz;
  case pt2::ScalarType::Unknown: break;
  }
  return std::nullopt;
}

/// "torch.ops.aten.linear.default" -> ("aten::linear", ""): the operator and
/// overload names LibTorch's dispatcher knows it by.
std::optional<c10::OperatorName> operatorName(const std::string &target) {
  llvm::StringRef rest(target);
  if (!rest.consume_front("torch.ops."))
    return std::nullopt;
  llvm::SmallVector<llvm::StringRef, 3> parts;
  rest.split(parts, '.');
  if (parts.size() != 3)
    return std::nullopt;
  std::string overload = parts[2] == "default" ? "" : parts[2].str();
  return c10::OperatorName((parts[0] + "::" + parts[1]).str(), overload);
}

/// The location of a node from its stack trace (outermost frame first, as
/// Python prints it): the innermost frame, called from each frame outwards,
/// named by the submodule the node was traced in.
Location nodeLocation(MLIRContext &ctx, const pt2::Node &node,
                      Location fallback) {
  llvm::SmallVector<Location> frames;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(node.stackTrace).split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (!line.consume_front("File \""))
      continue;
    auto [file, rest] = line.split('"');
    unsigned lineNo = 0;
    if (!rest.consume_front(", line ") ||
        rest.take_while(llvm::isDigit).getAsInteger(10, lineNo))
      continue;
    frames.push_back(mlir::FileLineColLoc::get(&ctx, file, lineNo, 1));
  }
  Location loc = fallback;
  if (!frames.empty()) {
    loc = frames.back();
    if (frames.size() > 1) {
      llvm::SmallVector<Location> callers(frames.rbegin() + 1, frames.rend());
      loc = mlir::CallSiteLoc::get(loc, callers);
    }
  }
  if (!node.nnModuleStack.empty() && !node.nnModuleStack.back().path.empty())
    loc = mlir::NameLoc::get(
        mlir::StringAttr::get(&ctx, node.nnModuleStack.back().path), loc);
  return loc;
}

class ExportImporter : public OpConverter {
public:
  ExportImporter(MLIRContext &context, const ImportOptions &options)
      : OpConverter(context), options(options) {}

  mlir::OwningOpRef<mlir::ModuleOp> run();

private:
  class NodeCall;
  /// A user input's example type and exported metadata.
  struct UserInput {
    RankedTensorType type;
    const pt2::TensorMeta *meta;
  };

  /// Loads the example inputs (each must name a user input) and types
  /// every tensor user input from them, its size symbols bound.
  LogicalResult typeUserInputs();
  /// Binds each size symbol an input dimension is to the example's size,
  /// checked against the symbol's range and its other dimensions.
  LogicalResult bindSymbols(const std::string &name,
                            const pt2::TensorMeta &meta,
                            RankedTensorType example);
  /// Checks the example's sizes against the fixed and computed sizes the
  /// program was exported with (after bindSymbols of every input).
  LogicalResult checkSizes(const std::string &name, const pt2::TensorMeta &meta,
                           RankedTensorType example);
  Type elementType(pt2::ScalarType t);
  Imp valueOf(const pt2::Argument &arg);
  Imp tensorNamed(const std::string &name);
  Imp symInt(const pt2::SymIntArg &arg);
  void convertNode(const pt2::Node &node);
  void evaluatePythonOperator(const pt2::Node &node);
  /// Binds `value` to the graph value output `out` names (nothing for an
  /// output the program does not use); `what` names the op in errors.
  void bindOutput(const pt2::Argument &out, Imp value, const std::string &what);
  LogicalResult writeWeights();

  const ImportOptions &options;
  pt2::ExportedProgram program;
  ExampleInputs examples;
  /// The imported value of each named value of the graph.
  std::map<std::string, Imp> env;
  /// The value of each size symbol, from the example inputs.
  std::map<std::string, int64_t> symbols;
  /// The tensor user inputs by name, in the signature's order.
  llvm::MapVector<std::string, UserInput, std::map<std::string, unsigned>>
      userInputs;
  /// Parameters and buffers as arguments: (state_dict name, is parameter).
  std::vector<std::pair<std::string, bool>> state;
  /// Where the program was exported (the archive's location).
  Location fileLoc = mlir::UnknownLoc::get(&ctx);
};

/// An exported node as the shared converters see it.
class ExportImporter::NodeCall final : public OpCall {
public:
  NodeCall(ExportImporter &importer, const pt2::Node &node,
           const c10::FunctionSchema &schema, std::vector<Imp> inputs)
      : importer(importer), node(node), fnSchema(schema),
        inputs(std::move(inputs)) {}
  std::string kind() const override { return fnSchema.name(); }
  const c10::FunctionSchema *schema() const override { return &fnSchema; }
  size_t numInputs() const override { return inputs.size(); }
  Imp &input(size_t i) override {
    if (i >= inputs.size())
      fail("operand #" + std::to_string(i) + " has no imported value");
    return inputs[i];
  }
  size_t numOutputs() const override { return fnSchema.returns().size(); }
  void setOutput(size_t i, Imp value) override {
    if (i < node.outputs.size())
      importer.bindOutput(node.outputs[i], std::move(value), kind());
  }
  // Export records Python numbers as number arguments, not as tensors.
  bool inputIsLiteral(size_t) const override { return false; }
  at::Tensor exampleValue(size_t, std::optional<size_t>,
                          const std::string &why) override {
    fail(why + "; a torch.export program has no traced example run to take "
               "it from (export the model with the size as a static "
               "dimension, or compute it from sizes)");
  }

private:
  ExportImporter &importer;
  const pt2::Node &node;
  const c10::FunctionSchema &fnSchema;
  std::vector<Imp> inputs;
};

void ExportImporter::bindOutput(const pt2::Argument &out, Imp value,
                                const std::string &what) {
  using K = pt2::ArgKind;
  std::string name;
  switch (out.kind) {
  case K::Tensor:
    name = out.get<std::string>();
    break;
  case K::SymInt:
    name = out.get<pt2::SymIntArg>().name;
    break;
  case K::SymFloat:
    name = out.get<pt2::SymFloatArg>().name;
    break;
  case K::SymBool:
    name = out.get<pt2::SymBoolArg>().name;
    break;
  case K::Tensors: {
    const auto &names = out.get<std::vector<std::string>>();
    if (value.kind != Imp::List || value.list.size() != names.size())
      fail("the converter of " + what + " made " +
           std::to_string(value.kind == Imp::List ? value.list.size() : 1) +
           " results where the program has " + std::to_string(names.size()));
    for (size_t k = 0; k < names.size(); ++k)
      env[names[k]] = value.list[k];
    return;
  }
  default:
    return;
  }
  if (!name.empty())
    env[name] = std::move(value);
}

Type ExportImporter::elementType(pt2::ScalarType t) {
  std::optional<c10::ScalarType> s = torchScalarType(t);
  if (!s)
    fail("a tensor of unknown dtype");
  return overrideFloat(elementTypeFor(*s));
}

Imp ExportImporter::tensorNamed(const std::string &name) {
  auto it = env.find(name);
  if (it == env.end())
    fail("value '" + name + "' is used before it is defined");
  return it->second;
}

Imp ExportImporter::symInt(const pt2::SymIntArg &arg) {
  if (!arg.isSymbolic())
    return Imp::ofInt(arg.value);
  auto it = env.find(arg.name);
  if (it != env.end())
    return it->second;
  // A size the graph names but no node computes: its expression.
  auto sym = program.graph.symIntValues.find(arg.name);
  if (sym == program.graph.symIntValues.end())
    fail("symbolic size '" + arg.name + "' is not defined");
  if (!sym->second.isSymbolic())
    return Imp::ofInt(sym->second.value);
  std::string error;
  std::optional<int64_t> value =
      evaluateSizeExpr(sym->second.expr, symbols, error);
  if (!value)
    fail("symbolic size '" + arg.name + "': " + error);
  return Imp::ofInt(*value);
}

Imp ExportImporter::valueOf(const pt2::Argument &arg) {
  using K = pt2::ArgKind;
  auto list = [](auto &&values, auto make) {
    std::vector<Imp> out;
    for (const auto &v : values)
      out.push_back(make(v));
    return Imp::ofList(std::move(out));
  };
  switch (arg.kind) {
  case K::None:
    return Imp();
  case K::Tensor:
    return tensorNamed(arg.get<std::string>());
  case K::Tensors:
    return list(arg.get<std::vector<std::string>>(),
                [&](const std::string &n) { return tensorNamed(n); });
  case K::OptionalTensor: {
    const auto &name = arg.get<std::optional<std::string>>();
    return name ? tensorNamed(*name) : Imp();
  }
  case K::OptionalTensors:
    return list(arg.get<std::vector<std::optional<std::string>>>(),
                [&](const std::optional<std::string> &n) {
                  return n ? tensorNamed(*n) : Imp();
                });
  case K::Int:
    return Imp::ofInt(arg.get<int64_t>());
  case K::Ints:
    return list(arg.get<std::vector<int64_t>>(),
                [](int64_t v) { return Imp::ofInt(v); });
  case K::Float:
    return Imp::ofFloat(arg.get<double>());
  case K::Floats:
    return list(arg.get<std::vector<double>>(),
                [](double v) { return Imp::ofFloat(v); });
  case K::Bool:
    return Imp::ofBool(arg.get<bool>());
  case K::Bools:
    return list(arg.get<std::vector<bool>>(),
                [](bool v) { return Imp::ofBool(v); });
  case K::String:
    return Imp::with(Imp::Str, &Imp::s, arg.get<std::string>());
  case K::Strings:
    return list(arg.get<std::vector<std::string>>(), [](const std::string &v) {
      return Imp::with(Imp::Str, &Imp::s, v);
    });
  case K::SymInt:
    return symInt(arg.get<pt2::SymIntArg>());
  case K::SymInts:
    return list(arg.get<std::vector<pt2::SymIntArg>>(),
                [&](const pt2::SymIntArg &v) { return symInt(v); });
  case K::SymFloat: {
    const auto &v = arg.get<pt2::SymFloatArg>();
    return v.isSymbolic() ? tensorNamed(v.name) : Imp::ofFloat(v.value);
  }
  case K::SymBool: {
    const auto &v = arg.get<pt2::SymBoolArg>();
    return v.isSymbolic() ? tensorNamed(v.name) : Imp::ofBool(v.value);
  }
  case K::ScalarType: {
    std::optional<c10::ScalarType> s =
        torchScalarType(arg.get<pt2::ScalarType>());
    if (!s)
      fail("an argument of unknown dtype");
    return Imp::ofInt(int64_t(*s));
  }
  case K::MemoryFormat: {
    // LibTorch's numbering, as TorchScript passes it.
    using M = pt2::MemoryFormat;
    switch (arg.get<pt2::MemoryFormat>()) {
    case M::ContiguousFormat:
      return Imp::ofInt(int64_t(c10::MemoryFormat::Contiguous));
    case M::PreserveFormat:
      return Imp::ofInt(int64_t(c10::MemoryFormat::Preserve));
    case M::ChannelsLast:
      return Imp::ofInt(int64_t(c10::MemoryFormat::ChannelsLast));
    case M::ChannelsLast3d:
      return Imp::ofInt(int64_t(c10::MemoryFormat::ChannelsLast3d));
    case M::Unknown:
      break;
    }
    fail("an argument of unknown memory format");
  }
  case K::Layout:
    if (arg.get<pt2::Layout>() != pt2::Layout::Strided)
      fail("a " + pt2::getLayoutName(arg.get<pt2::Layout>()).str() +
           " layout argument (only dense, strided tensors are supported)");
    return Imp::ofInt(int64_t(c10::Layout::Strided));
  case K::Device:
    return Imp::with(Imp::Device, &Imp::s, arg.get<pt2::Device>().type);
  default:
    fail("an argument of kind '" + pt2::getArgKindName(arg.kind).str() +
         "' (subgraphs, custom objects and operator references are not "
         "supported)");
  }
}

void ExportImporter::evaluatePythonOperator(const pt2::Node &node) {
  llvm::StringRef op(node.target);
  op.consume_front("_operator.");
  std::vector<Imp> args;
  for (const pt2::NamedArgument &a : node.inputs)
    args.push_back(valueOf(a.arg));
  Imp result;
  if (op == "getitem" && args.size() == 2) {
    if (args[0].kind != Imp::List || !args[1].isNumber())
      fail("operator.getitem on a value that is not a list");
    int64_t i = args[1].asInt(), n = args[0].list.size();
    if (i < 0)
      i += n;
    if (i < 0 || i >= n)
      fail("operator.getitem index out of range");
    result = args[0].list[i];
  } else if (op == "neg" && args.size() == 1 && args[0].isNumber()) {
    result = args[0].kind == Imp::Float ? Imp::ofFloat(-args[0].f)
                                        : Imp::ofInt(-args[0].asInt());
  } else if (args.size() == 2 && args[0].isNumber() && args[1].isNumber()) {
    bool isFloat = args[0].kind == Imp::Float || args[1].kind == Imp::Float;
    double x = args[0].asDouble(), y = args[1].asDouble();
    std::optional<double> r;
    if (op == "add")
      r = x + y;
    else if (op == "sub")
      r = x - y;
    else if (op == "mul")
      r = x * y;
    else if (op == "truediv")
      r = x / y, isFloat = true;
    else if (op == "floordiv")
      r = std::floor(x / y);
    else if (op == "mod")
      r = x - std::floor(x / y) * y;
    if (!r)
      fail("unsupported operator '" + node.target + "'");
    result = isFloat ? Imp::ofFloat(*r) : Imp::ofInt(int64_t(*r));
  } else {
    fail("unsupported operator '" + node.target + "' on these operands");
  }
  if (node.outputs.empty())
    fail("operator '" + node.target + "' has no output");
  bindOutput(node.outputs[0], result, node.target);
}

void ExportImporter::convertNode(const pt2::Node &node) {
  if (llvm::StringRef(node.target).starts_with("_operator.")) {
    evaluatePythonOperator(node);
    return;
  }
  std::optional<c10::OperatorName> name = operatorName(node.target);
  std::optional<c10::OperatorHandle> handle;
  if (name)
    handle = c10::Dispatcher::singleton().findSchema(*name);
  if (!handle)
    fail("unsupported operator '" + node.target +
         "' (not an ATen operator LibTorch knows)");
  const c10::FunctionSchema &schema = handle->schema();
  // Operands in the schema's order; absent ones take its defaults.
  std::vector<Imp> inputs;
  for (const c10::Argument &a : schema.arguments()) {
    auto given = llvm::find_if(node.inputs, [&](const pt2::NamedArgument &n) {
      return n.name == a.name();
    });
    if (given != node.inputs.end()) {
      inputs.push_back(valueOf(given->arg));
      continue;
    }
    Imp value;
    if (a.default_value() && !ivalueToImp(*a.default_value(), value))
      fail("argument '" + a.name() + "' of '" + node.target +
           "' has a default of an unsupported kind");
    inputs.push_back(value);
  }
  NodeCall call(*this, node, schema, std::move(inputs));
  if (!convert(call)) {
    std::ostringstream os;
    os << schema;
    fail("unsupported operator '" + schema.name() + "' (schema: " + os.str() +
         ")");
  }
}

/// The exported sizes of `meta` as text: [s77, 4].
static std::string exportedShape(const pt2::TensorMeta &meta) {
  std::string s = "[";
  for (size_t k = 0; k < meta.sizes.size(); ++k) {
    const pt2::SymInt &d = meta.sizes[k];
    std::optional<std::string> sym = d.getSymbolName();
    s += (k ? ", " : "") +
         (d.isSymbolic() ? (sym ? *sym : d.expr) : std::to_string(d.value));
  }
  return s + "]";
}

LogicalResult ExportImporter::bindSymbols(const std::string &name,
                                          const pt2::TensorMeta &meta,
                                          RankedTensorType example) {
  auto shape = example.getShape();
  if (meta.sizes.size() != shape.size())
    return mlir::emitError(fileLoc)
           << "input '" << name << "' was exported with shape "
           << exportedShape(meta) << " but the example input has shape "
           << shapeString(shape);
  for (size_t k = 0; k < shape.size(); ++k) {
    std::optional<std::string> sym = meta.sizes[k].getSymbolName();
    if (!sym)
      continue;
    auto [it, inserted] = symbols.try_emplace(*sym, shape[k]);
    if (!inserted && it->second != shape[k])
      return mlir::emitError(fileLoc)
             << "input '" << name << "' dimension " << k << " is the size "
             << *sym << ", which another input's example gives as "
             << it->second << ", but this one's is " << shape[k];
    auto range = program.rangeConstraints.find(*sym);
    if (range != program.rangeConstraints.end() &&
        ((range->second.min && shape[k] < *range->second.min) ||
         (range->second.max && shape[k] > *range->second.max)))
      return mlir::emitError(fileLoc)
             << "input '" << name << "' dimension " << k << " ("
             << *sym << " = " << shape[k]
             << ") is outside the range the program was exported for ["
             << (range->second.min ? std::to_string(*range->second.min)
                                   : std::string("-inf"))
             << ", "
             << (range->second.max ? std::to_string(*range->second.max)
                                   : std::string("inf"))
             << "]";
  }
  return success();
}

LogicalResult ExportImporter::checkSizes(const std::string &name,
                                         const pt2::TensorMeta &meta,
                                         RankedTensorType example) {
  auto shape = example.getShape();
  for (size_t k = 0; k < shape.size(); ++k) {
    const pt2::SymInt &d = meta.sizes[k];
    if (!d.isSymbolic()) {
      if (d.value != shape[k])
        return mlir::emitError(fileLoc)
               << "input '" << name << "' was exported with shape "
               << exportedShape(meta) << " (dimension " << k << " fixed at "
               << d.value << "), but the example input has shape "
               << shapeString(shape)
               << "; export it with a dynamic dimension (torch.export.Dim) "
                  "to train on other sizes";
      continue;
    }
    if (d.getSymbolName())
      continue; // bound by bindSymbols
    // A size computed from other inputs' sizes (a derived Dim).
    std::string error;
    std::optional<int64_t> value = evaluateSizeExpr(d.expr, symbols, error);
    if (!value)
      return mlir::emitError(fileLoc)
             << "input '" << name << "' dimension " << k
             << " has a symbolic size that cannot be specialised from the "
                "example inputs: "
             << error;
    if (*value != shape[k])
      return mlir::emitError(fileLoc)
             << "input '" << name << "' dimension " << k << " is "
             << *value
             << " from the sizes of the other inputs, but the example "
                "input's is "
             << shape[k];
  }
  return success();
}

LogicalResult ExportImporter::typeUserInputs() {
  if (failed(examples.load(ctx, options)))
    return failure();
  std::vector<std::string> userNames;
  for (const pt2::InputSpec &spec : program.inputSpecs)
    if (spec.kind == pt2::InputSpec::UserInput && !spec.name.empty())
      userNames.push_back(spec.name);
  if (failed(examples.checkNames(userNames, "input of the exported program",
                                 "inputs", fileLoc)))
    return failure();
  // Every input's symbols are bound before any input's sizes are checked:
  // a derived size may use a symbol a later input gives.
  for (const pt2::InputSpec &spec : program.inputSpecs) {
    if (spec.kind != pt2::InputSpec::UserInput ||
        spec.value.kind != pt2::ArgKind::Tensor)
      continue;
    auto type = examples.type(spec.name, fileLoc,
                              [&](Type t) { return overrideFloat(t); });
    if (failed(type))
      return failure();
    if (!*type)
      return mlir::emitError(fileLoc)
             << "input '" << spec.name << "' has no example input in '"
             << examples.source()
             << "' (it provides: " << joinNames(examples.names()) << ")";
    const pt2::TensorMeta *meta = program.graph.getTensor(spec.name);
    if (!meta)
      return mlir::emitError(fileLoc)
             << "input '" << spec.name << "' has no tensor metadata";
    if (failed(bindSymbols(spec.name, *meta, **type)))
      return failure();
    userInputs[spec.name] = {**type, meta};
  }
  for (const auto &[name, input] : userInputs) {
    if (failed(checkSizes(name, *input.meta, input.type)))
      return failure();
    Type exported = elementType(input.meta->dtype);
    if (exported != input.type.getElementType())
      return mlir::emitError(fileLoc)
             << "input '" << name << "' was exported as "
             << pt2::getScalarTypeName(input.meta->dtype)
             << " but the example input is " << input.type.getElementType();
  }
  return success();
}

/// Whether some weight of a non-empty shape has no data in the archive (it
/// was exported on the meta device, or with fake tensors).
static bool lacksWeightData(const pt2::ExportedProgram &program,
                            llvm::ArrayRef<std::pair<std::string, bool>> state) {
  return llvm::any_of(state, [&](const auto &entry) {
    const pt2::Payload *payload = nullptr;
    for (const auto *table : {&program.weights, &program.constants})
      if (auto it = table->find(entry.first); !payload && it != table->end())
        payload = &it->second;
    return payload && payload->meta && !payload->hasData() &&
           llvm::none_of(payload->meta->sizes, [](const pt2::SymInt &s) {
             return !s.isSymbolic() && s.value == 0;
           });
  });
}

LogicalResult ExportImporter::writeWeights() {
  // A weightless archive writes nothing when the weights come from
  // elsewhere.
  bool weightless = lacksWeightData(program, state);
  if (weightless && options.weightsOptional)
    return success();
  std::vector<glimmer_rt::TensorView> views;
  std::vector<pt2::TensorData> keep;
  keep.reserve(state.size());
  for (const auto &[name, isParam] : state) {
    auto data = pt2::readExportPayload(program, name);
    if (!data) {
      auto diag = mlir::emitError(fileLoc)
                  << "cannot write the weights: "
                  << llvm::toString(data.takeError());
      if (weightless)
        diag.attachNote() << "to train it, bind weights from a checkpoint: "
                             "--weights=FILE|HF_DIR (glimmer-train, "
                             "glimmer-run) or glimmer.compile(weights=...)";
      return diag;
    }
    std::optional<c10::ScalarType> s = torchScalarType(data->dtype);
    std::optional<glimmer::DType> dtype = s ? runtimeDtype(*s) : std::nullopt;
    if (!dtype)
      return mlir::emitError(fileLoc)
             << "cannot export '" << name << "' of dtype "
             << pt2::getScalarTypeName(data->dtype);
    keep.push_back(std::move(*data));
    views.push_back({name, *dtype, keep.back().sizes, keep.back().bytes.data()});
  }
  std::string error;
  if (!glimmer_rt::writeSafetensors(options.weightsOutputPath, views,
                                    {{"format", "pt"}}, error,
                                    options.weightsFileMode))
    return mlir::emitError(fileLoc) << error;
  return success();
}

mlir::OwningOpRef<mlir::ModuleOp> ExportImporter::run() {
  fileLoc = mlir::FileLineColLoc::get(&ctx, options.modelPath, 0, 0);
  if (!setFloatType(options.floatType))
    return nullptr;
  auto read = pt2::readExportArchive(options.modelPath);
  if (!read) {
    mlir::emitError(fileLoc) << llvm::toString(read.takeError());
    return nullptr;
  }
  program = std::move(*read);
  try {
    if (failed(typeUserInputs()))
      return nullptr;
  } catch (const ImportError &e) {
    mlir::emitError(fileLoc) << e.message;
    return nullptr;
  }

  // Arguments: user inputs (in the signature's order), then parameters and
  // buffers by state_dict name.
  struct Arg {
    std::string graphName, attr, name;
    Type type;
  };
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Imp>> literals;
  std::vector<std::pair<std::string, std::string>> constants;
  try {
    for (const pt2::InputSpec &spec : program.inputSpecs) {
      switch (spec.kind) {
      case pt2::InputSpec::UserInput:
        if (spec.value.kind != pt2::ArgKind::Tensor)
          literals.push_back({spec.name, valueOf(spec.value)});
        else
          args.push_back({spec.name, kInputAttr, spec.name,
                          userInputs.find(spec.name)->second.type});
        break;
      case pt2::InputSpec::Parameter:
      case pt2::InputSpec::Buffer: {
        const pt2::TensorMeta *meta = program.graph.getTensor(spec.name);
        if (!meta)
          fail("parameter '" + spec.target + "' has no tensor metadata");
        std::vector<int64_t> shape;
        for (const pt2::SymInt &d : meta->sizes) {
          if (d.isSymbolic())
            fail("'" + spec.target + "' has the symbolic size " + d.expr);
          shape.push_back(d.value);
        }
        bool isParam = spec.kind == pt2::InputSpec::Parameter;
        args.push_back({spec.name, isParam ? kParamAttr : kBufferAttr,
                        spec.target,
                        RankedTensorType::get(shape, elementType(meta->dtype))});
        state.push_back({spec.target, isParam});
        break;
      }
      case pt2::InputSpec::TensorConstant:
        constants.push_back({spec.name, spec.target});
        break;
      case pt2::InputSpec::ConstantInput:
        literals.push_back({spec.name, valueOf(spec.value)});
        break;
      default:
        mlir::emitError(fileLoc)
            << "input '" << spec.name << "' is a "
            << pt2::getInputKindName(spec.kind)
            << ", which is not supported (custom objects and effect tokens)";
        return nullptr;
      }
    }
  } catch (const ImportError &e) {
    mlir::emitError(fileLoc) << e.message;
    return nullptr;
  }
  // User inputs first, as the TorchScript importer orders them.
  std::stable_partition(args.begin(), args.end(), [](const Arg &a) {
    return llvm::StringRef(a.attr) == kInputAttr;
  });

  mlir::OwningOpRef<mlir::ModuleOp> owned = mlir::ModuleOp::create(fileLoc);
  mlir::ModuleOp moduleOp = *owned;
  b.setInsertionPointToEnd(moduleOp.getBody());
  llvm::SmallVector<Type> argTypes;
  for (const Arg &a : args)
    argTypes.push_back(a.type);
  auto func = mlir::func::FuncOp::create(b, fileLoc, options.functionName,
                                         b.getFunctionType(argTypes, {}));
  mlir::Block *entry = func.addEntryBlock();
  for (size_t i = 0; i < args.size(); ++i) {
    func.setArgAttr(i, args[i].attr, b.getStringAttr(args[i].name));
    env[args[i].graphName] = Imp::ofTensor(entry->getArgument(i));
  }
  for (auto &[name, value] : literals)
    env[name] = value;

  registerConverters();
  b.setInsertionPointToEnd(entry);
  loc = fileLoc;
  try {
    for (const auto &[name, target] : constants) {
      auto data = pt2::readExportPayload(program, target);
      if (!data)
        fail("tensor constant '" + target + "': " +
             llvm::toString(data.takeError()));
      std::optional<c10::ScalarType> s = torchScalarType(data->dtype);
      if (!s)
        fail("tensor constant '" + target + "' has an unsupported dtype");
      at::Tensor t =
          at::from_blob(data->bytes.data(), data->sizes,
                        at::TensorOptions().dtype(*s))
              .clone();
      if (floatOverride && t.is_floating_point())
        t = t.to(floatOverrideScalar);
      Imp v = Imp::ofTensor(constantFromTensor(t));
      v.value = t;
      env[name] = v;
    }
  } catch (const ImportError &e) {
    mlir::emitError(fileLoc) << e.message;
    return nullptr;
  }
  for (const pt2::Node &node : program.graph.nodes) {
    loc = nodeLocation(ctx, node, fileLoc);
    try {
      convertNode(node);
    } catch (const ImportError &e) {
      mlir::emitError(loc) << e.message;
      return nullptr;
    } catch (const c10::Error &e) {
      std::string what = e.what_without_backtrace();
      mlir::emitError(loc) << "while importing '" << node.target
                           << "': " << what.substr(0, what.find('\n'));
      return nullptr;
    }
  }

  // Results: the user outputs (a loss is one).
  llvm::SmallVector<MValue> results;
  loc = fileLoc;
  for (const pt2::OutputSpec &spec : program.outputSpecs) {
    if (spec.kind != pt2::OutputSpec::UserOutput &&
        spec.kind != pt2::OutputSpec::LossOutput) {
      mlir::emitError(fileLoc)
          << "the program's output '" << spec.name << "' is a "
          << pt2::getOutputKindName(spec.kind) << " of '" << spec.target
          << "', which is not supported (the program must not mutate its "
             "inputs, parameters or buffers)";
      return nullptr;
    }
    auto it = env.find(spec.name);
    if (spec.value.kind != pt2::ArgKind::Tensor || it == env.end() ||
        it->second.kind != Imp::Tensor) {
      mlir::emitError(fileLoc)
          << "the program returns a value that is not a tensor";
      return nullptr;
    }
    results.push_back(it->second.tensor);
  }
  finishFunction(func, results);

  if (!options.weightsOutputPath.empty() && failed(writeWeights()))
    return nullptr;
  if (mlir::failed(mlir::verify(moduleOp)))
    return nullptr;
  return owned;
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp>
glimmer::importExportedProgram(MLIRContext &context,
                               const ImportOptions &options) {
  context.loadDialect<GlimmerDialect, mlir::func::FuncDialect>();
  if (!llvm::sys::fs::exists(options.modelPath)) {
    mlir::emitError(mlir::UnknownLoc::get(&context))
        << "cannot open torch.export archive '" << options.modelPath
        << "': no such file";
    return nullptr;
  }
  ScopedDefaultNewHandler defaultNewHandler;
  try {
    ExportImporter importer(context, options);
    return importer.run();
  } catch (const std::bad_alloc &) {
    mlir::emitError(mlir::UnknownLoc::get(&context))
        << "'" << options.modelPath
        << "' cannot be imported: it asks for more memory than is available "
           "(a corrupt archive?)";
    return nullptr;
  }
}

bool glimmer::isExportArchivePath(llvm::StringRef path) {
  return llvm::sys::path::extension(path) == ".pt2";
}
