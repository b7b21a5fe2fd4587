//===- Elementwise.cpp - Elementwise arithmetic converters ----------------===//
//
// Elementwise arithmetic on tensors or host numbers (add, sub, mul, div,
// floor division, pow, min/max, clamp) and the unary floating-point ops
// (exp, log, sqrt, tanh, activations).
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

#include <cmath>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerArithmeticConverters() {
  auto &C = converters;
  // Host evaluation when no operand is a tensor.
  auto hostArith = [this](OpCall *n, char op) -> bool {
    Imp &x = in(n, 0), &y = in(n, 1);
    if (!x.isNumber() || !y.isNumber())
      return false;
    bool isFloat = x.kind == Imp::Float || y.kind == Imp::Float || op == '/';
    double a = x.asDouble(), c = y.asDouble();
    double r = op == '+'   ? a + c
               : op == '-' ? a - c
               : op == '*' ? a * c
               : op == '/' ? a / c
                           : std::floor(a / c);
    setOut(n, 0, isFloat ? Imp::ofFloat(r) : Imp::ofInt(int64_t(r)));
    return true;
  };
  // Tracing records the Python scalar of `x * 2.5` as a zero-dim tensor
  // constant, and TorchScript runs add/sub/mul/div with such an operand as
  // the Scalar overload: it promotes as a Python number (int_tensor * 2.5 is
  // f32, not f64).
  auto scalarOperand = [this](OpCall *n, size_t i) -> Imp {
    Imp v = in(n, i);
    if (v.kind != Imp::Tensor || !v.value.defined() || v.value.dim() != 0 ||
        !n->inputIsLiteral(i))
      return v;
    if (v.value.is_floating_point())
      return Imp::ofFloat(v.value.item<double>());
    if (v.value.scalar_type() == c10::ScalarType::Bool)
      return Imp::ofBool(v.value.item<bool>());
    return Imp::ofInt(v.value.item<int64_t>());
  };
  auto alphaScaled = [this, scalarOperand](OpCall *n) -> Imp {
    Imp y = scalarOperand(n, 1);
    if (n->numInputs() > 2 && in(n, 2).isNumber() &&
        in(n, 2).asDouble() != 1.0) {
      Imp alpha = in(n, 2);
      if (y.kind == Imp::Tensor)
        y = Imp::ofTensor(binary<MulOp>(y, alpha));
      else if (y.kind == Imp::Int && alpha.kind == Imp::Int)
        y = Imp::ofInt(y.i * alpha.i);
      else
        y = Imp::ofFloat(y.asDouble() * alpha.asDouble());
    }
    return y;
  };
  C["aten::add"] = [this, hostArith, alphaScaled](OpCall *n) {
    if (hostArith(n, '+'))
      return;
    setTensor(n, binary<AddOp>(in(n, 0), alphaScaled(n)));
  };
  C["aten::add_"] = C["aten::add"];
  C["aten::sub"] = [this, hostArith, alphaScaled](OpCall *n) {
    if (hostArith(n, '-'))
      return;
    setTensor(n, binary<SubOp>(in(n, 0), alphaScaled(n)));
  };
  // rsub(self, other, alpha) = other - alpha * self: alpha scales self.
  C["aten::rsub"] = [this](OpCall *n) {
    Imp self = in(n, 0);
    if (n->numInputs() > 2 && in(n, 2).isNumber() &&
        in(n, 2).asDouble() != 1.0)
      self = Imp::ofTensor(binary<MulOp>(self, in(n, 2)));
    setTensor(n, binary<SubOp>(in(n, 1), self));
  };
  C["aten::mul"] = [this, hostArith, scalarOperand](OpCall *n) {
    if (hostArith(n, '*'))
      return;
    setTensor(n, binary<MulOp>(in(n, 0), scalarOperand(n, 1)));
  };
  C["aten::mul_"] = C["aten::mul"];
  C["aten::div"] = [this, hostArith, scalarOperand](OpCall *n) {
    if (n->numInputs() > 2 && in(n, 2).kind != Imp::None)
      fail("division with a rounding mode is not supported");
    if (hostArith(n, '/'))
      return;
    Imp y = scalarOperand(n, 1);
    Type elem = promote(in(n, 0), y);
    if (!mlir::isa<mlir::FloatType>(elem))
      elem = f32(); // true division of integers
    setTensor(n, binary<DivOp>(in(n, 0), y, elem));
  };
  // Floor division of integer tensors: the truncating quotient, less one
  // where the remainder is nonzero and has the divisor's opposite sign.
  auto floorDivide = [this, scalarOperand](OpCall *n) {
    Imp y = scalarOperand(n, 1);
    Type elem = promote(in(n, 0), y);
    if (!mlir::isa<mlir::IntegerType>(elem) || elem.isInteger(1))
      fail("floor division of floating-point tensors is not supported");
    MValue q = binary<DivOp>(in(n, 0), y, elem);
    MValue r = binary<SubOp>(
        in(n, 0), Imp::ofTensor(binary<MulOp>(Imp::ofTensor(q), y, elem)),
        elem);
    MValue adjust = compare(
        CompareDirection::LT,
        Imp::ofTensor(binary<MulOp>(Imp::ofTensor(r), y, elem)), Imp::ofInt(0));
    MValue lower = binary<SubOp>(Imp::ofTensor(q), Imp::ofInt(1), elem);
    return MValue(SelectOp::create(b, loc, adjust, lower, q));
  };
  C["aten::floordiv"] = [this, hostArith, floorDivide](OpCall *n) {
    if (!hostArith(n, 'f'))
      setTensor(n, floorDivide(n));
  };
  C["aten::reciprocal"] = [this](OpCall *n) {
    Imp &x = in(n, 0);
    Type elem =
        x.kind == Imp::Tensor && mlir::isa<mlir::FloatType>(elemOf(x.tensor))
            ? elemOf(x.tensor)
            : f32();
    setTensor(n, binary<DivOp>(Imp::ofFloat(1.0), x, elem));
  };
  C["aten::floor_divide"] = C["aten::floordiv"];
  C["aten::neg"] = [this](OpCall *n) {
    Imp &x = in(n, 0);
    if (x.isNumber()) {
      setOut(n, 0,
             x.kind == Imp::Float ? Imp::ofFloat(-x.f)
                                  : Imp::ofInt(-x.asInt()));
      return;
    }
    MValue t = x.tensor;
    if (mlir::isa<mlir::FloatType>(elemOf(t)))
      setTensor(n, NegOp::create(b, loc, t));
    else
      setTensor(n, binary<SubOp>(Imp::ofInt(0), x));
  };
  C["aten::pow"] = [this](OpCall *n) {
    Imp &x = in(n, 0), &y = in(n, 1);
    if (x.isNumber() && y.isNumber()) {
      setOut(n, 0, Imp::ofFloat(std::pow(x.asDouble(), y.asDouble())));
      return;
    }
    // PyTorch promotion: int ** int stays integral, int ** float is float.
    Type elem = promote(x, y);
    if (x.kind == Imp::Tensor && y.isNumber() && y.asDouble() == 2.0) {
      setTensor(n, binary<MulOp>(x, x, elem));
      return;
    }
    if (x.kind == Imp::Tensor && y.isNumber() && y.asDouble() == 1.0) {
      setTensor(n, convert(x.tensor, elem));
      return;
    }
    setTensor(n, binary<PowOp>(x, y, elem));
  };
  C["aten::maximum"] = [this](OpCall *n) {
    setTensor(n, binary<MaxOp>(in(n, 0), in(n, 1)));
  };
  C["aten::minimum"] = [this](OpCall *n) {
    setTensor(n, binary<MinOp>(in(n, 0), in(n, 1)));
  };
  auto clampMinMax = [this](OpCall *n, Imp *lo, Imp *hi) {
    // Bounds take part in type promotion: clamp(int, min=0.5) is float.
    Imp x = in(n, 0);
    if (lo && lo->kind != Imp::None)
      x = Imp::ofTensor(binary<MaxOp>(x, *lo));
    if (hi && hi->kind != Imp::None)
      x = Imp::ofTensor(binary<MinOp>(x, *hi));
    setTensor(n, x.tensor);
  };
  C["aten::clamp"] = [this, clampMinMax](OpCall *n) {
    clampMinMax(n, &in(n, 1), n->numInputs() > 2 ? &in(n, 2) : nullptr);
  };
  C["aten::clamp_min"] = [this, clampMinMax](OpCall *n) {
    clampMinMax(n, &in(n, 1), nullptr);
  };
  C["aten::clamp_max"] = [this, clampMinMax](OpCall *n) {
    clampMinMax(n, nullptr, &in(n, 1));
  };
}

