//===- GlimmerVJP.cpp - Reverse-mode derivative rules ---------------------===//
//
// One VJPOpInterface::buildVJP per differentiable op.
//
// Conventions (see GlimmerInterfaces.td): `resultGrads[i]` is the cotangent of
// result `i` (same type) or null for zero; a rule sets `operandGrads[j]` only
// for floating-point operands and leaves it null for zero gradients and for
// integer/boolean operands (ids, labels, positions, masks). Every rule emits
// glimmer ops only, at the builder's insertion point, with the op's location.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "glimmer/Dialect/Glimmer/IR/OpEmitter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace glimmer;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

bool isFloatTensor(Value v) {
  return isa<FloatType>(tensorTypeOf(v).getElementType());
}


/// The shape of `in` with the dims in `dims` set to 1.
SmallVector<int64_t> keptShape(RankedTensorType in, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape(in.getShape());
  for (int64_t d : dims)
    shape[d] = 1;
  return shape;
}

} // namespace

//===----------------------------------------------------------------------===//
// Unary elementwise ops
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = e.neg(g);
  return success();
}

// d/dx exp(x) = exp(x) = y.
LogicalResult ExpOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = e.mul(g, getOutput());
  return success();
}

// d/dx log(x) = 1/x.
LogicalResult LogOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = e.div(g, getInput());
  return success();
}

// d/dx sqrt(x) = 1 / (2 sqrt(x)) = 1 / (2y).
LogicalResult SqrtOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = e.div(g, e.scale(getOutput(), 2.0));
  return success();
}

// d/dx x^(-1/2) = -1/2 x^(-3/2) = -0.5 y^3.
LogicalResult RsqrtOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  Value y = getOutput();
  Value y3 = e.mul(e.mul(y, y), y);
  operandGrads[0] = e.mul(g, e.scale(y3, -0.5));
  return success();
}

// d/dx tanh(x) = 1 - y^2.
LogicalResult TanhOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  Value y = getOutput();
  operandGrads[0] = e.mul(g, e.sub(e.splatLike(y, 1.0), e.mul(y, y)));
  return success();
}

// d/dx erf(x) = 2/sqrt(pi) exp(-x^2).
LogicalResult ErfOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  Value x = getInput();
  const double twoOverSqrtPi = 1.12837916709551257390;
  Value d = e.scale(e.exp(e.neg(e.mul(x, x))), twoOverSqrtPi);
  operandGrads[0] = e.mul(g, d);
  return success();
}

// d/dx sigmoid(x) = s (1 - s).
LogicalResult SigmoidOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  Value s = getOutput();
  operandGrads[0] = e.mul(g, e.mul(s, e.sub(e.splatLike(s, 1.0), s)));
  return success();
}

// d/dx x s(x) = s + x s (1 - s) = s (1 + x (1 - s)).
LogicalResult SiluOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  Value x = getInput();
  Value s = e.sigmoid(x);
  Value one = e.splatLike(x, 1.0);
  Value d = e.mul(s, e.add(one, e.mul(x, e.sub(one, s))));
  operandGrads[0] = e.mul(g, d);
  return success();
}

// The gradient flows where x > 0 (zero at x = 0, as PyTorch).
LogicalResult ReluOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  Value x = getInput();
  Value positive = e.compare(CompareDirection::GT, x, e.zerosLike(x));
  operandGrads[0] = e.select(positive, g, e.zerosLike(g));
  return success();
}

LogicalResult SinOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = e.mul(g, e.cos(getInput()));
  return success();
}

LogicalResult CosOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = e.neg(e.mul(g, e.sin(getInput())));
  return success();
}

// The inverse and hyperbolic trigonometric functions and expm1 / log1p:
// each derivative is a function of x (or y) written with the dialect's ops,
// as PyTorch's derivatives.yaml writes it.
namespace {
template <typename F>
LogicalResult unaryVJP(Operation *op, OpBuilder &b, ArrayRef<Value> resultGrads,
                       MutableArrayRef<Value> operandGrads, F derivative) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, op->getLoc()};
  operandGrads[0] =
      e.mul(g, derivative(e, op->getOperand(0), op->getResult(0)));
  return success();
}
} // namespace

