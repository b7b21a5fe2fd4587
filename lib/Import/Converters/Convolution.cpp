//===- Convolution.cpp - Convolution and pooling converters ---------------===//
//
// 2-D convolutions (with numeric, "valid" or "same" padding), convolutions
// whose kernel covers the whole input (as linears), and average pooling
// over non-overlapping windows.
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
  if (xs.size() != 4)
    fail("only 2-D convolutions (NCHW input), and convolutions whose "
         "kernel covers the whole input, are supported");
  if (groups != 1)
    fail("grouped convolution is not supported");
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
  // Average pooling over non-overlapping windows (stride = kernel, no
  // padding), as projectors pool image tokens: a reshape of each pooled
  // dimension into (windows, kernel) and a mean over the kernels.
  C["aten::avg_pool2d"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> kernel = intList(in(n, 1));
    std::vector<int64_t> stride =
        in(n, 2).kind == Imp::List && in(n, 2).list.empty() ? kernel
                                                            : intList(in(n, 2));
    std::vector<int64_t> padding = intList(in(n, 3));
    if (kernel.size() == 1)
      kernel.push_back(kernel[0]);
    if (stride.size() == 1)
      stride.push_back(stride[0]);
    if (padding.size() == 1)
      padding.push_back(padding[0]);
    bool ceil = in(n, 4).kind == Imp::Bool && in(n, 4).b;
    bool divisor = n->numInputs() > 6 && in(n, 6).kind != Imp::None;
    auto xs = shapeOf(x);
    if (xs.size() < 3)
      fail("avg_pool2d expects a [.., H, W] input of rank 3 or 4");
    size_t h = xs.size() - 2;
    if (stride != kernel || padding[0] != 0 || padding[1] != 0 || ceil ||
        divisor || xs[h] % kernel[0] != 0 || xs[h + 1] % kernel[1] != 0)
      fail("avg_pool2d is supported over non-overlapping windows that tile "
           "the input (stride = kernel, no padding, ceil_mode and "
           "divisor_override unset)");
    std::vector<int64_t> split(xs.begin(), xs.begin() + h);
    split.insert(split.end(), {xs[h] / kernel[0], kernel[0],
                               xs[h + 1] / kernel[1], kernel[1]});
    MValue sum = reduce(ReductionKind::Sum, reshape(x, split),
                        {int64_t(h) + 1, int64_t(h) + 3}, false);
    setTensor(n, binary<DivOp>(Imp::ofTensor(sum),
                               Imp::ofFloat(double(kernel[0] * kernel[1]))));
  };
}
