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
    Imp y = scalarOperand(n, 1);
    // A product of booleans is their logical and.
    if (promote(in(n, 0), y).isInteger(1)) {
      MValue x = compare(CompareDirection::NE, in(n, 0), Imp::ofBool(false));
      setTensor(n, select(x, y, Imp::ofBool(false)));
      return;
    }
    setTensor(n, binary<MulOp>(in(n, 0), y));
  };
  C["aten::mul_"] = C["aten::mul"];
  // div(rounding_mode=None | "trunc" | "floor"). Integers: the dialect's
  // division truncates, the floor mode adjusts it (floorDivide below).
  C["aten::div"] = [this, hostArith, scalarOperand](OpCall *n) {
    std::string mode;
    if (n->numInputs() > 2 && in(n, 2).kind != Imp::None) {
      if (in(n, 2).kind != Imp::Str ||
          (in(n, 2).s != "trunc" && in(n, 2).s != "floor"))
        fail("unknown rounding mode of a division");
      mode = in(n, 2).s;
    }
    if (mode.empty() && hostArith(n, '/'))
      return;
    Imp y = scalarOperand(n, 1);
    Type elem = promote(in(n, 0), y);
    if (mode == "floor" && !mlir::isa<mlir::FloatType>(elem)) {
      converters["aten::floor_divide"](n);
      return;
    }
    if (mode == "trunc" && !mlir::isa<mlir::FloatType>(elem)) {
      setTensor(n, binary<DivOp>(in(n, 0), y, elem));
      return;
    }
    if (!mlir::isa<mlir::FloatType>(elem))
      elem = f32(); // true division of integers
    MValue q = binary<DivOp>(in(n, 0), y, elem);
    if (mode == "trunc")
      q = TruncOp::create(b, loc, q);
    else if (mode == "floor")
      q = FloorOp::create(b, loc, q);
    setTensor(n, q);
  };
  C["aten::div_"] = C["aten::div"];
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
  // fmod: x - trunc(x / y) y, the remainder with the dividend's sign;
  // remainder: fmod moved by y where it is nonzero and its sign differs
  // from y's (Python's %). Integer division truncates already.
  auto fmod = [this, scalarOperand](OpCall *n) {
    Imp y = scalarOperand(n, 1);
    Type elem = promote(in(n, 0), y);
    MValue q = binary<DivOp>(in(n, 0), y, elem);
    if (mlir::isa<mlir::FloatType>(elem))
      q = TruncOp::create(b, loc, q);
    return binary<SubOp>(
        in(n, 0), Imp::ofTensor(binary<MulOp>(Imp::ofTensor(q), y, elem)),
        elem);
  };
  C["aten::fmod"] = [this, fmod](OpCall *n) { setTensor(n, fmod(n)); };
  C["aten::remainder"] = [this, fmod, scalarOperand](OpCall *n) {
    Imp y = scalarOperand(n, 1);
    Imp r = Imp::ofTensor(fmod(n));
    Type elem = elemOf(r.tensor);
    MValue nonzero = compare(CompareDirection::NE, r, Imp::ofInt(0));
    MValue differ = compare(
        CompareDirection::LT,
        Imp::ofTensor(binary<MulOp>(r, y, elem)), Imp::ofInt(0));
    MValue shift =
        select(nonzero, Imp::ofTensor(differ), Imp::ofBool(false));
    setTensor(n, select(shift, Imp::ofTensor(binary<AddOp>(r, y, elem)), r));
  };
  // atan2(y, x) = atan(y / x), moved by pi where x < 0 (towards y's side).
  C["aten::atan2"] = [this](OpCall *n) {
    Type elem = promote(in(n, 0), in(n, 1));
    if (!mlir::isa<mlir::FloatType>(elem))
      elem = f32();
    Imp t = Imp::ofTensor(binary<DivOp>(in(n, 0), in(n, 1), elem));
    Imp a = Imp::ofTensor(AtanOp::create(b, loc, t.tensor));
    MValue left = compare(CompareDirection::LT, in(n, 1), Imp::ofInt(0));
    MValue upper = compare(CompareDirection::GE, in(n, 0), Imp::ofInt(0));
    Imp turn = Imp::ofTensor(select(
        upper, Imp::ofTensor(splat(shapeOf(a.tensor), elem, M_PI)),
        Imp::ofFloat(-M_PI)));
    setTensor(n, select(left, Imp::ofTensor(binary<AddOp>(a, turn, elem)), a));
  };
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
  C["aten::tan"] = unary(TanOp());
  C["aten::asin"] = unary(AsinOp());
  C["aten::acos"] = unary(AcosOp());
  C["aten::atan"] = unary(AtanOp());
  C["aten::sinh"] = unary(SinhOp());
  C["aten::cosh"] = unary(CoshOp());
  C["aten::asinh"] = unary(AsinhOp());
  C["aten::acosh"] = unary(AcoshOp());
  C["aten::atanh"] = unary(AtanhOp());
  C["aten::expm1"] = unary(Expm1Op());
  C["aten::log1p"] = unary(Log1pOp());
  // log2 and log10: the natural log times a constant (within an ulp more).
  auto logBase = [this](double base) {
    return [this, base](OpCall *n) {
      MValue x = tensorIn(n, 0);
      if (!mlir::isa<mlir::FloatType>(elemOf(x)))
        x = convert(x, f32());
      setTensor(n, binary<MulOp>(Imp::ofTensor(LogOp::create(b, loc, x)),
                                 Imp::ofFloat(1.0 / std::log(base))));
    };
  };
  C["aten::log2"] = logBase(2.0);
  C["aten::log10"] = logBase(10.0);
  // Rounding keeps an integer tensor as it is.
  auto rounding = [this](auto tag) {
    using OpT = decltype(tag);
    return [this](OpCall *n) {
      if (n->numInputs() > 1 && in(n, 1).isNumber() && in(n, 1).asInt() != 0)
        fail("rounding to decimal places is not supported");
      MValue x = tensorIn(n, 0);
      setTensor(n, mlir::isa<mlir::FloatType>(elemOf(x))
                       ? MValue(OpT::create(b, loc, x))
                       : x);
    };
  };
  C["aten::floor"] = rounding(FloorOp());
  C["aten::ceil"] = rounding(CeilOp());
  C["aten::trunc"] = rounding(TruncOp());
  C["aten::round"] = rounding(RoundOp());
  C["aten::abs"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    if (mlir::isa<mlir::FloatType>(elemOf(x))) {
      setTensor(n, AbsOp::create(b, loc, x));
      return;
    }
    MValue negative = compare(CompareDirection::LT, in(n, 0), Imp::ofInt(0));
    setTensor(n, select(negative,
                        Imp::ofTensor(binary<SubOp>(Imp::ofInt(0), in(n, 0))),
                        in(n, 0)));
  };
  // (x > 0) - (x < 0), in x's type.
  C["aten::sign"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    Type elem = elemOf(x);
    if (elem.isInteger(1)) {
      setTensor(n, x);
      return;
    }
    MValue pos = convert(compare(CompareDirection::GT, in(n, 0),
                                 Imp::ofInt(0)), elem);
    MValue neg = convert(compare(CompareDirection::LT, in(n, 0),
                                 Imp::ofInt(0)), elem);
    setTensor(n, binary<SubOp>(Imp::ofTensor(pos), Imp::ofTensor(neg), elem));
  };
  C["aten::isnan"] = [this](OpCall *n) {
    setTensor(n, compare(CompareDirection::NE, in(n, 0), in(n, 0)));
  };
  C["aten::isinf"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    if (!mlir::isa<mlir::FloatType>(elemOf(x))) {
      setTensor(n, splat(shapeOf(x), i1(), 0.0));
      return;
    }
    setTensor(n, compare(CompareDirection::EQ,
                         Imp::ofTensor(AbsOp::create(b, loc, x)),
                         Imp::ofFloat(INFINITY)));
  };
  C["aten::hardtanh"] = [this](OpCall *n) {
    Imp x = Imp::ofTensor(binary<MaxOp>(in(n, 0), in(n, 1)));
    setTensor(n, binary<MinOp>(x, in(n, 2)));
  };
  C["aten::leaky_relu"] = [this](OpCall *n) {
    MValue positive = compare(CompareDirection::GT, in(n, 0), Imp::ofInt(0));
    Imp scaled = Imp::ofTensor(binary<MulOp>(in(n, 0), in(n, 1)));
    setTensor(n, select(positive, in(n, 0), scaled));
  };
  // elu(x, alpha, scale, input_scale) = scale x for x > 0, else
  // alpha scale expm1(input_scale x).
  C["aten::elu"] = [this](OpCall *n) {
    double alpha = in(n, 1).asDouble(), scale = in(n, 2).asDouble(),
           inputScale = in(n, 3).asDouble();
    MValue x = tensorIn(n, 0);
    MValue positive = compare(CompareDirection::GT, in(n, 0), Imp::ofInt(0));
    Imp inner = Imp::ofTensor(binary<MulOp>(in(n, 0), Imp::ofFloat(inputScale)));
    MValue curve = Expm1Op::create(b, loc, inner.tensor);
    Imp low = Imp::ofTensor(
        binary<MulOp>(Imp::ofTensor(curve), Imp::ofFloat(alpha * scale)));
    Imp high = Imp::ofTensor(binary<MulOp>(Imp::ofTensor(x), Imp::ofFloat(scale)));
    setTensor(n, select(positive, high, low));
  };
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
