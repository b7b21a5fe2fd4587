//===- GlimmerOps.cpp - Glimmer operations --------------------------------===//
//
// Verifiers check what a kernel or the partitioner will rely on: ranks,
// shapes, element types, attribute ranges, mesh axes and divisibility. Each
// message says what was expected and what was found.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace glimmer;

Type glimmer::getI1SameShape(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(),
                               IntegerType::get(type.getContext(), 1));
}

Type glimmer::swapHeadsAndSequence(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != 4)
    return type;
  ArrayRef<int64_t> s = tensor.getShape();
  return tensor.clone({s[0], s[2], s[1], s[3]});
}

bool glimmer::widensExactly(Type from, Type to) {
  auto narrow = dyn_cast<FloatType>(from);
  auto wide = dyn_cast<FloatType>(to);
  return narrow && wide &&
         APFloat::isRepresentableBy(narrow.getFloatSemantics(),
                                    wide.getFloatSemantics());
}

// Attention's type lists name value's type only where it differs from
// key's, and (attention_grad) output's only where it differs from query's:
// the head-major forms keep their short spelling.
static ParseResult parseKeyValueTypes(OpAsmParser &parser, Type &key,
                                      Type &value) {
  if (parser.parseType(key))
    return failure();
  value = key;
  if (succeeded(parser.parseOptionalComma()))
    return parser.parseType(value);
  return success();
}

static void printKeyValueTypes(OpAsmPrinter &printer, Operation *, Type key,
                               Type value) {
  printer << key;
  if (value != key)
    printer << ", " << value;
}

static ParseResult parseLseValueOutputTypes(OpAsmParser &parser, Type &lse,
                                            Type query, Type key, Type &value,
                                            Type &output) {
  if (parser.parseType(lse))
    return failure();
  value = key;
  output = query;
  if (failed(parser.parseOptionalComma()))
    return success();
  if (parser.parseType(value) || parser.parseComma())
    return failure();
  return parser.parseType(output);
}

static void printLseValueOutputTypes(OpAsmPrinter &printer, Operation *,
                                     Type lse, Type query, Type key, Type value,
                                     Type output) {
  printer << lse;
  if (value != key || output != query)
    printer << ", " << value << ", " << output;
}

/// A norm's weight type, then its result type after `->` when it differs
/// from the input's.
static ParseResult parseNormResultType(OpAsmParser &parser, Type input,
                                       Type &weight, Type &output) {
  output = input;
  if (parser.parseType(weight))
    return failure();
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(output);
  return success();
}

static void printNormResultType(OpAsmPrinter &printer, Operation *,
                                Type input, Type weight, Type output) {
  printer << weight;
  if (output != input)
    printer << " -> " << output;
}

/// A norm gradient's weight type, then its cotangent's type after `grad`
/// when it differs from the input's.
static ParseResult parseNormGradType(OpAsmParser &parser, Type input,
                                     Type &weight, Type &grad) {
  grad = input;
  if (parser.parseType(weight))
    return failure();
  if (succeeded(parser.parseOptionalKeyword("grad")))
    return parser.parseType(grad);
  return success();
}

static void printNormGradType(OpAsmPrinter &printer, Operation *, Type input,
                              Type weight, Type grad) {
  printer << weight;
  if (grad != input)
    printer << " grad " << grad;
}

#include "glimmer/Dialect/Glimmer/IR/GlimmerInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

/// Checks that `dim` is a valid dimension index for `rank`.
static LogicalResult checkDim(Operation *op, int64_t dim, int64_t rank,
                              StringRef what = "dim") {
  if (dim < 0 || dim >= rank)
    return op->emitOpError() << what << " " << dim
                             << " is out of range for rank " << rank;
  return success();
}

/// Checks that `v` has rank `rank`.
static LogicalResult checkRank(Operation *op, Value v, int64_t rank,
                               StringRef name) {
  if (tensorType(v).getRank() != rank)
    return op->emitOpError() << "expects " << name << " of rank " << rank
                             << ", got " << v.getType();
  return success();
}

/// Checks that two values share an element type.
static LogicalResult checkSameElementType(Operation *op, Value a, StringRef an,
                                          Value b, StringRef bn) {
  if (tensorType(a).getElementType() != tensorType(b).getElementType())
    return op->emitOpError()
           << "expects " << an << " and " << bn
           << " to have the same element type, got "
           << tensorType(a).getElementType() << " and "
           << tensorType(b).getElementType();
  return success();
}

/// Checks that `v` has exactly the shape `expected`.
static LogicalResult checkShape(Operation *op, Value v, StringRef name,
                                ArrayRef<int64_t> expected) {
  if (tensorType(v).getShape() != expected)
    return op->emitOpError() << "expects " << name << " of shape "
                             << shapeString(expected) << ", got "
                             << shapeString(tensorType(v).getShape());
  return success();
}

/// Checks that `v` has exactly the type `expected`.
static LogicalResult checkType(Operation *op, Value v, StringRef name,
                               Type expected) {
  if (v.getType() != expected)
    return op->emitOpError() << "expects " << name << " of type " << expected
                             << ", got " << v.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Mesh lookups for sharding annotations and collectives
//===----------------------------------------------------------------------===//

static FailureOr<MeshAttr> lookupMesh(Operation *op, FlatSymbolRefAttr name,
                                      SymbolTableCollection &symbols) {
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(op, name);
  if (!mesh)
    return op->emitOpError() << "refers to unknown mesh " << name;
  return mesh.getMesh();
}

/// Resolves `axes` in the mesh and returns the product of their sizes.
static FailureOr<int64_t> axesProduct(Operation *op, MeshAttr mesh,
                                      ArrayRef<StringRef> axes) {
  int64_t product = 1;
  for (StringRef axis : axes) {
    std::optional<int64_t> size = mesh.getAxisSize(axis);
    if (!size)
      return op->emitOpError() << "mesh has no axis \"" << axis << "\"";
    product *= *size;
  }
  return product;
}

static SmallVector<StringRef> axisNames(ArrayAttr axes) {
  return llvm::map_to_vector(
      axes, [](Attribute a) { return cast<StringAttr>(a).getValue(); });
}

/// Local (symbol-free) checks shared by collectives on an axis list.
static LogicalResult verifyAxisList(Operation *op, ArrayAttr axes) {
  if (axes.empty())
    return op->emitOpError() << "expects at least one mesh axis";
  llvm::SmallSet<StringRef, 4> seen;
  for (StringRef a : axisNames(axes))
    if (!seen.insert(a).second)
      return op->emitOpError() << "lists mesh axis \"" << a << "\" twice";
  return success();
}

//===----------------------------------------------------------------------===//
// ShardingConstraintOp
//===----------------------------------------------------------------------===//

LogicalResult
ShardingConstraintOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<MeshAttr> mesh =
      lookupMesh(*this, getSharding().getMesh(), symbols);
  if (failed(mesh))
    return failure();
  return getSharding().verifyFor([&]() { return emitOpError(); },
                                 tensorType(getInput()), *mesh);
}

