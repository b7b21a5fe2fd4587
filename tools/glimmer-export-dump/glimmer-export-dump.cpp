//===- glimmer-export-dump.cpp - Print a torch.export archive -------------===//
//
// Prints what the torch.export archive reader reads from a .pt2 file: the
// schema version, the graph signature, the range constraints of symbolic
// sizes, every node with its arguments and source location, and where each
// weight and constant is stored.
//
//   glimmer-export-dump MODEL.pt2 [--model=NAME] [--payload=NAME ...]
//
// --payload also reads the named weights' or constants' values.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Import/ExportArchive.h"
#include "glimmer_rt/ToolArguments.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace glimmer::pt2;
namespace cl = llvm::cl;

static cl::opt<std::string> archivePath(cl::Positional, cl::Required,
                                        cl::desc("<archive.pt2>"));
static cl::opt<std::string>
    modelName("model",
              cl::desc("The model to print (default: model, the "
                       "one torch.export.save writes)"),
              cl::value_desc("name"), cl::init("model"));
static cl::list<std::string>
    payloads("payload",
             cl::desc("Also read and print this weight's or constant's values "
                      "(repeatable)"),
             cl::value_desc("name"));

namespace {

class Printer {
public:
  Printer(llvm::raw_ostream &os, const ExportedProgram &program)
      : os(os), program(program) {}

  void print();

private:
  llvm::raw_ostream &os;
  const ExportedProgram &program;

  void printDim(const SymInt &d);
  void printTensorType(const TensorMeta &meta);
  void printValueType(llvm::StringRef name);
  void printArg(const Argument &arg);
  void printNode(const Node &node);
  void printPayload(llvm::StringRef name, const Payload &payload);

  template <typename T, typename F>
  void printList(const std::vector<T> &values, F &&each) {
    os << "[";
    llvm::interleaveComma(values, os, each);
    os << "]";
  }
};

} // namespace

void Printer::printDim(const SymInt &d) {
  if (!d.isSymbolic())
    os << d.value;
  else if (std::optional<std::string> symbol = d.getSymbolName())
    os << *symbol;
  else
    os << "{" << d.expr << "}";
}

void Printer::printTensorType(const TensorMeta &meta) {
  os << getScalarTypeName(meta.dtype);
  printList(meta.sizes, [&](const SymInt &d) { printDim(d); });
  if (meta.requiresGrad)
    os << " requires_grad";
}

/// ": <type>" of a graph value, when the graph has metadata for it.
void Printer::printValueType(llvm::StringRef name) {
  if (const TensorMeta *meta = program.graph.getTensor(name)) {
    os << ": ";
    printTensorType(*meta);
    return;
  }
  auto sym = program.graph.symIntValues.find(name.str());
  if (sym != program.graph.symIntValues.end()) {
    os << ": sym_int ";
    printDim(sym->second);
    if (sym->second.hint)
      os << " (hint " << *sym->second.hint << ")";
  }
}

template <typename T>
static void printSym(llvm::raw_ostream &os, const SymArg<T> &s) {
  if (s.isSymbolic())
    os << s.name;
  else if constexpr (std::is_same_v<T, double>)
    os << llvm::format("%g", s.value);
  else if constexpr (std::is_same_v<T, bool>)
    os << (s.value ? "true" : "false");
  else
    os << s.value;
}

