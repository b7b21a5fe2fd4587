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
  // argmax / argmin: the first position holding the extreme value, as
  // the smallest iota among those equal to it (dim None: of the flattened
  // tensor).
  auto argOf = [this](ReductionKind kind, MValue x, const Imp &dimArg,
                      bool keep) {
    std::vector<int64_t> kept(shapeOf(x).size(), 1);
    bool all = dimArg.kind == Imp::None || shapeOf(x).empty();
    int64_t dim = 0;
    if (all)
      x = reshape(x, {numElements(shapeOf(x))});
    else
      dim = normDim(dimArg.asInt(), shapeOf(x).size());
    auto s = shapeOf(x);
    MValue extreme = reduce(kind, x, {dim}, true);
    MValue at = compare(CompareDirection::EQ, Imp::ofTensor(x),
                        Imp::ofTensor(extreme));
    MValue iota = IotaOp::create(b, loc, tensorType(s, i64()),
                                 b.getI64IntegerAttr(dim));
    MValue candidate = select(at, Imp::ofTensor(iota), Imp::ofInt(s[dim]));
    MValue r = reduce(ReductionKind::Min, candidate, {dim}, keep && !all);
    if (all)
      r = reshape(r, keep ? kept : std::vector<int64_t>{});
    return r;
  };
  auto argExtreme = [this, argOf](ReductionKind kind) {
    return [this, kind, argOf](OpCall *n) {
      bool keep =
          n->numInputs() > 2 && in(n, 2).kind == Imp::Bool && in(n, 2).b;
      setTensor(n, argOf(kind, tensorIn(n, 0), in(n, 1), keep));
    };
  };
  C["aten::argmax"] = argExtreme(ReductionKind::Max);
  C["aten::argmin"] = argExtreme(ReductionKind::Min);
  // max / min: of all elements; max.dim / min.dim: (values, indices) along
  // a dimension; max.other / min.other: the elementwise forms.
  auto extreme = [this, argOf](ReductionKind kind) {
    return [this, kind, argOf](OpCall *n) {
      if (n->numInputs() == 2 && in(n, 1).kind == Imp::Tensor) {
        setTensor(n, kind == ReductionKind::Max
                         ? binary<MaxOp>(in(n, 0), in(n, 1))
                         : binary<MinOp>(in(n, 0), in(n, 1)));
        return;
      }
      MValue x = tensorIn(n, 0);
      if (n->numInputs() == 1) {
        setTensor(n, reduce(kind, x, {}, false));
        return;
      }
      int64_t rank = shapeOf(x).size();
      int64_t dim = normDim(in(n, 1).asInt(), std::max<int64_t>(rank, 1));
      bool keep =
          n->numInputs() > 2 && in(n, 2).kind == Imp::Bool && in(n, 2).b;
      setOut(n, 0, Imp::ofTensor(reduce(kind, x, {dim}, keep)));
      setOut(n, 1, Imp::ofTensor(argOf(kind, x, in(n, 1), keep)));
    };
  };
  C["aten::max"] = extreme(ReductionKind::Max);
  C["aten::min"] = extreme(ReductionKind::Min);
  // prod: products of halves until one element is left on the dimension
  // (integers promoted to i64, as PyTorch); dim None: of the flattened
  // tensor.
  C["aten::prod"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    Type elem = elemOf(x);
    if (!mlir::isa<mlir::FloatType>(elem))
      elem = i64();
    x = convert(x, dtypeOr(n, elem));
    bool all = n->numInputs() < 3;
    int64_t dim = 0;
    bool keep = false;
    if (all)
      x = reshape(x, {numElements(shapeOf(x))});
    else {
      dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
      keep = in(n, 2).kind == Imp::Bool && in(n, 2).b;
    }
    if (shapeOf(x).empty())
      x = reshape(x, {1});
    std::vector<int64_t> one(shapeOf(x).begin(), shapeOf(x).end());
    one[dim] = 1;
    if (shapeOf(x)[dim] == 0)
      x = splat(one, elemOf(x), 1.0);
    while (shapeOf(x)[dim] > 1) {
      int64_t len = shapeOf(x)[dim], half = len / 2;
      MValue p = MulOp::create(b, loc, slice(x, dim, 0, half, 1),
                               slice(x, dim, half, 2 * half, 1));
      if (len % 2)
        p = createChecked<ConcatOp>(
            llvm::SmallVector<MValue>{p, slice(x, dim, len - 1, len, 1)},
            b.getI64IntegerAttr(dim));
      x = p;
    }
    if (all)
      x = reshape(x, {});
    else if (!keep) {
      std::vector<int64_t> dropped(shapeOf(x).begin(), shapeOf(x).end());
      dropped.erase(dropped.begin() + dim);
      x = reshape(x, dropped);
    }
    setTensor(n, x);
  };
  // var(x, dim, correction, keepdim) = sum((x - mean)^2) / (N - correction).
  C["aten::var"] = [this, dimsArg](OpCall *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> dims = dimsArg(n, 1);
    auto s = shapeOf(x);
    int64_t count = 1;
    if (dims.empty())
      count = numElements(s);
    else
      for (int64_t d : dims)
        count *= s[normDim(d, s.size())];
    // var.correction's `correction`, or the older overloads' `unbiased`
    // (what TorchScript records: unbiased=False is correction 0).
    Imp *c = namedInput(n, "correction");
    Imp *unbiased = namedInput(n, "unbiased");
    double correction = c && c->isNumber() ? c->asDouble()
                        : unbiased && unbiased->kind == Imp::Bool
                            ? double(unbiased->b)
                            : 1.0;
    Imp *k = namedInput(n, "keepdim");
    bool keep = k && k->kind == Imp::Bool && k->b;
    MValue sum = reduce(ReductionKind::Sum, x, dims, true);
    Imp mean = Imp::ofTensor(binary<DivOp>(Imp::ofTensor(sum),
                                           Imp::ofFloat(double(count))));
    Imp d = Imp::ofTensor(binary<SubOp>(Imp::ofTensor(x), mean));
    MValue sq = reduce(ReductionKind::Sum, binary<MulOp>(d, d), dims, keep);
    setTensor(n, binary<DivOp>(Imp::ofTensor(sq),
                               Imp::ofFloat(double(count) - correction)));
  };
  C["aten::cumsum"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    Type elem = elemOf(x);
    if (elem.isInteger(1) || elem.isInteger(32))
      elem = i64();
    x = convert(x, dtypeOr(n, elem));
    // A zero-dim tensor is its own cumulative sum (over dimension 0 or -1).
    int64_t rank = shapeOf(x).size();
    int64_t dim = normDim(in(n, 1).asInt(), std::max<int64_t>(rank, 1));
    setTensor(n, rank == 0 ? x
                           : MValue(CumsumOp::create(
                                 b, loc, x, b.getI64IntegerAttr(dim))));
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