//===----------------------------------------------------------------------===//
// Constant, elementwise and shape ops
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult CompareOp::verify() {
  return checkShape(*this, getOutput(), "result",
                    tensorType(getLhs()).getShape());
}

LogicalResult SelectOp::verify() {
  return checkShape(*this, getCond(), "condition",
                    tensorType(getOutput()).getShape());
}

LogicalResult ConvertOp::verify() {
  return checkShape(*this, getOutput(), "result",
                    tensorType(getInput()).getShape());
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getInput().getType() == getOutput().getType())
    return getInput();
  // A float widened and narrowed back is itself (widening is exact): the
  // backward of mixed precision's converts meets such pairs.
  if (auto inner = getInput().getDefiningOp<ConvertOp>()) {
    Value source = inner.getInput();
    if (source.getType() == getOutput().getType() &&
        widensExactly(tensorType(source).getElementType(),
                      tensorType(inner).getElementType()))
      return source;
  }
  return {};
}

LogicalResult ReduceOp::verify() {
  RankedTensorType in = tensorType(getInput());
  ArrayRef<int64_t> dims = getDims();
  if (dims.empty())
    return emitOpError() << "expects at least one dimension to reduce";
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (failed(checkDim(*this, d, in.getRank())))
      return failure();
    if (i > 0 && d <= dims[i - 1])
      return emitOpError() << "expects dims sorted and unique, got "
                           << shapeString(dims);
  }
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (!llvm::is_contained(dims, d))
      expected.push_back(in.getDimSize(d));
    else if (getKeepDims())
      expected.push_back(1);
  }
  if (failed(checkSameElementType(*this, getInput(), "input", getOutput(),
                                  "result")))
    return failure();
  return checkShape(*this, getOutput(), "result", expected);
}

LogicalResult CumsumOp::verify() {
  return checkDim(*this, getDim(), tensorType(getInput()).getRank());
}

LogicalResult IotaOp::verify() {
  return checkDim(*this, getDim(), tensorType(getOutput()).getRank());
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = tensorType(getInput()), out = tensorType(getOutput());
  if (failed(checkSameElementType(*this, getInput(), "input", getOutput(),
                                  "result")))
    return failure();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "cannot reshape " << in.getNumElements()
                         << " elements " << shapeString(in.getShape())
                         << " into " << out.getNumElements() << " elements "
                         << shapeString(out.getShape());
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getOutput().getType())
    return getInput();
  return {};
}

LogicalResult TransposeOp::verify() {
  RankedTensorType in = tensorType(getInput());
  ArrayRef<int64_t> perm = getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError() << "expects a permutation of " << in.getRank()
                         << " dimensions, got " << shapeString(perm);
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError() << "permutation " << shapeString(perm)
                           << " is not a permutation of [0, " << in.getRank()
                           << ")";
    seen[p] = true;
    expected.push_back(in.getDimSize(p));
  }
  if (failed(checkSameElementType(*this, getInput(), "input", getOutput(),
                                  "result")))
    return failure();
  return checkShape(*this, getOutput(), "result", expected);
}

LogicalResult BroadcastInDimOp::verify() {
  RankedTensorType in = tensorType(getInput()), out = tensorType(getOutput());
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != in.getRank())
    return emitOpError() << "expects one result dimension per input dimension ("
                         << in.getRank() << "), got " << shapeString(dims);
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (failed(checkDim(*this, d, out.getRank(), "broadcast dimension")))
      return failure();
    if (i > 0 && d <= dims[i - 1])
      return emitOpError() << "expects strictly increasing dims, got "
                           << shapeString(dims);
    int64_t inSize = in.getDimSize(i), outSize = out.getDimSize(d);
    if (inSize != 1 && inSize != outSize)
      return emitOpError() << "cannot broadcast input dimension " << i
                           << " of size " << inSize << " to result dimension "
                           << d << " of size " << outSize;
  }
  return checkSameElementType(*this, getInput(), "input", getOutput(),
                              "result");
}

LogicalResult SliceOp::verify() {
  RankedTensorType in = tensorType(getInput());
  ArrayRef<int64_t> start = getStart(), limit = getLimit(),
                    stride = getStride();
  int64_t rank = in.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(stride.size()) != rank)
    return emitOpError() << "expects start, limit and stride of length "
                         << rank;
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < rank; ++d) {
    if (stride[d] < 1)
      return emitOpError() << "stride of dimension " << d
                           << " must be positive, got " << stride[d];
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > in.getDimSize(d))
      return emitOpError() << "slice [" << start[d] << ", " << limit[d]
                           << ") of dimension " << d
                           << " is out of bounds for size "
                           << in.getDimSize(d);
    expected.push_back((limit[d] - start[d] + stride[d] - 1) / stride[d]);
  }
  if (failed(checkSameElementType(*this, getInput(), "input", getOutput(),
                                  "result")))
    return failure();
  return checkShape(*this, getOutput(), "result", expected);
}

