//===- Comparisons.cpp - Comparison and logical converters ----------------===//
//
// Comparisons, any/all, the logical and boolean bitwise ops, and the
// selects that take a mask (where, masked_fill).
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerComparisonConverters() {
  auto &C = converters;
  auto cmp = [this](CompareDirection dir) {
    return [this, dir](OpCall *n) {
      Imp &x = in(n, 0), &y = in(n, 1);
      if (x.isNumber() && y.isNumber()) {
        double a = x.asDouble(), c = y.asDouble();
        bool r = dir == CompareDirection::EQ   ? a == c
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
    return [this, asMask, kind](OpCall *n) {
      MValue m = asMask(in(n, 0));
      std::vector<int64_t> dims;
      bool keep = false;
      if (n->numInputs() > 1 && in(n, 1).kind != Imp::None)
        dims = intList(in(n, 1));
      if (n->numInputs() > 2 && in(n, 2).kind == Imp::Bool)
        keep = in(n, 2).b;
      MValue ints = convert(m, i64());
      MValue r = reduce(kind, ints, dims, keep);
      setTensor(n,
                compare(CompareDirection::NE, Imp::ofTensor(r), Imp::ofInt(0)));
    };
  };
  C["aten::any"] = anyAll(ReductionKind::Max);
  C["aten::all"] = anyAll(ReductionKind::Min);
  // torch._check_tensor_all's reduction (a 0-d bool of the whole tensor).
  C["aten::_is_all_true"] = C["aten::all"];
  C["aten::_is_any_true"] = C["aten::any"];
  C["aten::logical_not"] = [this, asMask](OpCall *n) {
    MValue m = asMask(in(n, 0));
    setTensor(
        n, compare(CompareDirection::EQ, Imp::ofTensor(m), Imp::ofBool(false)));
  };
  C["aten::bitwise_not"] = [this, asMask](OpCall *n) {
    if (!elemOf(tensorIn(n, 0)).isInteger(1))
      fail("bitwise_not of non-boolean tensors is not supported");
    MValue m = asMask(in(n, 0));
    setTensor(
        n, compare(CompareDirection::EQ, Imp::ofTensor(m), Imp::ofBool(false)));
  };
  C["aten::logical_and"] = [this, asMask](OpCall *n) {
    MValue x = asMask(in(n, 0)), y = asMask(in(n, 1));
    setTensor(n, select(x, Imp::ofTensor(y), Imp::ofBool(false)));
  };
  // &, |, ^ and their bitwise_* spellings (a tensor with a tensor or a
  // bool: the .Scalar overloads) equal the logical ops on booleans only; on
  // integers they are bitwise, which the dialect has no op for.
  enum class Bitwise { And, Or, Xor };
  auto boolOnly = [this](const char *name, Bitwise op) {
    return [this, name, op](OpCall *n) {
      Imp &x = in(n, 0), &y = in(n, 1);
      if (x.kind == Imp::Bool && y.kind == Imp::Bool) {
        setOut(n, 0,
               Imp::ofBool(op == Bitwise::And  ? x.b && y.b
                           : op == Bitwise::Or ? x.b || y.b
                                               : x.b != y.b));
        return;
      }
      for (Imp *v : {&x, &y}) {
        if (v->kind == Imp::Bool)
          *v = Imp::ofTensor(splat({}, i1(), v->b));
        if (v->kind != Imp::Tensor || !elemOf(v->tensor).isInteger(1))
          fail(std::string(name) + " of non-boolean operands is not supported");
      }
      converters[op == Bitwise::And  ? "aten::logical_and"
                 : op == Bitwise::Or ? "aten::logical_or"
                                     : "aten::logical_xor"](n);
    };
  };
  C["aten::__and__"] = boolOnly("aten::__and__", Bitwise::And);
  C["aten::bitwise_and"] = boolOnly("aten::bitwise_and", Bitwise::And);
  C["aten::logical_or"] = [this, asMask](OpCall *n) {
    MValue x = asMask(in(n, 0)), y = asMask(in(n, 1));
    setTensor(n, select(x, Imp::ofBool(true), Imp::ofTensor(y)));
  };
  C["aten::__or__"] = boolOnly("aten::__or__", Bitwise::Or);
  C["aten::__ior__"] = boolOnly("aten::__ior__", Bitwise::Or);
  C["aten::__iand__"] = boolOnly("aten::__iand__", Bitwise::And);
  C["aten::bitwise_or"] = boolOnly("aten::bitwise_or", Bitwise::Or);

  C["aten::logical_xor"] = [this, asMask](OpCall *n) {
    MValue x = asMask(in(n, 0)), y = asMask(in(n, 1));
    setTensor(n, compare(CompareDirection::NE, Imp::ofTensor(x),
                         Imp::ofTensor(y)));
  };
  C["aten::__xor__"] = boolOnly("aten::__xor__", Bitwise::Xor);
  C["aten::bitwise_xor"] = boolOnly("aten::bitwise_xor", Bitwise::Xor);

  C["aten::where"] = [this, asMask](OpCall *n) {
    if (n->numInputs() != 3)
      fail("where(condition) without values is not supported");
    MValue c = asMask(in(n, 0));
    setTensor(n, select(c, in(n, 1), in(n, 2)));
  };
  C["aten::masked_fill"] = [this, asMask](OpCall *n) {
    MValue x = tensorIn(n, 0);
    MValue m = asMask(in(n, 1));
    Imp fill = in(n, 2);
    MValue filled = select(m, Imp::ofTensor(materialize(fill, elemOf(x), {})),
                           Imp::ofTensor(x));
    setTensor(n, convert(filled, elemOf(x)));
  };
  C["aten::masked_fill_"] = C["aten::masked_fill"];
}
