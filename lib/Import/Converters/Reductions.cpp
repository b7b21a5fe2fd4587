//===- Reductions.cpp - Reduction converters ------------------------------===//
//
// Reductions over dimensions (sum, mean, amax, amin), cumsum, softmax and
// log_softmax.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerReductionConverters() {
  auto &C = converters;
  // The `dim` argument, by name: sum(self, *, dtype) has a dtype where
  // sum.dim_IntList has its dims.
  auto dimsArg = [this](OpCall *n, size_t i) -> std::vector<int64_t> {
    Imp *d = n->schema()         ? namedInput(n, "dim")
             : n->numInputs() > i ? &in(n, i)
                                      : nullptr;
    if (!d || d->kind == Imp::None)
      return {};
    return intList(*d);
  };
  C["aten::sum"] = [this, dimsArg](OpCall *n) {
    MValue x = tensorIn(n, 0);
    bool keep =
        n->numInputs() > 2 && in(n, 2).kind == Imp::Bool && in(n, 2).b;
    Type elem = elemOf(x);
    if (elem.isInteger(1) || elem.isInteger(32))
      elem = i64();
    x = convert(x, dtypeOr(n, elem));
    setTensor(n, reduce(ReductionKind::Sum, x, dimsArg(n, 1), keep));
  };
  C["aten::mean"] = [this, dimsArg](OpCall *n) {
    MValue x = tensorIn(n, 0);
    x = convert(x, dtypeOr(n, elemOf(x)));
    bool keep =
        n->numInputs() > 2 && in(n, 2).kind == Imp::Bool && in(n, 2).b;
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
  C["aten::amax"] = [this, dimsArg](OpCall *n) {
    bool keep = n->numInputs() > 2 && in(n, 2).b;
    setTensor(n,
              reduce(ReductionKind::Max, tensorIn(n, 0), dimsArg(n, 1), keep));
  };
  C["aten::amin"] = [this, dimsArg](OpCall *n) {
    bool keep = n->numInputs() > 2 && in(n, 2).b;
    setTensor(n,
              reduce(ReductionKind::Min, tensorIn(n, 0), dimsArg(n, 1), keep));
  };
  C["aten::cumsum"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    Type elem = elemOf(x);
    if (elem.isInteger(1) || elem.isInteger(32))
      elem = i64();
    x = convert(x, dtypeOr(n, elem));
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
    setTensor(n, CumsumOp::create(b, loc, x, b.getI64IntegerAttr(dim)));
  };
  C["aten::softmax"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    x = convert(x, dtypeOr(n, elemOf(x)));
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
    setTensor(n, SoftmaxOp::create(b, loc, x, b.getI64IntegerAttr(dim)));
  };
  // The Core ATen forms: _softmax(self, dim, half_to_float).
  C["aten::_softmax"] = C["aten::softmax"];
  C["aten::log_softmax"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    x = convert(x, dtypeOr(n, elemOf(x)));
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
    MValue p = SoftmaxOp::create(b, loc, x, b.getI64IntegerAttr(dim));
    setTensor(n, LogOp::create(b, loc, p));
  };
  C["aten::_log_softmax"] = C["aten::log_softmax"];
}
