//===- Convolution.cpp - Convolution and pooling converters ---------------===//
//
// 2-D convolutions (with numeric, "valid" or "same" padding; 1-D ones over
// a height of 1; grouped ones per group; dilated ones with a spread-out
// kernel) and convolutions whose kernel covers the whole input (as
// linears), and convolution_backward as convolutions of the gradient.
// Pooling is Pooling.cpp's.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

using namespace glimmer;
using namespace glimmer::detail;

/// One 2-D convolution, its checks shared by the converters below.
MValue OpConverter::conv2d(MValue x, MValue w, MValue bias,
                        std::vector<int64_t> stride,
                        std::vector<int64_t> padding,
                        const std::vector<int64_t> &dilation, int64_t groups) {
  auto xs = shapeOf(x), ws = shapeOf(w);
  // A convolution whose kernel covers the whole input (a video patch
  // embedding, as Qwen2-VL's Conv3d on [N, C, T, P, P] patches) is one
  // dot product per output channel: a linear over the flattened input.
  bool zeroPadding = llvm::all_of(padding, [](int64_t p) { return p == 0; });
  if (xs.size() >= 3 && xs.size() == ws.size() && groups == 1 && zeroPadding &&
      std::equal(xs.begin() + 2, xs.end(), ws.begin() + 2) &&
      llvm::all_of(dilation, [](int64_t d) { return d == 1; })) {
    int64_t inner = numElements(xs) / xs[0];
    MValue flat = reshape(x, {xs[0], inner});
    MValue wflat = reshape(w, {ws[0], inner});
    MValue y = createChecked<LinearOp>(flat, wflat, bias);
    std::vector<int64_t> out{xs[0], ws[0]};
    out.resize(xs.size(), 1);
    return reshape(y, out);
  }
  // 1-D (NCL): a 2-D convolution over a height of 1.
  if (xs.size() == 3 && ws.size() == 3) {
    auto first = [](const std::vector<int64_t> &v, int64_t dflt) {
      return v.empty() ? dflt : v[0];
    };
    MValue y = conv2d(reshape(x, {xs[0], xs[1], 1, xs[2]}),
                      reshape(w, {ws[0], ws[1], 1, ws[2]}), bias,
                      {1, first(stride, 1)}, {0, first(padding, 0)},
                      {1, first(dilation, 1)}, groups);
    auto ys = shapeOf(y);
    return reshape(y, {ys[0], ys[1], ys[3]});
  }
  if (xs.size() != 4)
    fail("only 2-D convolutions (NCHW input), and convolutions whose "
         "kernel covers the whole input, are supported");
  // Grouped: one convolution per group of input and output channels,
  // concatenated.
  if (groups > 1) {
    if (xs[1] % groups != 0 || ws[0] % groups != 0)
      fail("a grouped convolution's channels must divide into its groups");
    int64_t in = xs[1] / groups, out = ws[0] / groups;
    llvm::SmallVector<MValue> parts;
    for (int64_t g = 0; g < groups; ++g)
      parts.push_back(conv2d(
          slice(x, 1, g * in, (g + 1) * in, 1),
          slice(w, 0, g * out, (g + 1) * out, 1),
          bias ? slice(bias, 0, g * out, (g + 1) * out, 1) : MValue(), stride,
          padding, dilation, 1));
    return MValue(createChecked<ConcatOp>(parts, b.getI64IntegerAttr(1)));
  }
  // Dilated: the kernel spread out with zeros between its taps (a padded
  // reshape, sliced to (k - 1) d + 1), then an ordinary convolution.
  std::vector<int64_t> dil = dilation;
  if (dil.size() == 1)
    dil.push_back(dil[0]);
  if (dil.size() == 2 && (dil[0] != 1 || dil[1] != 1)) {
    auto ks = shapeOf(w);
    std::vector<int64_t> taps{ks[0], ks[1], ks[2], 1, ks[3], 1};
    MValue spread = PadOp::create(
        b, loc, reshape(w, taps), b.getDenseI64ArrayAttr({0, 0, 0, 0, 0, 0}),
        b.getDenseI64ArrayAttr({0, 0, 0, dil[0] - 1, 0, dil[1] - 1}),
        b.getF64FloatAttr(0.0));
    spread = reshape(spread, {ks[0], ks[1], ks[2] * dil[0], ks[3] * dil[1]});
    spread = slice(slice(spread, 2, 0, (ks[2] - 1) * dil[0] + 1, 1), 3, 0,
                   (ks[3] - 1) * dil[1] + 1, 1);
    return conv2d(x, spread, bias, stride, padding, {1, 1}, 1);
  }
  for (int64_t d : dilation)
    if (d != 1)
      fail("dilated convolution is not supported");
  if (stride.size() == 1)
    stride.push_back(stride[0]);
  if (padding.size() == 1)
    padding.push_back(padding[0]);
  return MValue(createChecked<Conv2dOp>(x, w, bias,
                                        b.getDenseI64ArrayAttr(stride),
                                        b.getDenseI64ArrayAttr(padding)));
}

