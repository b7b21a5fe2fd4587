//===- GlimmerOps.cpp - Glimmer operations --------------------------------===//
//
// Verifiers check what a kernel or the partitioner will rely on: ranks,
// shapes, element types, attribute ranges, mesh axes and divisibility. Each
// message says what was expected and what was found.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "glimmer/Dialect/Glimmer/IR/GlimmerShapes.h"

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

static Type typeOrNull(Value v) { return v ? v.getType() : Type(); }

using shapes::str;

/// Reports a violated rule of `op` through its emitOpError.
static auto opErrors(Operation *op) {
  return [op] { return op->emitOpError(); };
}

/// Reports a violated rule while inferring `OpTy`'s result types, worded
/// as its verifier words it.
template <typename OpTy>
static auto inferErrors(std::optional<Location> loc) {
  return [loc] { return emitOpErrorAt(loc, OpTy::getOperationName()); };
}

/// Appends `type` to `types`, or fails.
static LogicalResult pushType(FailureOr<RankedTensorType> type,
                              SmallVectorImpl<Type> &types) {
  if (failed(type))
    return failure();
  types.push_back(*type);
  return success();
}

static LogicalResult checkDim(Operation *op, int64_t dim, int64_t rank,
                              StringRef what = "dim") {
  return shapes::checkDim(opErrors(op), dim, rank, what);
}

static LogicalResult checkRank(Operation *op, Value v, int64_t rank,
                               StringRef name) {
  return shapes::checkRank(opErrors(op), v.getType(), rank, name);
}

static LogicalResult checkSameElementType(Operation *op, Value a, StringRef an,
                                          Value b, StringRef bn) {
  return shapes::checkSameElementType(opErrors(op), a.getType(), an,
                                      b.getType(), bn);
}

static LogicalResult checkShape(Operation *op, Value v, StringRef name,
                                ArrayRef<int64_t> expected) {
  return shapes::checkShape(opErrors(op), v.getType(), name, expected);
}

static LogicalResult checkType(Operation *op, Value v, StringRef name,
                               Type expected) {
  return shapes::checkType(opErrors(op), v.getType(), name, expected);
}

/// Checks `result` against the inferred `expected`: first its element type
/// against `input`'s, then its shape.
static LogicalResult checkInferredResult(Operation *op, Value input,
                                         StringRef inputName, Value result,
                                         FailureOr<RankedTensorType> expected) {
  if (failed(expected) ||
      failed(checkSameElementType(op, input, inputName, result, "result")))
    return failure();
  return checkShape(op, result, "result", expected->getShape());
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
  return checkInferredResult(*this, getInput(), "input", getOutput(),
                             inferReduceType(opErrors(*this),
                                             tensorType(getInput()), getDims(),
                                             getKeepDims()));
}

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return pushType(inferReduceType(inferErrors<ReduceOp>(loc),
                                  tensorType(adaptor.getInput()),
                                  adaptor.getDims(), adaptor.getKeepDims()),
                  types);
}

LogicalResult CumsumOp::verify() {
  return checkDim(*this, getDim(), tensorType(getInput()).getRank());
}

LogicalResult ArgsortOp::verify() {
  FailureOr<RankedTensorType> expected = inferArgsortType(
      opErrors(*this), tensorType(getInput()), getDim());
  if (failed(expected))
    return failure();
  return checkType(*this, getIndices(), "result", *expected);
}

LogicalResult ArgsortOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return pushType(inferArgsortType(inferErrors<ArgsortOp>(loc),
                                   tensorType(adaptor.getInput()),
                                   adaptor.getDim()),
                  types);
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
                         << " elements " << str(in.getShape()) << " into "
                         << out.getNumElements() << " elements "
                         << str(out.getShape());
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getOutput().getType())
    return getInput();
  return {};
}

LogicalResult TransposeOp::verify() {
  return checkInferredResult(*this, getInput(), "input", getOutput(),
                             inferTransposeType(opErrors(*this),
                                                tensorType(getInput()),
                                                getPermutation()));
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return pushType(inferTransposeType(inferErrors<TransposeOp>(loc),
                                     tensorType(adaptor.getInput()),
                                     adaptor.getPermutation()),
                  types);
}

LogicalResult BroadcastInDimOp::verify() {
  RankedTensorType in = tensorType(getInput()), out = tensorType(getOutput());
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != in.getRank())
    return emitOpError() << "expects one result dimension per input dimension ("
                         << in.getRank() << "), got " << str(dims);
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (failed(checkDim(*this, d, out.getRank(), "broadcast dimension")))
      return failure();
    if (i > 0 && d <= dims[i - 1])
      return emitOpError() << "expects strictly increasing dims, got "
                           << str(dims);
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
  return checkInferredResult(*this, getInput(), "input", getOutput(),
                             inferSliceType(opErrors(*this),
                                            tensorType(getInput()), getStart(),
                                            getLimit(), getStride()));
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return pushType(inferSliceType(inferErrors<SliceOp>(loc),
                                 tensorType(adaptor.getInput()),
                                 adaptor.getStart(), adaptor.getLimit(),
                                 adaptor.getStride()),
                  types);
}

LogicalResult MicrobatchSliceOp::verify() {
  return checkInferredResult(
      *this, getInput(), "input", getOutput(),
      inferMicrobatchSliceType(opErrors(*this), tensorType(getInput()),
                               tensorType(getIndex()), getPieces(), getDim()));
}

