//===- Pooling.cpp - Average and max pooling converters ------------------===//
//
// Average pooling over box windows is separable: each spatial dimension is
// averaged on its own by a constant [out, in] matrix whose row i spreads
// 1/divisor over the inputs of window i, applied as a matmul along that
// dimension. avg_pool2d and avg_pool3d (padding, ceil_mode,
// count_include_pad, divisor_override as PyTorch's) and the adaptive
// poolings take this form; avg_pool2d over windows that tile the input is a
// reshape and a sum. Max pooling with indices gathers every window's
// elements (a constant table of positions, padding reading -inf) and
// reduces them; its backward scatter-adds the gradient at the indices.
// The average poolings' backward ops apply the transposed matrices.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

#include <algorithm>
#include <cmath>

using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// One window of a pooled dimension: the inputs [begin, end) it reads and
/// what their sum is divided by.
struct Window {
  int64_t begin, end;
  double divisor;
};

/// PyTorch's avg_pool windows along a dimension of size `size`.
std::vector<Window> avgPoolWindows(int64_t size, int64_t kernel,
                                   int64_t stride, int64_t pad, bool ceil,
                                   bool countPad) {
  int64_t span = size + 2 * pad - kernel;
  int64_t out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  // The last window must start inside the input or its left padding.
  if (ceil && (out - 1) * stride >= size + pad)
    --out;
  std::vector<Window> windows;
  for (int64_t i = 0; i < out; ++i) {
    int64_t begin = i * stride - pad;
    int64_t end = std::min(begin + kernel, size + pad);
    int64_t padded = end - begin;
    begin = std::max<int64_t>(begin, 0);
    end = std::min(end, size);
    windows.push_back({begin, end, double(countPad ? padded : end - begin)});
  }
  return windows;
}

/// adaptive_avg_pool's windows: [floor(i L / o), ceil((i + 1) L / o)).
std::vector<Window> adaptiveWindows(int64_t size, int64_t out) {
  std::vector<Window> windows;
  for (int64_t i = 0; i < out; ++i) {
    int64_t begin = (i * size) / out;
    int64_t end = ((i + 1) * size + out - 1) / out;
    windows.push_back({begin, end, double(end - begin)});
  }
  return windows;
}

} // namespace

/// PyTorch's max_pool output size along one dimension.
int64_t maxPoolOutput(int64_t size, int64_t kernel, int64_t stride,
                      int64_t pad, int64_t dilation, bool ceil) {
  int64_t span = size + 2 * pad - dilation * (kernel - 1) - 1;
  int64_t out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil && (out - 1) * stride >= size + pad)
    --out;
  return out;
}

