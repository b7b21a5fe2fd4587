//===- GlimmerShapes.cpp - Shape rules of glimmer ops ---------------------===//
//
// Each message says what was expected and what was found; the verifiers'
// tests check their wording.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerShapes.h"

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::shapes;

InFlightDiagnostic glimmer::emitOpErrorAt(std::optional<Location> loc,
                                          StringRef opName) {
  if (!loc)
    return InFlightDiagnostic();
  InFlightDiagnostic diag = emitError(*loc);
  diag << "'" << opName << "' op ";
  return diag;
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

std::string shapes::str(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

LogicalResult shapes::checkDim(EmitErrorFn emitError, int64_t dim, int64_t rank,
                               StringRef what) {
  if (dim < 0 || dim >= rank)
    return emitError() << what << " " << dim << " is out of range for rank "
                       << rank;
  return success();
}

LogicalResult shapes::checkRank(EmitErrorFn emitError, Type type, int64_t rank,
                                StringRef name) {
  if (cast<RankedTensorType>(type).getRank() != rank)
    return emitError() << "expects " << name << " of rank " << rank << ", got "
                       << type;
  return success();
}

LogicalResult shapes::checkSameElementType(EmitErrorFn emitError, Type a,
                                           StringRef an, Type b, StringRef bn) {
  Type ae = cast<RankedTensorType>(a).getElementType(),
       be = cast<RankedTensorType>(b).getElementType();
  if (ae != be)
    return emitError() << "expects " << an << " and " << bn
                       << " to have the same element type, got " << ae
                       << " and " << be;
  return success();
}

LogicalResult shapes::checkShape(EmitErrorFn emitError, Type type,
                                 StringRef name, ArrayRef<int64_t> expected) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(type).getShape();
  if (shape != expected)
    return emitError() << "expects " << name << " of shape " << str(expected)
                       << ", got " << str(shape);
  return success();
}

LogicalResult shapes::checkType(EmitErrorFn emitError, Type type,
                                StringRef name, Type expected) {
  if (type != expected)
    return emitError() << "expects " << name << " of type " << expected
                       << ", got " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> glimmer::inferReduceType(EmitErrorFn emitError,
                                                     RankedTensorType input,
                                                     ArrayRef<int64_t> dims,
                                                     bool keepDims) {
  if (dims.empty())
    return emitError() << "expects at least one dimension to reduce";
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (failed(checkDim(emitError, d, input.getRank())))
      return failure();
    if (i > 0 && d <= dims[i - 1])
      return emitError() << "expects dims sorted and unique, got " << str(dims);
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (!llvm::is_contained(dims, d))
      shape.push_back(input.getDimSize(d));
    else if (keepDims)
      shape.push_back(1);
  }
  return input.clone(shape);
}

FailureOr<RankedTensorType> glimmer::inferArgsortType(EmitErrorFn emitError,
                                                      RankedTensorType input,
                                                      int64_t dim) {
  if (failed(checkDim(emitError, dim, input.getRank())))
    return failure();
  return RankedTensorType::get(input.getShape(),
                               IntegerType::get(input.getContext(), 64));
}

FailureOr<RankedTensorType>
glimmer::inferTransposeType(EmitErrorFn emitError, RankedTensorType input,
                            ArrayRef<int64_t> perm) {
  if (static_cast<int64_t>(perm.size()) != input.getRank())
    return emitError() << "expects a permutation of " << input.getRank()
                       << " dimensions, got " << str(perm);
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= input.getRank() || seen[p])
      return emitError() << "permutation " << str(perm)
                         << " is not a permutation of [0, " << input.getRank()
                         << ")";
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  return input.clone(shape);
}

