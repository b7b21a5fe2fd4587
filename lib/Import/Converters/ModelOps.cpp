//===- ModelOps.cpp - Linear algebra and model layer converters -----------===//
//
// Ops the dialect has fused forms of: linear, matmul, embedding,
// layer_norm, rms_norm and cross-entropy.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

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
  C["aten::layer_norm"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    std::vector<int64_t> normShape = intList(in(n, 1));
    auto s = shapeOf(x);
    if (normShape.size() != 1 || normShape[0] != s.back())
      fail("layer_norm over more than the last dimension is not supported");
    int64_t d = s.back();
    MValue w = in(n, 2).kind == Imp::Tensor ? in(n, 2).tensor
                                            : splat({d}, elemOf(x), 1.0);
    MValue bias = in(n, 3).kind == Imp::Tensor ? in(n, 3).tensor
                                               : splat({d}, elemOf(x), 0.0);
    double eps = in(n, 4).asDouble();
    setTensor(n, LayerNormOp::create(
                     b, loc, x.getType(), x, convert(w, elemOf(x)),
                     convert(bias, elemOf(x)), b.getF64FloatAttr(eps)));
  };
  // native_layer_norm(input, normalized_shape, weight, bias, eps) ->
  // (out, mean, rstd): the Core ATen form; mean and rstd (over the last
  // dimension, kept) for the graphs that read them.
  C["aten::native_layer_norm"] = [this](OpCall *n) {
    converters["aten::layer_norm"](n);
    MValue x = tensorIn(n, 0);
    int64_t last = int64_t(shapeOf(x).size()) - 1;
    auto meanOf = [&](MValue v) {
      MValue sum = reduce(ReductionKind::Sum, v, {last}, true);
      return MValue(DivOp::create(
          b, loc, sum,
          splat(shapeOf(sum), elemOf(sum), double(shapeOf(x).back()))));
    };
    MValue mean = meanOf(x);
    MValue centered = SubOp::create(b, loc, x, broadcastTo(mean, shapeOf(x)));
    MValue var = meanOf(MulOp::create(b, loc, centered, centered));
    MValue rstd = RsqrtOp::create(
        b, loc,
        AddOp::create(b, loc, var,
                      splat(shapeOf(var), elemOf(var), in(n, 4).asDouble())));
    setOut(n, 1, Imp::ofTensor(mean));
    setOut(n, 2, Imp::ofTensor(rstd));
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