LogicalResult
MicrobatchSliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  return pushType(inferMicrobatchSliceType(inferErrors<MicrobatchSliceOp>(loc),
                                           tensorType(adaptor.getInput()),
                                           tensorType(adaptor.getIndex()),
                                           adaptor.getPieces(),
                                           adaptor.getDim()),
                  types);
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
  FailureOr<RankedTensorType> expected =
      inferConcatType(opErrors(*this), getInputs().getTypes(), getDim());
  if (failed(expected))
    return failure();
  return checkInferredResult(*this, getInputs().front(), "inputs", getOutput(),
                             expected);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return pushType(inferConcatType(inferErrors<ConcatOp>(loc),
                                  adaptor.getInputs().getTypes(),
                                  adaptor.getDim()),
                  types);
}

LogicalResult PadOp::verify() {
  return checkInferredResult(*this, getInput(), "input", getOutput(),
                             inferPadType(opErrors(*this),
                                          tensorType(getInput()), getLow(),
                                          getHigh()));
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  return pushType(inferPadType(inferErrors<PadOp>(loc),
                               tensorType(adaptor.getInput()), adaptor.getLow(),
                               adaptor.getHigh()),
                  types);
}

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  return checkInferredResult(*this, getTable(), "table", getOutput(),
                             inferEmbeddingType(opErrors(*this),
                                                tensorType(getTable()),
                                                tensorType(getIds())));
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return pushType(inferEmbeddingType(inferErrors<EmbeddingOp>(loc),
                                     tensorType(adaptor.getTable()),
                                     tensorType(adaptor.getIds())),
                  types);
}

/// ids.shape + [d]
static SmallVector<int64_t> appendDim(ArrayRef<int64_t> shape, int64_t d) {
  SmallVector<int64_t> out(shape);
  out.push_back(d);
  return out;
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
  FailureOr<RankedTensorType> expected =
      inferLinearType(opErrors(*this), tensorType(getInput()),
                      tensorType(getWeight()), typeOrNull(getBias()));
  if (failed(expected))
    return failure();
  return checkType(*this, getOutput(), "result", *expected);
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return pushType(inferLinearType(inferErrors<LinearOp>(loc),
                                  tensorType(adaptor.getInput()),
                                  tensorType(adaptor.getWeight()),
                                  typeOrNull(adaptor.getBias())),
                  types);
}

LogicalResult MatmulOp::verify() {
  FailureOr<RankedTensorType> expected = inferMatmulType(
      opErrors(*this), tensorType(getLhs()), tensorType(getRhs()),
      getTransposeLhs(), getTransposeRhs());
  if (failed(expected))
    return failure();
  return checkType(*this, getOutput(), "result", *expected);
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return pushType(
      inferMatmulType(inferErrors<MatmulOp>(loc), tensorType(adaptor.getLhs()),
                      tensorType(adaptor.getRhs()), adaptor.getTransposeLhs(),
                      adaptor.getTransposeRhs()),
      types);
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

/// The operands of attention or attention_grad (an op or its adaptor) that
/// their results follow from.
template <typename OpOrAdaptor>
static AttentionOperandTypes attentionOperandTypes(OpOrAdaptor op) {
  return {op.getQuery().getType(),
          op.getKey().getType(),
          op.getValue().getType(),
          typeOrNull(op.getQueryPositions()),
          typeOrNull(op.getKeyPositions()),
          typeOrNull(op.getQueryDocuments()),
          typeOrNull(op.getKeyDocuments()),
          typeOrNull(op.getQueryBlocks()),
          typeOrNull(op.getKeyBlocks()),
          op.getCausal(),
          op.getWindow(),
          op.getScale().convertToDouble(),
          op.getSequenceMajorAttr()};
}

LogicalResult AttentionOp::verify() {
  auto expected =
      inferAttentionTypes(opErrors(*this), attentionOperandTypes(*this));
  if (failed(expected))
    return failure();
  if (failed(checkType(*this, getOutput(), "output", expected->output)))
    return failure();
  return checkType(*this, getLse(), "lse", expected->lse);
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto inferred = inferAttentionTypes(inferErrors<AttentionOp>(loc),
                                      attentionOperandTypes(adaptor));
  if (failed(inferred))
    return failure();
  types.push_back(inferred->output);
  types.push_back(inferred->lse);
  return success();
}

LogicalResult AttentionGradOp::verify() {
  auto expected =
      inferAttentionTypes(opErrors(*this), attentionOperandTypes(*this));
  if (failed(expected))
    return failure();
  if (failed(checkType(*this, getGrad(), "grad", expected->output)) ||
      failed(checkType(*this, getOutput(), "output", expected->output)) ||
      failed(checkType(*this, getLse(), "lse", expected->lse)) ||
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

LogicalResult Conv2dOp::verify() {
  FailureOr<RankedTensorType> expected = inferConv2dType(
      opErrors(*this), tensorType(getInput()), tensorType(getWeight()),
      typeOrNull(getBias()), getStride(), getPadding());
  if (failed(expected))
    return failure();
  return checkType(*this, getOutput(), "result", *expected);
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return pushType(inferConv2dType(inferErrors<Conv2dOp>(loc),
                                  tensorType(adaptor.getInput()),
                                  tensorType(adaptor.getWeight()),
                                  typeOrNull(adaptor.getBias()),
                                  adaptor.getStride(), adaptor.getPadding()),
                  types);
}

LogicalResult Conv2dGradOp::verify() {
  FailureOr<RankedTensorType> output = inferConv2dType(
      opErrors(*this), tensorType(getInput()), tensorType(getWeight()), Type(),
      getStride(), getPadding());
  if (failed(output))
    return failure();
  if (failed(checkType(*this, getGrad(), "grad", *output)))
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
      return emitOpError() << "expects results of one shape, got " << str(shape)
                           << " and " << str(tensorType(r).getShape());
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