FailureOr<RankedTensorType> glimmer::inferSliceType(EmitErrorFn emitError,
                                                    RankedTensorType input,
                                                    ArrayRef<int64_t> start,
                                                    ArrayRef<int64_t> limit,
                                                    ArrayRef<int64_t> stride) {
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(stride.size()) != rank)
    return emitError() << "expects start, limit and stride of length " << rank;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (stride[d] < 1)
      return emitError() << "stride of dimension " << d
                         << " must be positive, got " << stride[d];
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > input.getDimSize(d))
      return emitError() << "slice [" << start[d] << ", " << limit[d]
                         << ") of dimension " << d
                         << " is out of bounds for size "
                         << input.getDimSize(d);
    shape.push_back((limit[d] - start[d] + stride[d] - 1) / stride[d]);
  }
  return input.clone(shape);
}

FailureOr<RankedTensorType>
glimmer::inferMicrobatchSliceType(EmitErrorFn emitError, RankedTensorType input,
                                  RankedTensorType index, int64_t pieces,
                                  int64_t dim) {
  if (index.getRank() != 0)
    return emitError() << "expects a scalar micro-batch index";
  if (dim < 0 || dim >= input.getRank())
    return emitError() << "dimension " << dim << " is out of range for "
                       << input;
  if (pieces < 1 || input.getDimSize(dim) % pieces != 0)
    return emitError() << "cannot cut dimension " << dim << " of size "
                       << input.getDimSize(dim) << " into " << pieces
                       << " equal micro-batches";
  SmallVector<int64_t> shape(input.getShape());
  shape[dim] /= pieces;
  return input.clone(shape);
}

FailureOr<RankedTensorType>
glimmer::inferConcatType(EmitErrorFn emitError, TypeRange inputs, int64_t dim) {
  if (inputs.empty())
    return emitError() << "expects at least one input";
  auto first = cast<RankedTensorType>(inputs.front());
  if (failed(checkDim(emitError, dim, first.getRank())))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (auto [i, type] : llvm::enumerate(inputs)) {
    auto t = cast<RankedTensorType>(type);
    if (t.getElementType() != first.getElementType() ||
        t.getRank() != first.getRank())
      return emitError() << "input #" << i << " of type " << t
                         << " does not match input #0 of type " << first;
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != dim && t.getDimSize(d) != first.getDimSize(d))
        return emitError() << "input #" << i << " differs from input #0 in "
                           << "dimension " << d << " (" << t.getDimSize(d)
                           << " vs " << first.getDimSize(d) << ")";
    shape[dim] += t.getDimSize(dim);
  }
  return first.clone(shape);
}

FailureOr<RankedTensorType> glimmer::inferPadType(EmitErrorFn emitError,
                                                  RankedTensorType input,
                                                  ArrayRef<int64_t> low,
                                                  ArrayRef<int64_t> high) {
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(low.size()) != rank ||
      static_cast<int64_t>(high.size()) != rank)
    return emitError() << "expects low and high padding of length " << rank;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (low[d] < 0 || high[d] < 0)
      return emitError() << "padding of dimension " << d
                         << " must be non-negative";
    shape.push_back(input.getDimSize(d) + low[d] + high[d]);
  }
  return input.clone(shape);
}

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> glimmer::inferEmbeddingType(EmitErrorFn emitError,
                                                        RankedTensorType table,
                                                        RankedTensorType ids) {
  if (failed(checkRank(emitError, table, 2, "a [V, D] table")))
    return failure();
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  return table.clone(shape);
}

FailureOr<RankedTensorType> glimmer::inferLinearType(EmitErrorFn emitError,
                                                     RankedTensorType input,
                                                     RankedTensorType weight,
                                                     Type bias) {
  if (input.getRank() < 1)
    return emitError() << "expects an input of rank >= 1";
  if (failed(checkRank(emitError, weight, 2, "an [N, K] weight")))
    return failure();
  if (weight.getDimSize(1) != input.getShape().back())
    return emitError() << "contraction mismatch: input has K = "
                       << input.getShape().back()
                       << " but weight has K = " << weight.getDimSize(1);
  if (failed(checkSameElementType(emitError, input, "input", weight, "weight")))
    return failure();
  if (bias && failed(checkType(emitError, bias, "bias",
                               RankedTensorType::get({weight.getDimSize(0)},
                                                     weight.getElementType()))))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = weight.getDimSize(0);
  return RankedTensorType::get(shape, input.getElementType());
}

