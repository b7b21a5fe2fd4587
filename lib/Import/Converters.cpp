//===- Converters.cpp - ATen/prim operator converters ---------------------===//
//
// One entry per TorchScript node kind. A converter reads its operands from
// the environment, computes the result shape, emits glimmer ops (or
// evaluates host values) and binds its outputs. Unsupported argument
// combinations fail with a message naming what is unsupported.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "glimmer/Dialect/Glimmer/Transforms/AttentionMasks.h"

#include <torch/csrc/jit/ir/constants.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <limits>

using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// Converts a constant IValue to an Imp; tensors are materialized by the
/// caller (they need the builder).
bool ivalueToImp(const c10::IValue &v, Imp &out) {
  if (v.isNone()) {
    out.kind = Imp::None;
    return true;
  }
  if (v.isBool()) {
    out = Imp::ofBool(v.toBool());
    return true;
  }
  if (v.isInt()) {
    out = Imp::ofInt(v.toInt());
    return true;
  }
  if (v.isDouble()) {
    out = Imp::ofFloat(v.toDouble());
    return true;
  }
  if (v.isString()) {
    out.kind = Imp::Str;
    out.s = v.toStringRef();
    return true;
  }
  if (v.isDevice()) {
    out.kind = Imp::Device;
    return true;
  }
  if (v.isIntList()) {
    std::vector<Imp> l;
    for (int64_t x : v.toIntVector())
      l.push_back(Imp::ofInt(x));
    out = Imp::ofList(std::move(l));
    return true;
  }
  if (v.isDoubleList()) {
    std::vector<Imp> l;
    for (double x : v.toDoubleVector())
      l.push_back(Imp::ofFloat(x));
    out = Imp::ofList(std::move(l));
    return true;
  }
  if (v.isBoolList()) {
    std::vector<Imp> l;
    for (bool x : v.toBoolList())
      l.push_back(Imp::ofBool(x));
    out = Imp::ofList(std::move(l));
    return true;
  }
  return false;
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace

void Importer::registerConverters() {
  auto &C = converters;

  //===--------------------------------------------------------------------===//
  // Host values: constants, lists, tuples, attributes, scalar math
  //===--------------------------------------------------------------------===//

  C["prim::Constant"] = [this](jit::Node *n) {
    if (n->outputs().empty())
      return;
    std::optional<c10::IValue> v = jit::toIValue(n->output());
    if (!v)
      fail("constant of an unsupported kind");
    if (v->isTensor()) {
      Imp t = Imp::ofTensor(constantFromTensor(v->toTensor()));
      t.value = v->toTensor();
      setOut(n, 0, t);
      return;
    }
    Imp out;
    if (!ivalueToImp(*v, out))
      fail("constant of unsupported kind " + v->tagKind());
    setOut(n, 0, out);
  };

  C["prim::GetAttr"] = [this](jit::Node *n) {
    Imp &owner = in(n, 0);
    if (owner.kind != Imp::Module)
      fail("attribute read on a value that is not a module");
    std::string name = n->s(c10::attr::name);
    std::string path = owner.s.empty() ? name : owner.s + "." + name;
    auto it = stateArgs.find(path);
    if (it != stateArgs.end()) {
      setTensor(n, it->second);
      return;
    }
    // Walk the module tree to see what the attribute is.
    c10::IValue value = module._ivalue();
    std::stringstream parts(path);
    std::string part;
    while (std::getline(parts, part, '.'))
      value = value.toObject()->getAttr(part);
    if (value.isModule() || value.isObject()) {
      Imp m;
      m.kind = Imp::Module;
      m.s = path;
      setOut(n, 0, m);
      return;
    }
    if (value.isTensor())
      fail("module attribute '" + path +
           "' is a tensor that is neither a parameter nor a buffer");
    Imp out;
    if (!ivalueToImp(value, out))
      fail("module attribute '" + path + "' has an unsupported kind");
    setOut(n, 0, out);
  };

  C["prim::ListConstruct"] = [this](jit::Node *n) {
    std::vector<Imp> l;
    for (size_t i = 0; i < n->inputs().size(); ++i)
      l.push_back(in(n, i));
    setOut(n, 0, Imp::ofList(std::move(l)));
  };
  C["prim::TupleConstruct"] = C["prim::ListConstruct"];
  auto unpack = [this](jit::Node *n) {
    Imp &l = in(n, 0);
    if (l.kind != Imp::List || l.list.size() != n->outputs().size())
      fail("cannot unpack " + std::to_string(n->outputs().size()) +
           " values from this operand");
    for (size_t i = 0; i < n->outputs().size(); ++i)
      setOut(n, i, l.list[i]);
  };
  C["prim::ListUnpack"] = unpack;
  C["prim::TupleUnpack"] = unpack;
  C["prim::TupleIndex"] = [this](jit::Node *n) {
    Imp &l = in(n, 0);
    int64_t i = in(n, 1).asInt();
    if (l.kind != Imp::List || i < 0 || i >= int64_t(l.list.size()))
      fail("tuple index out of range");
    setOut(n, 0, l.list[i]);
  };
  C["aten::__getitem__"] = [this](jit::Node *n) {
    Imp &l = in(n, 0);
    int64_t i = in(n, 1).asInt();
    if (l.kind != Imp::List)
      fail("indexing a value that is not a list");
    if (i < 0)
      i += l.list.size();
    if (i < 0 || i >= int64_t(l.list.size()))
      fail("list index out of range");
    setOut(n, 0, l.list[i]);
  };
  C["aten::len"] = [this](jit::Node *n) {
    Imp &l = in(n, 0);
    if (l.kind == Imp::List)
      setOut(n, 0, Imp::ofInt(l.list.size()));
    else if (l.kind == Imp::Tensor && !shapeOf(l.tensor).empty())
      setOut(n, 0, Imp::ofInt(shapeOf(l.tensor)[0]));
    else
      fail("len() of an unsupported value");
  };

  C["aten::size"] = [this](jit::Node *n) {
    MValue t = tensorIn(n, 0);
    auto shape = shapeOf(t);
    if (n->inputs().size() == 1) {
      std::vector<Imp> l;
      for (int64_t d : shape)
        l.push_back(Imp::ofInt(d));
      setOut(n, 0, Imp::ofList(std::move(l)));
      return;
    }
    setOut(n, 0, Imp::ofInt(shape[normDim(in(n, 1).asInt(), shape.size())]));
  };
  C["aten::dim"] = [this](jit::Node *n) {
    setOut(n, 0, Imp::ofInt(shapeOf(tensorIn(n, 0)).size()));
  };
  C["aten::numel"] = [this](jit::Node *n) {
    setOut(n, 0, Imp::ofInt(numElements(shapeOf(tensorIn(n, 0)))));
  };
  C["prim::device"] = [this](jit::Node *n) {
    Imp d;
    d.kind = Imp::Device;
    setOut(n, 0, d);
  };
  C["prim::dtype"] = [this](jit::Node *n) {
    setOut(n, 0,
           Imp::ofInt(int64_t(scalarTypeFor(elemOf(tensorIn(n, 0))))));
  };
  // Scalars that TorchScript boxes into zero-dim tensors stay host numbers
  // until a tensor op needs them.
  C["prim::NumToTensor"] = [this](jit::Node *n) { setOut(n, 0, in(n, 0)); };
  auto toNumber = [this](jit::Node *n, bool integral) {
    Imp &v = in(n, 0);
    if (!v.isNumber())
      fail("converting a tensor computed at run time to a Python number is "
           "not supported (the value must be known at compile time)");
    setOut(n, 0, integral ? Imp::ofInt(v.asInt()) : Imp::ofFloat(v.asDouble()));
  };
  C["aten::Int"] = [toNumber](jit::Node *n) { toNumber(n, true); };
  C["aten::Float"] = [toNumber](jit::Node *n) { toNumber(n, false); };
  C["aten::ScalarImplicit"] = [this](jit::Node *n) { setOut(n, 0, in(n, 0)); };
  // Tensor.item() keeps the scalar's kind: an integer stays an integer.
  C["aten::item"] = [this](jit::Node *n) {
    Imp &v = in(n, 0);
    if (!v.isNumber())
      fail("converting a tensor computed at run time to a Python number is "
           "not supported (the value must be known at compile time)");
    setOut(n, 0, v);
  };

  //===--------------------------------------------------------------------===//
  // Elementwise arithmetic (tensor or host numbers)
  //===--------------------------------------------------------------------===//

  // Host evaluation when no operand is a tensor.
  auto hostArith = [this](jit::Node *n, char op) -> bool {
    Imp &x = in(n, 0), &y = in(n, 1);
    if (!x.isNumber() || !y.isNumber())
      return false;
    bool isFloat = x.kind == Imp::Float || y.kind == Imp::Float || op == '/';
    double a = x.asDouble(), c = y.asDouble();
    double r = op == '+' ? a + c : op == '-' ? a - c : op == '*' ? a * c
             : op == '/' ? a / c : std::floor(a / c);
    setOut(n, 0, isFloat ? Imp::ofFloat(r) : Imp::ofInt(int64_t(r)));
    return true;
  };
  // Tracing records the Python scalar of `x * 2.5` as a zero-dim tensor
  // constant, and TorchScript runs add/sub/mul/div with such an operand as
  // the Scalar overload: it promotes as a Python number (int_tensor * 2.5 is
  // f32, not f64).
  auto scalarOperand = [this](jit::Node *n, size_t i) -> Imp {
    Imp v = in(n, i);
    if (v.kind != Imp::Tensor || !v.value.defined() || v.value.dim() != 0 ||
        n->input(i)->node()->kind() != c10::prim::Constant)
      return v;
    if (v.value.is_floating_point())
      return Imp::ofFloat(v.value.item<double>());
    if (v.value.scalar_type() == c10::ScalarType::Bool)
      return Imp::ofBool(v.value.item<bool>());
    return Imp::ofInt(v.value.item<int64_t>());
  };
  auto alphaScaled = [this, scalarOperand](jit::Node *n) -> Imp {
    Imp y = scalarOperand(n, 1);
    if (n->inputs().size() > 2 && in(n, 2).isNumber() &&
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
  C["aten::add"] = [this, hostArith, alphaScaled](jit::Node *n) {
    if (hostArith(n, '+'))
      return;
    setTensor(n, binary<AddOp>(in(n, 0), alphaScaled(n)));
  };
  C["aten::add_"] = C["aten::add"];
  C["aten::sub"] = [this, hostArith, alphaScaled](jit::Node *n) {
    if (hostArith(n, '-'))
      return;
    setTensor(n, binary<SubOp>(in(n, 0), alphaScaled(n)));
  };
  // rsub(self, other, alpha) = other - alpha * self: alpha scales self.
  C["aten::rsub"] = [this](jit::Node *n) {
    Imp self = in(n, 0);
    if (n->inputs().size() > 2 && in(n, 2).isNumber() &&
        in(n, 2).asDouble() != 1.0)
      self = Imp::ofTensor(binary<MulOp>(self, in(n, 2)));
    setTensor(n, binary<SubOp>(in(n, 1), self));
  };
  C["aten::mul"] = [this, hostArith, scalarOperand](jit::Node *n) {
    if (hostArith(n, '*'))
      return;
    setTensor(n, binary<MulOp>(in(n, 0), scalarOperand(n, 1)));
  };
  C["aten::mul_"] = C["aten::mul"];
  C["aten::div"] = [this, hostArith, scalarOperand](jit::Node *n) {
    if (n->inputs().size() > 2 && in(n, 2).kind != Imp::None)
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
  auto floorDivide = [this, scalarOperand](jit::Node *n) {
    Imp y = scalarOperand(n, 1);
    Type elem = promote(in(n, 0), y);
    if (!mlir::isa<mlir::IntegerType>(elem) || elem.isInteger(1))
      fail("floor division of floating-point tensors is not supported");
    MValue q = binary<DivOp>(in(n, 0), y, elem);
    MValue r = binary<SubOp>(in(n, 0),
                             Imp::ofTensor(binary<MulOp>(Imp::ofTensor(q), y, elem)),
                             elem);
    MValue adjust = compare(
        CompareDirection::LT,
        Imp::ofTensor(binary<MulOp>(Imp::ofTensor(r), y, elem)), Imp::ofInt(0));
    MValue lower = binary<SubOp>(Imp::ofTensor(q), Imp::ofInt(1), elem);
    return MValue(SelectOp::create(b, loc, q.getType(), adjust, lower, q));
  };
  C["aten::floordiv"] = [this, hostArith, floorDivide](jit::Node *n) {
    if (!hostArith(n, 'f'))
      setTensor(n, floorDivide(n));
  };
  C["aten::reciprocal"] = [this](jit::Node *n) {
    Imp &x = in(n, 0);
    Type elem = x.kind == Imp::Tensor && mlir::isa<mlir::FloatType>(elemOf(x.tensor))
                    ? elemOf(x.tensor)
                    : f32();
    setTensor(n, binary<DivOp>(Imp::ofFloat(1.0), x, elem));
  };
  C["aten::floor_divide"] = C["aten::floordiv"];
  C["aten::neg"] = [this](jit::Node *n) {
    Imp &x = in(n, 0);
    if (x.isNumber()) {
      setOut(n, 0, x.kind == Imp::Float ? Imp::ofFloat(-x.f)
                                        : Imp::ofInt(-x.asInt()));
      return;
    }
    MValue t = x.tensor;
    if (mlir::isa<mlir::FloatType>(elemOf(t)))
      setTensor(n, NegOp::create(b, loc, t));
    else
      setTensor(n, binary<SubOp>(Imp::ofInt(0), x));
  };
  C["aten::pow"] = [this](jit::Node *n) {
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
  C["aten::maximum"] = [this](jit::Node *n) {
    setTensor(n, binary<MaxOp>(in(n, 0), in(n, 1)));
  };
  C["aten::minimum"] = [this](jit::Node *n) {
    setTensor(n, binary<MinOp>(in(n, 0), in(n, 1)));
  };
  auto clampMinMax = [this](jit::Node *n, Imp *lo, Imp *hi) {
    // Bounds take part in type promotion: clamp(int, min=0.5) is float.
    Imp x = in(n, 0);
    if (lo && lo->kind != Imp::None)
      x = Imp::ofTensor(binary<MaxOp>(x, *lo));
    if (hi && hi->kind != Imp::None)
      x = Imp::ofTensor(binary<MinOp>(x, *hi));
    setTensor(n, x.tensor);
  };
  C["aten::clamp"] = [this, clampMinMax](jit::Node *n) {
    clampMinMax(n, &in(n, 1), n->inputs().size() > 2 ? &in(n, 2) : nullptr);
  };
  C["aten::clamp_min"] = [this, clampMinMax](jit::Node *n) {
    clampMinMax(n, &in(n, 1), nullptr);
  };
  C["aten::clamp_max"] = [this, clampMinMax](jit::Node *n) {
    clampMinMax(n, nullptr, &in(n, 1));
  };

  // Float unary ops; integer inputs are promoted to f32 as PyTorch does.
  auto unary = [this](auto tag) {
    using OpT = decltype(tag);
    return [this](jit::Node *n) {
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
  C["aten::relu"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    if (mlir::isa<mlir::FloatType>(elemOf(x)))
      setTensor(n, ReluOp::create(b, loc, x));
    else // relu of an integer tensor stays integral
      setTensor(n, binary<MaxOp>(in(n, 0), Imp::ofInt(0)));
  };
  C["aten::sin"] = unary(SinOp());
  C["aten::cos"] = unary(CosOp());
  C["aten::gelu"] = [this](jit::Node *n) {
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

  // Comparisons.
  auto cmp = [this](CompareDirection dir) {
    return [this, dir](jit::Node *n) {
      Imp &x = in(n, 0), &y = in(n, 1);
      if (x.isNumber() && y.isNumber()) {
        double a = x.asDouble(), c = y.asDouble();
        bool r = dir == CompareDirection::EQ ? a == c
                 : dir == CompareDirection::NE ? a != c
                 : dir == CompareDirection::LT ? a < c
                 : dir == CompareDirection::LE ? a <= c
                 : dir == CompareDirection::GT ? a > c
                                               : a >= c;
        setOut(n, 0, Imp::ofBool(r));
        return;
      }
      setTensor(n, compare(dir, x, y));
    };
  };
  C["aten::eq"] = cmp(CompareDirection::EQ);
  C["aten::ne"] = cmp(CompareDirection::NE);
  C["aten::lt"] = cmp(CompareDirection::LT);
  C["aten::le"] = cmp(CompareDirection::LE);
  C["aten::gt"] = cmp(CompareDirection::GT);
  C["aten::ge"] = cmp(CompareDirection::GE);
  auto asMask = [this](const Imp &v) {
    if (v.kind != Imp::Tensor)
      fail("expected a boolean tensor");
    MValue t = v.tensor;
    if (elemOf(t).isInteger(1))
      return t;
    return compare(CompareDirection::NE, v, Imp::ofInt(0));
  };
  // any / all (whole tensor, or along dims): the mask as 0/1 integers,
  // reduced by max / min.
  auto anyAll = [this, asMask](ReductionKind kind) {
    return [this, asMask, kind](jit::Node *n) {
      MValue m = asMask(in(n, 0));
      std::vector<int64_t> dims;
      bool keep = false;
      if (n->inputs().size() > 1 && in(n, 1).kind != Imp::None)
        dims = intList(in(n, 1));
      if (n->inputs().size() > 2 && in(n, 2).kind == Imp::Bool)
        keep = in(n, 2).b;
      MValue ints = convert(m, i64());
      MValue r = reduce(kind, ints, dims, keep);
      setTensor(n, compare(CompareDirection::NE, Imp::ofTensor(r),
                           Imp::ofInt(0)));
    };
  };
  C["aten::any"] = anyAll(ReductionKind::Max);
  C["aten::all"] = anyAll(ReductionKind::Min);
  C["aten::logical_not"] = [this, asMask](jit::Node *n) {
    MValue m = asMask(in(n, 0));
    setTensor(n, compare(CompareDirection::EQ, Imp::ofTensor(m),
                         Imp::ofBool(false)));
  };
  C["aten::bitwise_not"] = [this, asMask](jit::Node *n) {
    if (!elemOf(tensorIn(n, 0)).isInteger(1))
      fail("bitwise_not of non-boolean tensors is not supported");
    MValue m = asMask(in(n, 0));
    setTensor(n, compare(CompareDirection::EQ, Imp::ofTensor(m),
                         Imp::ofBool(false)));
  };
  C["aten::logical_and"] = [this, asMask](jit::Node *n) {
    MValue x = asMask(in(n, 0)), y = asMask(in(n, 1));
    setTensor(n, select(x, Imp::ofTensor(y), Imp::ofBool(false)));
  };
  // &, | and their bitwise_* spellings equal the logical ops on booleans
  // only; on integers they are bitwise, which the dialect has no op for.
  auto boolOnly = [this](const char *name, bool isAnd) {
    return [this, name, isAnd](jit::Node *n) {
      const Imp &x = in(n, 0), &y = in(n, 1);
      if (x.kind == Imp::Bool && y.kind == Imp::Bool) {
        setOut(n, 0, Imp::ofBool(isAnd ? x.b && y.b : x.b || y.b));
        return;
      }
      for (const Imp *v : {&x, &y})
        if (v->kind != Imp::Tensor || !elemOf(v->tensor).isInteger(1))
          fail(std::string(name) + " of non-boolean operands is not supported");
      converters[isAnd ? "aten::logical_and" : "aten::logical_or"](n);
    };
  };
  C["aten::__and__"] = boolOnly("aten::__and__", true);
  C["aten::bitwise_and"] = boolOnly("aten::bitwise_and", true);
  C["aten::logical_or"] = [this, asMask](jit::Node *n) {
    MValue x = asMask(in(n, 0)), y = asMask(in(n, 1));
    setTensor(n, select(x, Imp::ofBool(true), Imp::ofTensor(y)));
  };
  C["aten::__or__"] = boolOnly("aten::__or__", false);
  C["aten::__ior__"] = boolOnly("aten::__ior__", false);
  C["aten::__iand__"] = boolOnly("aten::__iand__", true);
  C["aten::bitwise_or"] = boolOnly("aten::bitwise_or", false);

  C["aten::where"] = [this, asMask](jit::Node *n) {
    if (n->inputs().size() != 3)
      fail("where(condition) without values is not supported");
    MValue c = asMask(in(n, 0));
    setTensor(n, select(c, in(n, 1), in(n, 2)));
  };
  C["aten::masked_fill"] = [this, asMask](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    MValue m = asMask(in(n, 1));
    Imp fill = in(n, 2);
    MValue filled =
        select(m, Imp::ofTensor(materialize(fill, elemOf(x), {})),
               Imp::ofTensor(x));
    setTensor(n, convert(filled, elemOf(x)));
  };
  C["aten::masked_fill_"] = C["aten::masked_fill"];

  // Casts.
  auto castTo = [this](jit::Node *n, Type elem) {
    Imp &x = in(n, 0);
    if (x.isNumber()) {
      setOut(n, 0, mlir::isa<mlir::FloatType>(elem)
                       ? Imp::ofFloat(x.asDouble())
                       : Imp::ofInt(x.asInt()));
      return;
    }
    setTensor(n, convert(x.tensor, elem));
  };
  C["aten::to"] = [this, castTo](jit::Node *n) {
    // to(Tensor other) / to(dtype) / to(device, dtype) / to(dtype, layout...)
    Imp &arg1 = in(n, 1);
    if (arg1.kind == Imp::Tensor) {
      castTo(n, elemOf(arg1.tensor));
      return;
    }
    Imp *dtype = namedInput(n, "dtype");
    if (!dtype || dtype->kind == Imp::None) {
      setOut(n, 0, in(n, 0)); // device-only move
      return;
    }
    castTo(n, elementTypeFor(c10::ScalarType(dtype->asInt())));
  };
  C["aten::type_as"] = [this, castTo](jit::Node *n) {
    castTo(n, elemOf(tensorIn(n, 1)));
  };
  C["aten::float"] = [this, castTo](jit::Node *n) { castTo(n, f32()); };
  C["aten::double"] = [this, castTo](jit::Node *n) {
    castTo(n, overrideFloat(b.getF64Type()));
  };
  C["aten::long"] = [this, castTo](jit::Node *n) { castTo(n, i64()); };
  C["aten::bool"] = [this, castTo](jit::Node *n) { castTo(n, i1()); };
  auto identity = [this](jit::Node *n) { setOut(n, 0, in(n, 0)); };
  C["aten::contiguous"] = identity;
  C["aten::clone"] = identity;
  C["aten::detach"] = identity;
  C["aten::alias"] = identity;
  // Conjugate and negative bits are lazy flags of complex views; the
  // importer's tensors are real, where both are the identity.
  C["aten::resolve_conj"] = identity;
  C["aten::resolve_neg"] = identity;
  C["aten::lift_fresh"] = identity;
  C["aten::dropout"] = [this](jit::Node *n) {
    double p = in(n, 1).asDouble();
    bool train = in(n, 2).asInt() != 0;
    if (train && p > 0)
      fail("dropout with p = " + std::to_string(p) +
           " in training mode is not supported (training parity needs a "
           "deterministic program; set dropout to 0)");
    setOut(n, 0, in(n, 0));
  };
  C["aten::feature_dropout"] = C["aten::dropout"];

  //===--------------------------------------------------------------------===//
  // Shapes
  //===--------------------------------------------------------------------===//

  auto viewTo = [this](jit::Node *n, std::vector<int64_t> shape) {
    MValue x = tensorIn(n, 0);
    int64_t total = numElements(shapeOf(x)), known = 1, infer = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == -1) {
        if (infer >= 0)
          fail("view with more than one -1");
        infer = i;
      } else {
        known *= shape[i];
      }
    }
    if (infer >= 0)
      shape[infer] = known ? total / known : 0;
    if (numElements(shape) != total)
      fail("cannot view a tensor of shape " + shapeString(shapeOf(x)) +
           " as " + shapeString(shape));
    setTensor(n, reshape(x, shape));
  };
  C["aten::view"] = [this, viewTo](jit::Node *n) {
    viewTo(n, intList(in(n, 1)));
  };
  C["aten::reshape"] = C["aten::view"];
  C["aten::_reshape_alias"] = C["aten::view"];
  C["aten::view_as"] = [this, viewTo](jit::Node *n) {
    auto s = shapeOf(tensorIn(n, 1));
    viewTo(n, std::vector<int64_t>(s.begin(), s.end()));
  };
  C["aten::reshape_as"] = C["aten::view_as"];
  C["aten::flatten"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    auto s = shapeOf(x);
    int64_t rank = s.size();
    if (rank == 0) {
      setTensor(n, reshape(x, {1}));
      return;
    }
    int64_t start = normDim(in(n, 1).asInt(), rank),
            end = normDim(in(n, 2).asInt(), rank);
    std::vector<int64_t> out(s.begin(), s.begin() + start);
    int64_t prod = 1;
    for (int64_t d = start; d <= end; ++d)
      prod *= s[d];
    out.push_back(prod);
    out.insert(out.end(), s.begin() + end + 1, s.end());
    setTensor(n, reshape(x, out));
  };
  C["aten::unflatten"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    auto s = shapeOf(x);
    int64_t d = normDim(in(n, 1).asInt(), s.size());
    std::vector<int64_t> sizes = intList(in(n, 2));
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i] == -1)
        infer = i;
      else
        known *= sizes[i];
    if (infer >= 0)
      sizes[infer] = s[d] / known;
    std::vector<int64_t> out(s.begin(), s.begin() + d);
    out.insert(out.end(), sizes.begin(), sizes.end());
    out.insert(out.end(), s.begin() + d + 1, s.end());
    setTensor(n, reshape(x, out));
  };
  C["aten::unsqueeze"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    auto s = shapeOf(x);
    int64_t d = normDim(in(n, 1).asInt(), s.size() + 1);
    std::vector<int64_t> out(s.begin(), s.end());
    out.insert(out.begin() + d, 1);
    setTensor(n, reshape(x, out));
  };
  C["aten::squeeze"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    auto s = shapeOf(x);
    std::vector<int64_t> dims;
    if (n->inputs().size() > 1)
      for (int64_t d : intList(in(n, 1)))
        dims.push_back(normDim(d, s.size()));
    std::vector<int64_t> out;
    for (int64_t d = 0; d < int64_t(s.size()); ++d) {
      bool squeeze = s[d] == 1 && (dims.empty() || std::count(dims.begin(),
                                                              dims.end(), d));
      if (!squeeze)
        out.push_back(s[d]);
    }
    setTensor(n, reshape(x, out));
  };
  C["aten::transpose"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    int64_t rank = shapeOf(x).size();
    if (rank < 2) {
      setTensor(n, x);
      return;
    }
    int64_t a = normDim(in(n, 1).asInt(), rank),
            c = normDim(in(n, 2).asInt(), rank);
    std::vector<int64_t> perm(rank);
    for (int64_t i = 0; i < rank; ++i)
      perm[i] = i;
    std::swap(perm[a], perm[c]);
    setTensor(n, transpose(x, perm));
  };
  C["aten::t"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    if (shapeOf(x).size() < 2)
      setTensor(n, x);
    else
      setTensor(n, transpose(x, {1, 0}));
  };
  C["aten::permute"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> perm = intList(in(n, 1));
    for (int64_t &p : perm)
      p = normDim(p, shapeOf(x).size());
    setTensor(n, transpose(x, perm));
  };
  auto expandTo = [this](MValue x, std::vector<int64_t> sizes) {
    auto s = shapeOf(x);
    size_t offset = sizes.size() - s.size();
    for (size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i] == -1) {
        if (i < offset)
          fail("expand: -1 is not allowed for a new leading dimension");
        sizes[i] = s[i - offset];
      }
    return broadcastTo(x, sizes);
  };
  C["aten::expand"] = [this, expandTo](jit::Node *n) {
    setTensor(n, expandTo(tensorIn(n, 0), intList(in(n, 1))));
  };
  C["aten::expand_as"] = [this, expandTo](jit::Node *n) {
    auto s = shapeOf(tensorIn(n, 1));
    setTensor(n, expandTo(tensorIn(n, 0), {s.begin(), s.end()}));
  };
  C["aten::repeat"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> reps = intList(in(n, 1));
    auto s = shapeOf(x);
    if (reps.size() < s.size())
      fail("repeat needs at least as many repeats as dimensions");
    // Interleave a broadcast dimension before each input dimension, then
    // merge: [r0, s0, r1, s1, ...] -> [r0*s0, r1*s1, ...].
    size_t offset = reps.size() - s.size();
    std::vector<int64_t> in2, bshape, out;
    for (size_t i = 0; i < reps.size(); ++i) {
      int64_t si = i < offset ? 1 : s[i - offset];
      in2.insert(in2.end(), {1, si});
      bshape.insert(bshape.end(), {reps[i], si});
      out.push_back(reps[i] * si);
    }
    setTensor(n, reshape(broadcastTo(reshape(x, in2), bshape), out));
  };
  auto clampIndex = [](int64_t v, int64_t size) {
    if (v < 0)
      v += size;
    return std::min(std::max<int64_t>(v, 0), size);
  };
  C["aten::slice"] = [this, clampIndex](jit::Node *n) {
    Imp &x = in(n, 0);
    if (x.kind == Imp::List) {
      int64_t size = x.list.size();
      int64_t start = in(n, 1).kind == Imp::None ? 0
                                                 : clampIndex(in(n, 1).asInt(), size);
      int64_t end = in(n, 2).kind == Imp::None ? size
                                               : clampIndex(in(n, 2).asInt(), size);
      int64_t step = in(n, 3).asInt();
      std::vector<Imp> out;
      for (int64_t i = start; i < end; i += step)
        out.push_back(x.list[i]);
      setOut(n, 0, Imp::ofList(out));
      return;
    }
    // A view of a tensor (Aliasing.cpp), with PyTorch's index rules.
    setTensor(n, applyView(tensorIn(n, 0), *viewStepOf(n)));
  };
  C["aten::narrow"] = [this](jit::Node *n) {
    MValue t = tensorIn(n, 0);
    auto s = shapeOf(t);
    int64_t dim = normDim(in(n, 1).asInt(), s.size());
    int64_t start = in(n, 2).asInt();
    if (start < 0)
      start += s[dim];
    setTensor(n, slice(t, dim, start, start + in(n, 3).asInt(), 1));
  };
  C["aten::select"] = [this](jit::Node *n) {
    setTensor(n, applyView(tensorIn(n, 0), *viewStepOf(n)));
  };
  // An in-place write; Aliasing.cpp puts it back into what `self` views.
  C["aten::copy_"] = [this](jit::Node *n) {
    MValue self = tensorIn(n, 0);
    setTensor(n, broadcastTo(convert(tensorIn(n, 1), elemOf(self)),
                             shapeOf(self)));
  };
  C["aten::unbind"] = [this](jit::Node *n) {
    MValue t = tensorIn(n, 0);
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(t).size());
    std::vector<Imp> parts;
    for (int64_t i = 0; i < shapeOf(t)[dim]; ++i)
      parts.push_back(
          Imp::ofTensor(applyView(t, ViewStep{true, dim, i, i + 1, 1})));
    setOut(n, 0, Imp::ofList(parts));
  };
  auto splitBy = [this](MValue t, int64_t dim, std::vector<int64_t> sizes) {
    std::vector<Imp> parts;
    int64_t start = 0;
    for (int64_t size : sizes) {
      parts.push_back(Imp::ofTensor(slice(t, dim, start, start + size, 1)));
      start += size;
    }
    return Imp::ofList(parts);
  };
  C["aten::chunk"] = [this, splitBy](jit::Node *n) {
    MValue t = tensorIn(n, 0);
    int64_t chunks = in(n, 1).asInt();
    int64_t dim = normDim(in(n, 2).asInt(), shapeOf(t).size());
    int64_t size = shapeOf(t)[dim];
    int64_t each = (size + chunks - 1) / chunks;
    std::vector<int64_t> sizes;
    for (int64_t start = 0; start < size; start += each)
      sizes.push_back(std::min(each, size - start));
    setOut(n, 0, splitBy(t, dim, sizes));
  };
  C["aten::split"] = [this, splitBy](jit::Node *n) {
    MValue t = tensorIn(n, 0);
    int64_t dim = normDim(in(n, 2).asInt(), shapeOf(t).size());
    int64_t size = shapeOf(t)[dim];
    std::vector<int64_t> sizes;
    if (in(n, 1).kind == Imp::List) {
      sizes = intList(in(n, 1));
      // The sizes are the traced example's; a tensor of another size here
      // (one that a boolean mask selected) must not lose or invent rows.
      int64_t total = 0;
      for (int64_t part : sizes)
        total += part;
      if (total != size)
        fail("split sizes " + shapeString(sizes) + " sum to " +
             std::to_string(total) + ", not to the size " +
             std::to_string(size) + " of dimension " + std::to_string(dim));
    } else {
      int64_t each = in(n, 1).asInt();
      for (int64_t start = 0; start < size; start += each)
        sizes.push_back(std::min(each, size - start));
    }
    setOut(n, 0, splitBy(t, dim, sizes));
  };
  C["aten::split_with_sizes"] = C["aten::split"];
  // cat and stack promote their operands to a common type (the promotion
  // of two tensors yields one of their two element types).
  auto commonElem = [this](const Imp &l, const char *what) {
    if (l.kind != Imp::List || l.list.empty())
      fail(std::string(what) + " of an empty or non-list operand");
    const Imp *widest = &l.list[0];
    for (const Imp &e : l.list) {
      if (e.kind != Imp::Tensor)
        fail(std::string(what) + " of a list with a non-tensor element");
      if (promote(*widest, e) != elemOf(widest->tensor))
        widest = &e;
    }
    return elemOf(widest->tensor);
  };
  C["aten::cat"] = [this, commonElem](jit::Node *n) {
    Imp &l = in(n, 0);
    // PyTorch promotes to a common type and skips legacy empty 1-D tensors.
    Type elem = commonElem(l, "cat");
    llvm::SmallVector<MValue> parts;
    std::vector<int64_t> outShape;
    int64_t rank = 0;
    for (const Imp &e : l.list)
      rank = std::max<int64_t>(rank, shapeOf(e.tensor).size());
    int64_t dim = normDim(in(n, 1).asInt(), rank);
    for (const Imp &e : l.list) {
      auto s = shapeOf(e.tensor);
      if (s.size() == 1 && s[0] == 0 && rank > 1)
        continue;
      parts.push_back(convert(e.tensor, elem));
      if (outShape.empty())
        outShape.assign(s.begin(), s.end());
      else
        outShape[dim] += s[dim];
    }
    if (parts.size() == 1) {
      setTensor(n, parts[0]);
      return;
    }
    setTensor(n, ConcatOp::create(b, loc, tensorType(outShape, elem), parts,
                                  b.getI64IntegerAttr(dim)));
  };
  C["aten::concat"] = C["aten::cat"];
  C["aten::stack"] = [this, commonElem](jit::Node *n) {
    Imp &l = in(n, 0);
    Type elem = commonElem(l, "stack");
    auto s = shapeOf(l.list[0].tensor);
    int64_t dim = normDim(in(n, 1).asInt(), s.size() + 1);
    std::vector<int64_t> one(s.begin(), s.end());
    one.insert(one.begin() + dim, 1);
    llvm::SmallVector<MValue> parts;
    for (const Imp &e : l.list)
      parts.push_back(reshape(convert(e.tensor, elem), one));
    std::vector<int64_t> out = one;
    out[dim] = parts.size();
    setTensor(n, ConcatOp::create(b, loc, tensorType(out, elemOf(parts[0])),
                                  parts, b.getI64IntegerAttr(dim)));
  };
  C["aten::constant_pad_nd"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> pad = intList(in(n, 1));
    // constant_pad_nd(self, pad, value) and pad(self, pad, mode, value).
    Imp *valueArg = namedInput(n, "value");
    double value = valueArg && valueArg->isNumber() ? valueArg->asDouble() : 0.0;
    auto s = shapeOf(x);
    std::vector<int64_t> low(s.size(), 0), high(s.size(), 0), out(s.begin(),
                                                                   s.end());
    for (size_t i = 0; i + 1 < pad.size() + 1 && i / 2 < s.size(); i += 2) {
      size_t d = s.size() - 1 - i / 2;
      if (pad[i] < 0 || pad[i + 1] < 0)
        fail("negative padding is not supported");
      low[d] = pad[i];
      high[d] = pad[i + 1];
      out[d] += pad[i] + pad[i + 1];
    }
    setTensor(n, PadOp::create(b, loc, tensorType(out, elemOf(x)), x,
                               b.getDenseI64ArrayAttr(low),
                               b.getDenseI64ArrayAttr(high),
                               b.getF64FloatAttr(value)));
  };
  C["aten::pad"] = [this](jit::Node *n) {
    Imp *mode = namedInput(n, "mode");
    if (mode && mode->kind == Imp::Str && mode->s != "constant")
      fail("only constant padding is supported, got mode '" + mode->s + "'");
    converters["aten::constant_pad_nd"](n);
  };

  //===--------------------------------------------------------------------===//
  // Creation
  //===--------------------------------------------------------------------===//

  auto dtypeOr = [this](jit::Node *n, Type fallback) -> Type {
    Imp *d = namedInput(n, "dtype");
    if (!d || d->kind == Imp::None)
      return fallback;
    return elementTypeFor(c10::ScalarType(d->asInt()));
  };
  auto fillLike = [this, dtypeOr](jit::Node *n, std::vector<int64_t> shape,
                                  Type defaultElem, double value) {
    setTensor(n, splat(shape, dtypeOr(n, defaultElem), value));
  };
  C["aten::zeros"] = [this, fillLike](jit::Node *n) {
    fillLike(n, intList(in(n, 0)), f32(), 0);
  };
  C["aten::ones"] = [this, fillLike](jit::Node *n) {
    fillLike(n, intList(in(n, 0)), f32(), 1);
  };
  C["aten::full"] = [this, fillLike](jit::Node *n) {
    Imp &v = in(n, 1);
    fillLike(n, intList(in(n, 0)), v.kind == Imp::Float ? f32() : i64(),
             v.asDouble());
  };
  auto likeShape = [this](jit::Node *n) {
    auto s = shapeOf(tensorIn(n, 0));
    return std::vector<int64_t>(s.begin(), s.end());
  };
  C["aten::zeros_like"] = [this, fillLike, likeShape](jit::Node *n) {
    fillLike(n, likeShape(n), elemOf(tensorIn(n, 0)), 0);
  };
  C["aten::ones_like"] = [this, fillLike, likeShape](jit::Node *n) {
    fillLike(n, likeShape(n), elemOf(tensorIn(n, 0)), 1);
  };
  C["aten::full_like"] = [this, fillLike, likeShape](jit::Node *n) {
    fillLike(n, likeShape(n), elemOf(tensorIn(n, 0)), in(n, 1).asDouble());
  };
  C["aten::new_zeros"] = [this, fillLike](jit::Node *n) {
    fillLike(n, intList(in(n, 1)), elemOf(tensorIn(n, 0)), 0);
  };
  C["aten::new_ones"] = [this, fillLike](jit::Node *n) {
    fillLike(n, intList(in(n, 1)), elemOf(tensorIn(n, 0)), 1);
  };
  C["aten::new_full"] = [this, fillLike](jit::Node *n) {
    fillLike(n, intList(in(n, 1)), elemOf(tensorIn(n, 0)),
             in(n, 2).asDouble());
  };
  C["aten::arange"] = [this, dtypeOr](jit::Node *n) {
    // arange(end, ...), arange(start, end, ...), arange(start, end, step, ...)
    std::vector<Imp> nums;
    for (size_t i = 0; i < n->inputs().size() && in(n, i).isNumber(); ++i)
      nums.push_back(in(n, i));
    // Trailing dtype/layout/device/pin_memory are not numbers, except a
    // dtype given as an int: keep only the leading start/end/step.
    const c10::FunctionSchema *schema = n->maybeSchema();
    size_t count = 0;
    if (schema)
      for (const c10::Argument &a : schema->arguments())
        if (a.name() == "start" || a.name() == "end" || a.name() == "step")
          ++count;
    nums.resize(std::min(nums.size(), std::max<size_t>(count, 1)));
    double start = 0, end = 0, step = 1;
    if (nums.size() == 1)
      end = nums[0].asDouble();
    else {
      start = nums[0].asDouble();
      end = nums[1].asDouble();
      if (nums.size() > 2)
        step = nums[2].asDouble();
    }
    bool anyFloat = false;
    for (const Imp &v : nums)
      anyFloat |= v.kind == Imp::Float;
    Type elem = dtypeOr(n, anyFloat ? f32() : i64());
    int64_t len = int64_t(std::ceil((end - start) / step));
    if (len < 0)
      len = 0;
    MValue iota =
        IotaOp::create(b, loc, tensorType({len}, elem), b.getI64IntegerAttr(0));
    MValue r = iota;
    if (step != 1)
      r = binary<MulOp>(Imp::ofTensor(r), Imp::ofFloat(step), elem);
    if (start != 0)
      r = binary<AddOp>(Imp::ofTensor(r), Imp::ofFloat(start), elem);
    setTensor(n, r);
  };

  //===--------------------------------------------------------------------===//
  // Reductions
  //===--------------------------------------------------------------------===//

  // The `dim` argument, by name: sum(self, *, dtype) has a dtype where
  // sum.dim_IntList has its dims.
  auto dimsArg = [this](jit::Node *n, size_t i) -> std::vector<int64_t> {
    Imp *d = n->maybeSchema() ? namedInput(n, "dim")
             : n->inputs().size() > i ? &in(n, i)
                                      : nullptr;
    if (!d || d->kind == Imp::None)
      return {};
    return intList(*d);
  };
  C["aten::sum"] = [this, dimsArg, dtypeOr](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    bool keep = n->inputs().size() > 2 && in(n, 2).kind == Imp::Bool &&
                in(n, 2).b;
    Type elem = elemOf(x);
    if (elem.isInteger(1) || elem.isInteger(32))
      elem = i64();
    x = convert(x, dtypeOr(n, elem));
    setTensor(n, reduce(ReductionKind::Sum, x, dimsArg(n, 1), keep));
  };
  C["aten::mean"] = [this, dimsArg, dtypeOr](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    x = convert(x, dtypeOr(n, elemOf(x)));
    bool keep = n->inputs().size() > 2 && in(n, 2).kind == Imp::Bool &&
                in(n, 2).b;
    std::vector<int64_t> dims = dimsArg(n, 1);
    int64_t count = 1;
    auto s = shapeOf(x);
    if (dims.empty())
      count = numElements(s);
    else
      for (int64_t d : dims)
        count *= s[normDim(d, s.size())];
    MValue sum = reduce(ReductionKind::Sum, x, dims, keep);
    setTensor(n, binary<DivOp>(Imp::ofTensor(sum), Imp::ofFloat(count)));
  };
  C["aten::amax"] = [this, dimsArg](jit::Node *n) {
    bool keep = n->inputs().size() > 2 && in(n, 2).b;
    setTensor(n, reduce(ReductionKind::Max, tensorIn(n, 0), dimsArg(n, 1),
                        keep));
  };
  C["aten::amin"] = [this, dimsArg](jit::Node *n) {
    bool keep = n->inputs().size() > 2 && in(n, 2).b;
    setTensor(n, reduce(ReductionKind::Min, tensorIn(n, 0), dimsArg(n, 1),
                        keep));
  };
  C["aten::cumsum"] = [this, dtypeOr](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    Type elem = elemOf(x);
    if (elem.isInteger(1) || elem.isInteger(32))
      elem = i64();
    x = convert(x, dtypeOr(n, elem));
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
    setTensor(n, CumsumOp::create(b, loc, x, b.getI64IntegerAttr(dim)));
  };
  C["aten::softmax"] = [this, dtypeOr](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    x = convert(x, dtypeOr(n, elemOf(x)));
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
    setTensor(n, SoftmaxOp::create(b, loc, x, b.getI64IntegerAttr(dim)));
  };
  C["aten::log_softmax"] = [this, dtypeOr](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    x = convert(x, dtypeOr(n, elemOf(x)));
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
    MValue p = SoftmaxOp::create(b, loc, x, b.getI64IntegerAttr(dim));
    setTensor(n, LogOp::create(b, loc, p));
  };

  //===--------------------------------------------------------------------===//
  // Model ops
  //===--------------------------------------------------------------------===//

  C["aten::linear"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0), w = tensorIn(n, 1);
    MValue bias;
    if (n->inputs().size() > 2 && in(n, 2).kind == Imp::Tensor)
      bias = in(n, 2).tensor;
    if (shapeOf(w).size() != 2)
      fail("linear weight must be 2-D, got " + shapeString(shapeOf(w)));
    std::vector<int64_t> out(shapeOf(x).begin(), shapeOf(x).end());
    if (out.empty())
      fail("linear of a zero-dim input");
    out.back() = shapeOf(w)[0];
    setTensor(n, LinearOp::create(b, loc, tensorType(out, elemOf(x)), x, w,
                                  bias));
  };
  C["aten::matmul"] = [this](jit::Node *n) {
    setTensor(n, matmul(tensorIn(n, 0), tensorIn(n, 1)));
  };
  C["aten::mm"] = C["aten::matmul"];
  C["aten::bmm"] = C["aten::matmul"];
  C["aten::embedding"] = [this](jit::Node *n) {
    MValue table = tensorIn(n, 0), ids = tensorIn(n, 1);
    std::vector<int64_t> out(shapeOf(ids).begin(), shapeOf(ids).end());
    out.push_back(shapeOf(table)[1]);
    setTensor(n, EmbeddingOp::create(b, loc, tensorType(out, elemOf(table)),
                                     table, ids));
  };
  // x[idx] with one index tensor on dimension 0: a row gather.
  auto gatherRows = [this](MValue x, MValue idx) {
    auto s = shapeOf(x);
    if (s.empty())
      fail("indexing a zero-dim tensor");
    int64_t row = numElements(s.drop_front());
    MValue table = reshape(x, {s[0], row});
    std::vector<int64_t> rows(shapeOf(idx).begin(), shapeOf(idx).end());
    rows.push_back(row);
    MValue g = EmbeddingOp::create(b, loc, tensorType(rows, elemOf(x)), table,
                                   idx);
    std::vector<int64_t> out(shapeOf(idx).begin(), shapeOf(idx).end());
    out.insert(out.end(), s.begin() + 1, s.end());
    return reshape(g, out);
  };
  // x[..., i_p, ..., i_{p+k-1}, ...]: integer index tensors on adjacent
  // dimensions [p, p + k) (None elsewhere), broadcast together to a shape
  // S. The result is x's dimensions before p, S, then x's dimensions after
  // p + k (PyTorch's rule for adjacent indices): the indexed dimensions move
  // to the front, merge into one, and one row gather reads them at the
  // linear index ((i_p * s_{p+1} + i_{p+1}) * s_{p+2} + ...). Every index
  // but the first is checked against its dimension (check_indices), so that
  // one out of range fails instead of reading a neighbouring row; the
  // gather checks the linear index. Negative indices fail those checks.
  C["aten::index"] = [this, gatherRows](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    Imp &indices = in(n, 1);
    if (indices.kind != Imp::List)
      fail("aten::index expects a list of indices");
    auto s = shapeOf(x);
    int64_t first = -1, count = 0, maskAt = -1;
    for (size_t d = 0; d < indices.list.size(); ++d) {
      const Imp &e = indices.list[d];
      if (e.kind == Imp::None)
        continue;
      if (e.kind != Imp::Tensor)
        fail("aten::index expects tensor or None indices");
      if (elemOf(e.tensor).isInteger(1))
        maskAt = int64_t(d);
      if (first >= 0 && int64_t(d) != first + count)
        fail("indexing non-adjacent dimensions with tensors is not "
             "supported (their result dimensions go first in PyTorch)");
      if (first < 0)
        first = int64_t(d);
      ++count;
    }
    if (first < 0)
      fail("aten::index without an index tensor");
    std::vector<int64_t> common;
    MValue linear;
    if (maskAt >= 0) {
      if (count != 1)
        fail("indexing with a boolean mask and other index tensors together "
             "is not supported");
      // x[mask] keeps the rows at the mask's true entries, a count known
      // only from the values. The trace fixed it (every shape after this
      // holds it): the program gathers that many rows at the true entries'
      // linear positions and fails on a batch whose mask selects another
      // number.
      MValue mask = indices.list[maskAt].tensor;
      auto ms = shapeOf(mask);
      if (first + int64_t(ms.size()) > int64_t(s.size()) ||
          !std::equal(ms.begin(), ms.end(), s.begin() + first))
        fail("the boolean mask's shape " + shapeString(ms) +
             " does not match the indexed dimensions of a tensor of shape " +
             shapeString(s));
      count = int64_t(ms.size());
      int64_t rows = numElements(ms);
      const Imp &maskImp = indices.list[maskAt];
      if (maskImp.value.defined()) {
        // A mask known at import time: its true entries are constants.
        at::Tensor where =
            maskImp.value.reshape({-1}).nonzero().reshape({-1}).to(
                c10::ScalarType::Long);
        if (where.size(0) == 0)
          fail("the boolean mask selects no entries in the traced example; "
               "empty tensors are not supported");
        common = {where.size(0)};
        linear = constantFromTensor(where);
      } else {
        // A list holding a tensor computed at run time is built on the
        // graph (a constant list holds constants only).
        jit::Node *list = n->input(1)->node();
        if (list->kind() != c10::prim::ListConstruct)
          fail("aten::index expects its indices from a list construction");
        at::Tensor example = exampleValue(
            n, list->input(maskAt),
            "indexing with a boolean mask computed at run time takes the "
            "number of entries it selects from the traced example");
        int64_t selected = example.count_nonzero().item<int64_t>();
        if (selected == 0)
          fail("the boolean mask selects no entries in the traced example; "
               "empty tensors are not supported");
        common = {selected};
        // With cs the mask's running count, the k-th true entry sits at
        // #{j : cs[j] <= k}. One more row, k = selected, is all entries
        // when no more are true, so 2 * rows - 1 - it lies in [0, rows)
        // only then; a missing entry reads as rows: one range check covers
        // both ways the batch's count can differ from the example's.
        MValue cs = CumsumOp::create(
            b, loc, reshape(convert(mask, i64()), {rows}),
            b.getI64IntegerAttr(0));
        std::vector<int64_t> grid{selected + 1, rows};
        MValue ks = IotaOp::create(b, loc, tensorType(grid, i64()),
                                   b.getI64IntegerAttr(0));
        MValue pos = reduce(
            ReductionKind::Sum,
            convert(compare(CompareDirection::LE,
                            Imp::ofTensor(broadcastTo(reshape(cs, {1, rows}),
                                                      grid)),
                            Imp::ofTensor(ks)),
                    i64()),
            {1}, false);
        MValue end = slice(pos, 0, selected, selected + 1, 1);
        end = SubOp::create(b, loc, splat({1}, i64(), double(2 * rows - 1)),
                            end);
        MValue checked = ConcatOp::create(
            b, loc, tensorType({selected + 1}, i64()),
            mlir::ValueRange{slice(pos, 0, 0, selected, 1), end},
            b.getI64IntegerAttr(0));
        std::string what =
            "index (a boolean mask selects " + std::to_string(selected) +
            " entries in the traced example, a count the program's shapes "
            "hold; this batch's mask selects another number)";
        checked = CheckIndicesOp::create(b, loc, checked.getType(), checked,
                                         b.getI64IntegerAttr(rows),
                                         b.getStringAttr(what),
                                         mlir::IntegerAttr());
        linear = slice(checked, 0, 0, selected, 1);
      }
    }
    if (first + count > int64_t(s.size()))
      fail("too many indices for a tensor of rank " +
           std::to_string(s.size()));
    for (int64_t j = 0; j < count && maskAt < 0; ++j)
      common = j == 0 ? std::vector<int64_t>(
                            shapeOf(indices.list[first].tensor).begin(),
                            shapeOf(indices.list[first].tensor).end())
                      : broadcastShapes(common,
                                        shapeOf(indices.list[first + j].tensor));
    for (int64_t j = 0; j < count && maskAt < 0; ++j) {
      MValue idx = broadcastTo(convert(indices.list[first + j].tensor, i64()),
                               common);
      if (j == 0) {
        linear = idx;
        continue;
      }
      int64_t size = s[first + j];
      idx = CheckIndicesOp::create(b, loc, idx.getType(), idx,
                                   b.getI64IntegerAttr(size),
                                   b.getStringAttr("embedding"), mlir::IntegerAttr());
      linear = AddOp::create(
          b, loc, MulOp::create(b, loc, linear, splat(common, i64(), double(size))),
          idx);
    }
    // Indexed dimensions first, merged.
    int64_t rank = int64_t(s.size());
    std::vector<int64_t> perm, rest;
    for (int64_t d = first; d < first + count; ++d)
      perm.push_back(d);
    for (int64_t d = 0; d < rank; ++d)
      if (d < first || d >= first + count) {
        perm.push_back(d);
        rest.push_back(s[d]);
      }
    int64_t merged = 1;
    for (int64_t d = first; d < first + count; ++d)
      merged *= s[d];
    std::vector<int64_t> flat{merged};
    flat.insert(flat.end(), rest.begin(), rest.end());
    MValue g = gatherRows(reshape(transpose(x, perm), flat), linear);
    if (first == 0) {
      setTensor(n, g);
      return;
    }
    // [S..., before..., after...] -> [before..., S..., after...].
    int64_t c = int64_t(common.size());
    std::vector<int64_t> back;
    for (int64_t d = 0; d < first; ++d)
      back.push_back(c + d);
    for (int64_t d = 0; d < c; ++d)
      back.push_back(d);
    for (int64_t d = c + first; d < c + int64_t(rest.size()); ++d)
      back.push_back(d);
    setTensor(n, transpose(g, back));
  };
  C["aten::index_select"] = [this, gatherRows](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
    if (dim != 0)
      fail("index_select is supported on dimension 0 only");
    setTensor(n, gatherRows(x, tensorIn(n, 2)));
  };
  C["aten::layer_norm"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> normShape = intList(in(n, 1));
    auto s = shapeOf(x);
    if (normShape.size() != 1 || normShape[0] != s.back())
      fail("layer_norm over more than the last dimension is not supported");
    int64_t d = s.back();
    MValue w = in(n, 2).kind == Imp::Tensor ? in(n, 2).tensor
                                            : splat({d}, elemOf(x), 1.0);
    MValue bias = in(n, 3).kind == Imp::Tensor ? in(n, 3).tensor
                                               : splat({d}, elemOf(x), 0.0);
    double eps = in(n, 4).asDouble();
    setTensor(n, LayerNormOp::create(b, loc, x.getType(), x,
                                     convert(w, elemOf(x)),
                                     convert(bias, elemOf(x)),
                                     b.getF64FloatAttr(eps)));
  };
  C["aten::rms_norm"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> normShape = intList(in(n, 1));
    auto s = shapeOf(x);
    if (normShape.size() != 1 || normShape[0] != s.back())
      fail("rms_norm over more than the last dimension is not supported");
    int64_t d = s.back();
    MValue w = n->inputs().size() > 2 && in(n, 2).kind == Imp::Tensor
                   ? in(n, 2).tensor
                   : splat({d}, elemOf(x), 1.0);
    double eps;
    if (n->inputs().size() > 3 && in(n, 3).isNumber())
      eps = in(n, 3).asDouble();
    else if (elemOf(x).isF64())
      eps = std::numeric_limits<double>::epsilon();
    else if (elemOf(x).isF32())
      eps = std::numeric_limits<float>::epsilon();
    else if (elemOf(x).isF16())
      eps = 0.0009765625; // f16 epsilon (2^-10)
    else
      eps = 0.0078125; // bf16 epsilon
    setTensor(n, RmsNormOp::create(b, loc, x.getType(), x,
                                   convert(w, elemOf(x)),
                                   b.getF64FloatAttr(eps)));
  };
  // One 2-D convolution, its checks shared by the converters below.
  auto conv2d = [this](MValue x, MValue w, MValue bias,
                       std::vector<int64_t> stride,
                       std::vector<int64_t> padding,
                       const std::vector<int64_t> &dilation, int64_t groups) {
    auto xs = shapeOf(x), ws = shapeOf(w);
    // A convolution whose kernel covers the whole input (a video patch
    // embedding, as Qwen2-VL's Conv3d on [N, C, T, P, P] patches) is one
    // dot product per output channel: a linear over the flattened input.
    bool zeroPadding = llvm::all_of(padding, [](int64_t p) { return p == 0; });
    if (xs.size() >= 3 && xs.size() == ws.size() && groups == 1 &&
        zeroPadding &&
        std::equal(xs.begin() + 2, xs.end(), ws.begin() + 2) &&
        llvm::all_of(dilation, [](int64_t d) { return d == 1; })) {
      int64_t inner = numElements(xs) / xs[0];
      MValue flat = reshape(x, {xs[0], inner});
      MValue wflat = reshape(w, {ws[0], inner});
      MValue y = LinearOp::create(b, loc, tensorType({xs[0], ws[0]}, elemOf(x)),
                                  flat, wflat, bias);
      std::vector<int64_t> out{xs[0], ws[0]};
      out.resize(xs.size(), 1);
      return reshape(y, out);
    }
    if (xs.size() != 4)
      fail("only 2-D convolutions (NCHW input), and convolutions whose "
           "kernel covers the whole input, are supported");
    if (groups != 1)
      fail("grouped convolution is not supported");
    for (int64_t d : dilation)
      if (d != 1)
        fail("dilated convolution is not supported");
    if (stride.size() == 1)
      stride.push_back(stride[0]);
    if (padding.size() == 1)
      padding.push_back(padding[0]);
    std::vector<int64_t> out{xs[0], ws[0]};
    for (int i = 0; i < 2; ++i)
      out.push_back((xs[2 + i] + 2 * padding[i] - ws[2 + i]) / stride[i] + 1);
    return MValue(Conv2dOp::create(b, loc, tensorType(out, elemOf(x)), x, w,
                                   bias, b.getDenseI64ArrayAttr(stride),
                                   b.getDenseI64ArrayAttr(padding)));
  };
  C["aten::_convolution"] = [this, conv2d](jit::Node *n) {
    MValue x = tensorIn(n, 0), w = tensorIn(n, 1);
    MValue bias = in(n, 2).kind == Imp::Tensor ? in(n, 2).tensor : MValue();
    bool full = n->kind().toQualString() == std::string("aten::_convolution");
    if (full && in(n, 6).asInt() != 0)
      fail("transposed convolution is not supported");
    int64_t groups = full ? in(n, 8).asInt() : in(n, 6).asInt();
    setTensor(n, conv2d(x, w, bias, intList(in(n, 3)), intList(in(n, 4)),
                        intList(in(n, 5)), groups));
  };
  C["aten::conv2d"] = C["aten::_convolution"];
  // nn.Conv2d(padding="valid" / "same"): the padding as numbers. "same"
  // pads (k - 1) / 2 on each side, symmetric for odd kernels at stride 1
  // (PyTorch allows "same" at stride 1 only).
  C["aten::_convolution_mode"] = [this, conv2d](jit::Node *n) {
    MValue x = tensorIn(n, 0), w = tensorIn(n, 1);
    MValue bias = in(n, 2).kind == Imp::Tensor ? in(n, 2).tensor : MValue();
    std::vector<int64_t> stride = intList(in(n, 3));
    const Imp &mode = in(n, 4);
    if (mode.kind != Imp::Str || (mode.s != "valid" && mode.s != "same"))
      fail("convolution padding must be \"valid\", \"same\" or numbers");
    std::vector<int64_t> padding{0, 0};
    if (mode.s == "same") {
      auto ws = shapeOf(w);
      for (int i = 0; i < 2; ++i) {
        int64_t s = stride[stride.size() == 1 ? 0 : i];
        if (ws.size() != 4 || s != 1 || ws[2 + i] % 2 == 0)
          fail("padding=\"same\" is supported for odd kernels at stride 1 "
               "(symmetric padding)");
        padding[i] = (ws[2 + i] - 1) / 2;
      }
    }
    setTensor(n, conv2d(x, w, bias, stride, padding, intList(in(n, 5)),
                        in(n, 6).asInt()));
  };
  // Bilinear resizing (F.interpolate(mode="bilinear"), as LLaVA-OneVision
  // shrinks a large image's features): linear along each spatial axis, so
  // a product with a constant [in, out] matrix per axis, W first, then H,
  // as PyTorch interpolates. Autodiff, the sharding rules and both
  // backends come with the matmuls.
  // Separable resizing (F.interpolate with 2-D modes, as LLaVA-OneVision
  // shrinks a large image's features): y = Wh^T x Ww with constant
  // interpolation matrices. Each matrix is what PyTorch's own kernel does to
  // the unit vectors of its axis (the other axis one row, which every mode
  // copies), in the input's precision, so every mode's weights (bilinear,
  // bicubic, their antialiased forms, nearest) are PyTorch's.
  using Resizer = std::function<at::Tensor(
      const at::Tensor &, at::IntArrayRef, bool, std::optional<double>,
      std::optional<double>)>;
  auto resize = [this](const char *name, bool hasAlignCorners, Resizer op) {
    return [this, name, hasAlignCorners, op](jit::Node *n) {
      std::string what(name);
      MValue x = tensorIn(n, 0);
      std::vector<int64_t> xs(shapeOf(x).begin(), shapeOf(x).end());
      if (xs.size() != 4)
        fail(what + " expects an [N, C, H, W] input, got " + shapeString(xs));
      bool alignCorners = hasAlignCorners && in(n, 2).asInt() != 0;
      // (input, output_size, [align_corners,] scale_factors) of the .vec
      // overloads, or (.., scales_h, scales_w).
      size_t scalesAt = hasAlignCorners ? 3 : 2;
      std::vector<int64_t> out;
      std::vector<std::optional<double>> scales(2);
      if (n->inputs().size() > scalesAt) {
        const Imp &s = in(n, scalesAt);
        if (s.kind == Imp::List) {
          if (s.list.size() != 2)
            fail(what + " expects an output size or two scale factors");
          for (int d = 0; d < 2; ++d)
            scales[d] = s.list[d].asDouble();
        } else if (s.kind != Imp::None && n->inputs().size() > scalesAt + 1) {
          scales[0] = s.asDouble();
          if (in(n, scalesAt + 1).kind != Imp::None)
            scales[1] = in(n, scalesAt + 1).asDouble();
        }
      }
      if (in(n, 1).kind == Imp::List) {
        out = intList(in(n, 1));
      } else {
        if (!scales[0] || !scales[1])
          fail(what + " expects an output size or two scale factors");
        for (int d = 0; d < 2; ++d)
          out.push_back(int64_t(std::floor(double(xs[2 + d]) * *scales[d])));
      }
      if (out.size() != 2 || out[0] <= 0 || out[1] <= 0)
        fail(what + " expects a positive [H, W] output size, got " +
             shapeString(out));
      auto dtype = elemOf(x).isF64() ? at::kDouble : at::kFloat;
      // [in, out] for axis d (0: H, 1: W).
      auto matrix = [&](int d) {
        int64_t size = xs[2 + d];
        at::Tensor basis = at::eye(size, at::TensorOptions().dtype(dtype));
        at::Tensor y;
        if (d == 1) {
          y = op(basis.reshape({1, size, 1, size}), out, alignCorners,
                 scales[0], scales[1]);
          return y.select(0, 0).select(1, 0).contiguous();
        }
        y = op(basis.reshape({1, size, size, 1}), out, alignCorners, scales[0],
               scales[1]);
        return y.select(0, 0).select(2, 0).contiguous();
      };
      MValue ww = convert(constantFromTensor(matrix(1)), elemOf(x));
      MValue wh = convert(constantFromTensor(matrix(0)), elemOf(x));
      MValue y = matmul(x, ww);                            // [N, C, H, W']
      y = matmul(transpose(y, {0, 1, 3, 2}), wh);          // [N, C, W', H']
      setTensor(n, transpose(y, {0, 1, 3, 2}));
    };
  };
  C["aten::upsample_bilinear2d"] = resize(
      "upsample_bilinear2d", true,
      [](const at::Tensor &x, at::IntArrayRef out, bool align,
         std::optional<double> sh, std::optional<double> sw) {
        return at::upsample_bilinear2d(x, out, align, sh, sw);
      });
  C["aten::_upsample_bilinear2d_aa"] = resize(
      "_upsample_bilinear2d_aa", true,
      [](const at::Tensor &x, at::IntArrayRef out, bool align,
         std::optional<double> sh, std::optional<double> sw) {
        return at::_upsample_bilinear2d_aa(x, out, align, sh, sw);
      });
  C["aten::upsample_bicubic2d"] = resize(
      "upsample_bicubic2d", true,
      [](const at::Tensor &x, at::IntArrayRef out, bool align,
         std::optional<double> sh, std::optional<double> sw) {
        return at::upsample_bicubic2d(x, out, align, sh, sw);
      });
  C["aten::_upsample_bicubic2d_aa"] = resize(
      "_upsample_bicubic2d_aa", true,
      [](const at::Tensor &x, at::IntArrayRef out, bool align,
         std::optional<double> sh, std::optional<double> sw) {
        return at::_upsample_bicubic2d_aa(x, out, align, sh, sw);
      });
  C["aten::upsample_nearest2d"] = resize(
      "upsample_nearest2d", false,
      [](const at::Tensor &x, at::IntArrayRef out, bool,
         std::optional<double> sh, std::optional<double> sw) {
        return at::upsample_nearest2d(x, out, sh, sw);
      });
  C["aten::_upsample_nearest_exact2d"] = resize(
      "_upsample_nearest_exact2d", false,
      [](const at::Tensor &x, at::IntArrayRef out, bool,
         std::optional<double> sh, std::optional<double> sw) {
        return at::_upsample_nearest_exact2d(x, out, sh, sw);
      });
  // Average pooling over non-overlapping windows (stride = kernel, no
  // padding), as projectors pool image tokens: a reshape of each pooled
  // dimension into (windows, kernel) and a mean over the kernels.
  C["aten::avg_pool2d"] = [this](jit::Node *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> kernel = intList(in(n, 1));
    std::vector<int64_t> stride =
        in(n, 2).kind == Imp::List && in(n, 2).list.empty()
            ? kernel
            : intList(in(n, 2));
    std::vector<int64_t> padding = intList(in(n, 3));
    if (kernel.size() == 1)
      kernel.push_back(kernel[0]);
    if (stride.size() == 1)
      stride.push_back(stride[0]);
    if (padding.size() == 1)
      padding.push_back(padding[0]);
    bool ceil = in(n, 4).kind == Imp::Bool && in(n, 4).b;
    bool divisor = n->inputs().size() > 6 && in(n, 6).kind != Imp::None;
    auto xs = shapeOf(x);
    if (xs.size() < 3)
      fail("avg_pool2d expects a [.., H, W] input of rank 3 or 4");
    size_t h = xs.size() - 2;
    if (stride != kernel || padding[0] != 0 || padding[1] != 0 || ceil ||
        divisor || xs[h] % kernel[0] != 0 || xs[h + 1] % kernel[1] != 0)
      fail("avg_pool2d is supported over non-overlapping windows that tile "
           "the input (stride = kernel, no padding, ceil_mode and "
           "divisor_override unset)");
    std::vector<int64_t> split(xs.begin(), xs.begin() + h);
    split.insert(split.end(), {xs[h] / kernel[0], kernel[0],
                               xs[h + 1] / kernel[1], kernel[1]});
    MValue sum = reduce(ReductionKind::Sum, reshape(x, split),
                        {int64_t(h) + 1, int64_t(h) + 3}, false);
    setTensor(n, binary<DivOp>(Imp::ofTensor(sum),
                               Imp::ofFloat(double(kernel[0] * kernel[1]))));
  };
  C["aten::scaled_dot_product_attention"] = [this](jit::Node *n) {
    MValue q = tensorIn(n, 0), k = tensorIn(n, 1), v = tensorIn(n, 2);
    if (in(n, 4).asDouble() != 0.0)
      fail("attention dropout is not supported");
    bool causal = in(n, 5).asInt() != 0;
    Imp *scaleArg = namedInput(n, "scale");
    auto qs = shapeOf(q), ks = shapeOf(k);
    if (qs.size() != 4 || ks.size() != 4)
      fail("scaled_dot_product_attention expects [B, H, T, D] tensors");
    double scale = scaleArg && scaleArg->isNumber()
                       ? scaleArg->asDouble()
                       : 1.0 / std::sqrt(double(qs[3]));
    // What restricts attention besides the shapes; the mask is read into
    // these terms where it can be (AttentionMasks.h).
    AttentionMaskForm form;
    if (in(n, 3).kind == Imp::Tensor && !in(n, 3).value.defined()) {
      // A mask computed at run time (from token types, padding, windows).
      if (causal)
        fail("scaled_dot_product_attention with an attn_mask and is_causal "
             "together (PyTorch refuses them too)");
      MValue mask = in(n, 3).tensor;
      auto ms = shapeOf(mask);
      std::optional<AttentionMaskForm> read;
      if (ms.size() == 4 && (ms[0] == 1 || ms[0] == qs[0]) &&
          (ms[1] == 1 || ms[1] == qs[1]) && ms[2] == qs[2] && ms[3] == ks[2])
        read = recognizeAttentionMask(mask);
      if (!read) {
        // Anything else: the attention as PyTorch's math backend spells it
        // out. Under CP the products, the mask and the softmax are
        // partitioned by their sharding rules, as a model's eager
        // attention is.
        setTensor(n, explicitAttention(q, k, v, mask, scale));
        return;
      }
      form = *read;
    } else if (in(n, 3).kind != Imp::None) {
      // A mask known at import time (e.g. built from arange): all true,
      // causal or a causal sliding window, each a comparison of positions,
      // which stays valid after the CP permutation.
      const Imp &mask = in(n, 3);
      if (mask.kind != Imp::Tensor)
        fail("scaled_dot_product_attention expects attn_mask to be a tensor");
      // A boolean mask keeps the true positions; a floating one is added to
      // the scores, so only 0 (keep) and -inf (drop) are a mask.
      at::Tensor m;
      if (at::isFloatingType(mask.value.scalar_type())) {
        at::Tensor keep = mask.value == 0;
        at::Tensor drop = mask.value == -std::numeric_limits<double>::infinity();
        if (!(keep | drop).all().item<bool>())
          fail("scaled_dot_product_attention with a floating-point attn_mask "
               "that is not all 0 / -inf (an additive bias) is not supported");
        m = keep;
      } else {
        m = mask.value.to(c10::ScalarType::Bool);
      }
      int64_t tq = qs[2], tk = ks[2];
      at::Tensor full =
          m.expand({qs[0], qs[1], tq, tk}).reshape({-1, tq, tk}).contiguous();
      std::optional<AttentionMaskForm> read;
      if (at::equal(full, full[0].expand_as(full))) {
        at::Tensor first = full[0].contiguous();
        const bool *bits = first.data_ptr<bool>();
        read = classifyMaskMatrix(tq, tk,
                                  std::vector<bool>(bits, bits + tq * tk));
      }
      if (!read || (read->window && !read->causal))
        fail("scaled_dot_product_attention with an attn_mask that is neither "
             "all-true, causal nor a causal sliding window is not supported");
      if (causal && read->causal)
        fail("attn_mask and is_causal given together");
      form = *read;
    }
    form.causal = causal || form.causal;
    if (form.causal && qs[2] != ks[2])
      fail("causal attention with different query and key lengths is not "
           "supported");
    AttentionOp attn = buildMaskedAttention(b, loc, q, k, v, form, scale);
    setTensor(n, attn.getOutput());
  };
  C["aten::cross_entropy_loss"] = [this](jit::Node *n) {
    MValue logits = tensorIn(n, 0), labels = tensorIn(n, 1);
    if (in(n, 2).kind != Imp::None)
      fail("cross_entropy with class weights is not supported");
    int64_t reduction = in(n, 3).asInt();
    int64_t ignore = in(n, 4).asInt();
    if (n->inputs().size() > 5 && in(n, 5).asDouble() != 0.0)
      fail("cross_entropy with label smoothing is not supported");
    auto ls = shapeOf(logits);
    if (ls.size() > 2) {
      // [N, C, d...] -> [N, d..., C]
      std::vector<int64_t> perm{0};
      for (size_t d = 2; d < ls.size(); ++d)
        perm.push_back(d);
      perm.push_back(1);
      logits = transpose(logits, perm);
    }
    if (!mlir::isa<mlir::FloatType>(elemOf(logits)))
      fail("cross_entropy needs floating-point logits");
    Type sumElem = elemOf(logits).isF64() ? b.getF64Type() : f32();
    auto ce = CrossEntropyOp::create(b, loc, tensorType({}, sumElem),
                                     tensorType({}, i64()), logits, labels,
                                     b.getI64IntegerAttr(ignore));
    MValue sum = convert(ce.getSum(), elemOf(logits));
    if (reduction == 2) {
      setTensor(n, sum);
      return;
    }
    if (reduction != 1)
      fail("cross_entropy with reduction='none' is not supported");
    MValue count = convert(ce.getCount(), elemOf(sum));
    setTensor(n, DivOp::create(b, loc, sum, count));
  };

  // masked_scatter(self, mask, source): the i-th true row of the mask takes
  // source row i. Emitted as the same core pattern as a cumsum-index gather
  // (indices from a prefix sum of the mask, a row gather, a select), which
  // glimmer-recognize-vision-merge turns into vision ops.
  C["aten::masked_scatter"] = [this](jit::Node *n) {
    MValue self = tensorIn(n, 0), mask = tensorIn(n, 1),
           source = tensorIn(n, 2);
    auto s = shapeOf(self);
    if (s.size() < 2)
      fail("masked_scatter needs a [..., D] destination");
    int64_t d = s.back();
    // The mask must select whole rows: find the [..., 1] (or [...]) mask it
    // was broadcast from.
    MValue rowMask = mask;
    while (auto bc = rowMask.getDefiningOp<BroadcastInDimOp>())
      rowMask = bc.getInput();
    auto rs = shapeOf(rowMask);
    std::vector<int64_t> rowShape(s.begin(), s.end() - 1);
    bool rowsOnly =
        (rs.size() == s.size() && rs.back() == 1 &&
         rs.drop_back() == llvm::ArrayRef<int64_t>(rowShape)) ||
        rs == llvm::ArrayRef<int64_t>(rowShape);
    if (!rowsOnly)
      fail("masked_scatter is supported when the mask selects whole rows "
           "(a [..., 1] mask broadcast over the last dimension)");
    rowMask = reshape(rowMask, rowShape);
    int64_t rows = numElements(rowShape);
    int64_t sourceRows = numElements(shapeOf(source)) / d;
    MValue bank = reshape(source, {sourceRows, d});
    MValue flat = reshape(convert(rowMask, i64()), {rows});
    MValue csum = CumsumOp::create(b, loc, flat, b.getI64IntegerAttr(0));
    MValue idx = reshape(binary<SubOp>(Imp::ofTensor(csum), Imp::ofInt(1)),
                         rowShape);
    MValue clamped = binary<MaxOp>(Imp::ofTensor(idx), Imp::ofInt(0));
    std::vector<int64_t> gatheredShape = rowShape;
    gatheredShape.push_back(d);
    MValue gathered = EmbeddingOp::create(
        b, loc, tensorType(gatheredShape, elemOf(bank)), bank, clamped);
    std::vector<int64_t> maskShape = rowShape;
    maskShape.push_back(1);
    MValue m = broadcastTo(reshape(rowMask, maskShape), s);
    setTensor(n, SelectOp::create(b, loc, typeOf(self), m,
                                  convert(gathered, elemOf(self)), self));
  };
}