LogicalResult MicrobatchSliceOp::verify() {
  RankedTensorType in = tensorType(getInput());
  if (tensorType(getIndex()).getRank() != 0)
    return emitOpError() << "expects a scalar micro-batch index";
  int64_t dim = getDim(), pieces = getPieces();
  if (dim < 0 || dim >= in.getRank())
    return emitOpError() << "dimension " << dim << " is out of range for "
                         << in;
  if (pieces < 1 || in.getDimSize(dim) % pieces != 0)
    return emitOpError() << "cannot cut dimension " << dim << " of size "
                         << in.getDimSize(dim) << " into " << pieces
                         << " equal micro-batches";
  if (failed(checkSameElementType(*this, getInput(), "input", getOutput(),
                                  "result")))
    return failure();
  SmallVector<int64_t> expected(in.getShape());
  expected[dim] /= pieces;
  return checkShape(*this, getOutput(), "result", expected);
}

/// Whether a value of element type `narrow` widens exactly into `wide` in
/// the optimizer and sum_squares (bf16 into f32), besides equal types.
static bool widensInto(Type narrow, Type wide) {
  return narrow == wide || (narrow.isBF16() && wide.isF32());
}

LogicalResult SumSquaresOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "expects at least one input";
  Type result = tensorType(getOutput()).getElementType();
  for (auto [i, v] : llvm::enumerate(getInputs()))
    if (!widensInto(tensorType(v).getElementType(), result))
      return emitOpError() << "input #" << i << " of type " << v.getType()
                           << " is neither of the result's element type "
                           << result << " nor bf16 under an f32 result";
  return checkShape(*this, getOutput(), "result", {});
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "expects at least one input";
  RankedTensorType first = tensorType(getInputs().front());
  if (failed(checkDim(*this, getDim(), first.getRank())))
    return failure();
  SmallVector<int64_t> expected(first.getShape());
  expected[getDim()] = 0;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    RankedTensorType t = tensorType(v);
    if (t.getElementType() != first.getElementType() ||
        t.getRank() != first.getRank())
      return emitOpError() << "input #" << i << " of type " << t
                           << " does not match input #0 of type " << first;
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != int64_t(getDim()) && t.getDimSize(d) != first.getDimSize(d))
        return emitOpError() << "input #" << i << " differs from input #0 in "
                             << "dimension " << d << " (" << t.getDimSize(d)
                             << " vs " << first.getDimSize(d) << ")";
    expected[getDim()] += t.getDimSize(getDim());
  }
  if (failed(checkSameElementType(*this, getInputs().front(), "inputs",
                                  getOutput(), "result")))
    return failure();
  return checkShape(*this, getOutput(), "result", expected);
}

LogicalResult PadOp::verify() {
  RankedTensorType in = tensorType(getInput());
  int64_t rank = in.getRank();
  if (static_cast<int64_t>(getLow().size()) != rank ||
      static_cast<int64_t>(getHigh().size()) != rank)
    return emitOpError() << "expects low and high padding of length " << rank;
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < rank; ++d) {
    if (getLow()[d] < 0 || getHigh()[d] < 0)
      return emitOpError() << "padding of dimension " << d
                           << " must be non-negative";
    expected.push_back(in.getDimSize(d) + getLow()[d] + getHigh()[d]);
  }
  if (failed(checkSameElementType(*this, getInput(), "input", getOutput(),
                                  "result")))
    return failure();
  return checkShape(*this, getOutput(), "result", expected);
}

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

/// ids.shape + [d]
static SmallVector<int64_t> appendDim(ArrayRef<int64_t> shape, int64_t d) {
  SmallVector<int64_t> out(shape);
  out.push_back(d);
  return out;
}

LogicalResult EmbeddingOp::verify() {
  if (failed(checkRank(*this, getTable(), 2, "a [V, D] table")))
    return failure();
  if (failed(checkSameElementType(*this, getTable(), "table", getOutput(),
                                  "result")))
    return failure();
  return checkShape(
      *this, getOutput(), "result",
      appendDim(tensorType(getIds()).getShape(),
                tensorType(getTable()).getDimSize(1)));
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(checkRank(*this, getOutput(), 2, "a [V, D] result")))
    return failure();
  if (failed(checkSameElementType(*this, getGrad(), "grad", getOutput(),
                                  "result")))
    return failure();
  return checkShape(
      *this, getGrad(), "grad",
      appendDim(tensorType(getIds()).getShape(),
                tensorType(getOutput()).getDimSize(1)));
}

LogicalResult LinearOp::verify() {
  RankedTensorType x = tensorType(getInput());
  if (x.getRank() < 1)
    return emitOpError() << "expects an input of rank >= 1";
  if (failed(checkRank(*this, getWeight(), 2, "an [N, K] weight")))
    return failure();
  RankedTensorType w = tensorType(getWeight());
  if (w.getDimSize(1) != x.getShape().back())
    return emitOpError() << "contraction mismatch: input has K = "
                         << x.getShape().back() << " but weight has K = "
                         << w.getDimSize(1);
  if (failed(checkSameElementType(*this, getInput(), "input", getWeight(),
                                  "weight")))
    return failure();
  if (getBias()) {
    if (failed(checkType(*this, getBias(), "bias",
                         RankedTensorType::get({w.getDimSize(0)},
                                               w.getElementType()))))
      return failure();
  }
  SmallVector<int64_t> expected(x.getShape());
  expected.back() = w.getDimSize(0);
  return checkType(*this, getOutput(), "result",
                   RankedTensorType::get(expected, x.getElementType()));
}