void OpConverter::registerPoolingConverters() {
  auto &C = converters;
  // A kernel_size / stride / padding / dilation argument: one value per
  // pooled dimension (one value for all; an empty list takes `dflt`).
  auto poolArg = [this](const Imp &v, size_t k, std::vector<int64_t> dflt) {
    std::vector<int64_t> l =
        v.kind == Imp::List && v.list.empty() ? dflt : intList(v);
    if (l.size() == 1)
      l.assign(k, l[0]);
    if (l.size() != k)
      fail("pooling expects 1 or " + std::to_string(k) +
           " values per argument");
    return l;
  };
  // x averaged over `windows[k]` along its last windows.size() dimensions;
  // with the pooled input's `sizes` there, the backward: x (the gradient
  // of the pooled output) spread back over the windows' inputs.
  auto pool = [this](MValue x, const std::vector<std::vector<Window>> &windows,
                     llvm::ArrayRef<int64_t> sizes = {}) {
    int64_t rank = shapeOf(x).size(), k = windows.size();
    if (!mlir::isa<mlir::FloatType>(elemOf(x)))
      fail("average pooling of a non-floating-point tensor");
    if (rank < k + 1)
      fail("average pooling over " + std::to_string(k) +
           " dimensions expects an input of rank " + std::to_string(k + 1) +
           " or " + std::to_string(k + 2));
    for (int64_t j = 0; j < k; ++j) {
      int64_t dim = rank - k + j;
      int64_t size = sizes.empty() ? shapeOf(x)[dim] : sizes[j];
      const std::vector<Window> &w = windows[j];
      if (w.empty())
        fail("average pooling leaves no output along a dimension");
      if (!sizes.empty() && shapeOf(x)[dim] != int64_t(w.size()))
        fail("average pooling backward: grad_output has " +
             std::to_string(shapeOf(x)[dim]) +
             " positions where the "
             "pooling makes " +
             std::to_string(w.size()));
      at::Tensor m = at::zeros({size, int64_t(w.size())}, at::kDouble);
      for (size_t i = 0; i < w.size(); ++i)
        for (int64_t p = w[i].begin; p < w[i].end; ++p)
          m[p][int64_t(i)].fill_(1.0 / w[i].divisor);
      if (!sizes.empty())
        m = m.t().contiguous();
      // Move `dim` last, [.., size] @ [size, out], and back.
      std::vector<int64_t> perm;
      for (int64_t d = 0; d < rank; ++d)
        if (d != dim)
          perm.push_back(d);
      perm.push_back(dim);
      std::vector<int64_t> back(rank);
      for (int64_t d = 0; d < rank; ++d)
        back[perm[d]] = d;
      MValue y = matmul(transpose(x, perm),
                        convert(constantFromTensor(m), elemOf(x)));
      x = transpose(y, back);
    }
    return x;
  };
  // avg_pool{2,3}d(self, kernel_size, stride, padding, ceil_mode,
  // count_include_pad, divisor_override). Windows that tile a 2-D input
  // (stride = kernel, no padding) are a reshape, a sum and a division.
  // avg_pool{2,3}d_backward(grad_output, self, ...the same) applies the
  // transposed windows to grad_output.
  auto avgPool = [this, pool, poolArg](size_t k, bool backward = false) {
    return [this, pool, poolArg, k, backward](OpCall *n) {
      // The backward's operands are the forward's, after grad_output.
      size_t o = backward ? 1 : 0;
      MValue x = tensorIn(n, o);
      auto arg = [&](size_t i, std::vector<int64_t> dflt) {
        return poolArg(in(n, o + i), k, std::move(dflt));
      };
      std::vector<int64_t> kernel = arg(1, {});
      std::vector<int64_t> stride = arg(2, kernel);
      std::vector<int64_t> padding = arg(3, {0});
      bool ceil = in(n, o + 4).kind == Imp::Bool && in(n, o + 4).b;
      bool countPad = in(n, o + 5).kind != Imp::Bool || in(n, o + 5).b;
      bool override = n->numInputs() > o + 6 && in(n, o + 6).kind != Imp::None;
      auto s = shapeOf(x);
      if (s.size() < k + 1)
        fail("average pooling over " + std::to_string(k) +
             " dimensions expects an input of rank " + std::to_string(k + 1) +
             " or " + std::to_string(k + 2));
      size_t h = s.size() - k;
      bool tiles = !backward && k == 2 && stride == kernel && padding[0] == 0 &&
                   padding[1] == 0 && !ceil && !override &&
                   s[h] % kernel[0] == 0 && s[h + 1] % kernel[1] == 0;
      if (tiles) {
        std::vector<int64_t> split(s.begin(), s.begin() + h);
        split.insert(split.end(), {s[h] / kernel[0], kernel[0],
                                   s[h + 1] / kernel[1], kernel[1]});
        MValue sum = reduce(ReductionKind::Sum, reshape(x, split),
                            {int64_t(h) + 1, int64_t(h) + 3}, false);
        setTensor(n, binary<DivOp>(Imp::ofTensor(sum),
                                   Imp::ofFloat(double(kernel[0] * kernel[1]))));
        return;
      }
      std::vector<std::vector<Window>> windows;
      for (size_t j = 0; j < k; ++j) {
        windows.push_back(avgPoolWindows(s[h + j], kernel[j], stride[j],
                                         padding[j], ceil, countPad));
        if (override)
          for (Window &w : windows.back())
            w.divisor = 1.0;
      }
      std::vector<int64_t> sizes;
      MValue y = x;
      if (backward) {
        sizes.assign(s.begin() + h, s.end());
        y = convert(tensorIn(n, 0), elemOf(x));
        if (shapeOf(y).size() != s.size())
          fail("avg_pool backward: grad_output and input ranks differ");
      }
      y = pool(y, windows, sizes);
      if (override)
        y = binary<DivOp>(Imp::ofTensor(y),
                          Imp::ofFloat(in(n, o + 6).asDouble()));
      setTensor(n, y);
    };
  };
  C["aten::avg_pool2d"] = avgPool(2);
  C["aten::avg_pool3d"] = avgPool(3);
  C["aten::avg_pool2d_backward"] = avgPool(2, true);
  C["aten::avg_pool3d_backward"] = avgPool(3, true);
  auto adaptive = [this, pool](size_t k) {
    return [this, pool, k](OpCall *n) {
      MValue x = tensorIn(n, 0);
      std::vector<int64_t> out = intList(in(n, 1));
      auto s = shapeOf(x);
      if (out.size() != k || s.size() < k + 1)
        fail("adaptive average pooling: output size and input rank "
             "disagree");
      std::vector<std::vector<Window>> windows;
      for (size_t j = 0; j < k; ++j)
        windows.push_back(adaptiveWindows(s[s.size() - k + j], out[j]));
      setTensor(n, pool(x, windows));
    };
  };
  // _adaptive_avg_pool{2,3}d_backward(grad_output, self): the windows of
  // self's size to grad_output's, transposed.
  auto adaptiveBackward = [this, pool](size_t k) {
    return [this, pool, k](OpCall *n) {
      MValue g = tensorIn(n, 0), self = tensorIn(n, 1);
      auto s = shapeOf(self), gs = shapeOf(g);
      if (s.size() < k + 1 || gs.size() != s.size())
        fail("adaptive average pooling backward: grad_output and input "
             "ranks disagree");
      std::vector<std::vector<Window>> windows;
      std::vector<int64_t> sizes(s.end() - k, s.end());
      for (size_t j = 0; j < k; ++j)
        windows.push_back(adaptiveWindows(sizes[j], gs[gs.size() - k + j]));
      setTensor(n, pool(convert(g, elemOf(self)), windows, sizes));
    };
  };
  // max_pool{2,3}d_with_indices(self, kernel, stride, padding, dilation,
  // ceil_mode) -> (values, indices): x's planes [B, P] (one -inf column
  // appended) gathered at a constant [O, K] table of window positions
  // (P where a window reads padding), the max over K, and the first
  // position holding it (indices into the plane, as PyTorch's).
  auto maxPool = [this, poolArg](size_t k) {
    return [this, poolArg, k](OpCall *n) {
      MValue x = tensorIn(n, 0);
      auto s = shapeOf(x);
      if (s.size() < k + 1 || !mlir::isa<mlir::FloatType>(elemOf(x)))
        fail("max pooling expects a floating-point input of rank " +
             std::to_string(k + 1) + " or " + std::to_string(k + 2));
      auto arg = [&](size_t i, std::vector<int64_t> dflt) {
        return poolArg(in(n, i), k, std::move(dflt));
      };
      std::vector<int64_t> kernel = arg(1, {});
      std::vector<int64_t> stride = arg(2, kernel);
      std::vector<int64_t> pad = arg(3, {0}), dil = arg(4, {1});
      bool ceil = in(n, 5).kind == Imp::Bool && in(n, 5).b;
      std::vector<int64_t> batch(s.begin(), s.end() - k),
          spatial(s.end() - k, s.end()), outSize;
      for (size_t j = 0; j < k; ++j)
        outSize.push_back(maxPoolOutput(spatial[j], kernel[j], stride[j],
                                        pad[j], dil[j], ceil));
      int64_t planes = numElements(batch), plane = numElements(spatial);
      int64_t outs = numElements(outSize), taps = numElements(kernel);
      if (outs <= 0)
        fail("max pooling leaves no output");
      // table[o][t]: the plane position window o reads at tap t.
      at::Tensor table = at::empty({outs, taps}, at::kLong);
      auto cell = table.accessor<int64_t, 2>();
      for (int64_t o = 0; o < outs; ++o)
        for (int64_t t = 0; t < taps; ++t) {
          int64_t rest = o, tap = t, pos = 0;
          bool valid = true;
          for (int64_t j = int64_t(k) - 1, scale = 1; j >= 0; --j) {
            int64_t oj = rest % outSize[j], tj = tap % kernel[j];
            rest /= outSize[j];
            tap /= kernel[j];
            int64_t p = oj * stride[j] - pad[j] + tj * dil[j];
            valid = valid && p >= 0 && p < spatial[j];
            pos += p * scale;
            scale *= spatial[j];
          }
          cell[o][t] = valid ? pos : plane;
        }
      Type elem = elemOf(x);
      MValue flat = reshape(x, {planes, plane});
      MValue padded = createChecked<ConcatOp>(
          llvm::SmallVector<MValue>{
              flat, splat({planes, 1}, elem, -INFINITY)},
          b.getI64IntegerAttr(1));
      MValue windows = reshape(
          gatherRows(transpose(padded, {1, 0}),
                     constantFromTensor(table.reshape({outs * taps}))),
          {outs, taps, planes});
      MValue values = reduce(ReductionKind::Max, windows, {1}, true);
      MValue atMax = compare(CompareDirection::EQ, Imp::ofTensor(windows),
                             Imp::ofTensor(values));
      MValue tapIota = IotaOp::create(
          b, loc, tensorType({outs, taps, planes}, i64()),
          b.getI64IntegerAttr(1));
      MValue first = reduce(
          ReductionKind::Min,
          select(atMax, Imp::ofTensor(tapIota), Imp::ofInt(taps)), {1}, false);
      MValue outIota = IotaOp::create(b, loc, tensorType({outs, planes}, i64()),
                                      b.getI64IntegerAttr(0));
      MValue at = AddOp::create(
          b, loc, MulOp::create(b, loc, outIota,
                                splat({outs, planes}, i64(), double(taps))),
          first);
      MValue positions = gatherRows(
          constantFromTensor(table.reshape({outs * taps, 1})),
          reshape(at, {outs * planes}));
      std::vector<int64_t> shape = batch;
      shape.insert(shape.end(), outSize.begin(), outSize.end());
      auto restore = [&](MValue v) {
        return reshape(transpose(reshape(v, {outs, planes}), {1, 0}), shape);
      };
      setOut(n, 0, Imp::ofTensor(restore(values)));
      // max_pool2d (what TorchScript records) returns the values only.
      if (n->numOutputs() > 1)
        setOut(n, 1, Imp::ofTensor(restore(positions)));
    };
  };
  C["aten::max_pool2d_with_indices"] = maxPool(2);
  C["aten::max_pool3d_with_indices"] = maxPool(3);
  C["aten::max_pool1d"] = maxPool(1);
  C["aten::max_pool2d"] = maxPool(2);
  C["aten::max_pool3d"] = maxPool(3);
  C["aten::_adaptive_avg_pool2d"] = adaptive(2);
  C["aten::_adaptive_avg_pool3d"] = adaptive(3);
  C["aten::_adaptive_avg_pool2d_backward"] = adaptiveBackward(2);
  C["aten::_adaptive_avg_pool3d_backward"] = adaptiveBackward(3);
}