// 1 + tan(x)^2.
LogicalResult TanOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value, Value y) {
                    return e.add(e.splatLike(y, 1.0), e.mul(y, y));
                  });
}

// 1 / sqrt(1 - x^2) (negated for acos).
LogicalResult AsinOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value x, Value) {
                    return e.rsqrt(e.sub(e.splatLike(x, 1.0), e.mul(x, x)));
                  });
}

LogicalResult AcosOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value x, Value) {
                    return e.neg(
                        e.rsqrt(e.sub(e.splatLike(x, 1.0), e.mul(x, x))));
                  });
}

// 1 / (1 + x^2).
LogicalResult AtanOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value x, Value) {
                    Value one = e.splatLike(x, 1.0);
                    return e.div(one, e.add(one, e.mul(x, x)));
                  });
}

LogicalResult SinhOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  return unaryVJP(
      *this, b, resultGrads, operandGrads,
      [](OpEmitter &e, Value x, Value) { return e.cosh(x); });
}

LogicalResult CoshOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  return unaryVJP(
      *this, b, resultGrads, operandGrads,
      [](OpEmitter &e, Value x, Value) { return e.sinh(x); });
}

// 1 / sqrt(x^2 + 1).
LogicalResult AsinhOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value x, Value) {
                    return e.rsqrt(e.add(e.mul(x, x), e.splatLike(x, 1.0)));
                  });
}

// 1 / sqrt(x^2 - 1).
LogicalResult AcoshOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value x, Value) {
                    return e.rsqrt(e.sub(e.mul(x, x), e.splatLike(x, 1.0)));
                  });
}

// 1 / (1 - x^2).
LogicalResult AtanhOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value x, Value) {
                    Value one = e.splatLike(x, 1.0);
                    return e.div(one, e.sub(one, e.mul(x, x)));
                  });
}

// exp(x), computed again: y + 1 would round away the small y.
LogicalResult Expm1Op::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value x, Value) { return e.exp(x); });
}

// 1 / (1 + x).
LogicalResult Log1pOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value x, Value) {
                    Value one = e.splatLike(x, 1.0);
                    return e.div(one, e.add(one, x));
                  });
}

// sign(x): zero at x = 0, as PyTorch.
LogicalResult AbsOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  return unaryVJP(*this, b, resultGrads, operandGrads,
                  [](OpEmitter &e, Value x, Value) {
                    Value zero = e.zerosLike(x);
                    auto type = tensorTypeOf(x);
                    Value pos = e.convert(
                        e.compare(CompareDirection::GT, x, zero), type);
                    Value neg = e.convert(
                        e.compare(CompareDirection::LT, x, zero), type);
                    return e.sub(pos, neg);
                  });
}

// Piecewise constant: the gradient is zero (as PyTorch's).
template <typename OpT>
static LogicalResult zeroVJP(OpT op, OpBuilder &b, ArrayRef<Value> resultGrads,
                             MutableArrayRef<Value> operandGrads) {
  if (resultGrads[0])
    operandGrads[0] = OpEmitter{b, op.getLoc()}.zerosLike(op.getInput());
  return success();
}

LogicalResult FloorOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  return zeroVJP(*this, b, resultGrads, operandGrads);
}
LogicalResult CeilOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  return zeroVJP(*this, b, resultGrads, operandGrads);
}
LogicalResult TruncOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  return zeroVJP(*this, b, resultGrads, operandGrads);
}
LogicalResult RoundOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  return zeroVJP(*this, b, resultGrads, operandGrads);
}

