//===- Attention.cpp - Attention converter --------------------------------===//
//
// scaled_dot_product_attention: the dialect's attention op where the mask
// reads as positions (all true, causal, a causal sliding window; see
// AttentionMasks.h), the explicit ops of PyTorch's math backend otherwise.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

#include "glimmer/Dialect/Glimmer/Transforms/AttentionMasks.h"

#include <cmath>
#include <limits>

using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// A mask known at import time (e.g. built from arange): all true, causal
/// or a causal sliding window, each a comparison of positions, which stays
/// valid after the CP permutation.
AttentionMaskForm constantMaskForm(const Imp &mask, llvm::ArrayRef<int64_t> qs,
                                   llvm::ArrayRef<int64_t> ks, bool causal) {
  if (mask.kind != Imp::Tensor)
    fail("scaled_dot_product_attention expects attn_mask to be a tensor");
  // A boolean mask keeps the true positions; a floating one is added to
  // the scores, so only 0 (keep) and -inf (drop) are a mask.
  at::Tensor m;
  if (at::isFloatingType(mask.value.scalar_type())) {
    at::Tensor keep = mask.value == 0;
    at::Tensor drop = mask.value == -std::numeric_limits<double>::infinity();
    if (!(keep | drop).all().item<bool>())
      fail("scaled_dot_product_attention with a floating-point attn_mask "
           "that is not all 0 / -inf (an additive bias) is not supported");
    m = keep;
  } else {
    m = mask.value.to(c10::ScalarType::Bool);
  }
  int64_t tq = qs[2], tk = ks[2];
  at::Tensor full =
      m.expand({qs[0], qs[1], tq, tk}).reshape({-1, tq, tk}).contiguous();
  std::optional<AttentionMaskForm> read;
  if (at::equal(full, full[0].expand_as(full))) {
    at::Tensor first = full[0].contiguous();
    const bool *bits = first.data_ptr<bool>();
    read = classifyMaskMatrix(tq, tk, std::vector<bool>(bits, bits + tq * tk));
  }
  if (!read || (read->window && !read->causal))
    fail("scaled_dot_product_attention with an attn_mask that is neither "
         "all-true, causal nor a causal sliding window is not supported");
  if (causal && read->causal)
    fail("attn_mask and is_causal given together");
  return *read;
}

} // namespace

void OpConverter::convertAttention(OpCall *n) {
  MValue q = tensorIn(n, 0), k = tensorIn(n, 1), v = tensorIn(n, 2);
  if (in(n, 4).asDouble() != 0.0)
    fail("attention dropout is not supported");
  bool causal = in(n, 5).asInt() != 0;
  Imp *scaleArg = namedInput(n, "scale");
  auto qs = shapeOf(q), ks = shapeOf(k);
  if (qs.size() != 4 || ks.size() != 4)
    fail("scaled_dot_product_attention expects [B, H, T, D] tensors");
  double scale = scaleArg && scaleArg->isNumber()
                     ? scaleArg->asDouble()
                     : 1.0 / std::sqrt(double(qs[3]));
  // What restricts attention besides the shapes; the mask is read into
  // these terms where it can be (AttentionMasks.h).
  AttentionMaskForm form;
  if (in(n, 3).kind == Imp::Tensor && !in(n, 3).value.defined()) {
    // A mask computed at run time (from token types, padding, windows).
    if (causal)
      fail("scaled_dot_product_attention with an attn_mask and is_causal "
           "together (PyTorch refuses them too)");
    MValue mask = in(n, 3).tensor;
    auto ms = shapeOf(mask);
    std::optional<AttentionMaskForm> read;
    if (ms.size() == 4 && (ms[0] == 1 || ms[0] == qs[0]) &&
        (ms[1] == 1 || ms[1] == qs[1]) && ms[2] == qs[2] && ms[3] == ks[2])
      read = recognizeAttentionMask(mask);
    if (!read) {
      // Anything else: the attention as PyTorch's math backend spells it
      // out. Under CP the products, the mask and the softmax are
      // partitioned by their sharding rules, as a model's eager
      // attention is.
      setTensor(n, explicitAttention(q, k, v, mask, scale));
      return;
    }
    form = *read;
  } else if (in(n, 3).kind != Imp::None) {
    form = constantMaskForm(in(n, 3), qs, ks, causal);
  }
  form.causal = causal || form.causal;
  if (form.causal && qs[2] != ks[2])
    fail("causal attention with different query and key lengths is not "
         "supported");
  AttentionOp attn = buildMaskedAttention(b, loc, q, k, v, form, scale);
  setTensor(n, attn.getOutput());
}

void OpConverter::registerAttentionConverters() {
  converters["aten::scaled_dot_product_attention"] = [this](OpCall *n) {
    convertAttention(n);
  };
}
