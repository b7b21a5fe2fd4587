//===- Convolution.cpp - Convolution and pooling converters ---------------===//
//
// 2-D convolutions (with numeric, "valid" or "same" padding; 1-D ones over
// a height of 1; grouped ones per group; dilated ones with a spread-out
// kernel) and convolutions whose kernel covers the whole input (as
// linears). Pooling is Pooling.cpp's.
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
  C["aten::conv2d"] = C["aten::_convolution"];
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
}