// Exact: d/dx x Phi(x) = Phi(x) + x phi(x).
// Tanh approximation y = 0.5 x (1 + t), t = tanh(u), u = beta (x + kappa x^3):
// dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) beta (1 + 3 kappa x^2).
LogicalResult GeluOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  Value x = getInput();
  Value one = e.splatLike(x, 1.0);
  Value x2 = e.mul(x, x);
  Value d;
  switch (getApproximate()) {
  case GeluApproximation::None: {
    const double sqrtHalf = 0.70710678118654752440;   // 1/sqrt(2)
    const double invSqrt2Pi = 0.39894228040143267794; // 1/sqrt(2 pi)
    Value cdf = e.scale(e.add(one, e.erf(e.scale(x, sqrtHalf))), 0.5);
    Value pdf = e.scale(e.exp(e.scale(x2, -0.5)), invSqrt2Pi);
    d = e.add(cdf, e.mul(x, pdf));
    break;
  }
  case GeluApproximation::Tanh: {
    const double beta = 0.79788456080286535588; // sqrt(2/pi)
    const double kappa = 0.044715;
    Value inner = e.scale(e.add(x, e.scale(e.mul(x2, x), kappa)), beta);
    Value t = e.tanh(inner);
    Value dInner = e.scale(e.add(one, e.scale(x2, 3.0 * kappa)), beta);
    Value left = e.scale(e.add(one, t), 0.5);
    Value right =
        e.mul(e.scale(x, 0.5), e.mul(e.sub(one, e.mul(t, t)), dInner));
    d = e.add(left, right);
    break;
  }
  }
  if (!d)
    return emitOpError() << "no VJP rule for GELU approximation "
                         << stringifyGeluApproximation(getApproximate());
  operandGrads[0] = e.mul(g, d);
  return success();
}

//===----------------------------------------------------------------------===//
// Binary elementwise ops
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getLhs()))
    return success();
  operandGrads[0] = g;
  operandGrads[1] = g;
  return success();
}

LogicalResult SubOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getLhs()))
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = g;
  operandGrads[1] = e.neg(g);
  return success();
}

LogicalResult MulOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getLhs()))
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = e.mul(g, getRhs());
  operandGrads[1] = e.mul(g, getLhs());
  return success();
}

// d/da = g / b, d/db = -g a / b^2 = -(g / b) * (a / b).
LogicalResult DivOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getLhs()))
    return success();
  OpEmitter e{b, getLoc()};
  Value ga = e.div(g, getRhs());
  operandGrads[0] = ga;
  operandGrads[1] = e.neg(e.mul(ga, getOutput()));
  return success();
}

/// Routes `g` to the selected operand of max/min; ties split half-half (as
/// PyTorch's maximum/minimum). `lhsWins` is GT for max and LT for min.
static void routeMinMax(OpEmitter &e, Value g, Value lhs, Value rhs,
                        CompareDirection lhsWins, CompareDirection rhsWins,
                        MutableArrayRef<Value> operandGrads) {
  Value zero = e.zerosLike(g);
  Value half = e.scale(g, 0.5);
  Value tie = e.compare(CompareDirection::EQ, lhs, rhs);
  Value tieShare = e.select(tie, half, zero);
  operandGrads[0] = e.select(e.compare(lhsWins, lhs, rhs), g, tieShare);
  operandGrads[1] = e.select(e.compare(rhsWins, lhs, rhs), g, tieShare);
}

LogicalResult MaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getLhs()))
    return success();
  OpEmitter e{b, getLoc()};
  routeMinMax(e, g, getLhs(), getRhs(), CompareDirection::GT,
              CompareDirection::LT, operandGrads);
  return success();
}

LogicalResult MinOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getLhs()))
    return success();
  OpEmitter e{b, getLoc()};
  routeMinMax(e, g, getLhs(), getRhs(), CompareDirection::LT,
              CompareDirection::GT, operandGrads);
  return success();
}

// d/da a^b = b a^(b-1) (zero where b == 0), d/db a^b = a^b log(a) (zero where
// a == 0 and b >= 0), with PyTorch's masking of the 0 * inf cases.
LogicalResult PowOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getLhs()))
    return success();
  OpEmitter e{b, getLoc()};
  Value base = getLhs(), exponent = getRhs();
  Value zero = e.zerosLike(base), one = e.splatLike(base, 1.0);
  Value da = e.mul(exponent, e.pow(base, e.sub(exponent, one)));
  Value exponentZero = e.compare(CompareDirection::EQ, exponent, zero);
  operandGrads[0] = e.select(exponentZero, zero, e.mul(g, da));
  Value db = e.mul(g, e.mul(getOutput(), e.log(base)));
  Value baseZero = e.compare(CompareDirection::EQ, base, zero);
  Value exponentNonNeg = e.compare(CompareDirection::GE, exponent, zero);
  operandGrads[1] = e.select(baseZero, e.select(exponentNonNeg, zero, db), db);
  return success();
}

