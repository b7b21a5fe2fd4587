//===- ModelOps.cpp - Linear algebra and model layer converters -----------===//
//
// Ops the dialect has fused forms of: linear, matmul, embedding (and its
// backward), layer_norm, rms_norm and cross-entropy.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

#include <algorithm>
#include <limits>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerModelOpConverters() {
  auto &C = converters;
  C["aten::linear"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0), w = tensorIn(n, 1);
    MValue bias;
    if (n->numInputs() > 2 && in(n, 2).kind == Imp::Tensor)
      bias = in(n, 2).tensor;
    if (shapeOf(w).size() != 2)
      fail("linear weight must be 2-D, got " + shapeString(shapeOf(w)));
    if (shapeOf(x).empty())
      fail("linear of a zero-dim input");
    setTensor(n, createChecked<LinearOp>(x, w, bias));
  };
  C["aten::matmul"] = [this](OpCall *n) {
    setTensor(n, matmul(tensorIn(n, 0), tensorIn(n, 1)));
  };
  C["aten::mm"] = C["aten::matmul"];
  // addmm(self, mat1, mat2, *, beta=1, alpha=1) = beta * self + alpha *
  // (mat1 @ mat2), the Core ATen form of a linear layer with a bias.
  C["aten::addmm"] = [this](OpCall *n) {
    MValue product = matmul(tensorIn(n, 1), tensorIn(n, 2));
    Imp self = in(n, 0);
    if (n->numInputs() > 3 && in(n, 3).asDouble() != 1.0)
      self = Imp::ofTensor(binary<MulOp>(self, in(n, 3)));
    Imp scaled = Imp::ofTensor(product);
    if (n->numInputs() > 4 && in(n, 4).asDouble() != 1.0)
      scaled = Imp::ofTensor(binary<MulOp>(scaled, in(n, 4)));
    setTensor(n, binary<AddOp>(self, scaled));
  };
  C["aten::bmm"] = C["aten::matmul"];
  C["aten::embedding"] = [this](OpCall *n) {
    MValue table = tensorIn(n, 0), ids = tensorIn(n, 1);
    setTensor(n, createChecked<EmbeddingOp>(table, ids));
  };
  // layer_norm over the last k dimensions: those flattened into one (and
  // the weight and bias with them), normalized, and the shape restored.
  C["aten::layer_norm"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> normShape = intList(in(n, 1));
    auto s = shapeOf(x);
    std::vector<int64_t> shape(s.begin(), s.end());
    size_t k = normShape.size();
    if (k == 0 || k > s.size() ||
        !std::equal(normShape.begin(), normShape.end(), s.end() - k))
      fail("layer_norm's normalized shape must be the input's last "
           "dimensions");
    int64_t d = numElements(normShape);
    std::vector<int64_t> flat(s.begin(), s.end() - k);
    flat.push_back(d);
    auto param = [&](size_t i, double fill) {
      if (in(n, i).kind != Imp::Tensor)
        return splat({d}, elemOf(x), fill);
      return reshape(convert(in(n, i).tensor, elemOf(x)), {d});
    };
    MValue w = param(2, 1.0), bias = param(3, 0.0);
    double eps = in(n, 4).asDouble();
    MValue flatX = reshape(x, flat);
    MValue y = LayerNormOp::create(b, loc, flatX.getType(), flatX, w, bias,
                                   b.getF64FloatAttr(eps));
    setTensor(n, reshape(y, shape));
  };
  // native_layer_norm(input, normalized_shape, weight, bias, eps) ->
  // (out, mean, rstd): the Core ATen form; mean and rstd (over the
  // normalized dimensions, kept) for the graphs that read them, without a
  // gradient of their own (as in PyTorch).
  C["aten::native_layer_norm"] = [this](OpCall *n) {
    converters["aten::layer_norm"](n);
    MValue x = tensorIn(n, 0);
    auto s = shapeOf(x);
    size_t k = intList(in(n, 1)).size();
    std::vector<int64_t> kept(s.begin(), s.end() - k);
    int64_t d = numElements(s.drop_front(s.size() - k));
    std::vector<int64_t> flat = kept;
    flat.push_back(d);
    kept.resize(s.size(), 1);
    MValue fx = reshape(x, flat);
    int64_t last = int64_t(flat.size()) - 1;
    auto meanOf = [&](MValue v) {
      MValue sum = reduce(ReductionKind::Sum, v, {last}, true);
      return MValue(DivOp::create(
          b, loc, sum, splat(shapeOf(sum), elemOf(sum), double(d))));
    };
    MValue mean = meanOf(fx);
    MValue centered = SubOp::create(b, loc, fx, broadcastTo(mean, flat));
    MValue var = meanOf(MulOp::create(b, loc, centered, centered));
    MValue rstd = RsqrtOp::create(
        b, loc,
        AddOp::create(b, loc, var,
                      splat(shapeOf(var), elemOf(var), in(n, 4).asDouble())));
    // PyTorch's autograd formula for native_layer_norm reads only the
    // output's cotangent: a loss on mean or rstd does not reach the input.
    auto noGradient = [&](MValue v) {
      return Imp::ofTensor(StopGradientOp::create(b, loc, reshape(v, kept)));
    };
    setOut(n, 1, noGradient(mean));
    setOut(n, 2, noGradient(rstd));
  };
  // Group norm of x [N, C, *] in `groups` groups: each group's
  // [C/G * HxW] values normalized as one layer_norm row (no affine), then
  // the per-channel weight and bias (absent: none). Returns y and the rows
  // [N, G, C/G * HxW].
  auto groupNorm = [this](MValue x, const Imp &weight, const Imp &bias,
                          int64_t groups,
                          double eps) -> std::pair<MValue, MValue> {
    auto s = shapeOf(x);
    if (s.size() < 2)
      fail("group_norm expects an input of rank 2 or more");
    int64_t batch = s[0], channels = s[1], hw = 1;
    for (size_t d = 2; d < s.size(); ++d)
      hw *= s[d];
    if (groups <= 0 || channels % groups != 0)
      fail("group_norm's channels must divide into its groups");
    Type elem = elemOf(x);
    int64_t row = channels / groups * hw;
    MValue rows = reshape(x, {batch, groups, row});
    MValue normed = LayerNormOp::create(
        b, loc, rows.getType(), rows, splat({row}, elem, 1.0),
        splat({row}, elem, 0.0), b.getF64FloatAttr(eps));
    MValue y = reshape(normed, {batch, channels, hw});
    for (const Imp *affine : {&weight, &bias}) {
      if (affine->kind != Imp::Tensor)
        continue;
      MValue p = broadcastTo(
          reshape(convert(affine->tensor, elem), {1, channels, 1}),
          {batch, channels, hw});
      y = affine == &weight ? MValue(MulOp::create(b, loc, y, p))
                            : MValue(AddOp::create(b, loc, y, p));
    }
    return {reshape(y, s), rows};
  };
  // The form TorchScript records: group_norm(input, num_groups, weight,
  // bias, eps, cudnn_enabled) -> out.
  C["aten::group_norm"] = [this, groupNorm](OpCall *n) {
    setTensor(n, groupNorm(tensorIn(n, 0), in(n, 2), in(n, 3),
                           in(n, 1).asInt(), in(n, 4).asDouble())
                     .first);
  };
  // native_group_norm(input, weight, bias, N, C, HxW, group, eps) ->
  // (out, mean, rstd), mean and rstd [N, G].
  C["aten::native_group_norm"] = [this, groupNorm](OpCall *n) {
    MValue x = tensorIn(n, 0);
    int64_t batch = in(n, 3).asInt(), groups = in(n, 6).asInt();
    double eps = in(n, 7).asDouble();
    auto [y, rows] = groupNorm(x, in(n, 1), in(n, 2), groups, eps);
    Type elem = elemOf(x);
    int64_t row = shapeOf(rows)[2];
    setOut(n, 0, Imp::ofTensor(y));
    MValue sum = reduce(ReductionKind::Sum, rows, {2}, true);
    MValue mean = DivOp::create(b, loc, sum,
                                splat(shapeOf(sum), elem, double(row)));
    MValue centered =
        SubOp::create(b, loc, rows, broadcastTo(mean, {batch, groups, row}));
    MValue sq = reduce(ReductionKind::Sum,
                       MulOp::create(b, loc, centered, centered), {2}, true);
    MValue var = DivOp::create(b, loc, sq,
                               splat(shapeOf(sq), elem, double(row)));
    MValue rstd = RsqrtOp::create(
        b, loc, AddOp::create(b, loc, var, splat(shapeOf(var), elem, eps)));
    setOut(n, 1, Imp::ofTensor(reshape(mean, {batch, groups})));
    setOut(n, 2, Imp::ofTensor(reshape(rstd, {batch, groups})));
  };
  C["aten::rms_norm"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> normShape = intList(in(n, 1));
    auto s = shapeOf(x);
    if (normShape.size() != 1 || normShape[0] != s.back())
      fail("rms_norm over more than the last dimension is not supported");
    int64_t d = s.back();
    MValue w = n->numInputs() > 2 && in(n, 2).kind == Imp::Tensor
                   ? in(n, 2).tensor
                   : splat({d}, elemOf(x), 1.0);
    double eps;
    if (n->numInputs() > 3 && in(n, 3).isNumber())
      eps = in(n, 3).asDouble();
    else if (elemOf(x).isF64())
      eps = std::numeric_limits<double>::epsilon();
    else if (elemOf(x).isF32())
      eps = std::numeric_limits<float>::epsilon();
    else if (elemOf(x).isF16())
      eps = 0.0009765625; // f16 epsilon (2^-10)
    else
      eps = 0.0078125; // bf16 epsilon
    setTensor(n,
              RmsNormOp::create(b, loc, x.getType(), x, convert(w, elemOf(x)),
                                b.getF64FloatAttr(eps)));
  };
  C["aten::cross_entropy_loss"] = [this](OpCall *n) {
    MValue logits = tensorIn(n, 0), labels = tensorIn(n, 1);
    if (in(n, 2).kind != Imp::None)
      fail("cross_entropy with class weights is not supported");
    int64_t reduction = in(n, 3).asInt();
    int64_t ignore = in(n, 4).asInt();
    if (n->numInputs() > 5 && in(n, 5).asDouble() != 0.0)
      fail("cross_entropy with label smoothing is not supported");
    auto ls = shapeOf(logits);
    if (ls.size() > 2) {
      // [N, C, d...] -> [N, d..., C]
      std::vector<int64_t> perm{0};
      for (size_t d = 2; d < ls.size(); ++d)
        perm.push_back(d);
      perm.push_back(1);
      logits = transpose(logits, perm);
    }
    if (!mlir::isa<mlir::FloatType>(elemOf(logits)))
      fail("cross_entropy needs floating-point logits");
    Type sumElem = elemOf(logits).isF64() ? b.getF64Type() : f32();
    auto ce = CrossEntropyOp::create(b, loc, tensorType({}, sumElem),
                                     tensorType({}, i64()), logits, labels,
                                     b.getI64IntegerAttr(ignore));
    MValue sum = convert(ce.getSum(), elemOf(logits));
    if (reduction == 2) {
      setTensor(n, sum);
      return;
    }
    if (reduction != 1)
      fail("cross_entropy with reduction='none' is not supported");
    MValue count = convert(ce.getCount(), elemOf(sum));
    setTensor(n, DivOp::create(b, loc, sum, count));
  };
}
