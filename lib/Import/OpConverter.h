//===- OpConverter.h - The ATen op conversion table ------------*- C++ -*-===//
//
// Private to lib/Import: the conversion of ATen ops into glimmer ops, shared
// by the front ends. A front end presents each op application as an OpCall
// (its operator name and schema, its operands already converted, where its
// results go); the table, filled one op family at a time (Converters/),
// emits glimmer ops or evaluates host values. What only one front end has
// (TorchScript's prim:: ops, alias tracking, folding through LibTorch) stays
// in that front end.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_IMPORT_OPCONVERTER_H
#define GLIMMER_LIB_IMPORT_OPCONVERTER_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "glimmer_contract/DType.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include <ATen/ATen.h>
#include <ATen/core/function_schema.h>

#include <functional>
#include <map>
#include <new>
#include <optional>
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

/// What a program value became: a tensor SSA value, or a host value
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

/// One application of an ATen op as the converters read it, whichever
/// front end's graph it comes from.
class OpCall {
public:
  virtual ~OpCall() = default;
  /// The operator's qualified name, e.g. "aten::add".
  virtual std::string kind() const = 0;
  /// The overload's schema (argument names), where the front end knows it.
  virtual const c10::FunctionSchema *schema() const = 0;
  virtual size_t numInputs() const = 0;
  /// Operand `i`, in the schema's argument order.
  virtual Imp &input(size_t i) = 0;
  virtual size_t numOutputs() const = 0;
  virtual void setOutput(size_t i, Imp value) = 0;
  /// Whether operand `i` is a literal of the program (a Python number the
  /// trace recorded as a constant), which ATen promotes as a number.
  virtual bool inputIsLiteral(size_t i) const = 0;
  /// The value operand `i` (or element `element` of the list it is) has when
  /// the program runs on its example inputs, for a size the graph fixed
  /// from that run; `why` starts the error where it cannot be had.
  virtual at::Tensor exampleValue(size_t i, std::optional<size_t> element,
                                  const std::string &why) = 0;
};

/// LLVM's tools install a new-handler that aborts ("LLVM ERROR: out of
/// memory"). A corrupt archive can make LibTorch ask for tens of GiB: while
/// an importer runs, the standard handler makes that a std::bad_alloc,
/// which it reports as an error.
struct ScopedDefaultNewHandler {
  std::new_handler previous = std::set_new_handler(nullptr);
  ~ScopedDefaultNewHandler() { std::set_new_handler(previous); }
};

/// A constant IValue as an Imp (numbers, strings, devices, lists of
/// numbers); false for another kind. Tensors are the caller's (they need
/// the builder).
bool ivalueToImp(const c10::IValue &v, Imp &out);

/// The element types LibTorch tensors and the runtime's safetensors files
/// share, both ways.
std::optional<glimmer::DType> runtimeDtype(c10::ScalarType t);
std::optional<c10::ScalarType> torchDtype(glimmer::DType t);

