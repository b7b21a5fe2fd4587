//===- DataMovement.cpp - Copy, concatenation and padding converters ------===//
//
// Ops that move data between tensors: the in-place copy, the scatters of
// a slice or a select, cat and stack, constant padding (the other modes
// are Padding.cpp's), and col2im (fold).
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
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
  // select_scatter(self, src, dim, index): slice_scatter of [index,
  // index + 1) with src given the selected dimension back.
  C["aten::select_scatter"] = [this](OpCall *n) {
    MValue self = tensorIn(n, 0), src = tensorIn(n, 1);
    auto s = shapeOf(self);
    int64_t dim = normDim(in(n, 2).asInt(), s.size());
    int64_t index = in(n, 3).asInt(), size = s[dim];
    if (index < -size || index >= size)
      fail("select_scatter: index " + std::to_string(index) +
           " is out of range for a dimension of size " + std::to_string(size));
    if (index < 0)
      index += size;
    std::vector<int64_t> one(s.begin(), s.end());
    one[dim] = 1;
    if (numElements(shapeOf(src)) != numElements(one))
      fail("select_scatter: src must have the shape of the selected slice");
    llvm::SmallVector<MValue> parts;
    if (index > 0)
      parts.push_back(slice(self, dim, 0, index, 1));
    parts.push_back(reshape(convert(src, elemOf(self)), one));
    if (index + 1 < size)
      parts.push_back(slice(self, dim, index + 1, size, 1));
    setTensor(n, parts.size() == 1 ? parts[0]
                                   : MValue(createChecked<ConcatOp>(
                                         parts, b.getI64IntegerAttr(dim))));
  };
  // col2im(self, output_size, kernel_size, dilation, padding, stride): the
  // columns [N, C kh kw, L] of unfold summed back into [N, C, H, W]: each
  // column entry goes to a constant position of the image (a spare row
  // where it falls in the padding), one scatter-add of rows that are the
  // batch.
  C["aten::col2im"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    auto pair = [&](size_t i) {
      std::vector<int64_t> v = intList(in(n, i));
      if (v.size() == 1)
        v.push_back(v[0]);
      if (v.size() != 2)
        fail("col2im expects 2 values for output_size, kernel_size, "
             "dilation, padding and stride");
      return v;
    };
    std::vector<int64_t> size = pair(1), k = pair(2), d = pair(3), p = pair(4),
                         st = pair(5);
    auto xs = shapeOf(x);
    bool batched = xs.size() == 3;
    if (xs.size() != 2 && xs.size() != 3)
      fail("col2im expects an input of rank 2 or 3");
    int64_t batch = batched ? xs[0] : 1, rows = xs[xs.size() - 2],
            cols = xs.back();
    int64_t blocks[2];
    for (int j = 0; j < 2; ++j)
      blocks[j] = (size[j] + 2 * p[j] - d[j] * (k[j] - 1) - 1) / st[j] + 1;
    if (rows % (k[0] * k[1]) != 0 || blocks[0] <= 0 || blocks[1] <= 0 ||
        cols != blocks[0] * blocks[1])
      fail("col2im: an input of " + shapeString(xs) +
           " does not hold the "
           "kernel's columns of " +
           std::to_string(blocks[0]) + " x " +
           std::to_string(std::max<int64_t>(blocks[1], 0)) + " blocks");
    int64_t channels = rows / (k[0] * k[1]);
    int64_t image = channels * size[0] * size[1];
    at::Tensor positions = at::empty({rows * cols}, at::kLong);
    auto cell = positions.accessor<int64_t, 1>();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t c = r / (k[0] * k[1]), ki = r / k[1] % k[0], kj = r % k[1];
      for (int64_t l = 0; l < cols; ++l) {
        int64_t h = l / blocks[1] * st[0] - p[0] + ki * d[0];
        int64_t w = l % blocks[1] * st[1] - p[1] + kj * d[1];
        bool inside = h >= 0 && h < size[0] && w >= 0 && w < size[1];
        cell[r * cols + l] = inside ? (c * size[0] + h) * size[1] + w : image;
      }
    }
    MValue flat = reshape(x, {batch, rows * cols});
    MValue summed = EmbeddingGradOp::create(
        b, loc, tensorType({image + 1, batch}, elemOf(x)),
        transpose(flat, {1, 0}), constantFromTensor(positions));
    MValue y = transpose(slice(summed, 0, 0, image, 1), {1, 0});
    std::vector<int64_t> out{channels, size[0], size[1]};
    if (batched)
      out.insert(out.begin(), batch);
    setTensor(n, reshape(y, out));
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
  // pad(self, pad, mode, value): reflect and replicate are the
  // reflection_pad / replication_pad of the padded dimensions.
  C["aten::pad"] = [this](OpCall *n) {
    Imp *mode = namedInput(n, "mode");
    if (mode && mode->kind == Imp::Str && mode->s != "constant") {
      size_t k = intList(in(n, 1)).size() / 2;
      const char *op = mode->s == "reflect"     ? "aten::reflection_pad"
                       : mode->s == "replicate" ? "aten::replication_pad"
                                                : nullptr;
      if (!op || k < 1 || k > 3)
        fail("padding mode '" + mode->s +
             "' is not supported (constant, "
             "reflect and replicate over 1 to 3 dimensions are)");
      converters[op + std::to_string(k) + "d"](n);
      return;
    }
    converters["aten::constant_pad_nd"](n);
  };
}
