//===- HostValues.cpp - Host-value converters -----------------------------===//
//
// ATen ops on values computed on the host, evaluated at import time: list
// indexing and length, sizes, and conversions between numbers.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerHostValueConverters() {
  auto &C = converters;
  C["aten::__getitem__"] = [this](OpCall *n) {
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
  C["aten::len"] = [this](OpCall *n) {
    Imp &l = in(n, 0);
    if (l.kind == Imp::List)
      setOut(n, 0, Imp::ofInt(l.list.size()));
    else if (l.kind == Imp::Tensor && !shapeOf(l.tensor).empty())
      setOut(n, 0, Imp::ofInt(shapeOf(l.tensor)[0]));
    else
      fail("len() of an unsupported value");
  };

  C["aten::size"] = [this](OpCall *n) {
    MValue t = tensorIn(n, 0);
    auto shape = shapeOf(t);
    if (n->numInputs() == 1) {
      std::vector<Imp> l;
      for (int64_t d : shape)
        l.push_back(Imp::ofInt(d));
      setOut(n, 0, Imp::ofList(std::move(l)));
      return;
    }
    setOut(n, 0, Imp::ofInt(shape[normDim(in(n, 1).asInt(), shape.size())]));
  };
  // torch.export's sizes: sym_size.int(self, dim), sym_numel(self).
  C["aten::sym_size"] = [this](OpCall *n) {
    auto shape = shapeOf(tensorIn(n, 0));
    setOut(n, 0, Imp::ofInt(shape[normDim(in(n, 1).asInt(), shape.size())]));
  };
  C["aten::sym_numel"] = [this](OpCall *n) {
    setOut(n, 0, Imp::ofInt(numElements(shapeOf(tensorIn(n, 0)))));
  };
  // Checks torch.export inserts, evaluated at import time. A dtype check
  // passes for a float tensor whose precision --dtype overrides.
  C["aten::_assert_tensor_metadata"] = [this](OpCall *n) {
    MValue t = tensorIn(n, 0);
    Imp &size = in(n, 1), &dtype = in(n, 3);
    if (size.kind == Imp::List && intList(size) != std::vector<int64_t>(
                                                       shapeOf(t).begin(),
                                                       shapeOf(t).end()))
      fail("the tensor has shape " + shapeString(shapeOf(t)) +
           " where the program asserts " + shapeString(intList(size)));
    if (dtype.kind == Imp::Int) {
      Type expected = elementTypeFor(c10::ScalarType(dtype.asInt()));
      bool overridden = floatOverride && mlir::isa<mlir::FloatType>(expected);
      if (!overridden && expected != elemOf(t))
        fail("the tensor's element type differs from the one the program "
             "asserts");
    }
  };
  C["aten::_assert_scalar"] = [this](OpCall *n) {
    Imp &cond = in(n, 0);
    if (!cond.isNumber())
      fail("a run-time assertion on a value that is not known at compile "
           "time");
    if (cond.asInt() == 0)
      fail("assertion failed: " + (in(n, 1).kind == Imp::Str ? in(n, 1).s
                                                              : std::string()));
  };
  // A tensor assertion (torch._assert_async, and the form
  // glimmer.export_assertions gives export's data-dependent checks): known
  // at import, checked now; computed at run time, checked by the program as
  // indices (0 where the condition holds) that must lie in [0, 1). The
  // check's result is unused, and the op is kept for its failure.
  C["aten::_assert_async"] = [this](OpCall *n) {
    std::string message = n->numInputs() > 1 && in(n, 1).kind == Imp::Str
                              ? in(n, 1).s
                              : std::string("assertion");
    Imp &cond = in(n, 0);
    if (cond.isNumber()) {
      if (cond.asInt() == 0)
        fail("assertion failed: " + message);
      return;
    }
    MValue t = tensorIn(n, 0);
    MValue failed =
        convert(compare(CompareDirection::EQ, Imp::ofTensor(t), Imp::ofInt(0)),
                i64());
    CheckIndicesOp::create(
        b, loc, reshape(failed, {numElements(shapeOf(t))}),
        b.getI64IntegerAttr(1),
        b.getStringAttr("assert (" + message + " does not hold; 1 marks "
                        "where the condition is false)"),
        mlir::IntegerAttr());
  };
  C["aten::dim"] = [this](OpCall *n) {
    setOut(n, 0, Imp::ofInt(shapeOf(tensorIn(n, 0)).size()));
  };
  C["aten::numel"] = [this](OpCall *n) {
    setOut(n, 0, Imp::ofInt(numElements(shapeOf(tensorIn(n, 0)))));
  };
  auto toNumber = [this](OpCall *n, bool integral) {
    Imp &v = in(n, 0);
    if (!v.isNumber())
      fail("converting a tensor computed at run time to a Python number is "
           "not supported (the value must be known at compile time)");
    setOut(n, 0, integral ? Imp::ofInt(v.asInt()) : Imp::ofFloat(v.asDouble()));
  };
  C["aten::Int"] = [toNumber](OpCall *n) { toNumber(n, true); };
  C["aten::Float"] = [toNumber](OpCall *n) { toNumber(n, false); };
  C["aten::ScalarImplicit"] = [this](OpCall *n) { setOut(n, 0, in(n, 0)); };
  // Tensor.item() keeps the scalar's kind: an integer stays an integer.
  C["aten::item"] = [this](OpCall *n) {
    Imp &v = in(n, 0);
    if (!v.isNumber())
      fail("converting a tensor computed at run time to a Python number is "
           "not supported (the value must be known at compile time)");
    setOut(n, 0, v);
  };
}