void OpConverter::registerConvolutionConverters() {
  auto &C = converters;
  C["aten::_convolution"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0), w = tensorIn(n, 1);
    MValue bias = in(n, 2).kind == Imp::Tensor ? in(n, 2).tensor : MValue();
    // _convolution and convolution (Core ATen) share their first nine
    // arguments: ..., transposed, output_padding, groups.
    bool full = n->kind() != "aten::conv2d";
    if (full && in(n, 6).asInt() != 0)
      fail("transposed convolution is not supported");
    int64_t groups = full ? in(n, 8).asInt() : in(n, 6).asInt();
    setTensor(n, conv2d(x, w, bias, intList(in(n, 3)), intList(in(n, 4)),
                        intList(in(n, 5)), groups));
  };
  C["aten::convolution"] = C["aten::_convolution"];
  // nn.Conv2d(padding="valid" / "same"): the padding as numbers. "same"
  // pads (k - 1) / 2 on each side, symmetric for odd kernels at stride 1
  // (PyTorch allows "same" at stride 1 only).
  C["aten::_convolution_mode"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0), w = tensorIn(n, 1);
    MValue bias = in(n, 2).kind == Imp::Tensor ? in(n, 2).tensor : MValue();
    std::vector<int64_t> stride = intList(in(n, 3));
    const Imp &mode = in(n, 4);
    if (mode.kind != Imp::Str || (mode.s != "valid" && mode.s != "same"))
      fail("convolution padding must be \"valid\", \"same\" or numbers");
    std::vector<int64_t> padding{0, 0};
    if (mode.s == "same") {
      auto ws = shapeOf(w);
      for (int i = 0; i < 2; ++i) {
        int64_t s = stride[stride.size() == 1 ? 0 : i];
        if (ws.size() != 4 || s != 1 || ws[2 + i] % 2 == 0)
          fail("padding=\"same\" is supported for odd kernels at stride 1 "
               "(symmetric padding)");
        padding[i] = (ws[2 + i] - 1) / 2;
      }
    }
    setTensor(n, conv2d(x, w, bias, stride, padding, intList(in(n, 5)),
                        in(n, 6).asInt()));
  };
  // conv2d: numeric padding, or conv2d.padding's string (what torch.export
  // records for nn.Conv2d(padding="valid"), where TorchScript records
  // _convolution_mode).
  C["aten::conv2d"] = [this](OpCall *n) {
    converters[in(n, 4).kind == Imp::Str ? "aten::_convolution_mode"
                                         : "aten::_convolution"](n);
  };
  C["aten::convolution_backward"] = [this](OpCall *n) {
    convertConvolutionBackward(n);
  };
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride,
// padding, dilation, transposed, output_padding, groups, output_mask) ->
// (grad_input, grad_weight, grad_bias), from convolutions of the gradient
// (each group on its own), so that their VJPs are the dialect's:
// - grad_input: the transposed convolution, grad_output spread out by the
//   stride and padded by the kernel's extent less the padding, convolved
//   with the kernel flipped and its channels swapped, at the dilation;
// - grad_weight: input (its channels as the batch) convolved with
//   grad_output (its batch as the channels) as the kernel, spread out by
//   the stride, at stride = dilation, cropped to the kernel's size;
// - grad_bias: grad_output summed over all but the channels.
// 1-D convolutions are 2-D ones over a height of 1. Outputs output_mask
// leaves out are not computed.
void OpConverter::convertConvolutionBackward(OpCall *n) {
  MValue g = tensorIn(n, 0), x = tensorIn(n, 1), w = tensorIn(n, 2);
  if (in(n, 7).kind == Imp::Bool && in(n, 7).b)
    fail("convolution_backward of a transposed convolution is not "
         "supported");
  auto xs = shapeOf(x), ws = shapeOf(w), gs = shapeOf(g);
  std::vector<int64_t> xShape(xs.begin(), xs.end()),
      wShape(ws.begin(), ws.end());
  size_t k = xs.size() - 2;
  if ((xs.size() != 3 && xs.size() != 4) || ws.size() != xs.size() ||
      gs.size() != xs.size())
    fail("convolution_backward supports 1-D and 2-D convolutions (batched "
         "NCL / NCHW input)");
  auto pairOf = [&](size_t i, int64_t dflt) {
    std::vector<int64_t> v = intList(in(n, i));
    if (v.size() == 1)
      v.assign(k, v[0]);
    if (v.size() != k)
      fail("convolution_backward: stride, padding and dilation need 1 or " +
           std::to_string(k) + " values");
    if (k == 1)
      v.insert(v.begin(), dflt);
    return v;
  };
  std::vector<int64_t> stride = pairOf(4, 1), pad = pairOf(5, 0),
                       dil = pairOf(6, 1);
  int64_t groups = in(n, 9).asInt();
  const Imp &maskArg = in(n, 10);
  if (maskArg.kind != Imp::List || maskArg.list.size() != 3)
    fail("output_mask must be a list of 3 booleans");
  bool mask[3];
  for (int i = 0; i < 3; ++i)
    mask[i] = maskArg.list[i].asInt() != 0;
  Type elem = elemOf(x);
  if (!mlir::isa<mlir::FloatType>(elem))
    fail("convolution_backward of a non-floating-point input");
  g = convert(g, elem);
  w = convert(w, elem);
  if (k == 1) {
    x = reshape(x, {xs[0], xs[1], 1, xs[2]});
    w = reshape(w, {ws[0], ws[1], 1, ws[2]});
    g = reshape(g, {gs[0], gs[1], 1, gs[2]});
  }
  auto x4 = shapeOf(x), w4 = shapeOf(w), g4 = shapeOf(g);
  int64_t inputs = x4[1], outputs = w4[0];
  if (groups <= 0 || inputs % groups != 0 || outputs % groups != 0 ||
      w4[1] * groups != inputs || g4[1] != outputs || g4[0] != x4[0])
    fail("convolution_backward: grad_output, input and weight disagree on "
         "channels, groups or batch");
  int64_t ig = inputs / groups, og = outputs / groups;
  // v with `f - 1` zeros between the elements of dimension `d`.
  auto spread = [&](MValue v, int64_t d, int64_t f) {
    if (f == 1)
      return v;
    auto s = shapeOf(v);
    std::vector<int64_t> split(s.begin(), s.begin() + d + 1);
    split.push_back(1);
    split.insert(split.end(), s.begin() + d + 1, s.end());
    std::vector<int64_t> lo(split.size(), 0), hi(split.size(), 0);
    hi[d + 1] = f - 1;
    MValue padded =
        PadOp::create(b, loc, reshape(v, split), b.getDenseI64ArrayAttr(lo),
                      b.getDenseI64ArrayAttr(hi), b.getF64FloatAttr(0.0));
    std::vector<int64_t> merged(s.begin(), s.end());
    merged[d] *= f;
    return slice(reshape(padded, merged), d, 0, (s[d] - 1) * f + 1, 1);
  };
  // v padded by lo / hi along dimension d, a negative amount cropping.
  auto padOrCrop = [&](MValue v, int64_t d, int64_t lo, int64_t hi) {
    int64_t size = shapeOf(v)[d];
    v = slice(v, d, std::max<int64_t>(-lo, 0), size - std::max<int64_t>(-hi, 0),
              1);
    if (lo <= 0 && hi <= 0)
      return v;
    std::vector<int64_t> l(shapeOf(v).size(), 0), h(shapeOf(v).size(), 0);
    l[d] = std::max<int64_t>(lo, 0);
    h[d] = std::max<int64_t>(hi, 0);
    return MValue(PadOp::create(b, loc, v, b.getDenseI64ArrayAttr(l),
                                b.getDenseI64ArrayAttr(h),
                                b.getF64FloatAttr(0.0)));
  };
  auto concat = [&](llvm::SmallVector<MValue> parts, int64_t d) {
    return parts.size() == 1
               ? parts[0]
               : MValue(createChecked<ConcatOp>(parts, b.getI64IntegerAttr(d)));
  };
  if (mask[0]) {
    llvm::SmallVector<MValue> parts;
    for (int64_t q = 0; q < groups; ++q) {
      MValue gq = slice(g, 1, q * og, (q + 1) * og, 1);
      MValue wq = slice(w, 0, q * og, (q + 1) * og, 1);
      for (int64_t j = 0; j < 2; ++j) {
        int64_t extent = dil[j] * (w4[2 + j] - 1);
        gq = spread(gq, 2 + j, stride[j]);
        int64_t spreadSize = shapeOf(gq)[2 + j];
        gq = padOrCrop(gq, 2 + j, extent - pad[j],
                       x4[2 + j] - spreadSize + pad[j]);
        at::Tensor reversed = at::arange(w4[2 + j] - 1, -1, -1, at::kLong);
        wq = selectAlong(wq, 2 + j, constantFromTensor(reversed));
      }
      parts.push_back(conv2d(gq, transpose(wq, {1, 0, 2, 3}), MValue(), {1, 1},
                             {0, 0}, dil, 1));
    }
    setOut(n, 0, Imp::ofTensor(reshape(concat(parts, 1), xShape)));
  }
  if (mask[1]) {
    llvm::SmallVector<MValue> parts;
    for (int64_t q = 0; q < groups; ++q) {
      MValue xq = transpose(slice(x, 1, q * ig, (q + 1) * ig, 1), {1, 0, 2, 3});
      MValue gq = transpose(slice(g, 1, q * og, (q + 1) * og, 1), {1, 0, 2, 3});
      MValue full = conv2d(xq, gq, MValue(), dil, pad, stride, 1);
      MValue kernel = slice(slice(full, 2, 0, w4[2], 1), 3, 0, w4[3], 1);
      parts.push_back(transpose(kernel, {1, 0, 2, 3}));
    }
    setOut(n, 1, Imp::ofTensor(reshape(concat(parts, 0), wShape)));
  }
  if (mask[2])
    setOut(n, 2,
           Imp::ofTensor(reduce(ReductionKind::Sum, g, {0, 2, 3}, false)));
}