LogicalResult MatmulOp::verify() {
  RankedTensorType a = tensorType(getLhs()), b = tensorType(getRhs());
  if (a.getRank() < 2 || a.getRank() != b.getRank())
    return emitOpError() << "expects operands of equal rank >= 2, got " << a
                         << " and " << b;
  int64_t r = a.getRank();
  if (a.getShape().drop_back(2) != b.getShape().drop_back(2))
    return emitOpError() << "batch dimensions differ: "
                         << shapeString(a.getShape().drop_back(2)) << " vs "
                         << shapeString(b.getShape().drop_back(2));
  int64_t m = getTransposeLhs() ? a.getDimSize(r - 1) : a.getDimSize(r - 2);
  int64_t k = getTransposeLhs() ? a.getDimSize(r - 2) : a.getDimSize(r - 1);
  int64_t kb = getTransposeRhs() ? b.getDimSize(r - 1) : b.getDimSize(r - 2);
  int64_t n = getTransposeRhs() ? b.getDimSize(r - 2) : b.getDimSize(r - 1);
  if (k != kb)
    return emitOpError() << "contraction mismatch: lhs has K = " << k
                         << " but rhs has K = " << kb;
  if (failed(checkSameElementType(*this, getLhs(), "lhs", getRhs(), "rhs")))
    return failure();
  SmallVector<int64_t> expected(a.getShape().drop_back(2));
  expected.push_back(m);
  expected.push_back(n);
  return checkType(*this, getOutput(), "result",
                   RankedTensorType::get(expected, a.getElementType()));
}

/// Shared checks of the norms: weight (and bias) are [D] for an input
/// [..., D] of the same element type.
static LogicalResult verifyNormParams(Operation *op, Value input,
                                      ArrayRef<Value> params) {
  RankedTensorType x = tensorType(input);
  if (x.getRank() < 1)
    return op->emitOpError() << "expects an input of rank >= 1";
  auto expected =
      RankedTensorType::get({x.getShape().back()}, x.getElementType());
  for (Value p : params)
    if (failed(checkType(op, p, "weight and bias", expected)))
      return failure();
  return success();
}

static LogicalResult checkEps(Operation *op, double eps) {
  if (!(eps > 0))
    return op->emitOpError() << "expects eps > 0, got " << eps;
  return success();
}

/// A norm's result (or its gradient's cotangent): the input's type, or bf16
/// of the input's shape for an f32 input (mixed precision).
static LogicalResult checkNormValue(Operation *op, Value v, StringRef name,
                                    Value input) {
  RankedTensorType x = tensorType(input), t = tensorType(v);
  if (t == x || (t.getShape() == x.getShape() && x.getElementType().isF32() &&
                 t.getElementType().isBF16()))
    return success();
  return op->emitOpError() << "expects " << name << " of type " << x
                           << " (or bf16 of its shape for an f32 input), got "
                           << t;
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyNormParams(*this, getInput(), {getWeight()})) ||
      failed(checkEps(*this, getEps().convertToDouble())))
    return failure();
  return checkNormValue(*this, getOutput(), "result", getInput());
}

LogicalResult AddRmsNormOp::verify() {
  RankedTensorType lhs = tensorType(getLhs()), rhs = tensorType(getRhs());
  if (lhs.getShape() != rhs.getShape() ||
      (lhs.getElementType() != rhs.getElementType() &&
       !widensExactly(lhs.getElementType(), rhs.getElementType())))
    return emitOpError() << "expects lhs of rhs's shape, of its type or of a "
                            "narrower float type, got "
                         << lhs << " and " << rhs;
  if (failed(verifyNormParams(*this, getSum(), {getWeight()})) ||
      failed(checkEps(*this, getEps().convertToDouble())))
    return failure();
  return checkNormValue(*this, getOutput(), "result", getSum());
}

LogicalResult RmsNormGradOp::verify() {
  if (failed(verifyNormParams(*this, getInput(), {getWeight()})) ||
      failed(checkEps(*this, getEps().convertToDouble())))
    return failure();
  return checkNormValue(*this, getGrad(), "grad", getInput());
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormParams(*this, getInput(), {getWeight(), getBias()})) ||
      failed(checkEps(*this, getEps().convertToDouble())))
    return failure();
  return checkNormValue(*this, getOutput(), "result", getInput());
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifyNormParams(*this, getInput(), {getWeight()})) ||
      failed(checkEps(*this, getEps().convertToDouble())))
    return failure();
  return checkNormValue(*this, getGrad(), "grad", getInput());
}

LogicalResult RopeOp::verify() {
  if (failed(checkRank(*this, getInput(), 4, "a [B, T, H, D] input")))
    return failure();
  RankedTensorType x = tensorType(getInput());
  if (x.getDimSize(3) % 2 != 0)
    return emitOpError() << "expects an even head dimension, got "
                         << x.getDimSize(3);
  if (!(getTheta().convertToDouble() > 0))
    return emitOpError() << "expects theta > 0";
  if (failed(checkShape(*this, getPositions(), "positions",
                        x.getShape().take_front(2))))
    return failure();
  return checkType(*this, getOutput(), "result", x);
}

