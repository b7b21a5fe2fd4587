//===- ExportArchive.h - torch.export archive reader ------------*- C++ -*-===//
//
// Reads what torch.export.save writes (a .pt2 archive, PyTorch 2.x) into a
// plain data model that mirrors torch/_export/serde/schema.py: the graph and
// its nodes, tensor metadata, the graph signature, the range constraints of
// symbolic sizes, and where each weight and constant is stored. Reading the
// archive never reads a weight's payload; readExportPayload reads one on
// demand. This header does not expose LibTorch; only the library
// implementing it links it.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_IMPORT_EXPORTARCHIVE_H
#define GLIMMER_IMPORT_EXPORTARCHIVE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cassert>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace glimmer::pt2 {

/// The schema major version the reader understands; an archive of another
/// major version is refused. Minor versions only add fields.
constexpr int64_t kSupportedSchemaMajor = 8;

/// schema.py's ScalarType; the values are the ones stored in the JSON.
enum class ScalarType : int64_t {
  Unknown = 0,
  Byte = 1,
  Char = 2,
  Short = 3,
  Int = 4,
  Long = 5,
  Half = 6,
  Float = 7,
  Double = 8,
  ComplexHalf = 9,
  ComplexFloat = 10,
  ComplexDouble = 11,
  Bool = 12,
  BFloat16 = 13,
  UInt16 = 28,
  Float8E4M3FN = 29,
  Float8E5M2 = 30,
  Float8E4M3FNUZ = 31,
  Float8E5M2FNUZ = 32,
};

/// schema.py's Layout.
enum class Layout : int64_t {
  Unknown = 0,
  SparseCoo = 1,
  SparseCsr = 2,
  SparseCsc = 3,
  SparseBsr = 4,
  SparseBsc = 5,
  Mkldnn = 6,
  Strided = 7,
};

/// schema.py's MemoryFormat.
enum class MemoryFormat : int64_t {
  Unknown = 0,
  ContiguousFormat = 1,
  ChannelsLast = 2,
  ChannelsLast3d = 3,
  PreserveFormat = 4,
};

/// The PyTorch name of a dtype ("float32", "int64", ...).
llvm::StringRef getScalarTypeName(ScalarType type);
/// The size of one element in bytes.
int64_t getScalarTypeSize(ScalarType type);
llvm::StringRef getLayoutName(Layout layout);
llvm::StringRef getMemoryFormatName(MemoryFormat format);

struct Device {
  std::string type; // "cpu", "cuda", "meta", ...
  std::optional<int64_t> index;
};

/// A size, stride, storage offset or symbolic int value of the graph: a
/// concrete integer, or a symbolic expression (sympy's srepr, such as
/// "Symbol('s77', positive=True, integer=True)") with the value it had
/// when the program was exported.
struct SymInt {
  int64_t value = 0; // when concrete
  std::string expr;  // when symbolic
  std::optional<int64_t> hint;

  bool isSymbolic() const { return !expr.empty(); }
  /// The symbol's name ("s77") when the expression is a single symbol; the
  /// range constraints are keyed by it.
  std::optional<std::string> getSymbolName() const;
};

/// A symbolic float or bool value of the graph (schema.py's SymFloat,
/// SymBool): a literal, or a sympy expression.
struct SymFloat {
  double value = 0;
  std::string expr;
};
struct SymBool {
  bool value = false;
  std::string expr;
};

struct TensorMeta {
  ScalarType dtype = ScalarType::Unknown;
  std::vector<SymInt> sizes;
  std::vector<SymInt> strides;
  SymInt storageOffset;
  bool requiresGrad = false;
  Device device;
  Layout layout = Layout::Strided;
};

/// An int, float or bool argument that is a literal, or names a symbolic
/// value of the graph (schema.py's SymIntArgument, SymFloatArgument,
/// SymBoolArgument: `as_name` or the literal).
template <typename T>
struct SymArg {
  std::string name; // non-empty: the graph's symbolic value of this name
  T value{};        // otherwise: the literal
  bool isSymbolic() const { return !name.empty(); }
};
using SymIntArg = SymArg<int64_t>;
using SymFloatArg = SymArg<double>;
using SymBoolArg = SymArg<bool>;

