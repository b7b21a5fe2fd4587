//===- Distances.cpp - Pairwise distance converters -----------------------===//
//
// _cdist_forward(x1, x2, p, compute_mode): the p-norm of every row
// difference, [.., R1, R2] (p = 0 counts the nonzero differences, p = inf
// takes the largest); _pdist_forward(x, p): of the row pairs i < j,
// row-major (empty for fewer than two rows).
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

#include <cmath>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerDistanceConverters() {
  auto &C = converters;
  // The p-norm of d over its last dimension.
  auto pnorm = [this](MValue d, double p) {
    Type elem = elemOf(d);
    std::vector<int64_t> last{int64_t(shapeOf(d).size()) - 1};
    if (p == 0.0)
      return reduce(ReductionKind::Sum,
                    convert(compare(CompareDirection::NE, Imp::ofTensor(d),
                                    Imp::ofFloat(0.0)),
                            elem),
                    last, false);
    MValue m = AbsOp::create(b, loc, d);
    if (std::isinf(p))
      return reduce(ReductionKind::Max, m, last, false);
    if (p == 1.0)
      return reduce(ReductionKind::Sum, m, last, false);
    if (p == 2.0)
      return MValue(SqrtOp::create(
          b, loc, reduce(ReductionKind::Sum, MulOp::create(b, loc, d, d),
                         last, false)));
    MValue powered = PowOp::create(b, loc, m, splat(shapeOf(m), elem, p));
    MValue sum = reduce(ReductionKind::Sum, powered, last, false);
    return MValue(
        PowOp::create(b, loc, sum, splat(shapeOf(sum), elem, 1.0 / p)));
  };
  C["aten::_cdist_forward"] = [this, pnorm](OpCall *n) {
    MValue x1 = tensorIn(n, 0), x2 = tensorIn(n, 1);
    auto s1 = shapeOf(x1), s2 = shapeOf(x2);
    if (s1.size() < 2 || s1.size() != s2.size())
      fail("cdist expects two inputs of one rank, at least 2");
    std::vector<int64_t> a(s1.begin(), s1.end()), c(s2.begin(), s2.end());
    a.insert(a.end() - 1, 1);
    c.insert(c.end() - 2, 1);
    std::vector<int64_t> full = broadcastShapes(a, c);
    MValue d = SubOp::create(b, loc, broadcastTo(reshape(x1, a), full),
                             broadcastTo(reshape(x2, c), full));
    setTensor(n, pnorm(d, in(n, 2).asDouble()));
  };
  // cdist(x1, x2, p, compute_mode), as TorchScript records it: the same
  // (compute_mode picks PyTorch's kernel, not the result).
  C["aten::cdist"] = C["aten::_cdist_forward"];
  // Only the pairs' differences: a zero distance of a row with itself would
  // make the 2-norm's VJP 0/0.
  C["aten::_pdist_forward"] = [this, pnorm](OpCall *n) {
    MValue x = tensorIn(n, 0);
    if (shapeOf(x).size() != 2)
      fail("pdist expects a 2-D input");
    int64_t rows = shapeOf(x)[0];
    std::vector<int64_t> first, second;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = i + 1; j < rows; ++j) {
        first.push_back(i);
        second.push_back(j);
      }
    if (first.empty()) {
      // No pairs: an empty result, as in PyTorch.
      setTensor(n, splat({0}, elemOf(x), 0.0));
      return;
    }
    auto rowsAt = [&](const std::vector<int64_t> &at) {
      return selectAlong(x, 0, constantFromTensor(at::tensor(at, at::kLong)));
    };
    MValue d = SubOp::create(b, loc, rowsAt(first), rowsAt(second));
    setTensor(n, pnorm(d, in(n, 1).asDouble()));
  };
  // pdist(x, p), as TorchScript records it: the same.
  C["aten::pdist"] = C["aten::_pdist_forward"];
}