/// Shared checks of attention and its VJP, on the head-major view of each
/// operand (`seqMajor`: query, key, value, output). Returns the expected
/// (output, lse) types, output in its own layout.
static FailureOr<std::pair<Type, Type>>
verifyAttentionOperands(Operation *op, Value q, Value k, Value v, Value qPos,
                        Value kPos, Value qDoc, Value kDoc, Value qBlk,
                        Value kBlk, bool causal, std::optional<int64_t> window,
                        double scale, DenseBoolArrayAttr seqMajor) {
  if (seqMajor && seqMajor.size() != 4)
    return op->emitOpError()
           << "expects sequence_major to flag 4 tensors (query, key, value, "
              "output), got "
           << seqMajor.size();
  auto flag = [&](unsigned i) { return seqMajor && seqMajor[i]; };
  for (auto [i, val, name] :
       {std::tuple{0u, q, "query"}, {1u, k, "key"}, {2u, v, "value"}}) {
    std::string what =
        std::string(name) + (flag(i) ? " [B, T, H, D]" : " [B, H, T, D]");
    if (failed(checkRank(op, val, 4, what)))
      return failure();
  }
  // Head-major views: every check below reads [B, H, T, D].
  auto view = [&](Value x, unsigned i) {
    Type t = x.getType();
    return cast<RankedTensorType>(flag(i) ? swapHeadsAndSequence(t) : t);
  };
  RankedTensorType qt = view(q, 0), kt = view(k, 1);
  Type expectedValue = flag(2) ? swapHeadsAndSequence(kt) : Type(kt);
  if (failed(checkType(op, v, "value", expectedValue)))
    return failure();
  if (failed(checkSameElementType(op, q, "query", k, "key")))
    return failure();
  int64_t b = qt.getDimSize(0), hq = qt.getDimSize(1), tq = qt.getDimSize(2),
          d = qt.getDimSize(3);
  int64_t hkv = kt.getDimSize(1), tk = kt.getDimSize(2);
  if (kt.getDimSize(0) != b || kt.getDimSize(3) != d)
    return op->emitOpError()
           << "key " << k.getType()
           << " does not match query batch and head size " << q.getType();
  if (hkv == 0 || hq % hkv != 0)
    return op->emitOpError() << "query heads (" << hq
                             << ") must be a multiple of key/value heads ("
                             << hkv << ")";
  if (!(scale > 0))
    return op->emitOpError() << "expects scale > 0, got " << scale;
  if (!qPos != !kPos)
    return op->emitOpError()
           << "expects query and key positions together or neither";
  if (!qDoc != !kDoc)
    return op->emitOpError()
           << "expects query and key documents together or neither";
  if (qPos) {
    if (failed(checkShape(op, qPos, "query positions", {b, tq})) ||
        failed(checkShape(op, kPos, "key positions", {b, tk})))
      return failure();
  }
  if (qDoc) {
    if (failed(checkShape(op, qDoc, "query documents", {b, tq})) ||
        failed(checkShape(op, kDoc, "key documents", {b, tk})))
      return failure();
  }
  if (!qBlk != !kBlk)
    return op->emitOpError()
           << "expects query and key blocks together or neither";
  // Blocks widen causal visibility and the window narrows it: neither means
  // anything without causality.
  if ((qBlk || window) && !causal)
    return op->emitOpError()
           << "expects blocks and a window only with causal attention";
  if (window && *window <= 0)
    return op->emitOpError() << "expects window > 0, got " << *window;
  if (qBlk) {
    if (failed(checkShape(op, qBlk, "query blocks", {b, tq})) ||
        failed(checkShape(op, kBlk, "key blocks", {b, tk})))
      return failure();
  }
  Type lseElement = qt.getElementType().isF64()
                        ? Type(Float64Type::get(op->getContext()))
                        : Type(Float32Type::get(op->getContext()));
  Type output = flag(3) ? swapHeadsAndSequence(qt) : Type(qt);
  return std::pair<Type, Type>{output,
                               RankedTensorType::get({b, hq, tq}, lseElement)};
}

LogicalResult AttentionOp::verify() {
  auto expected = verifyAttentionOperands(
      *this, getQuery(), getKey(), getValue(), getQueryPositions(),
      getKeyPositions(), getQueryDocuments(), getKeyDocuments(),
      getQueryBlocks(), getKeyBlocks(), getCausal(), getWindow(),
      getScale().convertToDouble(), getSequenceMajorAttr());
  if (failed(expected))
    return failure();
  if (failed(checkType(*this, getOutput(), "output", expected->first)))
    return failure();
  return checkType(*this, getLse(), "lse", expected->second);
}

LogicalResult AttentionGradOp::verify() {
  auto expected = verifyAttentionOperands(
      *this, getQuery(), getKey(), getValue(), getQueryPositions(),
      getKeyPositions(), getQueryDocuments(), getKeyDocuments(),
      getQueryBlocks(), getKeyBlocks(), getCausal(), getWindow(),
      getScale().convertToDouble(), getSequenceMajorAttr());
  if (failed(expected))
    return failure();
  if (failed(checkType(*this, getGrad(), "grad", expected->first)) ||
      failed(checkType(*this, getOutput(), "output", expected->first)) ||
      failed(checkType(*this, getLse(), "lse", expected->second)) ||
      failed(checkType(*this, getQueryGrad(), "query grad",
                       getQuery().getType())) ||
      failed(checkType(*this, getKeyGrad(), "key grad", getKey().getType())))
    return failure();
  return checkType(*this, getValueGrad(), "value grad", getValue().getType());
}

LogicalResult SoftmaxOp::verify() {
  return checkDim(*this, getDim(), tensorType(getInput()).getRank());
}

LogicalResult SoftmaxGradOp::verify() {
  return checkDim(*this, getDim(), tensorType(getGrad()).getRank());
}

/// Labels are logits' shape without the class dimension.
static LogicalResult verifyLabels(Operation *op, Value logits, Value labels) {
  RankedTensorType l = tensorType(logits);
  if (l.getRank() < 1)
    return op->emitOpError() << "expects logits of rank >= 1";
  return checkShape(op, labels, "labels", l.getShape().drop_back());
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyLabels(*this, getLogits(), getLabels())))
    return failure();
  if (tensorType(getSum()).getRank() != 0 ||
      tensorType(getCount()).getRank() != 0)
    return emitOpError() << "expects scalar (rank-0) sum and count";
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyLabels(*this, getLogits(), getLabels())))
    return failure();
  if (tensorType(getGrad()).getRank() != 0)
    return emitOpError() << "expects a scalar (rank-0) grad of the sum";
  return checkType(*this, getOutput(), "result", getLogits().getType());
}

