//===- FoldKvRepeat.cpp - Grouped-query attention without repeated heads --===//
//
// Models with fewer key/value heads than query heads repeat each key/value
// head for its group of query heads before the attention (Hugging Face's
// repeat_kv, the reference model's expand + reshape). glimmer.attention
// maps query head h to key/value head h / (Hq / Hkv) itself, so the repeat
// only materializes Hq / Hkv copies and, in the backward, sums them back:
// the attention reads the unrepeated heads instead.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERFOLDKVREPEAT
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// W such that `v` = reshape(broadcast(reshape(W))) repeats each index of
/// W's dimension `heads` consecutively (W: [..., H, ...] -> [..., H, 1,
/// ...] -> [..., H, G, ...] -> [..., H*G, ...]), or null.
Value repeatedFrom(Value v, int64_t heads) {
  auto merge = v.getDefiningOp<ReshapeOp>();
  if (!merge)
    return {};
  auto repeat = merge.getInput().getDefiningOp<BroadcastInDimOp>();
  if (!repeat)
    return {};
  auto split = repeat.getInput().getDefiningOp<ReshapeOp>();
  if (!split)
    return {};
  Value w = split.getInput();
  ArrayRef<int64_t> out = shapeOf(v), expanded = shapeOf(merge.getInput()),
                    one = shapeOf(split.getOutput()), in = shapeOf(w);
  int64_t rank = int64_t(out.size());
  if (int64_t(in.size()) != rank || int64_t(expanded.size()) != rank + 1 ||
      int64_t(one.size()) != rank + 1 || heads >= rank)
    return {};
  for (auto [i, d] : llvm::enumerate(repeat.getDims()))
    if (int64_t(i) != d)
      return {};
  for (int64_t d = 0; d < rank; ++d) {
    if (d == heads)
      continue;
    int64_t e = d < heads ? d : d + 1;
    if (out[d] != in[d] || expanded[e] != in[d] || one[e] != in[d])
      return {};
  }
  int64_t group = expanded[heads + 1];
  if (one[heads] != in[heads] || expanded[heads] != in[heads] ||
      one[heads + 1] != 1 || out[heads] != in[heads] * group)
    return {};
  return w;
}

/// The unrepeated heads of a key or value `v` ([B, H, T, D]): repeated in
/// this layout, or as [B, T, H, D] and then transposed (`transposed`).
struct Unrepeated {
  Value heads;
  bool transposed = false;
};
std::optional<Unrepeated> unrepeated(Value v) {
  if (Value w = repeatedFrom(v, 1))
    return Unrepeated{w, false};
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t || t.getPermutation() != ArrayRef<int64_t>{0, 2, 1, 3})
    return std::nullopt;
  if (Value w = repeatedFrom(t.getInput(), 2))
    return Unrepeated{w, true};
  return std::nullopt;
}

Value materialize(const Unrepeated &u, OpBuilder &b, Location loc) {
  if (!u.transposed)
    return u.heads;
  ArrayRef<int64_t> s = shapeOf(u.heads);
  auto type = RankedTensorType::get(
      {s[0], s[2], s[1], s[3]},
      cast<RankedTensorType>(u.heads.getType()).getElementType());
  return TransposeOp::create(b, loc, type, u.heads,
                             b.getDenseI64ArrayAttr({0, 2, 1, 3}));
}

struct FoldKvRepeatPass
    : glimmer::impl::GlimmerFoldKvRepeatBase<FoldKvRepeatPass> {
  void runOnOperation() override {
    getOperation()->walk([](AttentionOp a) {
      // The repeat is recognized on head-major key/value only (dimension
      // 1 of a sequence-major one is its sequence).
      if (a.isSequenceMajor(AttentionOp::kKey) ||
          a.isSequenceMajor(AttentionOp::kValue))
        return;
      std::optional<Unrepeated> k = unrepeated(a.getKey());
      std::optional<Unrepeated> v = unrepeated(a.getValue());
      if (!k || !v || k->transposed != v->transposed ||
          k->heads.getType() != v->heads.getType())
        return;
      OpBuilder b(a);
      a.getKeyMutable().assign(materialize(*k, b, a.getLoc()));
      a.getValueMutable().assign(materialize(*v, b, a.getLoc()));
    });
  }
};

} // namespace