//===----------------------------------------------------------------------===//
// Context parallelism and sharding
//===----------------------------------------------------------------------===//

LogicalResult CpPermuteOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  operandGrads[0] = CpUnpermuteOp::create(b, getLoc(), g, getDimAttr(),
                                          getCpAttr(), getBalancerAttr());
  return success();
}

LogicalResult CpUnpermuteOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  operandGrads[0] = CpPermuteOp::create(b, getLoc(), g, getDimAttr(),
                                        getCpAttr(), getBalancerAttr());
  return success();
}

LogicalResult
ShardingConstraintOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  operandGrads[0] = g;
  return success();
}

// The identity forward, and no cotangent for the operand: the op exists
// to cut the gradient (native_layer_norm's mean and rstd, as PyTorch).
LogicalResult StopGradientOp::buildVJP(OpBuilder &, ArrayRef<Value>,
                                       MutableArrayRef<Value>) {
  return success();
}

//===----------------------------------------------------------------------===//
// Select, convert, reductions, scans
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getOnTrue()))
    return success();
  OpEmitter e{b, getLoc()};
  Value zero = e.zerosLike(g);
  operandGrads[1] = e.select(getCond(), g, zero);
  operandGrads[2] = e.select(getCond(), zero, g);
  return success();
}

// Float to float: convert the gradient back. An integer operand has no
// gradient; a float-to-integer conversion is piecewise constant (zero).
LogicalResult ConvertOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()) || !isFloatTensor(getOutput()))
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = e.convert(g, getInput().getType());
  return success();
}

LogicalResult ReduceOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  OpEmitter e{b, getLoc()};
  RankedTensorType in = tensorTypeOf(getInput());
  SmallVector<int64_t> kept = keptShape(in, getDims());
  // The gradient with the reduced dimensions kept as size 1.
  Value gKept = e.reshape(g, kept);
  switch (getKind()) {
  case ReductionKind::Sum:
    operandGrads[0] = e.broadcastSameRank(gKept, in);
    return success();
  case ReductionKind::Max:
  case ReductionKind::Min: {
    // amax/amin semantics: the gradient is split evenly among all elements
    // equal to the result.
    Value x = getInput();
    Value yFull = e.broadcastSameRank(e.reshape(getOutput(), kept), in);
    Value hit = e.compare(CompareDirection::EQ, x, yFull);
    Value hitF = e.select(hit, e.splatLike(x, 1.0), e.zerosLike(x));
    Value count = e.reduceSum(hitF, getDims(), /*keepDims=*/true);
    Value share = e.broadcastSameRank(e.div(gKept, count), in);
    operandGrads[0] = e.select(hit, share, e.zerosLike(x));
    return success();
  }
  }
  return emitOpError() << "no VJP rule for reduction kind "
                       << stringifyReductionKind(getKind());
}

// dx_i = sum_{j >= i} g_j = total - cumsum(g)_i + g_i along the dimension.
LogicalResult CumsumOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  OpEmitter e{b, getLoc()};
  RankedTensorType type = tensorTypeOf(g);
  int64_t dim = getDim();
  Value total =
      e.broadcastSameRank(e.reduceSum(g, {dim}, /*keepDims=*/true), type);
  Value prefix = CumsumOp::create(b, getLoc(), g, getDimAttr());
  operandGrads[0] = e.add(e.sub(total, prefix), g);
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  OpEmitter e{b, getLoc()};
  operandGrads[0] = e.reshape(g, getInput().getType());
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  OpEmitter e{b, getLoc()};
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  operandGrads[0] = e.transpose(g, inverse);
  return success();
}

