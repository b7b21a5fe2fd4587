//===- OpEmitter.h - Building glimmer ops at one location --------*- C++
//-*-===//
//
// Small builders shared by the derivative rules (GlimmerVJP.cpp) and the
// partitioner's handlers, which both expand one op into several.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_OPEMITTER_H
#define GLIMMER_DIALECT_GLIMMER_IR_OPEMITTER_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

namespace glimmer {

inline mlir::RankedTensorType tensorTypeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType());
}

/// Emits glimmer ops at one location; all helpers keep operand types.
struct OpEmitter {
  mlir::OpBuilder &b;
  mlir::Location loc;

  /// A splat constant of `type` (a floating-point tensor type).
  mlir::Value splat(mlir::RankedTensorType type, double value) {
    auto attr = mlir::DenseElementsAttr::get(
        type, b.getFloatAttr(type.getElementType(), value));
    return ConstantOp::create(b, loc, type,
                              mlir::cast<mlir::ElementsAttr>(attr));
  }
  /// A splat constant like `v`.
  mlir::Value splatLike(mlir::Value v, double value) {
    return splat(tensorTypeOf(v), value);
  }
  mlir::Value zerosLike(mlir::Value v) { return splatLike(v, 0.0); }

  mlir::Value add(mlir::Value x, mlir::Value y) {
    return AddOp::create(b, loc, x, y);
  }
  mlir::Value sub(mlir::Value x, mlir::Value y) {
    return SubOp::create(b, loc, x, y);
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) {
    return MulOp::create(b, loc, x, y);
  }
  mlir::Value div(mlir::Value x, mlir::Value y) {
    return DivOp::create(b, loc, x, y);
  }
  mlir::Value neg(mlir::Value x) { return NegOp::create(b, loc, x); }
  mlir::Value scale(mlir::Value x, double c) { return mul(x, splatLike(x, c)); }
  mlir::Value exp(mlir::Value x) { return ExpOp::create(b, loc, x); }
  mlir::Value log(mlir::Value x) { return LogOp::create(b, loc, x); }
  mlir::Value erf(mlir::Value x) { return ErfOp::create(b, loc, x); }
  mlir::Value tanh(mlir::Value x) { return TanhOp::create(b, loc, x); }
  mlir::Value sin(mlir::Value x) { return SinOp::create(b, loc, x); }
  mlir::Value cos(mlir::Value x) { return CosOp::create(b, loc, x); }
  mlir::Value sigmoid(mlir::Value x) { return SigmoidOp::create(b, loc, x); }
  mlir::Value sinh(mlir::Value x) { return SinhOp::create(b, loc, x); }
  mlir::Value cosh(mlir::Value x) { return CoshOp::create(b, loc, x); }
  mlir::Value rsqrt(mlir::Value x) { return RsqrtOp::create(b, loc, x); }
  mlir::Value pow(mlir::Value x, mlir::Value y) {
    return PowOp::create(b, loc, x, y);
  }

  mlir::Value compare(CompareDirection dir, mlir::Value x, mlir::Value y) {
    return CompareOp::create(
        b, loc, CompareDirectionAttr::get(b.getContext(), dir), x, y);
  }
  mlir::Value select(mlir::Value cond, mlir::Value onTrue,
                     mlir::Value onFalse) {
    return SelectOp::create(b, loc, cond, onTrue, onFalse);
  }
  mlir::Value convert(mlir::Value x, mlir::Type type) {
    if (x.getType() == type)
      return x;
    return ConvertOp::create(b, loc, type, x);
  }
  mlir::Value reshape(mlir::Value x, mlir::Type type) {
    if (x.getType() == type)
      return x;
    return ReshapeOp::create(b, loc, type, x);
  }
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape) {
    return reshape(x, tensorTypeOf(x).clone(shape));
  }
  mlir::Value reduceSum(mlir::Value x, llvm::ArrayRef<int64_t> dims,
                        bool keepDims) {
    return reduce(ReductionKind::Sum, x, dims, keepDims);
  }
  /// Broadcasts `x` (same rank as `type`, size-1 or equal dims) to `type`.
  mlir::Value broadcastSameRank(mlir::Value x, mlir::RankedTensorType type) {
    if (x.getType() == type)
      return x;
    llvm::SmallVector<int64_t> dims =
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    return BroadcastInDimOp::create(b, loc, type, x,
                                    b.getDenseI64ArrayAttr(dims));
  }
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm) {
    return TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr(perm));
  }
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> start,
                    llvm::ArrayRef<int64_t> limit) {
    llvm::SmallVector<int64_t> stride(tensorTypeOf(x).getRank(), 1);
    return SliceOp::create(b, loc, x, b.getDenseI64ArrayAttr(start),
                           b.getDenseI64ArrayAttr(limit),
                           b.getDenseI64ArrayAttr(stride));
  }
  mlir::Value padZeros(mlir::Value x, llvm::ArrayRef<int64_t> low,
                       llvm::ArrayRef<int64_t> high) {
    return PadOp::create(b, loc, x, b.getDenseI64ArrayAttr(low),
                         b.getDenseI64ArrayAttr(high), b.getF64FloatAttr(0.0));
  }
  /// A reduction of `x` over `dims` (kept as size 1 with `keepDims`).
  mlir::Value reduce(ReductionKind kind, mlir::Value x,
                     llvm::ArrayRef<int64_t> dims, bool keepDims = false) {
    return ReduceOp::create(b, loc, kind, x, dims, keepDims);
  }
  /// `x` broadcast to `type`, its dimension i becoming `dims[i]`.
  mlir::Value broadcastInDim(mlir::Value x, mlir::RankedTensorType type,
                             llvm::ArrayRef<int64_t> dims) {
    if (x.getType() == type)
      return x;
    return BroadcastInDimOp::create(b, loc, type, x,
                                    b.getDenseI64ArrayAttr(dims));
  }
  /// `x` (the leading dimensions of `type`) broadcast along `type`'s
  /// trailing ones.
  mlir::Value broadcastLeading(mlir::Value x, mlir::RankedTensorType type) {
    return broadcastInDim(
        x, type,
        llvm::to_vector(llvm::seq<int64_t>(0, tensorTypeOf(x).getRank())));
  }
  /// An integer splat constant of `type`.
  mlir::Value intSplat(mlir::RankedTensorType type, int64_t value) {
    auto attr = mlir::DenseElementsAttr::get(
        type, b.getIntegerAttr(type.getElementType(), value));
    return ConstantOp::create(b, loc, type,
                              mlir::cast<mlir::ElementsAttr>(attr));
  }
  mlir::Value boolSplat(mlir::RankedTensorType like, bool value) {
    auto type = mlir::cast<mlir::RankedTensorType>(getI1SameShape(like));
    return ConstantOp::create(b, loc, type,
                              mlir::cast<mlir::ElementsAttr>(
                                  mlir::DenseElementsAttr::get(type, value)));
  }
  mlir::Value iota(mlir::RankedTensorType type, int64_t dim) {
    return IotaOp::create(b, loc, type, dim);
  }
};

} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_IR_OPEMITTER_H