struct Graph;

/// A subgraph argument of a higher-order op (cond, map, wrap_with_...).
struct GraphArg {
  std::string name;
  std::shared_ptr<const Graph> graph;
};

/// A TorchBind object.
struct CustomObjArg {
  std::string name;
  std::string classFqn;
};

/// Which member of schema.py's Argument union an argument is. Tensors are
/// referred to by the name of a graph value (its key in
/// Graph::tensorValues).
enum class ArgKind {
  None,
  Tensor,          // std::string: the tensor's name
  Tensors,         // std::vector<std::string>
  OptionalTensor,  // std::optional<std::string>: nullopt for None
  OptionalTensors, // std::vector<std::optional<std::string>>
  Int,             // int64_t
  Ints,            // std::vector<int64_t>
  Float,           // double
  Floats,          // std::vector<double>
  Bool,            // bool
  Bools,           // std::vector<bool>
  String,          // std::string
  Strings,         // std::vector<std::string>
  SymInt,          // SymIntArg
  SymInts,         // std::vector<SymIntArg>
  SymFloat,        // SymFloatArg
  SymFloats,       // std::vector<SymFloatArg>
  SymBool,         // SymBoolArg
  SymBools,        // std::vector<SymBoolArg>
  ScalarType,      // pt2::ScalarType
  MemoryFormat,    // pt2::MemoryFormat
  Layout,          // pt2::Layout
  Device,          // pt2::Device
  Graph,           // GraphArg
  CustomObj,       // CustomObjArg
  Operator,        // std::string: the operator's name
};

/// The schema.py key of an argument kind ("as_tensor", "as_sym_ints", ...).
llvm::StringRef getArgKindName(ArgKind kind);

struct Argument {
  ArgKind kind = ArgKind::None;
  /// The value; the type each kind holds is listed at ArgKind.
  std::variant<std::monostate, bool, int64_t, double, std::string,
               std::optional<std::string>, ScalarType, MemoryFormat, Layout,
               Device, SymIntArg, SymFloatArg, SymBoolArg, GraphArg,
               CustomObjArg, std::vector<bool>, std::vector<int64_t>,
               std::vector<double>, std::vector<std::string>,
               std::vector<std::optional<std::string>>, std::vector<SymIntArg>,
               std::vector<SymFloatArg>, std::vector<SymBoolArg>>
      value;

  /// The value, as the type that `kind` holds.
  template <typename T>
  const T &get() const {
    const T *v = std::get_if<T>(&value);
    assert(v && "the argument's kind holds another type (see ArgKind)");
    return *v;
  }
};

/// The name of the graph value an argument refers to: a tensor's, a
/// symbolic value's or a custom object's; empty for a literal or a list.
std::string getValueName(const Argument &arg);

/// How an input was passed to the operator (schema.py's ArgumentKind).
enum class Passing { Unknown, Positional, Keyword };

struct NamedArgument {
  std::string name; // from the operator's schema ("input", "weight", ...)
  Argument arg;
  Passing passing = Passing::Unknown;
};

/// One entry of a node's nn_module_stack: the submodule the node was traced
/// in, outermost first.
struct ModuleStackEntry {
  std::string key;  // a unique key ("L__self___fc1")
  std::string path; // the submodule's path ("fc1")
  std::string type; // its class ("torch.nn.modules.linear.Linear")
};

struct Node {
  /// The operator, such as "torch.ops.aten.linear.default".
  std::string target;
  /// The FX node's name (may be empty in archives of older versions).
  std::string name;
  std::vector<NamedArgument> inputs;
  std::vector<Argument> outputs;
  /// Where the node was traced ("File \"m.py\", line 8, in forward\n ...").
  std::string stackTrace;
  std::vector<ModuleStackEntry> nnModuleStack;
  /// The node's other metadata entries (torch_fn, source_fn_stack, ...),
  /// verbatim.
  std::map<std::string, std::string> metadata;
};