// Sum over the new dimensions and the size-1 dimensions that were expanded,
// then reshape to the operand's shape.
LogicalResult BroadcastInDimOp::buildVJP(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  OpEmitter e{b, getLoc()};
  RankedTensorType in = tensorTypeOf(getInput()),
                   out = tensorTypeOf(getOutput());
  ArrayRef<int64_t> dims = getDims();
  SmallVector<int64_t> summed;
  for (int64_t d = 0; d < out.getRank(); ++d) {
    const int64_t *it = llvm::find(dims, d);
    if (it == dims.end()) {
      summed.push_back(d);
      continue;
    }
    int64_t i = it - dims.begin();
    if (in.getDimSize(i) != out.getDimSize(d))
      summed.push_back(d);
  }
  Value reduced =
      summed.empty() ? g : e.reduceSum(g, summed, /*keepDims=*/false);
  operandGrads[0] = e.reshape(reduced, in);
  return success();
}

LogicalResult SliceOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  if (llvm::any_of(getStride(), [](int64_t s) { return s != 1; }))
    return emitOpError() << "no VJP rule for strided slices";
  OpEmitter e{b, getLoc()};
  RankedTensorType in = tensorTypeOf(getInput());
  SmallVector<int64_t> high;
  for (int64_t d = 0; d < in.getRank(); ++d)
    high.push_back(in.getDimSize(d) - getLimit()[d]);
  operandGrads[0] = e.padZeros(g, getStart(), high);
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getOutput()))
    return success();
  OpEmitter e{b, getLoc()};
  RankedTensorType out = tensorTypeOf(getOutput());
  int64_t dim = getDim(), offset = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    int64_t size = tensorTypeOf(input).getDimSize(dim);
    SmallVector<int64_t> start(out.getRank(), 0), limit(out.getShape());
    start[dim] = offset;
    limit[dim] = offset + size;
    operandGrads[i] = e.slice(g, start, limit);
    offset += size;
  }
  return success();
}

LogicalResult PadOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return success();
  OpEmitter e{b, getLoc()};
  RankedTensorType in = tensorTypeOf(getInput());
  SmallVector<int64_t> start(getLow()), limit;
  for (int64_t d = 0; d < in.getRank(); ++d)
    limit.push_back(start[d] + in.getDimSize(d));
  operandGrads[0] = e.slice(g, start, limit);
  return success();
}

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  // A lookup in an integer table carries no gradient.
  if (!g || !isa<FloatType>(getTable().getType().getElementType()))
    return success();
  operandGrads[0] =
      EmbeddingGradOp::create(b, getLoc(), getTable().getType(), g, getIds());
  return success();
}

// A scatter-add of rows (also scatter_add and index_put as imported): each
// row's gradient is the output gradient's row it was added into, a lookup.
LogicalResult EmbeddingGradOp::buildVJP(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  operandGrads[0] =
      EmbeddingOp::create(b, getLoc(), getGrad().getType(), g, getIds());
  return success();
}

// y = x W^T + b over rows: dx = dy W, dW = dy^T x, db = sum of dy over rows.
LogicalResult LinearOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  OpEmitter e{b, getLoc()};
  Value x = getInput(), w = getWeight();
  RankedTensorType xt = tensorTypeOf(x), wt = tensorTypeOf(w),
                   yt = tensorTypeOf(g);
  int64_t n = wt.getDimSize(0), k = wt.getDimSize(1);
  // Rows: the product of the leading dimensions (1 for a rank-1 input).
  int64_t rows = 1;
  for (int64_t d : yt.getShape().drop_back())
    rows *= d;
  Value g2 = e.reshape(g, {rows, n});
  Value x2 = e.reshape(x, {rows, k});
  Value dx = MatmulOp::create(b, getLoc(), g2, w, /*transpose_lhs=*/false,
                              /*transpose_rhs=*/false);
  operandGrads[0] = e.reshape(dx, xt);
  operandGrads[1] = MatmulOp::create(b, getLoc(), g2, x2,
                                     /*transpose_lhs=*/true,
                                     /*transpose_rhs=*/false);
  if (getBias()) {
    Value db = yt.getRank() == 1 ? g : e.reduceSum(g2, {0}, /*keepDims=*/false);
    operandGrads[2] = db;
  }
  return success();
}

