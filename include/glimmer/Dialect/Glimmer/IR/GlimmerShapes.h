//===- GlimmerShapes.h - Shape rules of glimmer ops -------------*- C++ -*-===//
//
// One function per shape rule: from an op's operand types and attributes it
// checks what the rule requires of them and returns the result type(s), or
// reports the violated requirement through `emitError` and fails. The op's
// verifier (which then compares the result types it finds) and its type
// inference (InferTypeOpInterface, hence the builders without result types)
// both call it, so each rule is written once.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_GLIMMERSHAPES_H
#define GLIMMER_DIALECT_GLIMMER_IR_GLIMMERSHAPES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeRange.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>

namespace glimmer {

/// Starts the report of a violated rule: the verifier's emitOpError, or a
/// diagnostic worded alike at the location type inference was given.
using EmitErrorFn = llvm::function_ref<mlir::InFlightDiagnostic()>;

/// An error at `loc` that reads as `opName`'s emitOpError ("'glimmer.x' op
/// ..."); inactive (nothing reported) without a location.
mlir::InFlightDiagnostic emitOpErrorAt(std::optional<mlir::Location> loc,
                                       llvm::StringRef opName);

namespace shapes {
/// "[2, 8]".
std::string str(llvm::ArrayRef<int64_t> shape);
/// `dim` is a dimension index of a tensor of rank `rank`.
llvm::LogicalResult checkDim(EmitErrorFn emitError, int64_t dim, int64_t rank,
                             llvm::StringRef what = "dim");
/// `type` has rank `rank`.
llvm::LogicalResult checkRank(EmitErrorFn emitError, mlir::Type type,
                              int64_t rank, llvm::StringRef name);
/// `a` and `b` have one element type.
llvm::LogicalResult checkSameElementType(EmitErrorFn emitError, mlir::Type a,
                                         llvm::StringRef an, mlir::Type b,
                                         llvm::StringRef bn);
/// `type` has exactly the shape `expected`.
llvm::LogicalResult checkShape(EmitErrorFn emitError, mlir::Type type,
                               llvm::StringRef name,
                               llvm::ArrayRef<int64_t> expected);
/// `type` is exactly `expected`.
llvm::LogicalResult checkType(EmitErrorFn emitError, mlir::Type type,
                              llvm::StringRef name, mlir::Type expected);
} // namespace shapes

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// reduce: `input` without `dims` (sorted, unique), or with them as size 1
/// under `keepDims`.
mlir::FailureOr<mlir::RankedTensorType>
inferReduceType(EmitErrorFn emitError, mlir::RankedTensorType input,
                llvm::ArrayRef<int64_t> dims, bool keepDims);
/// argsort: the input's shape, i64; `dim` lies in the input's rank (a
/// zero-dim input has none to sort).
mlir::FailureOr<mlir::RankedTensorType>
inferArgsortType(EmitErrorFn emitError, mlir::RankedTensorType input,
                 int64_t dim);
/// transpose: result dimension i is input dimension `permutation[i]`.
mlir::FailureOr<mlir::RankedTensorType>
inferTransposeType(EmitErrorFn emitError, mlir::RankedTensorType input,
                   llvm::ArrayRef<int64_t> permutation);
/// slice: ceil((limit - start) / stride) elements of each dimension.
mlir::FailureOr<mlir::RankedTensorType>
inferSliceType(EmitErrorFn emitError, mlir::RankedTensorType input,
               llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> limit,
               llvm::ArrayRef<int64_t> stride);
/// microbatch_slice: `dim` divided into `pieces`; `index` is a scalar.
mlir::FailureOr<mlir::RankedTensorType>
inferMicrobatchSliceType(EmitErrorFn emitError, mlir::RankedTensorType input,
                         mlir::RankedTensorType index, int64_t pieces,
                         int64_t dim);
/// concat: the inputs' sizes along `dim` added, other dimensions equal.
mlir::FailureOr<mlir::RankedTensorType>
inferConcatType(EmitErrorFn emitError, mlir::TypeRange inputs, int64_t dim);
/// pad: `low[d] + size + high[d]` in each dimension.
mlir::FailureOr<mlir::RankedTensorType>
inferPadType(EmitErrorFn emitError, mlir::RankedTensorType input,
             llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high);

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

/// embedding: `ids.shape + [D]` in the `[V, D]` table's element type.
mlir::FailureOr<mlir::RankedTensorType>
inferEmbeddingType(EmitErrorFn emitError, mlir::RankedTensorType table,
                   mlir::RankedTensorType ids);
/// linear: `[..., K] x [N, K] (+ [N]) -> [..., N]`; `bias` may be null.
mlir::FailureOr<mlir::RankedTensorType>
inferLinearType(EmitErrorFn emitError, mlir::RankedTensorType input,
                mlir::RankedTensorType weight, mlir::Type bias);
/// matmul: `[..., M, K] x [..., K, N] -> [..., M, N]`, either operand's last
/// two dimensions transposed first under its flag.
mlir::FailureOr<mlir::RankedTensorType>
inferMatmulType(EmitErrorFn emitError, mlir::RankedTensorType lhs,
                mlir::RankedTensorType rhs, bool transposeLhs,
                bool transposeRhs);
/// conv2d (and the cotangent of conv2d_grad): NCHW input, OIHW weight,
/// optional `[O]` bias (may be null).
mlir::FailureOr<mlir::RankedTensorType>
inferConv2dType(EmitErrorFn emitError, mlir::RankedTensorType input,
                mlir::RankedTensorType weight, mlir::Type bias,
                llvm::ArrayRef<int64_t> stride,
                llvm::ArrayRef<int64_t> padding);

/// The operands and attributes of attention and attention_grad that its
/// results follow from; absent masking operands are null.
struct AttentionOperandTypes {
  mlir::Type query, key, value;
  mlir::Type queryPositions, keyPositions;
  mlir::Type queryDocuments, keyDocuments;
  mlir::Type queryBlocks, keyBlocks;
  bool causal;
  std::optional<int64_t> window;
  double scale;
  mlir::DenseBoolArrayAttr sequenceMajor;
};
/// attention's output (in its own layout) and row log-sum-exp `[B, Hq, Tq]`.
struct AttentionResultTypes {
  mlir::Type output, lse;
};
mlir::FailureOr<AttentionResultTypes>
inferAttentionTypes(EmitErrorFn emitError,
                    const AttentionOperandTypes &operands);

} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_IR_GLIMMERSHAPES_H