/// The output shape of a 2-D convolution, or failure with a diagnostic.
static FailureOr<SmallVector<int64_t>>
conv2dOutputShape(Operation *op, Value input, Value weight,
                  ArrayRef<int64_t> stride, ArrayRef<int64_t> padding) {
  if (failed(checkRank(op, input, 4, "an NCHW input")) ||
      failed(checkRank(op, weight, 4, "an OIHW weight")))
    return failure();
  if (stride.size() != 2 || padding.size() != 2)
    return op->emitOpError() << "expects 2 strides and 2 paddings";
  if (stride[0] < 1 || stride[1] < 1 || padding[0] < 0 || padding[1] < 0)
    return op->emitOpError()
           << "expects positive strides and non-negative padding";
  RankedTensorType x = tensorType(input), w = tensorType(weight);
  if (x.getDimSize(1) != w.getDimSize(1))
    return op->emitOpError() << "input has " << x.getDimSize(1)
                             << " channels but weight expects "
                             << w.getDimSize(1);
  if (failed(checkSameElementType(op, input, "input", weight, "weight")))
    return failure();
  SmallVector<int64_t> out{x.getDimSize(0), w.getDimSize(0)};
  for (int i = 0; i < 2; ++i) {
    int64_t span = x.getDimSize(2 + i) + 2 * padding[i] - w.getDimSize(2 + i);
    if (span < 0)
      return op->emitOpError() << "kernel is larger than the padded input";
    out.push_back(span / stride[i] + 1);
  }
  return out;
}

LogicalResult Conv2dOp::verify() {
  auto shape = conv2dOutputShape(*this, getInput(), getWeight(), getStride(),
                                 getPadding());
  if (failed(shape))
    return failure();
  RankedTensorType w = tensorType(getWeight());
  if (getBias() &&
      failed(checkType(*this, getBias(), "bias",
                       RankedTensorType::get({w.getDimSize(0)},
                                             w.getElementType()))))
    return failure();
  return checkType(*this, getOutput(), "result",
                   RankedTensorType::get(*shape, w.getElementType()));
}

LogicalResult Conv2dGradOp::verify() {
  auto shape = conv2dOutputShape(*this, getInput(), getWeight(), getStride(),
                                 getPadding());
  if (failed(shape))
    return failure();
  if (failed(checkType(*this, getGrad(), "grad",
                       RankedTensorType::get(
                           *shape, tensorType(getWeight()).getElementType()))))
    return failure();
  if (failed(checkType(*this, getInputGrad(), "input grad",
                       getInput().getType())))
    return failure();
  return checkType(*this, getWeightGrad(), "weight grad",
                   getWeight().getType());
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

static LogicalResult checkNonNegative(Operation *op, StringRef name,
                                      double value) {
  if (!(value >= 0))
    return op->emitOpError() << "expects " << name << " >= 0, got " << value;
  return success();
}

/// The hyperparameters of one AdamW update, shared by the single and the
/// list op: betas in [0, 1), a positive eps, lr and weight decay >= 0.
static LogicalResult checkAdamWHyperparameters(Operation *op, APFloat beta1,
                                               APFloat beta2, APFloat eps,
                                               APFloat lr, APFloat decay) {
  for (auto [name, beta] :
       {std::pair{"beta1", beta1}, std::pair{"beta2", beta2}}) {
    double b = beta.convertToDouble();
    if (!(b >= 0 && b < 1))
      return op->emitOpError() << "expects " << name << " in [0, 1), got " << b;
  }
  if (failed(checkEps(op, eps.convertToDouble())) ||
      failed(checkNonNegative(op, "lr", lr.convertToDouble())))
    return failure();
  return checkNonNegative(op, "weight_decay", decay.convertToDouble());
}

/// grad_scale, when present, is a scalar of the parameter's element type.
static LogicalResult checkGradScale(Operation *op, Value scale, Value param) {
  if (!scale)
    return success();
  Type elem = tensorType(param).getElementType();
  return checkType(op, scale, "grad_scale", RankedTensorType::get({}, elem));
}

/// An optimizer's grad: the parameter's shape, in its element type or in
/// one that widens exactly into it.
static LogicalResult checkOptimizerGrad(Operation *op, Value grad,
                                        Value param) {
  RankedTensorType g = tensorType(grad), p = tensorType(param);
  if (g.getShape() == p.getShape() &&
      widensInto(g.getElementType(), p.getElementType()))
    return success();
  return op->emitOpError() << "expects grad of the param's type " << p
                           << " (or in bf16 for an f32 param), got " << g;
}

LogicalResult AdamWUpdateOp::verify() {
  if (tensorType(getStep()).getRank() != 0)
    return emitOpError() << "expects a scalar (rank-0) step";
  if (failed(checkOptimizerGrad(*this, getGrad(), getParam())) ||
      failed(checkGradScale(*this, getGradScale(), getParam())))
    return failure();
  return checkAdamWHyperparameters(*this, getBeta1(), getBeta2(), getEps(),
                                   getLr(), getWeightDecay());
}

LogicalResult AdamWUpdateListOp::verify() {
  size_t n = getParams().size();
  if (n == 0)
    return emitOpError() << "expects at least one param";
  if (getGrads().size() != n || getExpAvgs().size() != n ||
      getExpAvgSqs().size() != n)
    return emitOpError() << "expects as many grads, exp_avgs and exp_avg_sqs "
                            "as params, got "
                         << n << " params, " << getGrads().size() << " grads, "
                         << getExpAvgs().size() << " exp_avgs and "
                         << getExpAvgSqs().size() << " exp_avg_sqs";
  if (tensorType(getStep()).getRank() != 0)
    return emitOpError() << "expects a scalar (rank-0) step";
  for (auto [param, grad] : llvm::zip(getParams(), getGrads()))
    if (failed(checkOptimizerGrad(*this, grad, param)) ||
        failed(checkGradScale(*this, getGradScale(), param)))
      return failure();
  return checkAdamWHyperparameters(*this, getBeta1(), getBeta2(), getEps(),
                                   getLr(), getWeightDecay());
}

LogicalResult ConvertListOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "expects at least one input";
  if (getOutputs().size() != getInputs().size())
    return emitOpError() << "expects a result per input, got "
                         << getInputs().size() << " inputs and "
                         << getOutputs().size() << " results";
  Type to = tensorType(getOutputs().front()).getElementType();
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getInputs(), getOutputs()))) {
    auto [in, out] = pair;
    if (tensorType(out).getElementType() != to)
      return emitOpError() << "expects every result in one element type, "
                              "got result #"
                           << i << " of type " << out.getType() << " after "
                           << to;
    if (tensorType(out).getShape() != tensorType(in).getShape())
      return emitOpError() << "expects result #" << i << " of input #" << i
                           << "'s shape, got " << out.getType() << " for "
                           << in.getType();
  }
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  if (failed(checkOptimizerGrad(*this, getGrad(), getParam())) ||
      failed(checkGradScale(*this, getGradScale(), getParam())) ||
      failed(checkNonNegative(*this, "lr", getLr().convertToDouble())))
    return failure();
  return checkNonNegative(*this, "weight_decay",
                          getWeightDecay().convertToDouble());
}