// C = op(A) op(B) with op = optional transpose of the last two dimensions.
LogicalResult MatmulOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  Location loc = getLoc();
  Value a = getLhs(), c = getRhs();
  bool ta = getTransposeLhs(), tc = getTransposeRhs();
  if (!ta && !tc) { // C = A B
    operandGrads[0] = MatmulOp::create(b, loc, g, c, false, true);
    operandGrads[1] = MatmulOp::create(b, loc, a, g, true, false);
  } else if (ta && !tc) { // C = A^T B
    operandGrads[0] = MatmulOp::create(b, loc, c, g, false, true);
    operandGrads[1] = MatmulOp::create(b, loc, a, g, false, false);
  } else if (!ta && tc) { // C = A B^T
    operandGrads[0] = MatmulOp::create(b, loc, g, c, false, false);
    operandGrads[1] = MatmulOp::create(b, loc, g, a, true, false);
  } else { // C = A^T B^T
    operandGrads[0] = MatmulOp::create(b, loc, c, g, true, true);
    operandGrads[1] = MatmulOp::create(b, loc, g, a, true, true);
  }
  return success();
}

LogicalResult RmsNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  auto grad = RmsNormGradOp::create(b, getLoc(), g, getInput(), getWeight(),
                                    getEpsAttr());
  operandGrads[0] = grad.getInputGrad();
  operandGrads[1] = grad.getWeightGrad();
  return success();
}

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  auto grad = LayerNormGradOp::create(b, getLoc(), g, getInput(), getWeight(),
                                      getEpsAttr());
  operandGrads[0] = grad.getInputGrad();
  operandGrads[1] = grad.getWeightGrad();
  operandGrads[2] = grad.getBiasGrad();
  return success();
}

// RoPE is a rotation (orthogonal), so its VJP is the inverse rotation.
LogicalResult RopeOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  operandGrads[0] = RopeOp::create(b, getLoc(), g, getPositions(),
                                   getThetaAttr(), getStyleAttr(),
                                   getInverse() ? UnitAttr() : b.getUnitAttr());
  return success();
}

LogicalResult AttentionOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    MutableArrayRef<Value> operandGrads) {
  if (resultGrads[1])
    return emitOpError() << "the lse result of attention is not "
                            "differentiable";
  Value g = resultGrads[0];
  if (!g)
    return success();
  auto grad = AttentionGradOp::create(
      b, getLoc(), g, getQuery(), getKey(), getValue(), getOutput(), getLse(),
      getQueryPositions(), getKeyPositions(), getQueryDocuments(),
      getKeyDocuments(), getQueryBlocks(), getKeyBlocks(), getCausalAttr(),
      getWindowAttr(), getScaleAttr(), getSequenceMajorAttr());
  operandGrads[0] = grad.getQueryGrad();
  operandGrads[1] = grad.getKeyGrad();
  operandGrads[2] = grad.getValueGrad();
  return success();
}

LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  operandGrads[0] =
      SoftmaxGradOp::create(b, getLoc(), g, getOutput(), getDimAttr());
  return success();
}

// Only the sum is differentiable; the count is an integer.
LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  operandGrads[0] = CrossEntropyGradOp::create(
      b, getLoc(), g, getLogits(), getLabels(), getIgnoreIndexAttr());
  return success();
}

LogicalResult Conv2dOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  auto grad = Conv2dGradOp::create(b, getLoc(), g, getInput(), getWeight(),
                                   getStrideAttr(), getPaddingAttr());
  operandGrads[0] = grad.getInputGrad();
  operandGrads[1] = grad.getWeightGrad();
  if (getBias()) {
    OpEmitter e{b, getLoc()};
    operandGrads[2] = e.reduceSum(g, {0, 2, 3}, /*keepDims=*/false);
  }
  return success();
}

