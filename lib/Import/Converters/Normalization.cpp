//===- Normalization.cpp - Batch norm and norm backward converters --------===//
//
// Batch norm's Core ATen forms (statistics of the batch, or the running
// statistics in inference) and the backward ops of layer and group norm,
// composed of elementwise ops and reductions so that their own VJPs (the
// second derivatives PyTorch has) follow from the dialect's rules.
// layer_norm and group_norm themselves are ModelOps.cpp's.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerNormalizationConverters() {
  auto &C = converters;
  auto t = [](MValue v) { return Imp::ofTensor(v); };
  auto mul = [this, t](MValue x, MValue y) {
    return binary<MulOp>(t(x), t(y));
  };
  auto sub = [this, t](MValue x, MValue y) {
    return binary<SubOp>(t(x), t(y));
  };
  // The mean over `dims` (kept), as PyTorch's statistics.
  auto mean = [this, t](MValue v, std::vector<int64_t> dims) {
    int64_t count = 1;
    for (int64_t d : dims)
      count *= shapeOf(v)[d];
    MValue sum = reduce(ReductionKind::Sum, v, dims, true);
    return binary<DivOp>(t(sum), Imp::ofFloat(double(count)));
  };
  // A per-channel vector [C] of x [N, C, *] as [1, C, 1, ...], to broadcast.
  auto perChannel = [this](MValue v, MValue x) {
    std::vector<int64_t> shape(shapeOf(x).size(), 1);
    shape[1] = shapeOf(x)[1];
    return reshape(convert(v, elemOf(x)), shape);
  };
  auto channelInput = [this](OpCall *n, const char *what) {
    MValue x = tensorIn(n, 0);
    if (shapeOf(x).size() < 2 || !mlir::isa<mlir::FloatType>(elemOf(x)))
      fail(std::string(what) + " expects a floating-point input of rank 2 "
                               "or more ([N, C, *])");
    return x;
  };
  // y = (x - mean) * rstd * weight + bias, per channel (weight and bias
  // optional).
  auto normalize = [this, t, mul, sub, perChannel](OpCall *n, MValue x,
                                                   MValue m, MValue rstd) {
    MValue y = mul(sub(x, m), rstd);
    if (in(n, 1).kind == Imp::Tensor)
      y = mul(y, perChannel(in(n, 1).tensor, x));
    if (in(n, 2).kind == Imp::Tensor)
      y = binary<AddOp>(t(y), t(perChannel(in(n, 2).tensor, x)));
    return y;
  };
  // x normalized by the running statistics (operands 3 and 4) and the eps
  // operand `epsAt`, and the empty saved statistics PyTorch returns then.
  auto inference = [this, t, normalize, perChannel,
                    channelInput](OpCall *n, size_t epsAt, const char *what) {
    MValue x = channelInput(n, what);
    MValue var = perChannel(tensorIn(n, 4), x);
    MValue rstd = RsqrtOp::create(
        b, loc, binary<AddOp>(t(var), Imp::ofFloat(in(n, epsAt).asDouble())));
    setOut(n, 0, t(normalize(n, x, perChannel(tensorIn(n, 3), x), rstd)));
    setOut(n, 1, t(splat({0}, elemOf(x), 0.0)));
    setOut(n, 2, t(splat({0}, elemOf(x), 0.0)));
  };
  // _native_batch_norm_legit.no_stats(input, weight, bias, training,
  // momentum, eps) -> (out, save_mean, save_rstd): normalized by the
  // batch's statistics over every dimension but the channels (the biased
  // variance), which are returned [C]. The .default overload (with
  // running_mean and running_var) also updates the running statistics in
  // place in training, which a functional program cannot; in inference it
  // is _native_batch_norm_legit_no_training.
  C["aten::_native_batch_norm_legit"] = [this, t, mul, sub, mean, normalize,
                                         channelInput, inference](OpCall *n) {
    bool stats = n->numInputs() == 8;
    const Imp &training = in(n, stats ? 5 : 3);
    if (stats && !(training.kind == Imp::Bool && training.b)) {
      inference(n, 7, "_native_batch_norm_legit");
      return;
    }
    if (stats)
      fail("_native_batch_norm_legit in training with running statistics "
           "updates them in place, which a functional program cannot; "
           "export the model (its batch norm becomes "
           "_native_batch_norm_legit_functional) or call it in eval mode");
    if (!(training.kind == Imp::Bool && training.b))
      fail("_native_batch_norm_legit without running statistics needs "
           "training=True");
    MValue x = channelInput(n, "_native_batch_norm_legit");
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < int64_t(shapeOf(x).size()); ++d)
      if (d != 1)
        dims.push_back(d);
    MValue m = mean(x, dims);
    MValue centered = sub(x, m);
    MValue var = mean(mul(centered, centered), dims);
    MValue rstd = RsqrtOp::create(
        b, loc, binary<AddOp>(t(var), Imp::ofFloat(in(n, 5).asDouble())));
    int64_t channels = shapeOf(x)[1];
    setOut(n, 0, t(normalize(n, x, m, rstd)));
    setOut(n, 1, t(reshape(m, {channels})));
    setOut(n, 2, t(reshape(rstd, {channels})));
  };
  // _native_batch_norm_legit_no_training(input, weight, bias, running_mean,
  // running_var, momentum, eps) -> (out, empty, empty): normalized by the
  // running statistics; the saved statistics are empty, as PyTorch's.
  C["aten::_native_batch_norm_legit_no_training"] = [inference](OpCall *n) {
    inference(n, 6, "_native_batch_norm_legit_no_training");
  };
  // The backward of a normalization over rows: g and x [.., M] with the
  // rows' mean and rstd [.., 1] and gw = g * weight:
  //   x^ = (x - mean) rstd
  //   dx = rstd (gw - mean(gw) - x^ mean(gw x^))
  // (PyTorch's formula, for the saved mean and rstd as given).
  auto rowsBackward = [this, mul, sub, mean](MValue gw, MValue xhat,
                                             MValue rstd) {
    int64_t last = int64_t(shapeOf(gw).size()) - 1;
    MValue inner =
        sub(sub(gw, mean(gw, {last})), mul(xhat, mean(mul(gw, xhat), {last})));
    return mul(rstd, inner);
  };
  auto outputMask = [this](OpCall *n, size_t i) {
    const Imp &m = in(n, i);
    if (m.kind != Imp::List || m.list.size() != 3)
      fail("output_mask must be a list of 3 booleans");
    std::vector<bool> mask;
    for (const Imp &e : m.list)
      mask.push_back(e.asInt() != 0);
    return mask;
  };
  // native_layer_norm_backward(grad_out, input, normalized_shape, mean,
  // rstd, weight, bias, output_mask) -> (grad_input, grad_weight,
  // grad_bias), rows of the normalized dimensions flattened; the outputs
  // output_mask leaves out are not computed.
  C["aten::native_layer_norm_backward"] = [this, t, mul, sub, rowsBackward,
                                           outputMask](OpCall *n) {
    MValue g = tensorIn(n, 0), x = tensorIn(n, 1);
    std::vector<int64_t> norm = intList(in(n, 2));
    auto s = shapeOf(x);
    std::vector<int64_t> shape(s.begin(), s.end());
    size_t k = norm.size();
    if (k > s.size() || !std::equal(norm.begin(), norm.end(), s.end() - k) ||
        shapeOf(g) != s)
      fail("native_layer_norm_backward: grad_out and input must have the "
           "input's shape, ending in normalized_shape");
    Type elem = elemOf(x);
    int64_t cols = numElements(norm), rows = numElements(s) / cols;
    MValue gr = reshape(convert(g, elem), {rows, cols});
    MValue xr = reshape(x, {rows, cols});
    MValue m = reshape(convert(tensorIn(n, 3), elem), {rows, 1});
    MValue rstd = reshape(convert(tensorIn(n, 4), elem), {rows, 1});
    MValue xhat = mul(sub(xr, m), rstd);
    std::vector<bool> mask = outputMask(n, 7);
    if (mask[0]) {
      MValue gw = gr;
      if (in(n, 5).kind == Imp::Tensor)
        gw = mul(gr, reshape(convert(in(n, 5).tensor, elem), {1, cols}));
      setOut(n, 0, t(reshape(rowsBackward(gw, xhat, rstd), shape)));
    }
    if (mask[1])
      setOut(n, 1,
             t(reshape(reduce(ReductionKind::Sum, mul(gr, xhat), {0}, false),
                       norm)));
    if (mask[2])
      setOut(n, 2,
             t(reshape(reduce(ReductionKind::Sum, gr, {0}, false), norm)));
  };
  // native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C,
  // HxW, group, output_mask) -> (grad_input, grad_weight, grad_bias): the
  // rows are the groups' [C/G * HxW] values, mean and rstd [N, G].
  C["aten::native_group_norm_backward"] = [this, t, mul, sub, rowsBackward,
                                           outputMask](OpCall *n) {
    MValue g = tensorIn(n, 0), x = tensorIn(n, 1);
    int64_t batch = in(n, 5).asInt(), channels = in(n, 6).asInt();
    int64_t hw = in(n, 7).asInt(), groups = in(n, 8).asInt();
    if (groups <= 0 || channels % groups != 0 ||
        numElements(shapeOf(x)) != batch * channels * hw ||
        shapeOf(g) != shapeOf(x))
      fail("native_group_norm_backward: input and grad_out must hold N x C "
           "x HxW values, C a multiple of group");
    Type elem = elemOf(x);
    int64_t row = channels / groups * hw;
    std::vector<int64_t> rows{batch, groups, row}, planes{batch, channels, hw};
    MValue m = reshape(convert(tensorIn(n, 2), elem), {batch, groups, 1});
    MValue rstd = reshape(convert(tensorIn(n, 3), elem), {batch, groups, 1});
    MValue gp = reshape(convert(g, elem), planes);
    MValue xhat = mul(sub(reshape(x, rows), m), rstd);
    std::vector<bool> mask = outputMask(n, 9);
    if (mask[0]) {
      MValue gw = gp;
      if (in(n, 4).kind == Imp::Tensor)
        gw = mul(gp, reshape(convert(in(n, 4).tensor, elem), {1, channels, 1}));
      MValue dx = rowsBackward(reshape(gw, rows), xhat, rstd);
      setOut(n, 0, t(reshape(dx, shapeOf(x))));
    }
    if (mask[1])
      setOut(n, 1,
             t(reduce(ReductionKind::Sum, mul(gp, reshape(xhat, planes)),
                      {0, 2}, false)));
    if (mask[2])
      setOut(n, 2, t(reduce(ReductionKind::Sum, gp, {0, 2}, false)));
  };
}