void OpConverter::registerPoolingBackwardConverters() {
  auto &C = converters;
  // max_pool2d_with_indices_backward(grad_output, self, kernel, stride,
  // padding, dilation, ceil_mode, indices): grad_output scatter-added into
  // self's planes at the indices.
  C["aten::max_pool2d_with_indices_backward"] = [this](OpCall *n) {
    MValue g = tensorIn(n, 0), self = tensorIn(n, 1), idx = tensorIn(n, 7);
    auto s = shapeOf(self), gs = shapeOf(g);
    if (s.size() < 3)
      fail("max_pool2d_with_indices_backward expects an input of rank 3 "
           "or 4");
    int64_t plane = s[s.size() - 2] * s[s.size() - 1];
    int64_t planes = numElements(s) / plane;
    int64_t per = numElements(gs) / planes;
    MValue base = MulOp::create(
        b, loc,
        IotaOp::create(b, loc, tensorType({planes, per}, i64()),
                       b.getI64IntegerAttr(0)),
        splat({planes, per}, i64(), double(plane)));
    MValue ids = AddOp::create(b, loc, base,
                               reshape(convert(idx, i64()), {planes, per}));
    Type elem = elemOf(self);
    MValue sum = EmbeddingGradOp::create(
        b, loc, tensorType({planes * plane, 1}, elem),
        reshape(convert(g, elem), {planes * per, 1}),
        reshape(ids, {planes * per}));
    setTensor(n, reshape(sum, s));
  };
}