//===----------------------------------------------------------------------===//
// Multimodal ops
//===----------------------------------------------------------------------===//

LogicalResult VisionBankIndicesOp::verify() {
  return checkRank(*this, getTokens(), 2, "[B, T] tokens");
}

/// embeds/grad [B, T, D] with indices [B, T].
static LogicalResult verifyTokenRows(Operation *op, Value rows,
                                     StringRef rowsName, Value indices) {
  if (failed(checkRank(op, rows, 3,
                       (Twine(rowsName) + " [B, T, D]").str())))
    return failure();
  return checkShape(op, indices, "indices",
                    tensorType(rows).getShape().take_front(2));
}

LogicalResult VisionGatherOp::verify() {
  if (failed(verifyTokenRows(*this, getEmbeds(), "embeds", getIndices())) ||
      failed(checkRank(*this, getBank(), 2, "an [N, D] bank")))
    return failure();
  RankedTensorType e = tensorType(getEmbeds()), b = tensorType(getBank());
  if (b.getDimSize(1) != e.getDimSize(2))
    return emitOpError() << "bank rows have width " << b.getDimSize(1)
                         << " but embeddings have width " << e.getDimSize(2);
  if (failed(checkSameElementType(*this, getEmbeds(), "embeds", getBank(),
                                  "bank")))
    return failure();
  return checkType(*this, getOutput(), "result", e);
}

LogicalResult VisionGatherGradOp::verify() {
  if (failed(verifyTokenRows(*this, getGrad(), "grad", getIndices())) ||
      failed(checkRank(*this, getBankGrad(), 2, "an [N, D] bank grad")))
    return failure();
  RankedTensorType g = tensorType(getGrad()), b = tensorType(getBankGrad());
  if (b.getDimSize(1) != g.getDimSize(2))
    return emitOpError() << "bank grad rows have width " << b.getDimSize(1)
                         << " but grad has width " << g.getDimSize(2);
  if (failed(checkSameElementType(*this, getGrad(), "grad", getBankGrad(),
                                  "bank grad")))
    return failure();
  return checkType(*this, getEmbedsGrad(), "embeds grad", g);
}

//===----------------------------------------------------------------------===//
// Context-parallel ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyCpPermute(Operation *op, Value input, int64_t dim,
                                     int64_t cp, Balancer balancer) {
  RankedTensorType t = tensorType(input);
  if (failed(checkDim(op, dim, t.getRank())))
    return failure();
  if (cp < 1)
    return op->emitOpError() << "expects cp >= 1, got " << cp;
  int64_t chunks = balancer == Balancer::HeadTail ? 2 * cp : cp;
  if (t.getDimSize(dim) % chunks != 0)
    return op->emitOpError()
           << "sequence length " << t.getDimSize(dim) << " (dimension " << dim
           << ") is not divisible by " << chunks << " (the "
           << stringifyBalancer(balancer) << " balancer with cp = " << cp
           << " needs " << chunks << " equal chunks)";
  return success();
}

LogicalResult CpPermuteOp::verify() {
  return verifyCpPermute(*this, getInput(), getDim(), getCp(), getBalancer());
}

LogicalResult CpUnpermuteOp::verify() {
  return verifyCpPermute(*this, getInput(), getDim(), getCp(), getBalancer());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Local checks of collectives over `axes` that act along `dim` and keep
/// the element type (all_gather, reduce_scatter, local_shard).
static LogicalResult verifyAlongDim(Operation *op, ArrayAttr axes, Value input,
                                    Value output, int64_t dim) {
  if (failed(verifyAxisList(op, axes)))
    return failure();
  if (failed(checkDim(op, dim, tensorType(input).getRank())))
    return failure();
  return checkSameElementType(op, input, "input", output, "result");
}

/// The result of reduce_scatter and local_shard: `dim` divided by the
/// group size, which must divide it.
static LogicalResult verifyShrinkingResult(Operation *op,
                                           FlatSymbolRefAttr meshName,
                                           ArrayAttr axes, Value input,
                                           Value output, int64_t dim,
                                           SymbolTableCollection &symbols) {
  FailureOr<MeshAttr> mesh = lookupMesh(op, meshName, symbols);
  if (failed(mesh))
    return failure();
  FailureOr<int64_t> n = axesProduct(op, *mesh, axisNames(axes));
  if (failed(n))
    return failure();
  SmallVector<int64_t> expected(tensorType(input).getShape());
  if (expected[dim] % *n != 0)
    return op->emitOpError() << "dimension " << dim << " of size "
                             << expected[dim]
                             << " is not divisible by the group size " << *n;
  expected[dim] /= *n;
  return checkShape(op, output, "result", expected);
}

LogicalResult AllGatherOp::verify() {
  return verifyAlongDim(*this, getAxes(), getInput(), getOutput(), getDim());
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<MeshAttr> mesh = lookupMesh(*this, getMeshAttr(), symbols);
  if (failed(mesh))
    return failure();
  FailureOr<int64_t> n = axesProduct(*this, *mesh, axisNames(getAxes()));
  if (failed(n))
    return failure();
  SmallVector<int64_t> expected(tensorType(getInput()).getShape());
  expected[getDim()] *= *n;
  return checkShape(*this, getOutput(), "result", expected);
}

LogicalResult ReduceScatterOp::verify() {
  return verifyAlongDim(*this, getAxes(), getInput(), getOutput(), getDim());
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyShrinkingResult(*this, getMeshAttr(), getAxes(), getInput(),
                               getOutput(), getDim(), symbols);
}

LogicalResult LocalShardOp::verify() {
  return verifyAlongDim(*this, getAxes(), getInput(), getOutput(), getDim());
}

LogicalResult LocalShardOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyShrinkingResult(*this, getMeshAttr(), getAxes(), getInput(),
                               getOutput(), getDim(), symbols);
}