FailureOr<RankedTensorType> glimmer::inferMatmulType(EmitErrorFn emitError,
                                                     RankedTensorType a,
                                                     RankedTensorType b,
                                                     bool transposeLhs,
                                                     bool transposeRhs) {
  if (a.getRank() < 2 || a.getRank() != b.getRank())
    return emitError() << "expects operands of equal rank >= 2, got " << a
                       << " and " << b;
  int64_t r = a.getRank();
  if (a.getShape().drop_back(2) != b.getShape().drop_back(2))
    return emitError() << "batch dimensions differ: "
                       << str(a.getShape().drop_back(2)) << " vs "
                       << str(b.getShape().drop_back(2));
  int64_t m = transposeLhs ? a.getDimSize(r - 1) : a.getDimSize(r - 2);
  int64_t k = transposeLhs ? a.getDimSize(r - 2) : a.getDimSize(r - 1);
  int64_t kb = transposeRhs ? b.getDimSize(r - 1) : b.getDimSize(r - 2);
  int64_t n = transposeRhs ? b.getDimSize(r - 2) : b.getDimSize(r - 1);
  if (k != kb)
    return emitError() << "contraction mismatch: lhs has K = " << k
                       << " but rhs has K = " << kb;
  if (failed(checkSameElementType(emitError, a, "lhs", b, "rhs")))
    return failure();
  SmallVector<int64_t> shape(a.getShape().drop_back(2));
  shape.push_back(m);
  shape.push_back(n);
  return RankedTensorType::get(shape, a.getElementType());
}

FailureOr<RankedTensorType>
glimmer::inferConv2dType(EmitErrorFn emitError, RankedTensorType x,
                         RankedTensorType w, Type bias,
                         ArrayRef<int64_t> stride, ArrayRef<int64_t> padding) {
  if (failed(checkRank(emitError, x, 4, "an NCHW input")) ||
      failed(checkRank(emitError, w, 4, "an OIHW weight")))
    return failure();
  if (stride.size() != 2 || padding.size() != 2)
    return emitError() << "expects 2 strides and 2 paddings";
  if (stride[0] < 1 || stride[1] < 1 || padding[0] < 0 || padding[1] < 0)
    return emitError() << "expects positive strides and non-negative padding";
  if (x.getDimSize(1) != w.getDimSize(1))
    return emitError() << "input has " << x.getDimSize(1)
                       << " channels but weight expects " << w.getDimSize(1);
  if (failed(checkSameElementType(emitError, x, "input", w, "weight")))
    return failure();
  SmallVector<int64_t> shape{x.getDimSize(0), w.getDimSize(0)};
  for (int i = 0; i < 2; ++i) {
    int64_t span = x.getDimSize(2 + i) + 2 * padding[i] - w.getDimSize(2 + i);
    if (span < 0)
      return emitError() << "kernel is larger than the padded input";
    shape.push_back(span / stride[i] + 1);
  }
  if (bias && failed(checkType(emitError, bias, "bias",
                               RankedTensorType::get({w.getDimSize(0)},
                                                     w.getElementType()))))
    return failure();
  return RankedTensorType::get(shape, w.getElementType());
}

/// The `[B, Tq]` and `[B, Tk]` shapes of a pair of per-token masking
/// operands (query's and key's), when present.
static LogicalResult checkTokenShapes(EmitErrorFn emitError, Type query,
                                      Type key, StringRef what, int64_t b,
                                      int64_t tq, int64_t tk) {
  if (!query)
    return success();
  if (failed(checkShape(emitError, query, ("query " + what).str(), {b, tq})))
    return failure();
  return checkShape(emitError, key, ("key " + what).str(), {b, tk});
}

