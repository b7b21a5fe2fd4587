//===- LowerElementwise.cpp - Creation and elementwise ops ----------------===//

#include "Lowering.h"

#include "llvm/ADT/TypeSwitch.h"

#include <vector>

using namespace mlir;
using namespace glimmer;

namespace {

/// A constant's elements as doubles: a splat's one element, else all.
std::vector<double> constantValues(DenseElementsAttr attr, Type elementType) {
  std::vector<double> values;
  if (isa<FloatType>(elementType)) {
    for (APFloat v : attr.getValues<APFloat>()) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v.convertToDouble());
      if (attr.isSplat())
        break;
    }
  } else {
    for (APInt v : attr.getValues<APInt>()) {
      values.push_back(elementType.isInteger(1) ? double(v.getZExtValue())
                                                : double(v.getSExtValue()));
      if (attr.isSplat())
        break;
    }
  }
  return values;
}

} // namespace

std::optional<LogicalResult> OpLowering::lowerCreation() {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](ConstantOp c) -> LogicalResult {
        auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
        if (!attr)
          return c.emitOpError() << "only dense constants can be lowered";
        RankedTensorType t = typeOf(c.getResult());
        std::vector<double> values = constantValues(attr, t.getElementType());
        // A constant without elements (a size-0 dimension) is a splat of
        // nothing.
        if (attr.isSplat() || values.empty())
          return one(call(Kernel::full)
                         .dtype(t.getElementType())
                         .ints(t.getShape())
                         .real(values.empty() ? 0.0 : values[0]));
        std::string list = "std::vector<double>{";
        for (size_t i = 0; i < values.size(); ++i)
          list += (i ? ", " : "") + realLiteral(values[i]);
        list += "}";
        return one(call(Kernel::constant)
                       .dtype(t.getElementType())
                       .ints(t.getShape())
                       .literal(list));
      })
      .Case([&](IotaOp i) {
        RankedTensorType t = typeOf(i.getOutput());
        return one(call(Kernel::iota)
                       .dtype(t.getElementType())
                       .ints(t.getShape())
                       .integer(i.getDim()));
      })
      .Default(std::nullopt);
}

std::optional<LogicalResult> OpLowering::lowerElementwise() {
  auto elementwise = [&](Kernel kernel) {
    return one(call(kernel, op->getOperands()));
  };
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](NegOp) { return elementwise(Kernel::neg); })
      .Case([&](ExpOp) { return elementwise(Kernel::exp); })
      .Case([&](LogOp) { return elementwise(Kernel::log); })
      .Case([&](SqrtOp) { return elementwise(Kernel::sqrt); })
      .Case([&](RsqrtOp) { return elementwise(Kernel::rsqrt); })
      .Case([&](TanhOp) { return elementwise(Kernel::tanh); })
      .Case([&](ErfOp) { return elementwise(Kernel::erf); })
      .Case([&](SigmoidOp) { return elementwise(Kernel::sigmoid); })
      .Case([&](SiluOp) { return elementwise(Kernel::silu); })
      .Case([&](ReluOp) { return elementwise(Kernel::relu); })
      .Case([&](SinOp) { return elementwise(Kernel::sin); })
      .Case([&](CosOp) { return elementwise(Kernel::cos); })
      .Case([&](TanOp) { return elementwise(Kernel::tan); })
      .Case([&](AsinOp) { return elementwise(Kernel::asin); })
      .Case([&](AcosOp) { return elementwise(Kernel::acos); })
      .Case([&](AtanOp) { return elementwise(Kernel::atan); })
      .Case([&](SinhOp) { return elementwise(Kernel::sinh); })
      .Case([&](CoshOp) { return elementwise(Kernel::cosh); })
      .Case([&](AsinhOp) { return elementwise(Kernel::asinh); })
      .Case([&](AcoshOp) { return elementwise(Kernel::acosh); })
      .Case([&](AtanhOp) { return elementwise(Kernel::atanh); })
      .Case([&](Expm1Op) { return elementwise(Kernel::expm1); })
      .Case([&](Log1pOp) { return elementwise(Kernel::log1p); })
      .Case([&](AbsOp) { return elementwise(Kernel::abs); })
      .Case([&](FloorOp) { return elementwise(Kernel::floor); })
      .Case([&](CeilOp) { return elementwise(Kernel::ceil); })
      .Case([&](TruncOp) { return elementwise(Kernel::trunc); })
      .Case([&](RoundOp) { return elementwise(Kernel::round); })
      .Case([&](AddOp) { return elementwise(Kernel::add); })
      .Case([&](SubOp) { return elementwise(Kernel::sub); })
      .Case([&](MulOp) { return elementwise(Kernel::mul); })
      .Case([&](DivOp) { return elementwise(Kernel::div); })
      .Case([&](MaxOp) { return elementwise(Kernel::max); })
      .Case([&](MinOp) { return elementwise(Kernel::min); })
      .Case([&](PowOp) { return elementwise(Kernel::pow); })
      .Case([&](GeluOp g) {
        return one(call(Kernel::gelu, g.getInput())
                       .boolean(g.getApproximate() == GeluApproximation::Tanh));
      })
      .Case([&](CompareOp c) {
        return one(
            call(Kernel::compare)
                .literal(("glimmer_rt::CompareDir::" +
                          stringifyCompareDirection(c.getDirection()).upper()))
                .operand(map(c.getLhs()))
                .operand(map(c.getRhs())));
      })
      .Case([&](SelectOp s) {
        return one(
            call(Kernel::select, {s.getCond(), s.getOnTrue(), s.getOnFalse()}));
      })
      .Case([&](ConvertOp c) {
        return one(call(Kernel::convert, c.getInput())
                       .dtype(typeOf(c.getOutput()).getElementType()));
      })
      .Default(std::nullopt);
}
