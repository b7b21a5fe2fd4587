//===- GridSample.cpp - grid_sampler_2d converters ------------------------===//
//
// grid_sampler_2d(input [N, C, H, W], grid [N, Ho, Wo, 2], interpolation,
// padding, align_corners) -> [N, C, Ho, Wo]: input read at the grid's
// (x, y) points, in [-1, 1] across the image, as PyTorch's CPU kernel
// computes it (grid_sampler_compute_source_index): unnormalized to pixel
// coordinates, clipped (border) or reflected and clipped (reflection),
// then read bilinearly from the four neighbouring pixels or at the
// nearest one (halves to even), a pixel outside the image reading 0
// (zeros). Each read is a row gather of the input as [N * H * W, C]; the
// bilinear weights are elementwise ops of the coordinates, so the VJPs of
// the gathers and the arithmetic give the input's and the grid's
// gradients.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

using namespace glimmer;
using namespace glimmer::detail;

namespace {
enum class Interpolation { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class Padding { Zeros = 0, Border = 1, Reflection = 2 };
} // namespace

void OpConverter::registerGridSampleConverters() {
  auto &C = converters;
  C["aten::grid_sampler_2d"] = [this](OpCall *n) {
    MValue input = tensorIn(n, 0), grid = tensorIn(n, 1);
    auto is = shapeOf(input), gs = shapeOf(grid);
    if (is.size() != 4 || gs.size() != 4 || gs[3] != 2 || gs[0] != is[0])
      fail("grid_sampler_2d expects an [N, C, H, W] input and an [N, Ho, "
           "Wo, 2] grid, got " + shapeString(is) + " and " + shapeString(gs));
    auto interpolation = Interpolation(in(n, 2).asInt());
    auto padding = Padding(in(n, 3).asInt());
    bool alignCorners = in(n, 4).kind == Imp::Bool && in(n, 4).b;
    if (interpolation == Interpolation::Bicubic)
      fail("grid_sampler_2d with bicubic interpolation is not supported "
           "(bilinear and nearest are)");
    if (int64_t(interpolation) > 2 || int64_t(padding) > 2 ||
        int64_t(padding) < 0 || int64_t(interpolation) < 0)
      fail("grid_sampler_2d: unknown interpolation or padding mode");
    int64_t batch = is[0], channels = is[1], height = is[2], width = is[3];
    int64_t outH = gs[1], outW = gs[2];
    std::vector<int64_t> points{batch, outH, outW};
    Type elem = elemOf(input);
    grid = convert(grid, elem);
    auto num = [&](double v) { return Imp::ofFloat(v); };
    auto t = [](MValue v) { return Imp::ofTensor(v); };
    auto clip = [&](MValue v, int64_t size) {
      return binary<MinOp>(t(binary<MaxOp>(t(v), num(0.0))),
                           num(double(size - 1)));
    };
    // PyTorch's reflect_coordinates: v reflected into [low, high] given as
    // twice their values (half-pixel bounds without align_corners).
    auto reflect = [&](MValue v, int64_t twiceLow, int64_t twiceHigh) {
      if (twiceLow == twiceHigh)
        return splat(points, elem, 0.0);
      double low = twiceLow / 2.0, span = (twiceHigh - twiceLow) / 2.0;
      MValue d = AbsOp::create(b, loc, binary<SubOp>(t(v), num(low)));
      MValue flips =
          FloorOp::create(b, loc, binary<DivOp>(t(d), num(span)));
      MValue extra = binary<SubOp>(t(d), t(binary<MulOp>(t(flips), num(span))));
      MValue half = FloorOp::create(b, loc, binary<DivOp>(t(flips), num(2.0)));
      MValue even = compare(CompareDirection::EQ, t(flips),
                            t(binary<MulOp>(t(half), num(2.0))));
      return select(even, t(binary<AddOp>(t(extra), num(low))),
                    t(binary<AddOp>(
                        t(binary<SubOp>(num(span), t(extra))), num(low))));
    };
    // The pixel coordinate of grid component `k` along a side of `size`.
    auto source = [&](int64_t k, int64_t size) {
      MValue c = reshape(slice(grid, 3, k, k + 1, 1), points);
      MValue v =
          alignCorners
              ? binary<MulOp>(t(binary<AddOp>(t(c), num(1.0))),
                              num((size - 1) / 2.0))
              : binary<DivOp>(
                    t(binary<SubOp>(
                        t(binary<MulOp>(t(binary<AddOp>(t(c), num(1.0))),
                                        num(double(size)))),
                        num(1.0))),
                    num(2.0));
      if (padding == Padding::Border)
        v = clip(v, size);
      else if (padding == Padding::Reflection)
        v = clip(alignCorners ? reflect(v, 0, 2 * (size - 1))
                              : reflect(v, -1, 2 * size - 1),
                 size);
      return v;
    };
    MValue x = source(0, width), y = source(1, height);

    // The input as rows [N * H * W, C]; pixel (iy, ix) of image n, 0 where
    // it lies outside the image, as [N, Ho, Wo, C].
    MValue table = reshape(transpose(input, {0, 2, 3, 1}),
                           {batch * height * width, channels});
    MValue image = IotaOp::create(b, loc, tensorType(points, i64()),
                                  b.getI64IntegerAttr(0));
    std::vector<int64_t> rowsShape{batch, outH, outW, channels};
    auto weighted = [&](MValue rows, MValue w) {
      return binary<MulOp>(
          t(rows), t(broadcastTo(reshape(w, {batch, outH, outW, 1}),
                                 rowsShape)));
    };
    // 1 where v lies in [0, size - 1], 0 elsewhere.
    auto within = [&](MValue v, int64_t size) {
      MValue lo = convert(compare(CompareDirection::GE, t(v), num(0.0)), elem);
      MValue hi = convert(
          compare(CompareDirection::LE, t(v), num(double(size - 1))), elem);
      return binary<MulOp>(t(lo), t(hi));
    };
    auto read = [&](MValue iy, MValue ix) {
      MValue inside =
          binary<MulOp>(t(within(ix, width)), t(within(iy, height)));
      auto index = [&](MValue v, int64_t size) {
        return convert(clip(v, size), i64());
      };
      MValue linear = binary<AddOp>(
          t(binary<MulOp>(
              t(binary<AddOp>(t(binary<MulOp>(t(image), Imp::ofInt(height))),
                              t(index(iy, height)))),
              Imp::ofInt(width))),
          t(index(ix, width)));
      // An outside pixel reads a clamped one, weighted by 0.
      return weighted(gatherRows(table, linear), inside);
    };
    MValue sampled;
    if (interpolation == Interpolation::Nearest) {
      sampled = read(RoundOp::create(b, loc, y), RoundOp::create(b, loc, x));
    } else {
      MValue x0 = FloorOp::create(b, loc, x), y0 = FloorOp::create(b, loc, y);
      MValue x1 = binary<AddOp>(t(x0), num(1.0)),
             y1 = binary<AddOp>(t(y0), num(1.0));
      // Distances to the far corners weight the near ones.
      MValue east = binary<SubOp>(t(x), t(x0)), west = binary<SubOp>(t(x1), t(x));
      MValue south = binary<SubOp>(t(y), t(y0)),
             north = binary<SubOp>(t(y1), t(y));
      auto corner = [&](MValue iy, MValue ix, MValue wy, MValue wx) {
        return weighted(read(iy, ix), binary<MulOp>(t(wy), t(wx)));
      };
      sampled = binary<AddOp>(
          t(binary<AddOp>(t(corner(y0, x0, north, west)),
                          t(corner(y0, x1, north, east)))),
          t(binary<AddOp>(t(corner(y1, x0, south, west)),
                          t(corner(y1, x1, south, east)))));
    }
    setTensor(n, transpose(sampled, {0, 3, 1, 2}));
  };
  // TorchScript records F.grid_sample on a 4-D input as grid_sampler, with
  // the same operands.
  C["aten::grid_sampler"] = [this](OpCall *n) {
    if (shapeOf(tensorIn(n, 0)).size() != 4)
      fail("grid_sampler is supported on 4-D inputs (grid_sampler_2d)");
    converters["aten::grid_sampler_2d"](n);
  };
}