FailureOr<AttentionResultTypes>
glimmer::inferAttentionTypes(EmitErrorFn emitError,
                             const AttentionOperandTypes &ops) {
  DenseBoolArrayAttr seqMajor = ops.sequenceMajor;
  if (seqMajor && seqMajor.size() != 4)
    return emitError()
           << "expects sequence_major to flag 4 tensors (query, key, value, "
              "output), got "
           << seqMajor.size();
  auto flag = [&](unsigned i) { return seqMajor && seqMajor[i]; };
  for (auto [i, type, name] : {std::tuple{0u, ops.query, "query"},
                               {1u, ops.key, "key"},
                               {2u, ops.value, "value"}}) {
    std::string what =
        std::string(name) + (flag(i) ? " [B, T, H, D]" : " [B, H, T, D]");
    if (failed(checkRank(emitError, type, 4, what)))
      return failure();
  }
  // Head-major views: every check below reads [B, H, T, D].
  auto view = [&](Type t, unsigned i) {
    return cast<RankedTensorType>(flag(i) ? swapHeadsAndSequence(t) : t);
  };
  RankedTensorType qt = view(ops.query, 0), kt = view(ops.key, 1);
  Type expectedValue = flag(2) ? swapHeadsAndSequence(kt) : Type(kt);
  if (failed(checkType(emitError, ops.value, "value", expectedValue)))
    return failure();
  if (failed(
          checkSameElementType(emitError, ops.query, "query", ops.key, "key")))
    return failure();
  int64_t b = qt.getDimSize(0), hq = qt.getDimSize(1), tq = qt.getDimSize(2),
          d = qt.getDimSize(3);
  int64_t hkv = kt.getDimSize(1), tk = kt.getDimSize(2);
  if (kt.getDimSize(0) != b || kt.getDimSize(3) != d)
    return emitError() << "key " << ops.key
                       << " does not match query batch and head size "
                       << ops.query;
  if (hkv == 0 || hq % hkv != 0)
    return emitError() << "query heads (" << hq
                       << ") must be a multiple of key/value heads (" << hkv
                       << ")";
  if (!(ops.scale > 0))
    return emitError() << "expects scale > 0, got " << ops.scale;
  if (!ops.queryPositions != !ops.keyPositions)
    return emitError() << "expects query and key positions together or neither";
  if (!ops.queryDocuments != !ops.keyDocuments)
    return emitError() << "expects query and key documents together or neither";
  if (failed(checkTokenShapes(emitError, ops.queryPositions, ops.keyPositions,
                              "positions", b, tq, tk)) ||
      failed(checkTokenShapes(emitError, ops.queryDocuments, ops.keyDocuments,
                              "documents", b, tq, tk)))
    return failure();
  if (!ops.queryBlocks != !ops.keyBlocks)
    return emitError() << "expects query and key blocks together or neither";
  // Blocks widen causal visibility and the window narrows it: neither means
  // anything without causality.
  if ((ops.queryBlocks || ops.window) && !ops.causal)
    return emitError()
           << "expects blocks and a window only with causal attention";
  if (ops.window && *ops.window <= 0)
    return emitError() << "expects window > 0, got " << *ops.window;
  if (failed(checkTokenShapes(emitError, ops.queryBlocks, ops.keyBlocks,
                              "blocks", b, tq, tk)))
    return failure();
  MLIRContext *ctx = qt.getContext();
  Type lseElement = qt.getElementType().isF64() ? Type(Float64Type::get(ctx))
                                                : Type(Float32Type::get(ctx));
  Type output = flag(3) ? swapHeadsAndSequence(qt) : Type(qt);
  return AttentionResultTypes{output,
                              RankedTensorType::get({b, hq, tq}, lseElement)};
}