/// The conversion table and the builders its converters share.
class OpConverter {
public:
  explicit OpConverter(MLIRContext &context) : ctx(context), b(&context) {}
  virtual ~OpConverter() = default;

protected:
  /// Sets the --dtype override ("f32", "f64", or empty for none); emits an
  /// error and returns false for another name.
  bool setFloatType(const std::string &name);
  /// Returns `results` from `func` at `loc`, sets its result types, and
  /// erases what folding and host evaluation left unread.
  void finishFunction(mlir::func::FuncOp func, llvm::ArrayRef<MValue> results);
  /// Converts `call` with its operator's converter; false when the table
  /// has none.
  bool convert(OpCall &call);
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
  void registerNormalizationConverters();
  void registerPaddingConverters();
  void registerAttentionConverters();
  void registerConvolutionConverters();
  void registerInterpolationConverters();
  void registerPoolingConverters();
  void registerPoolingBackwardConverters();
  void registerDistanceConverters();
  void registerSortingConverters();
  void registerEmbeddingBagConverters();
  void registerGridSampleConverters();
  void registerOutOfScopeConverters();
  Imp &in(OpCall *n, size_t i) { return n->input(i); }
  Imp *namedInput(OpCall *n, const char *name);
  MValue tensorIn(OpCall *n, size_t i);
  void setOut(OpCall *n, size_t i, Imp v) { n->setOutput(i, std::move(v)); }
  void setTensor(OpCall *n, MValue v) { setOut(n, 0, Imp::ofTensor(v)); }
  MValue constantFromTensor(const at::Tensor &t);
  /// One step from a tensor to its view: a select (start = the index, the
  /// dimension dropped) or a slice [start, end) of `dim` with `step`.
  struct ViewStep {
    bool select;
    int64_t dim, start, end, step;
  };
  /// The view aten::select or aten::slice takes (Converters/Slicing.cpp),
  /// with PyTorch's index rules; nothing for another op.
  std::optional<ViewStep> viewStepOf(OpCall *n);
  MValue applyView(MValue root, llvm::ArrayRef<ViewStep> steps);

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
  Type dtypeOr(OpCall *n, Type fallback) {
    Imp *d = namedInput(n, "dtype");
    if (!d || d->kind == Imp::None)
      return fallback;
    return elementTypeFor(c10::ScalarType(d->asInt()));
  }
  /// x[idx] with one index tensor on dimension 0: a row gather.
  MValue gatherRows(MValue x, MValue idx);
  /// x at positions `idx` (1-D or zero-dim) of dimension `dim`
  /// (index_select).
  MValue selectAlong(MValue x, int64_t dim, MValue idx);
  /// The flattened position in `self` of each element of `index` for
  /// gather / scatter along `dim` (a 1-D i64 tensor).
  MValue scatterPositions(MValue self, int64_t dim, MValue index,
                          const char *what);
  void convertIndex(OpCall *n);
  MValue linearIndex(const std::vector<Imp> &indices, int64_t first,
                     int64_t count, llvm::ArrayRef<int64_t> shape,
                     std::vector<int64_t> &common);
  MValue maskPositions(OpCall *n, size_t maskAt,
                       std::vector<int64_t> &common);
  MValue checkedMaskPositions(MValue mask, int64_t rows, int64_t selected);
  void convertMaskedScatter(OpCall *n);
  void convertAttention(OpCall *n);
  MValue conv2d(MValue x, MValue w, MValue bias, std::vector<int64_t> stride,
                std::vector<int64_t> padding,
                const std::vector<int64_t> &dilation, int64_t groups);
  void convertConvolutionBackward(OpCall *n);
  /// One of PyTorch's 2-D resizing kernels: (input, output size,
  /// align_corners, scale_h, scale_w).
  using Resizer =
      std::function<at::Tensor(const at::Tensor &, at::IntArrayRef, bool,
                               std::optional<double>, std::optional<double>)>;
  void convertResize(OpCall *n, const std::string &what,
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
  Location loc = mlir::UnknownLoc::get(&ctx);
  std::map<std::string, std::function<void(OpCall *)>> converters;
};

template <typename OpT, typename... Args>
OpT OpConverter::createChecked(Args &&...args) {
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
MValue OpConverter::binary(const Imp &x, const Imp &y, Type resultElem) {
  Type elem = resultElem ? resultElem : promote(x, y);
  std::vector<int64_t> shape = broadcastShapes(
      x.kind == Imp::Tensor ? shapeOf(x.tensor) : llvm::ArrayRef<int64_t>{},
      y.kind == Imp::Tensor ? shapeOf(y.tensor) : llvm::ArrayRef<int64_t>{});
  MValue a = materialize(x, elem, shape), c = materialize(y, elem, shape);
  return OpT::create(b, loc, a, c);
}

} // namespace glimmer::detail

#endif // GLIMMER_LIB_IMPORT_OPCONVERTER_H