LogicalResult VisionGatherOp::buildVJP(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       MutableArrayRef<Value> operandGrads) {
  Value g = resultGrads[0];
  if (!g)
    return success();
  auto grad = VisionGatherGradOp::create(b, getLoc(), g.getType(),
                                         getBank().getType(), g, getIndices());
  operandGrads[0] = grad.getEmbedsGrad();
  operandGrads[1] = grad.getBankGrad();
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives (local view)
//===----------------------------------------------------------------------===//

// all_gather's transpose is reduce_scatter: each rank's slice of the
// gathered cotangent, summed over the ranks that used it.
LogicalResult AllGatherOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    MutableArrayRef<Value> operandGrads) {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  auto element = dyn_cast<FloatType>(inputType.getElementType());
  if (!resultGrads[0] || !element)
    return success();
  // Users that compute the same on every rank: the cotangent is complete
  // everywhere, and this rank's piece of it is its slice.
  if (getInvariant()) {
    operandGrads[0] = LocalShardOp::create(b, getLoc(), inputType,
                                           resultGrads[0], getMeshAttr(),
                                           getAxes(), getDimAttr());
    return success();
  }
  // The ranks' bf16 (f16) cotangents are summed in f32, as mixed-precision
  // training reduces gradients (e.g. K and V gathered over cp).
  OpEmitter e{b, getLoc()};
  Value g = resultGrads[0];
  RankedTensorType sumType = inputType;
  if (element.getWidth() < 32) {
    g = e.convert(g, cast<RankedTensorType>(g.getType())
                         .clone(Float32Type::get(b.getContext())));
    sumType = inputType.clone(Float32Type::get(b.getContext()));
  }
  Value sum = ReduceScatterOp::create(
      b, getLoc(), sumType,
      ReductionKindAttr::get(b.getContext(), ReductionKind::Sum), g,
      getMeshAttr(), getAxes(), getDimAttr());
  operandGrads[0] = e.convert(sum, inputType);
  return success();
}

LogicalResult ReduceScatterOp::buildVJP(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        MutableArrayRef<Value> operandGrads) {
  if (!resultGrads[0])
    return success();
  if (getKind() != ReductionKind::Sum)
    return emitOpError() << "only a sum reduce_scatter is differentiable";
  operandGrads[0] = AllGatherOp::create(b, getLoc(), getInput().getType(),
                                        resultGrads[0], getMeshAttr(),
                                        getAxes(), getDimAttr());
  return success();
}

// The result of an all_reduce is replicated, and so is its cotangent (every
// rank seeds the same loss): a sum's contributions each get it unchanged.
LogicalResult AllReduceOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    MutableArrayRef<Value> operandGrads) {
  if (!resultGrads[0])
    return success();
  if (getKind() == ReductionKind::Sum) {
    operandGrads[0] = resultGrads[0];
    return success();
  }
  // Max or min: the cotangent goes to the ranks whose value is the result,
  // whole to each on a tie (reduce's VJP splits it, which here would take a
  // second collective to count the ranks; the one user, the stabilizing
  // shift of loss-parallel cross-entropy, has a zero total gradient).
  OpEmitter e{b, getLoc()};
  Value hit = e.compare(CompareDirection::EQ, getInput(), getOutput());
  operandGrads[0] = e.select(hit, resultGrads[0], e.zerosLike(getInput()));
  return success();
}

// Each rank keeps its slice of a value replicated over `axes`, so the
// cotangent of the whole value is the concatenation of the ranks' slice
// cotangents, in rank order: an all_gather (the dual of the local slice),
// complete and replicated like the operand.
LogicalResult LocalShardOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     MutableArrayRef<Value> operandGrads) {
  if (!resultGrads[0])
    return success();
  operandGrads[0] = AllGatherOp::create(b, getLoc(), getInput().getType(),
                                        resultGrads[0], getMeshAttr(),
                                        getAxes(), getDimAttr());
  return success();
}

// An all-to-all only moves elements between ranks: the cotangents move
// back, by the all-to-all that joins what this one cut.
LogicalResult AllToAllOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   MutableArrayRef<Value> operandGrads) {
  if (!resultGrads[0])
    return success();
  operandGrads[0] = AllToAllOp::create(
      b, getLoc(), getInput().getType(), resultGrads[0], getMeshAttr(),
      getAxes(), getConcatDimAttr(), getSplitDimAttr());
  return success();
}

// Each rank's cotangent is its share of the replicated operand's: summed.
LogicalResult PvaryOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                MutableArrayRef<Value> operandGrads) {
  if (!resultGrads[0])
    return success();
  operandGrads[0] = AllReduceOp::create(
      b, getLoc(), ReductionKindAttr::get(b.getContext(), ReductionKind::Sum),
      resultGrads[0], getMeshAttr(), getAxes());
  return success();
}
