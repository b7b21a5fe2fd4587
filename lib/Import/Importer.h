//===- Importer.h - TorchScript importer internals --------------*- C++ -*-===//
//
// Private to lib/Import: the importer state shared by the driver
// (TorchScript.cpp) and the per-operator converters (Converters/, one file
// per op family).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_IMPORT_IMPORTER_H
#define GLIMMER_LIB_IMPORT_IMPORTER_H

#include "glimmer/Import/TorchScript.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "glimmer_rt/Safetensors.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
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
using mlir::Location;
using mlir::LogicalResult;
using mlir::MLIRContext;
using mlir::OpBuilder;
using mlir::RankedTensorType;
using mlir::Type;
using mlir::failure;
using mlir::success;
using MValue = mlir::Value;
namespace jit = torch::jit;
} // namespace glimmer::detail

namespace glimmer::detail {

/// What a TorchScript value became: a tensor SSA value, or a host value
/// evaluated at import time.
struct Imp {
  enum Kind { Tensor, Int, Float, Bool, None, Str, List, Device, Module };
  Kind kind = None;
  MValue tensor;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<Imp> list;
  /// For tensors whose value is known at import time (constants and what
  /// folds from them), the value itself.
  at::Tensor value;

  static Imp ofTensor(MValue v) { return with(Tensor, &Imp::tensor, v); }
  static Imp ofInt(int64_t v) { return with(Int, &Imp::i, v); }
  static Imp ofFloat(double v) { return with(Float, &Imp::f, v); }
  static Imp ofBool(bool v) { return with(Bool, &Imp::b, v); }
  static Imp ofList(std::vector<Imp> l) {
    return with(List, &Imp::list, std::move(l));
  }
  /// An Imp of `kind` whose `field` holds `value`.
  template <typename T>
  static Imp with(Kind kind, T Imp::*field, T value) {
    Imp r;
    r.kind = kind;
    r.*field = std::move(value);
    return r;
  }
  bool isNumber() const { return kind == Int || kind == Float || kind == Bool; }
  double asDouble() const {
    return kind == Float ? f : kind == Int ? double(i) : double(b);
  }
  int64_t asInt() const {
    return kind == Int ? i : kind == Bool ? int64_t(b) : int64_t(f);
  }
};

/// Thrown by converters; caught at the node loop and turned into a
/// diagnostic at the node's location.
struct ImportError {
  std::string message;
};

[[noreturn]] inline void fail(const std::string &message) {
  throw ImportError{message};
}

inline std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

class Importer {
public:
  Importer(MLIRContext &context, const TorchScriptImportOptions &options)
      : ctx(context), b(&context), options(options) {}

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
  MValue constantFromTensor(const at::Tensor &t);
  /// The value `v` has when `user` reads it as the program runs on the
  /// example inputs, for what the trace fixed by that run (how many entries
  /// a boolean mask selects); `why` starts the error message when it
  /// cannot be had.
  at::Tensor exampleValue(jit::Node *user, jit::Value *v,
                          const std::string &why);
  /// Fills `converters`, one family of ops at a time (Converters/).
  void registerConverters();
  void registerHostValueConverters();
  void registerArithmeticConverters();
  void registerUnaryConverters();
  void registerComparisonConverters();
  void registerCastConverters();
  void registerViewConverters();
  void registerSlicingConverters();
  void registerDataMovementConverters();
  void registerCreationConverters();
  void registerReductionConverters();
  void registerIndexingConverters();
  void registerModelOpConverters();
  void registerAttentionConverters();
  void registerConvolutionConverters();
  void registerInterpolationConverters();
  Imp &in(jit::Node *n, size_t i);
  Imp *namedInput(jit::Node *n, const char *name);
  MValue tensorIn(jit::Node *n, size_t i);
  void setOut(jit::Node *n, size_t i, Imp v) { env[n->output(i)] = std::move(v); }
  void setTensor(jit::Node *n, MValue v) { setOut(n, 0, Imp::ofTensor(v)); }

