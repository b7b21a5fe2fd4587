//===- Views.cpp - View and reshape converters ----------------------------===//
//
// Ops that rearrange a tensor's shape: view and reshape, flatten,
// unflatten, squeeze, unsqueeze, transpose, permute, expand and repeat.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

#include <algorithm>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerViewConverters() {
  auto &C = converters;
  auto viewTo = [this](OpCall *n, std::vector<int64_t> shape) {
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
      fail("cannot view a tensor of shape " + shapeString(shapeOf(x)) + " as " +
           shapeString(shape));
    setTensor(n, reshape(x, shape));
  };
  C["aten::view"] = [this, viewTo](OpCall *n) {
    viewTo(n, intList(in(n, 1)));
  };
  C["aten::reshape"] = C["aten::view"];
  C["aten::_reshape_alias"] = C["aten::view"];
  // A view without the alias bookkeeping (what decompositions emit).
  C["aten::_unsafe_view"] = C["aten::view"];
  C["aten::view_as"] = [this, viewTo](OpCall *n) {
    auto s = shapeOf(tensorIn(n, 1));
    viewTo(n, std::vector<int64_t>(s.begin(), s.end()));
  };
  C["aten::reshape_as"] = C["aten::view_as"];
  C["aten::flatten"] = [this](OpCall *n) {
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
  C["aten::unflatten"] = [this](OpCall *n) {
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
  C["aten::unsqueeze"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    auto s = shapeOf(x);
    int64_t d = normDim(in(n, 1).asInt(), s.size() + 1);
    std::vector<int64_t> out(s.begin(), s.end());
    out.insert(out.begin() + d, 1);
    setTensor(n, reshape(x, out));
  };
  C["aten::squeeze"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    auto s = shapeOf(x);
    std::vector<int64_t> dims;
    if (n->numInputs() > 1)
      for (int64_t d : intList(in(n, 1)))
        dims.push_back(normDim(d, s.size()));
    std::vector<int64_t> out;
    for (int64_t d = 0; d < int64_t(s.size()); ++d) {
      bool squeeze = s[d] == 1 &&
                     (dims.empty() || std::count(dims.begin(), dims.end(), d));
      if (!squeeze)
        out.push_back(s[d]);
    }
    setTensor(n, reshape(x, out));
  };
  C["aten::transpose"] = [this](OpCall *n) {
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
  C["aten::t"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    if (shapeOf(x).size() < 2)
      setTensor(n, x);
    else
      setTensor(n, transpose(x, {1, 0}));
  };
  C["aten::permute"] = [this](OpCall *n) {
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
  C["aten::expand"] = [this, expandTo](OpCall *n) {
    setTensor(n, expandTo(tensorIn(n, 0), intList(in(n, 1))));
  };
  C["aten::expand_as"] = [this, expandTo](OpCall *n) {
    auto s = shapeOf(tensorIn(n, 1));
    setTensor(n, expandTo(tensorIn(n, 0), {s.begin(), s.end()}));
  };
  C["aten::repeat"] = [this](OpCall *n) {
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
}