struct Graph {
  std::vector<Argument> inputs;
  std::vector<Argument> outputs;
  std::vector<Node> nodes;
  /// The metadata of every tensor value, by name.
  std::map<std::string, TensorMeta> tensorValues;
  std::map<std::string, SymInt> symIntValues;
  std::map<std::string, SymFloat> symFloatValues;
  std::map<std::string, SymBool> symBoolValues;
  /// TorchBind objects: name -> class.
  std::map<std::string, std::string> customObjValues;
  /// A subgraph returning one tensor rather than a list of one.
  bool isSingleTensorReturn = false;

  /// The metadata of tensor `name`, or null.
  const TensorMeta *getTensor(llvm::StringRef name) const;
};

/// One input of the graph (schema.py's InputSpec).
struct InputSpec {
  enum Kind {
    UserInput,
    Parameter,
    Buffer,
    TensorConstant,
    CustomObj,
    Token,
    ConstantInput
  };
  Kind kind = UserInput;
  /// The graph input's name. Empty for a user input that is a literal.
  std::string name;
  /// The state_dict (Parameter, Buffer) or constants (TensorConstant,
  /// CustomObj) name it is bound to.
  std::string target;
  /// Buffer: whether the buffer is in the state_dict.
  bool persistent = true;
  /// UserInput: the argument itself. ConstantInput: the constant (None, Int,
  /// Float, String or Bool).
  Argument value;
};

/// One output of the graph (schema.py's OutputSpec).
struct OutputSpec {
  enum Kind {
    UserOutput,
    LossOutput,
    BufferMutation,
    GradientToParameter,
    GradientToUserInput,
    UserInputMutation,
    Token,
    ParameterMutation
  };
  Kind kind = UserOutput;
  /// The graph output's name. Empty for a user output that is a literal.
  std::string name;
  /// The buffer, parameter or user input that the output mutates or is the
  /// gradient of.
  std::string target;
  /// UserOutput: the argument itself.
  Argument value;
};

llvm::StringRef getInputKindName(InputSpec::Kind kind);
llvm::StringRef getOutputKindName(OutputSpec::Kind kind);

/// The range of a symbolic size; an absent bound is unbounded.
struct RangeConstraint {
  std::optional<int64_t> min;
  std::optional<int64_t> max;
};

/// Where a weight or constant is stored in the archive.
struct Payload {
  /// The archive record, such as "data/weights/weight_0". Several tensors
  /// may share one record (views of one storage).
  std::string record;
  /// The record's size in bytes: the whole storage behind the tensor. Zero
  /// when the program was exported without data (on the meta device, or
  /// with fake tensors).
  uint64_t recordBytes = 0;
  bool isParam = false;
  /// Stored with torch.save (tensor subclasses, custom objects) rather than
  /// as raw bytes.
  bool pickled = false;
  /// Absent for custom objects.
  std::optional<TensorMeta> meta;

  bool hasData() const { return recordBytes != 0; }
};

struct ExportedProgram {
  /// The archive this was read from (for readExportPayload) and the model's
  /// name in it ("model" for torch.export.save).
  std::string archivePath;
  std::string modelName;
  int64_t schemaMajor = 0;
  int64_t schemaMinor = 0;
  std::string torchVersion;
  std::map<std::string, int64_t> opsetVersion;
  std::vector<std::string> verifiers;
  Graph graph;
  std::vector<InputSpec> inputSpecs;
  std::vector<OutputSpec> outputSpecs;
  /// By symbol name ("s77").
  std::map<std::string, RangeConstraint> rangeConstraints;
  /// Parameters and buffers by state_dict name.
  std::map<std::string, Payload> weights;
  /// Tensor constants and custom objects by name.
  std::map<std::string, Payload> constants;
};

/// Reads model `modelName` of the archive at `path`. Errors name the file
/// and, for the model JSON, the path of the offending field.
llvm::Expected<ExportedProgram>
readExportArchive(llvm::StringRef path, llvm::StringRef modelName = "model");

/// A weight's or constant's values, dense and row-major.
struct TensorData {
  ScalarType dtype = ScalarType::Unknown;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bytes;
};

/// Reads the payload of weight or constant `name` of `program` from its
/// archive (opened again). Fails for a payload without data.
llvm::Expected<TensorData> readExportPayload(const ExportedProgram &program,
                                             llvm::StringRef name);

} // namespace glimmer::pt2

#endif // GLIMMER_IMPORT_EXPORTARCHIVE_H