  // Tensor helpers.
  RankedTensorType typeOf(MValue v) {
    return mlir::cast<RankedTensorType>(v.getType());
  }
  llvm::ArrayRef<int64_t> shapeOf(MValue v) { return typeOf(v).getShape(); }
  Type elemOf(MValue v) { return typeOf(v).getElementType(); }
  RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape, Type elem) {
    return RankedTensorType::get(shape, elem);
  }
  /// The default floating-point type (f32 unless --dtype overrides it).
  Type f32() { return floatOverride ? floatOverride : b.getF32Type(); }
  /// Applies --dtype to a traced element type.
  Type overrideFloat(Type t) {
    return floatOverride && mlir::isa<mlir::FloatType>(t) ? floatOverride : t;
  }
  Type floatOverride;
  c10::ScalarType floatOverrideScalar = c10::ScalarType::Undefined;
  Type i64() { return b.getI64Type(); }
  Type i1() { return b.getI1Type(); }
  Type elementTypeFor(c10::ScalarType t);
  c10::ScalarType scalarTypeFor(Type t);
  MValue splat(llvm::ArrayRef<int64_t> shape, Type elem, double value);
  MValue convert(MValue v, Type elem);
  MValue reshape(MValue v, llvm::ArrayRef<int64_t> shape);
  MValue broadcastTo(MValue v, llvm::ArrayRef<int64_t> shape);
  MValue transpose(MValue v, llvm::ArrayRef<int64_t> perm);
  MValue slice(MValue v, int64_t dim, int64_t start, int64_t limit,
               int64_t step);
  MValue materialize(const Imp &v, Type elem, llvm::ArrayRef<int64_t> shape);
  Type promote(const Imp &a, const Imp &b);
  std::vector<int64_t> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                       llvm::ArrayRef<int64_t> b);
  /// Builds `OpT` with the result type its shape rule infers, as its
  /// builders without result types do, for operands whose shapes come from
  /// the model and its example inputs: where the rule rejects them, the
  /// import fails at the node with the rule's message (those builders would
  /// abort).
  template <typename OpT, typename... Args>
  OpT createChecked(Args &&...args);
  template <typename OpT>
  MValue binary(const Imp &a, const Imp &b, Type resultElem = {});
  MValue compare(CompareDirection dir, const Imp &a, const Imp &b);
  MValue select(MValue cond, const Imp &a, const Imp &b);
  MValue reduce(ReductionKind kind, MValue v, std::vector<int64_t> dims,
                bool keep);
  MValue matmul(MValue a, MValue b);
  /// scaled_dot_product_attention with a mask computed at run time, as
  /// explicit ops.
  MValue explicitAttention(MValue q, MValue k, MValue v, MValue mask,
                           double scale);

  // Converter helpers (Converters/).
  /// The element type the node's `dtype` argument names, or `fallback`
  /// where it has none.
  Type dtypeOr(jit::Node *n, Type fallback) {
    Imp *d = namedInput(n, "dtype");
    if (!d || d->kind == Imp::None)
      return fallback;
    return elementTypeFor(c10::ScalarType(d->asInt()));
  }
  /// x[idx] with one index tensor on dimension 0: a row gather.
  MValue gatherRows(MValue x, MValue idx);
  void convertIndex(jit::Node *n);
  MValue linearIndex(const std::vector<Imp> &indices, int64_t first,
                     int64_t count, llvm::ArrayRef<int64_t> shape,
                     std::vector<int64_t> &common);
  MValue maskPositions(jit::Node *n, size_t maskAt,
                       std::vector<int64_t> &common);
  MValue checkedMaskPositions(MValue mask, int64_t rows, int64_t selected);
  void convertMaskedScatter(jit::Node *n);
  void convertAttention(jit::Node *n);
  MValue conv2d(MValue x, MValue w, MValue bias, std::vector<int64_t> stride,
                std::vector<int64_t> padding,
                const std::vector<int64_t> &dilation, int64_t groups);
  /// One of PyTorch's 2-D resizing kernels: (input, output size,
  /// align_corners, scale_h, scale_w).
  using Resizer =
      std::function<at::Tensor(const at::Tensor &, at::IntArrayRef, bool,
                               std::optional<double>, std::optional<double>)>;
  void convertResize(jit::Node *n, const std::string &what,
                     bool hasAlignCorners, const Resizer &op);

  int64_t normDim(int64_t dim, int64_t rank) {
    int64_t d = dim < 0 ? dim + rank : dim;
    if (d < 0 || d >= std::max<int64_t>(rank, 1))
      fail("dimension " + std::to_string(dim) + " is out of range for rank " +
           std::to_string(rank));
    return d;
  }
  std::vector<int64_t> intList(const Imp &v);

  MLIRContext &ctx;
  OpBuilder b;
  const TorchScriptImportOptions &options;
  Location loc = mlir::UnknownLoc::get(&ctx);

  jit::Module module;
  std::shared_ptr<jit::Graph> graph;
  llvm::DenseMap<const jit::Value *, Imp> env;
  /// One step from a tensor to its view: a select (start = the index, the
  /// dimension dropped) or a slice [start, end) of `dim` with `step`.
  struct ViewStep {
    bool select;
    int64_t dim, start, end, step;
  };
  struct View {
    const jit::Value *root;
    std::vector<ViewStep> steps;
    /// The root's version the view was taken from.
    unsigned version;
  };
  llvm::DenseMap<const jit::Value *, View> views;
  /// How many in-place writes each root has had.
  llvm::DenseMap<const jit::Value *, unsigned> versions;
  std::optional<ViewStep> viewStepOf(jit::Node *node);
  MValue applyView(MValue root, llvm::ArrayRef<ViewStep> steps);
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
  std::unique_ptr<glimmer_rt::SafetensorsFile> batch;
  std::map<std::string, std::function<void(jit::Node *)>> converters;
};

template <typename OpT, typename... Args>
OpT Importer::createChecked(Args &&...args) {
  mlir::OperationState state(loc, OpT::getOperationName());
  // The builder taking a result type sets the operands and attributes; the
  // inferred type replaces the empty one it was given.
  OpT::build(b, state, Type(), std::forward<Args>(args)...);
  state.types.clear();
  std::string error;
  {
    mlir::ScopedDiagnosticHandler capture(&ctx, [&](mlir::Diagnostic &d) {
      error = d.str();
      return success();
    });
    if (failed(OpT::inferReturnTypes(
            &ctx, loc, state.operands, state.attributes.getDictionary(&ctx),
            state.getRawProperties(), state.regions, state.types)))
      fail(error);
  }
  return mlir::cast<OpT>(b.create(state));
}

template <typename OpT>
MValue Importer::binary(const Imp &x, const Imp &y, Type resultElem) {
  Type elem = resultElem ? resultElem : promote(x, y);
  std::vector<int64_t> shape = broadcastShapes(
      x.kind == Imp::Tensor ? shapeOf(x.tensor) : llvm::ArrayRef<int64_t>{},
      y.kind == Imp::Tensor ? shapeOf(y.tensor) : llvm::ArrayRef<int64_t>{});
  MValue a = materialize(x, elem, shape), c = materialize(y, elem, shape);
  return OpT::create(b, loc, a, c);
}

} // namespace glimmer::detail

#endif // GLIMMER_LIB_IMPORT_IMPORTER_H
