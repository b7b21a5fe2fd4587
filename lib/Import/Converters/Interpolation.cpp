//===- Interpolation.cpp - Resizing converters ----------------------------===//
//
// F.interpolate's 2-D modes (bilinear, bicubic, their antialiased forms,
// nearest and nearest-exact) as products with constant matrices.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

#include <cmath>

using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// PyTorch's resizing kernels, with and without align_corners.
using AlignedKernel = at::Tensor (*)(const at::Tensor &, at::IntArrayRef, bool,
                                     std::optional<double>,
                                     std::optional<double>);
using UnalignedKernel = at::Tensor (*)(const at::Tensor &, at::IntArrayRef,
                                       std::optional<double>,
                                       std::optional<double>);

auto ignoringAlignCorners(UnalignedKernel kernel) {
  return [kernel](const at::Tensor &x, at::IntArrayRef out, bool,
                  std::optional<double> sh,
                  std::optional<double> sw) { return kernel(x, out, sh, sw); };
}

} // namespace

// Separable resizing (F.interpolate with 2-D modes, as LLaVA-OneVision
// shrinks a large image's features): y = Wh^T x Ww with constant
// interpolation matrices, W first, then H, as PyTorch interpolates. Each
// matrix is what PyTorch's own kernel does to the unit vectors of its axis
// (the other axis one row, which every mode copies), in the input's
// precision, so every mode's weights (bilinear, bicubic, their antialiased
// forms, nearest) are PyTorch's. Autodiff, the sharding rules and both
// backends come with the matmuls.
void OpConverter::convertResize(OpCall *n, const std::string &what,
                             bool hasAlignCorners, const Resizer &op) {
  MValue x = tensorIn(n, 0);
  std::vector<int64_t> xs(shapeOf(x).begin(), shapeOf(x).end());
  if (xs.size() != 4)
    fail(what + " expects an [N, C, H, W] input, got " + shapeString(xs));
  bool alignCorners = hasAlignCorners && in(n, 2).asInt() != 0;
  // (input, output_size, [align_corners,] scale_factors) of the .vec
  // overloads, or (.., scales_h, scales_w).
  size_t scalesAt = hasAlignCorners ? 3 : 2;
  std::vector<int64_t> out;
  std::vector<std::optional<double>> scales(2);
  if (n->numInputs() > scalesAt) {
    const Imp &s = in(n, scalesAt);
    if (s.kind == Imp::List) {
      if (s.list.size() != 2)
        fail(what + " expects an output size or two scale factors");
      for (int d = 0; d < 2; ++d)
        scales[d] = s.list[d].asDouble();
    } else if (s.kind != Imp::None && n->numInputs() > scalesAt + 1) {
      scales[0] = s.asDouble();
      if (in(n, scalesAt + 1).kind != Imp::None)
        scales[1] = in(n, scalesAt + 1).asDouble();
    }
  }
  if (in(n, 1).kind == Imp::List) {
    out = intList(in(n, 1));
  } else {
    if (!scales[0] || !scales[1])
      fail(what + " expects an output size or two scale factors");
    for (int d = 0; d < 2; ++d)
      out.push_back(int64_t(std::floor(double(xs[2 + d]) * *scales[d])));
  }
  if (out.size() != 2 || out[0] <= 0 || out[1] <= 0)
    fail(what + " expects a positive [H, W] output size, got " +
         shapeString(out));
  auto dtype = elemOf(x).isF64() ? at::kDouble : at::kFloat;
  // [in, out] for axis d (0: H, 1: W).
  auto matrix = [&](int d) {
    int64_t size = xs[2 + d];
    at::Tensor basis = at::eye(size, at::TensorOptions().dtype(dtype));
    at::Tensor y;
    if (d == 1) {
      y = op(basis.reshape({1, size, 1, size}), out, alignCorners, scales[0],
             scales[1]);
      return y.select(0, 0).select(1, 0).contiguous();
    }
    y = op(basis.reshape({1, size, size, 1}), out, alignCorners, scales[0],
           scales[1]);
    return y.select(0, 0).select(2, 0).contiguous();
  };
  MValue ww = convert(constantFromTensor(matrix(1)), elemOf(x));
  MValue wh = convert(constantFromTensor(matrix(0)), elemOf(x));
  MValue y = matmul(x, ww);                   // [N, C, H, W']
  y = matmul(transpose(y, {0, 1, 3, 2}), wh); // [N, C, W', H']
  setTensor(n, transpose(y, {0, 1, 3, 2}));
}

void OpConverter::registerInterpolationConverters() {
  struct Mode {
    const char *name;
    bool hasAlignCorners;
    Resizer op;
  };
  const Mode modes[] = {
      {"upsample_bilinear2d", true, AlignedKernel(at::upsample_bilinear2d)},
      {"_upsample_bilinear2d_aa", true,
       AlignedKernel(at::_upsample_bilinear2d_aa)},
      {"upsample_bicubic2d", true, AlignedKernel(at::upsample_bicubic2d)},
      {"_upsample_bicubic2d_aa", true,
       AlignedKernel(at::_upsample_bicubic2d_aa)},
      {"upsample_nearest2d", false,
       ignoringAlignCorners(at::upsample_nearest2d)},
      {"_upsample_nearest_exact2d", false,
       ignoringAlignCorners(at::_upsample_nearest_exact2d)},
  };
  for (const Mode &mode : modes)
    converters[std::string("aten::") + mode.name] = [this, mode](OpCall *n) {
      convertResize(n, mode.name, mode.hasAlignCorners, mode.op);
    };
}