void Printer::printArg(const Argument &arg) {
  llvm::StringRef kind = getArgKindName(arg.kind);
  os << kind.drop_front(3) << " ";
  auto optional = [&](const std::optional<std::string> &t) {
    os << (t ? *t : "None");
  };
  auto boolean = [&](bool b) { os << (b ? "true" : "false"); };
  auto real = [&](double f) { os << llvm::format("%g", f); };
  auto quoted = [&](const std::string &s) { os << "\"" << s << "\""; };
  switch (arg.kind) {
  case ArgKind::None:
    os << "None";
    return;
  case ArgKind::Tensor:
  case ArgKind::Operator:
    os << arg.get<std::string>();
    return;
  case ArgKind::String:
    return quoted(arg.get<std::string>());
  case ArgKind::Tensors:
    return printList(arg.get<std::vector<std::string>>(),
                     [&](const std::string &s) { os << s; });
  case ArgKind::Strings:
    return printList(arg.get<std::vector<std::string>>(), quoted);
  case ArgKind::OptionalTensor:
    return optional(arg.get<std::optional<std::string>>());
  case ArgKind::OptionalTensors:
    return printList(arg.get<std::vector<std::optional<std::string>>>(),
                     optional);
  case ArgKind::Int:
    os << arg.get<int64_t>();
    return;
  case ArgKind::Ints:
    return printList(arg.get<std::vector<int64_t>>(),
                     [&](int64_t i) { os << i; });
  case ArgKind::Float:
    return real(arg.get<double>());
  case ArgKind::Floats:
    return printList(arg.get<std::vector<double>>(), real);
  case ArgKind::Bool:
    return boolean(arg.get<bool>());
  case ArgKind::Bools:
    return printList(arg.get<std::vector<bool>>(), boolean);
  case ArgKind::SymInt:
    return printSym(os, arg.get<SymIntArg>());
  case ArgKind::SymInts:
    return printList(arg.get<std::vector<SymIntArg>>(),
                     [&](const SymIntArg &s) { printSym(os, s); });
  case ArgKind::SymFloat:
    return printSym(os, arg.get<SymFloatArg>());
  case ArgKind::SymFloats:
    return printList(arg.get<std::vector<SymFloatArg>>(),
                     [&](const SymFloatArg &s) { printSym(os, s); });
  case ArgKind::SymBool:
    return printSym(os, arg.get<SymBoolArg>());
  case ArgKind::SymBools:
    return printList(arg.get<std::vector<SymBoolArg>>(),
                     [&](const SymBoolArg &s) { printSym(os, s); });
  case ArgKind::ScalarType:
    os << getScalarTypeName(arg.get<ScalarType>());
    return;
  case ArgKind::MemoryFormat:
    os << getMemoryFormatName(arg.get<MemoryFormat>());
    return;
  case ArgKind::Layout:
    os << getLayoutName(arg.get<Layout>());
    return;
  case ArgKind::Device: {
    const Device &d = arg.get<Device>();
    os << d.type;
    if (d.index)
      os << ":" << *d.index;
    return;
  }
  case ArgKind::Graph: {
    const GraphArg &g = arg.get<GraphArg>();
    os << g.name << " (" << g.graph->nodes.size() << " nodes)";
    return;
  }
  case ArgKind::CustomObj: {
    const CustomObjArg &o = arg.get<CustomObjArg>();
    os << o.name << " (" << o.classFqn << ")";
    return;
  }
  }
}

void Printer::printNode(const Node &node) {
  os << "  node " << node.name << " = " << node.target << "\n";
  for (const auto &[i, in] : llvm::enumerate(node.inputs)) {
    // Higher-order ops' inputs have no schema names; they are positional.
    os << "    in ";
    if (in.name.empty())
      os << "#" << i;
    else
      os << in.name;
    os << " = ";
    printArg(in.arg);
    if (in.passing == Passing::Keyword)
      os << " (keyword)";
    os << "\n";
  }
  for (const Argument &out : node.outputs) {
    os << "    out ";
    printArg(out);
    if (out.kind == ArgKind::Tensor)
      printValueType(out.get<std::string>());
    else if (out.kind == ArgKind::SymInt)
      printValueType(out.get<SymIntArg>().name);
    os << "\n";
  }
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(node.stackTrace).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines)
    if (line.trim().starts_with("File "))
      os << "    at " << line.trim() << "\n";
  for (const ModuleStackEntry &m : node.nnModuleStack)
    os << "    module '" << m.path << "' " << m.type << "\n";
}

void Printer::printPayload(llvm::StringRef name, const Payload &payload) {
  os << "  " << name << ": " << (payload.isParam ? "parameter " : "");
  if (payload.meta) {
    const TensorMeta &meta = *payload.meta;
    printTensorType(meta);
    os << " strides ";
    printList(meta.strides, [&](const SymInt &d) { printDim(d); });
    os << " offset ";
    printDim(meta.storageOffset);
    os << " device " << meta.device.type;
  } else {
    os << "custom object";
  }
  os << ", " << payload.record << " (" << payload.recordBytes << " bytes"
     << (payload.pickled ? ", pickled" : "")
     << (payload.hasData() ? "" : ", no data") << ")\n";
}

