//===- Slicing.cpp - Slice, select and split converters -------------------===//
//
// Ops that take parts of a tensor along one dimension: slice, narrow and
// select (views, Aliasing.cpp), unbind, chunk and split, and diff.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

#include <algorithm>

using namespace glimmer;
using namespace glimmer::detail;

/// The view a select or slice takes, with PyTorch's index rules.
std::optional<OpConverter::ViewStep> OpConverter::viewStepOf(OpCall *node) {
  std::string kind = node->kind();
  bool select = kind == "aten::select";
  if (!select && kind != "aten::slice")
    return std::nullopt;
  const Imp &x = in(node, 0);
  if (x.kind != Imp::Tensor)
    return std::nullopt;
  auto shape = shapeOf(x.tensor);
  ViewStep s;
  s.select = select;
  s.dim = normDim(in(node, 1).asInt(), shape.size());
  int64_t size = shape[s.dim];
  if (select) {
    s.start = in(node, 2).asInt();
    if (s.start < 0)
      s.start += size;
    if (s.start < 0 || s.start >= size)
      fail("index " + std::to_string(in(node, 2).asInt()) +
           " is out of range for size " + std::to_string(size));
    s.end = s.start + 1;
    s.step = 1;
    return s;
  }
  auto clamp = [&](const Imp &v, int64_t dflt) {
    if (v.kind == Imp::None)
      return dflt;
    int64_t i = v.asInt();
    if (i < 0)
      i += size;
    return std::min(std::max<int64_t>(i, 0), size);
  };
  s.start = clamp(in(node, 2), 0);
  s.end = std::max(clamp(in(node, 3), size), s.start);
  s.step = in(node, 4).asInt();
  if (s.step < 1)
    fail("slice step must be positive");
  return s;
}

MValue OpConverter::applyView(MValue v, llvm::ArrayRef<ViewStep> steps) {
  for (const ViewStep &s : steps) {
    v = slice(v, s.dim, s.start, s.end, s.step);
    if (s.select) {
      std::vector<int64_t> out(shapeOf(v).begin(), shapeOf(v).end());
      out.erase(out.begin() + s.dim);
      v = reshape(v, out);
    }
  }
  return v;
}

void OpConverter::registerSlicingConverters() {
  auto &C = converters;
  // diff(self, n, dim, prepend, append): the n-th forward difference along
  // dim of prepend ++ self ++ append (inequality for booleans, as PyTorch).
  C["aten::diff"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    int64_t order = in(n, 1).asInt();
    int64_t dim = normDim(in(n, 2).asInt(), shapeOf(x).size());
    std::vector<MValue> parts;
    for (size_t i : {size_t(3), size_t(0), size_t(4)})
      if (in(n, i).kind == Imp::Tensor)
        parts.push_back(tensorIn(n, i));
    if (parts.size() > 1)
      x = ConcatOp::create(b, loc, parts, b.getI64IntegerAttr(dim));
    for (int64_t k = 0; k < order && shapeOf(x)[dim] > 0; ++k) {
      int64_t len = shapeOf(x)[dim];
      Imp next = Imp::ofTensor(slice(x, dim, 1, len, 1));
      Imp prev = Imp::ofTensor(slice(x, dim, 0, len - 1, 1));
      x = elemOf(x).isInteger(1) ? compare(CompareDirection::NE, next, prev)
                                 : binary<SubOp>(next, prev);
    }
    setTensor(n, x);
  };
  auto clampIndex = [](int64_t v, int64_t size) {
    if (v < 0)
      v += size;
    return std::min(std::max<int64_t>(v, 0), size);
  };
  C["aten::slice"] = [this, clampIndex](OpCall *n) {
    Imp &x = in(n, 0);
    if (x.kind == Imp::List) {
      int64_t size = x.list.size();
      int64_t start =
          in(n, 1).kind == Imp::None ? 0 : clampIndex(in(n, 1).asInt(), size);
      int64_t end = in(n, 2).kind == Imp::None
                        ? size
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
  C["aten::narrow"] = [this](OpCall *n) {
    MValue t = tensorIn(n, 0);
    auto s = shapeOf(t);
    int64_t dim = normDim(in(n, 1).asInt(), s.size());
    int64_t start = in(n, 2).asInt();
    if (start < 0)
      start += s[dim];
    setTensor(n, slice(t, dim, start, start + in(n, 3).asInt(), 1));
  };
  C["aten::select"] = [this](OpCall *n) {
    setTensor(n, applyView(tensorIn(n, 0), *viewStepOf(n)));
  };
  C["aten::unbind"] = [this](OpCall *n) {
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
  C["aten::chunk"] = [this, splitBy](OpCall *n) {
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
  C["aten::split"] = [this, splitBy](OpCall *n) {
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
}