LogicalResult AllReduceOp::verify() {
  return verifyAxisList(*this, getAxes());
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<MeshAttr> mesh = lookupMesh(*this, getMeshAttr(), symbols);
  if (failed(mesh))
    return failure();
  return axesProduct(*this, *mesh, axisNames(getAxes()));
}

LogicalResult PvaryOp::verify() { return verifyAxisList(*this, getAxes()); }

LogicalResult PvaryOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<MeshAttr> mesh = lookupMesh(*this, getMeshAttr(), symbols);
  if (failed(mesh))
    return failure();
  return axesProduct(*this, *mesh, axisNames(getAxes()));
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyAxisList(*this, getAxes())))
    return failure();
  int64_t rank = tensorType(getInput()).getRank();
  if (failed(checkDim(*this, getSplitDim(), rank, "split_dim")) ||
      failed(checkDim(*this, getConcatDim(), rank, "concat_dim")))
    return failure();
  return checkSameElementType(*this, getInput(), "input", getOutput(),
                              "result");
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<MeshAttr> mesh = lookupMesh(*this, getMeshAttr(), symbols);
  if (failed(mesh))
    return failure();
  FailureOr<int64_t> n = axesProduct(*this, *mesh, axisNames(getAxes()));
  if (failed(n))
    return failure();
  SmallVector<int64_t> expected(tensorType(getInput()).getShape());
  if (expected[getSplitDim()] % *n != 0)
    return emitOpError() << "split dimension " << getSplitDim() << " of size "
                         << expected[getSplitDim()]
                         << " is not divisible by the group size " << *n;
  expected[getSplitDim()] /= *n;
  expected[getConcatDim()] *= *n;
  return checkShape(*this, getOutput(), "result", expected);
}

/// Checks that `axis` exists in the mesh and `peer` is a coordinate on it.
static LogicalResult verifyPeer(Operation *op, FlatSymbolRefAttr meshName,
                                StringRef axis, ArrayRef<int64_t> peers,
                                SymbolTableCollection &symbols) {
  FailureOr<MeshAttr> mesh = lookupMesh(op, meshName, symbols);
  if (failed(mesh))
    return failure();
  FailureOr<int64_t> size = axesProduct(op, *mesh, {axis});
  if (failed(size))
    return failure();
  for (int64_t peer : peers)
    if (peer < 0 || peer >= *size)
      return op->emitOpError() << "peer " << peer << " is out of range for "
                               << "axis \"" << axis << "\" of size " << *size;
  return success();
}

LogicalResult SendOp::verify() { return success(); }
LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, getMeshAttr(), getAxis(), {int64_t(getPeer())},
                    symbols);
}

LogicalResult RecvOp::verify() { return success(); }
LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, getMeshAttr(), getAxis(), {int64_t(getPeer())},
                    symbols);
}

LogicalResult PpermuteOp::verify() {
  ArrayRef<int64_t> pairs = getPairs();
  if (pairs.size() % 2 != 0)
    return emitOpError() << "expects [source, target] pairs, got an odd "
                            "number of entries ("
                         << pairs.size() << ")";
  llvm::SmallSet<int64_t, 8> sources, targets;
  for (size_t i = 0; i < pairs.size(); i += 2) {
    if (!sources.insert(pairs[i]).second)
      return emitOpError() << "source " << pairs[i] << " appears twice";
    if (!targets.insert(pairs[i + 1]).second)
      return emitOpError() << "target " << pairs[i + 1] << " appears twice";
  }
  return success();
}

LogicalResult PpermuteOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, getMeshAttr(), getAxis(), getPairs(), symbols);
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

static bool isFloatTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<FloatType>(tensor.getElementType()) &&
         !tensor.getElementType().isF16();
}

bool FusionOp::isFusible(Operation *op) {
  // Conversions may read integers (positions made floats); everything else
  // computes on bf16, f32 or f64 values.
  if (auto convert = dyn_cast<ConvertOp>(op)) {
    Type in = tensorType(convert.getInput()).getElementType();
    return isFloatTensor(convert.getOutput().getType()) &&
           (isFloatTensor(convert.getInput().getType()) ||
            in.isInteger(32) || in.isInteger(64));
  }
  if (!isa<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, ErfOp, SigmoidOp,
           SiluOp, SinOp, CosOp, GeluOp, AddOp, SubOp, MulOp, DivOp, MaxOp,
           MinOp, PowOp, ReshapeOp, TransposeOp, BroadcastInDimOp, SliceOp,
           ConcatOp, PadOp, ConstantOp>(op))
    return false;
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense || !dense.isSplat())
      return false;
  }
  return llvm::all_of(op->getOperandTypes(), isFloatTensor) &&
         llvm::all_of(op->getResultTypes(), isFloatTensor);
}

LogicalResult FusionOp::verify() {
  if (getResults().empty())
    return emitOpError() << "expects at least one result";
  ArrayRef<int64_t> shape = tensorType(getResults().front()).getShape();
  for (Value r : getResults())
    if (tensorType(r).getShape() != shape)
      return emitOpError() << "expects results of one shape, got "
                           << shapeString(shape) << " and "
                           << shapeString(tensorType(r).getShape());
  return success();
}

LogicalResult FusionOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError() << "expects the body's arguments to have the "
                            "inputs' types";
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError() << "expects the body to end with glimmer.yield";
  if (yield.getValues().getTypes() != getResults().getTypes())
    return emitOpError() << "expects glimmer.yield's values to have the "
                            "results' types";
  for (Operation &op : body.without_terminator())
    if (!isFusible(&op))
      return op.emitOpError() << "cannot be part of a glimmer.fusion body";
  return success();
}