void OpConverter::registerUnaryConverters() {
  auto &C = converters;
  // Float unary ops; integer inputs are promoted to f32 as PyTorch does.
  auto unary = [this](auto tag) {
    using OpT = decltype(tag);
    return [this](OpCall *n) {
      MValue x = tensorIn(n, 0);
      if (!mlir::isa<mlir::FloatType>(elemOf(x)))
        x = convert(x, f32());
      setTensor(n, OpT::create(b, loc, x));
    };
  };
  C["aten::exp"] = unary(ExpOp());
  C["aten::log"] = unary(LogOp());
  C["aten::sqrt"] = unary(SqrtOp());
  C["aten::rsqrt"] = unary(RsqrtOp());
  C["aten::tanh"] = unary(TanhOp());
  C["aten::erf"] = unary(ErfOp());
  C["aten::sigmoid"] = unary(SigmoidOp());
  C["aten::silu"] = unary(SiluOp());
  C["aten::relu"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    if (mlir::isa<mlir::FloatType>(elemOf(x)))
      setTensor(n, ReluOp::create(b, loc, x));
    else // relu of an integer tensor stays integral
      setTensor(n, binary<MaxOp>(in(n, 0), Imp::ofInt(0)));
  };
  C["aten::sin"] = unary(SinOp());
  C["aten::cos"] = unary(CosOp());
  C["aten::gelu"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    auto approx = GeluApproximation::None;
    if (Imp *a = namedInput(n, "approximate")) {
      if (a->kind == Imp::Str && a->s == "tanh")
        approx = GeluApproximation::Tanh;
      else if (a->kind == Imp::Str && a->s != "none")
        fail("unknown GELU approximation '" + a->s + "'");
    }
    setTensor(n, GeluOp::create(b, loc, x, approx));
  };
}