void Printer::print() {
  os << "archive '" << program.archivePath << "' model '" << program.modelName
     << "'\n";
  os << "schema " << program.schemaMajor << "." << program.schemaMinor
     << ", torch " << program.torchVersion << ", verifiers ";
  llvm::interleaveComma(program.verifiers, os);
  os << "\ninputs:\n";
  for (const InputSpec &in : program.inputSpecs) {
    os << "  " << getInputKindName(in.kind) << " " << in.name;
    if (!in.target.empty())
      os << " -> " << in.target;
    if (in.kind == InputSpec::Buffer && !in.persistent)
      os << " (not persistent)";
    printValueType(in.name);
    os << "\n";
  }
  os << "outputs:\n";
  for (const OutputSpec &out : program.outputSpecs) {
    os << "  " << getOutputKindName(out.kind) << " " << out.name;
    if (!out.target.empty())
      os << " -> " << out.target;
    printValueType(out.name);
    os << "\n";
  }
  os << "range constraints:\n";
  auto bound = [&](const std::optional<int64_t> &b, const char *inf) {
    if (b)
      os << *b;
    else
      os << inf;
  };
  for (const auto &[symbol, range] : program.rangeConstraints) {
    os << "  " << symbol << ": [";
    bound(range.min, "-inf");
    os << ", ";
    bound(range.max, "inf");
    os << "]\n";
  }
  os << "nodes:\n";
  for (const Node &node : program.graph.nodes)
    printNode(node);
  os << "weights:\n";
  for (const auto &[name, payload] : program.weights)
    printPayload(name, payload);
  os << "constants:\n";
  for (const auto &[name, payload] : program.constants)
    printPayload(name, payload);
}

static void printValues(llvm::raw_ostream &os, const TensorData &data) {
  size_t size = getScalarTypeSize(data.dtype);
  size_t count = size ? data.bytes.size() / size : 0;
  for (size_t i = 0; i < count; ++i) {
    const uint8_t *p = data.bytes.data() + i * size;
    os << (i ? " " : "");
    auto load = [&](auto v) {
      std::memcpy(&v, p, sizeof(v));
      return v;
    };
    switch (data.dtype) {
    case ScalarType::Float:
      os << llvm::format("%g", load(float()));
      break;
    case ScalarType::Double:
      os << llvm::format("%g", load(double()));
      break;
    case ScalarType::Long:
      os << load(int64_t());
      break;
    case ScalarType::Int:
      os << load(int32_t());
      break;
    case ScalarType::Bool:
      os << (load(uint8_t()) ? "true" : "false");
      break;
    default: // Shown as the element's bytes.
      for (size_t b = 0; b < size; ++b)
        os << llvm::format_hex_no_prefix(p[b], 2);
    }
  }
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "Print a torch.export archive (.pt2)\n");
  auto fail = [](llvm::Error error) {
    llvm::WithColor::error(llvm::errs(), "glimmer-export-dump")
        << llvm::toString(std::move(error)) << "\n";
    return 1;
  };
  std::string fileError;
  if (!glimmer_rt::checkInputFile("archive", archivePath, fileError))
    return fail(llvm::createStringError(fileError));
  llvm::Expected<ExportedProgram> program =
      readExportArchive(archivePath, modelName);
  if (!program)
    return fail(program.takeError());
  Printer(llvm::outs(), *program).print();
  for (const std::string &name : payloads) {
    llvm::Expected<TensorData> data = readExportPayload(*program, name);
    if (!data)
      return fail(data.takeError());
    llvm::outs() << "payload " << name << ": " << getScalarTypeName(data->dtype)
                 << "[";
    llvm::interleaveComma(data->sizes, llvm::outs());
    llvm::outs() << "] = ";
    printValues(llvm::outs(), *data);
    llvm::outs() << "\n";
  }
  return 0;
}
