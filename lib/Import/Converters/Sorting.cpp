//===- Sorting.cpp - Sort, topk and searchsorted converters ---------------===//
//
// sort and topk as glimmer.argsort (a stable sort's positions along a
// dimension) and a gather of the input at those positions: the gather's
// VJP scatters the values' cotangent back through the positions, which is
// PyTorch's gradient of both. searchsorted counts, for each value, the
// sorted entries before it: a comparison of every value with every entry
// and a sum, no sort needed (isin's decomposition calls it); isin, as
// TorchScript records it, compares every element with every test element.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

#include <algorithm>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerSortingConverters() {
  auto &C = converters;
  // x read at `positions` along `dim` (take_along_dim): positions has x's
  // rank and at most x's sizes.
  auto takeAlong = [this](MValue x, int64_t dim, MValue positions,
                          const char *what) {
    MValue linear = scatterPositions(x, dim, positions, what);
    MValue flat = gatherRows(reshape(x, {numElements(shapeOf(x))}), linear);
    return reshape(flat, shapeOf(positions));
  };
  // The argument `name` (a keyword of sort.stable), else operand `at`
  // where there is one, else `fallback`.
  auto arg = [this](OpCall *n, const char *name, size_t at,
                    int64_t fallback) -> int64_t {
    if (Imp *v = namedInput(n, name))
      return v->kind == Imp::None ? fallback : v->asInt();
    if (!n->schema() && at < n->numInputs() && in(n, at).isNumber())
      return in(n, at).asInt();
    return fallback;
  };
  // sort(self, dim=-1, descending=False) and sort.stable(self, *, stable,
  // dim, descending): argsort is stable, which satisfies both (PyTorch
  // leaves the order of equal elements unspecified without `stable`).
  C["aten::sort"] = [this, takeAlong, arg](OpCall *n) {
    MValue x = tensorIn(n, 0);
    int64_t rank = shapeOf(x).size();
    int64_t dim = normDim(arg(n, "dim", 1, -1), std::max<int64_t>(rank, 1));
    bool descending = arg(n, "descending", 2, 0) != 0;
    if (rank == 0) {
      // A zero-dim tensor is its own sort, at position 0.
      setOut(n, 0, Imp::ofTensor(x));
      setOut(n, 1, Imp::ofTensor(splat({}, i64(), 0)));
      return;
    }
    MValue order = createChecked<ArgsortOp>(
        x, b.getI64IntegerAttr(dim),
        descending ? b.getUnitAttr() : mlir::UnitAttr());
    setOut(n, 0, Imp::ofTensor(takeAlong(x, dim, order, "sort")));
    setOut(n, 1, Imp::ofTensor(order));
  };
  // msort(self), as TorchScript records it: the values of a sort along
  // dimension 0.
  C["aten::msort"] = [this, takeAlong](OpCall *n) {
    MValue x = tensorIn(n, 0);
    if (shapeOf(x).empty()) {
      setTensor(n, x);
      return;
    }
    MValue order = createChecked<ArgsortOp>(x, b.getI64IntegerAttr(0),
                                            mlir::UnitAttr());
    setTensor(n, takeAlong(x, 0, order, "msort"));
  };
  // topk(self, k, dim=-1, largest=True, sorted=True): the first k
  // positions of a descending (largest) or ascending sort. Sorted or not,
  // the result is in sorted order, one of the orders PyTorch allows.
  C["aten::topk"] = [this, takeAlong](OpCall *n) {
    MValue x = tensorIn(n, 0);
    int64_t rank = shapeOf(x).size();
    int64_t k = in(n, 1).asInt();
    int64_t dim = normDim(n->numInputs() > 2 ? in(n, 2).asInt() : -1,
                          std::max<int64_t>(rank, 1));
    bool largest = n->numInputs() <= 3 || in(n, 3).kind != Imp::Bool ||
                   in(n, 3).b;
    int64_t len = rank == 0 ? 1 : shapeOf(x)[dim];
    if (k < 0 || k > len)
      fail("topk: k (" + std::to_string(k) + ") is out of range for a "
           "dimension of size " + std::to_string(len));
    if (k == 0)
      fail("topk with k = 0: empty results are not supported");
    if (rank == 0) {
      setOut(n, 0, Imp::ofTensor(x));
      setOut(n, 1, Imp::ofTensor(splat({}, i64(), 0)));
      return;
    }
    MValue order = createChecked<ArgsortOp>(
        x, b.getI64IntegerAttr(dim),
        largest ? b.getUnitAttr() : mlir::UnitAttr());
    MValue first = slice(order, dim, 0, k, 1);
    setOut(n, 0, Imp::ofTensor(takeAlong(x, dim, first, "topk")));
    setOut(n, 1, Imp::ofTensor(first));
  };
  // isin(elements, test_elements, *, assume_unique, invert), as TorchScript
  // records it (its Core ATen decomposition sorts and calls searchsorted):
  // every element compared with every test element, any equal.
  C["aten::isin"] = [this](OpCall *n) {
    Imp elements = in(n, 0), tests = in(n, 1);
    Type elem = promote(elements, tests);
    auto flat = [&](const Imp &v) {
      return v.kind == Imp::Tensor
                 ? convert(reshape(v.tensor, {numElements(shapeOf(v.tensor))}),
                           elem)
                 : splat({1}, elem, v.asDouble());
    };
    MValue e = flat(elements), t = flat(tests);
    int64_t ne = shapeOf(e)[0], nt = shapeOf(t)[0];
    MValue equal = compare(
        CompareDirection::EQ,
        Imp::ofTensor(broadcastTo(reshape(e, {ne, 1}), {ne, nt})),
        Imp::ofTensor(broadcastTo(reshape(t, {1, nt}), {ne, nt})));
    MValue found = convert(
        reduce(ReductionKind::Max, convert(equal, i64()), {1}, false), i1());
    Imp *invert = namedInput(n, "invert");
    if (invert && invert->kind == Imp::Bool && invert->b)
      found = compare(CompareDirection::EQ, Imp::ofTensor(found),
                      Imp::ofBool(false));
    std::vector<int64_t> shape;
    if (elements.kind == Imp::Tensor)
      shape.assign(shapeOf(elements.tensor).begin(),
                   shapeOf(elements.tensor).end());
    setTensor(n, reshape(found, shape));
  };
  // searchsorted(sorted_sequence, self, *, out_int32, right, side, sorter):
  // the number of entries of each sorted row that lie below each value
  // (left), or at or below it (right). A 1-D sequence serves every value;
  // an N-D one has the values' leading dimensions, one row each. With a
  // sorter the row is read through it first.
  C["aten::searchsorted"] = [this, takeAlong](OpCall *n) {
    MValue seq = tensorIn(n, 0);
    Imp *outInt32 = namedInput(n, "out_int32");
    Imp *rightArg = namedInput(n, "right");
    Imp *side = namedInput(n, "side");
    Imp *sorter = namedInput(n, "sorter");
    bool right = rightArg && rightArg->kind == Imp::Bool && rightArg->b;
    if (side && side->kind == Imp::Str)
      right = side->s == "right";
    auto ss = shapeOf(seq);
    if (ss.empty())
      fail("searchsorted: the sorted sequence must have a dimension");
    if (sorter && sorter->kind == Imp::Tensor)
      seq = takeAlong(seq, ss.size() - 1, sorter->tensor, "searchsorted");
    Imp values = in(n, 1);
    Type elem = promote(Imp::ofTensor(seq), values);
    MValue v = values.kind == Imp::Tensor ? convert(values.tensor, elem)
                                          : splat({}, elem, values.asDouble());
    seq = convert(seq, elem);
    auto vs = shapeOf(v);
    int64_t m = ss.back();
    // Values [..., n, 1] against entries [..., 1, m].
    std::vector<int64_t> vShape(vs.begin(), vs.end()), sShape;
    if (ss.size() == 1) {
      sShape.assign(vs.size(), 1);
    } else {
      if (vs.size() != ss.size() ||
          !std::equal(ss.begin(), ss.end() - 1, vs.begin()))
        fail("searchsorted: the values " + shapeString(vs) +
             " must share the sorted sequence's leading dimensions " +
             shapeString(ss));
      sShape.assign(ss.begin(), ss.end() - 1);
      sShape.push_back(1);
    }
    sShape.push_back(m);
    vShape.push_back(1);
    std::vector<int64_t> grid(vs.begin(), vs.end());
    grid.push_back(m);
    MValue entries = broadcastTo(reshape(seq, sShape), grid);
    MValue probes = broadcastTo(reshape(v, vShape), grid);
    MValue below =
        compare(right ? CompareDirection::LE : CompareDirection::LT,
                Imp::ofTensor(entries), Imp::ofTensor(probes));
    MValue count = reduce(ReductionKind::Sum, convert(below, i64()),
                          {int64_t(grid.size()) - 1}, false);
    bool int32 = outInt32 && outInt32->kind == Imp::Bool && outInt32->b;
    setTensor(n, int32 ? convert(count, b.getI32Type()) : count);
  };
}
