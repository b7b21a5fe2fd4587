//===- DataMovement.cpp - Copy, concatenation and padding converters ------===//
//
// Ops that move data between tensors: the in-place copy, cat and stack,
// and constant padding.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

#include <algorithm>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerDataMovementConverters() {
  auto &C = converters;
  // An in-place write; Aliasing.cpp puts it back into what `self` views.
  C["aten::copy_"] = [this](OpCall *n) {
    MValue self = tensorIn(n, 0);
    setTensor(
        n, broadcastTo(convert(tensorIn(n, 1), elemOf(self)), shapeOf(self)));
  };
  // The functional copy: src broadcast and converted to self's type.
  C["aten::copy"] = C["aten::copy_"];
  // slice_scatter(self, src, dim, start, end, 1): self with src written over
  // [start, end) of dim, as the concatenation around it.
  C["aten::slice_scatter"] = [this](OpCall *n) {
    MValue self = tensorIn(n, 0), src = tensorIn(n, 1);
    auto s = shapeOf(self);
    int64_t dim = normDim(in(n, 2).asInt(), s.size());
    int64_t size = s[dim];
    auto bound = [&](const Imp &v, int64_t dflt) {
      int64_t i = v.kind == Imp::None ? dflt : v.asInt();
      if (i < 0)
        i += size;
      return std::clamp<int64_t>(i, 0, size);
    };
    int64_t start = bound(in(n, 3), 0), end = bound(in(n, 4), size);
    if (in(n, 5).kind != Imp::None && in(n, 5).asInt() != 1)
      fail("slice_scatter with a step other than 1 is not supported");
    end = std::max(end, start);
    llvm::SmallVector<MValue> parts;
    if (start > 0)
      parts.push_back(slice(self, dim, 0, start, 1));
    parts.push_back(convert(src, elemOf(self)));
    if (end < size)
      parts.push_back(slice(self, dim, end, size, 1));
    setTensor(n, parts.size() == 1
                     ? parts[0]
                     : MValue(createChecked<ConcatOp>(
                           parts, b.getI64IntegerAttr(dim))));
  };
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
  C["aten::cat"] = [this, commonElem](OpCall *n) {
    Imp &l = in(n, 0);
    // PyTorch promotes to a common type and skips legacy empty 1-D tensors.
    Type elem = commonElem(l, "cat");
    llvm::SmallVector<MValue> parts;
    int64_t rank = 0;
    for (const Imp &e : l.list)
      rank = std::max<int64_t>(rank, shapeOf(e.tensor).size());
    int64_t dim = normDim(in(n, 1).asInt(), rank);
    for (const Imp &e : l.list) {
      auto s = shapeOf(e.tensor);
      if (s.size() == 1 && s[0] == 0 && rank > 1)
        continue;
      parts.push_back(convert(e.tensor, elem));
    }
    if (parts.size() == 1) {
      setTensor(n, parts[0]);
      return;
    }
    setTensor(n, createChecked<ConcatOp>(parts, b.getI64IntegerAttr(dim)));
  };
  C["aten::concat"] = C["aten::cat"];
  C["aten::stack"] = [this, commonElem](OpCall *n) {
    Imp &l = in(n, 0);
    Type elem = commonElem(l, "stack");
    auto s = shapeOf(l.list[0].tensor);
    int64_t dim = normDim(in(n, 1).asInt(), s.size() + 1);
    std::vector<int64_t> one(s.begin(), s.end());
    one.insert(one.begin() + dim, 1);
    llvm::SmallVector<MValue> parts;
    for (const Imp &e : l.list)
      parts.push_back(reshape(convert(e.tensor, elem), one));
    setTensor(n, ConcatOp::create(b, loc, parts, b.getI64IntegerAttr(dim)));
  };
  C["aten::constant_pad_nd"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> pad = intList(in(n, 1));
    // constant_pad_nd(self, pad, value) and pad(self, pad, mode, value).
    Imp *valueArg = namedInput(n, "value");
    double value =
        valueArg && valueArg->isNumber() ? valueArg->asDouble() : 0.0;
    auto s = shapeOf(x);
    std::vector<int64_t> low(s.size(), 0), high(s.size(), 0);
    for (size_t i = 0; i + 1 < pad.size() + 1 && i / 2 < s.size(); i += 2) {
      size_t d = s.size() - 1 - i / 2;
      if (pad[i] < 0 || pad[i + 1] < 0)
        fail("negative padding is not supported");
      low[d] = pad[i];
      high[d] = pad[i + 1];
    }
    setTensor(n, PadOp::create(b, loc, x, b.getDenseI64ArrayAttr(low),
                               b.getDenseI64ArrayAttr(high),
                               b.getF64FloatAttr(value)));
  };
  C["aten::pad"] = [this](OpCall *n) {
    Imp *mode = namedInput(n, "mode");
    if (mode && mode->kind == Imp::Str && mode->s != "constant")
      fail("only constant padding is supported, got mode '" + mode->s + "'");
    converters["aten::constant_pad_nd"](n);
  };
}
