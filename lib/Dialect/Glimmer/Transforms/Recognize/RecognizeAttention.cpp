//===- RecognizeAttention.cpp - Softmax attention -> glimmer.attention ----===//
//
// Eager attention, softmax(q @ k^T * c + mask) @ v op by op, becomes
// glimmer.attention with the mask read into per-token terms
// (AttentionMasks.h). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/AttentionMasks.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERRECOGNIZEATTENTION
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The pieces of one spelled-out attention.
struct Match {
  Value q, k, v, mask;
  double scale = 1.0;
  MatmulOp output;
  /// The ops of the chain, each used only by the one before it.
  SmallVector<Operation *> chain;
};

/// `x` used only by `user` (the chain disappears with the rewrite).
bool onlyFeeds(Value x, Operation *user) {
  return x.hasOneUse() && *x.getUsers().begin() == user;
}

std::optional<Match> match(SoftmaxOp softmax) {
  Match m;
  Value x = softmax.getInput();
  RankedTensorType scores = typeOf(x);
  if (scores.getRank() != 4 || softmax.getDim() != 3)
    return std::nullopt;
  Value output = softmax.getOutput();
  if (!output.hasOneUse())
    return std::nullopt;
  m.output = dyn_cast<MatmulOp>(*output.getUsers().begin());
  if (!m.output || m.output.getLhs() != output ||
      m.output.getTransposeLhs() || m.output.getTransposeRhs())
    return std::nullopt;
  m.v = m.output.getRhs();
  m.chain = {m.output, softmax};
  // The mask, added to the scaled scores.
  Operation *consumer = softmax;
  if (auto add = x.getDefiningOp<AddOp>()) {
    for (auto [scaled, mask] : {std::pair{add.getLhs(), add.getRhs()},
                                std::pair{add.getRhs(), add.getLhs()}})
      if (scaled.getDefiningOp<MulOp>()) {
        m.mask = mask;
        x = scaled;
        break;
      }
    if (!m.mask || !onlyFeeds(add, softmax))
      return std::nullopt;
    consumer = add;
    m.chain.push_back(add);
  }
  auto mul = x.getDefiningOp<MulOp>();
  if (!mul || !onlyFeeds(mul, consumer))
    return std::nullopt;
  MatmulOp product;
  for (auto [p, c] : {std::pair{mul.getLhs(), mul.getRhs()},
                      std::pair{mul.getRhs(), mul.getLhs()}}) {
    std::optional<double> scale = floatSplat(c);
    if (auto mm = p.getDefiningOp<MatmulOp>(); mm && scale && *scale > 0) {
      product = mm;
      m.scale = *scale;
      break;
    }
  }
  if (!product || !onlyFeeds(product, mul) || product.getTransposeLhs())
    return std::nullopt;
  m.chain.append({mul, product});
  m.q = product.getLhs();
  if (product.getTransposeRhs()) {
    m.k = product.getRhs();
  } else {
    auto kt = product.getRhs().getDefiningOp<TransposeOp>();
    if (!kt || kt.getPermutation() != ArrayRef<int64_t>{0, 1, 3, 2})
      return std::nullopt;
    m.k = kt.getInput();
    m.chain.push_back(kt);
  }
  // glimmer.attention's operand shapes: q [B, H, Tq, D], k and v alike
  // [B, H, Tk, D], one element type.
  RankedTensorType qt = typeOf(m.q), kt4 = typeOf(m.k), vt = typeOf(m.v);
  if (qt.getRank() != 4 || kt4 != vt || kt4.getRank() != 4 ||
      qt.getElementType() != kt4.getElementType() ||
      qt.getElementType() != scores.getElementType() ||
      kt4.getDimSize(0) != qt.getDimSize(0) ||
      kt4.getDimSize(3) != qt.getDimSize(3) ||
      qt.getDimSize(1) % kt4.getDimSize(1) != 0)
    return std::nullopt;
  return m;
}

struct RecognizeAttentionPass
    : public glimmer::impl::GlimmerRecognizeAttentionBase<
          RecognizeAttentionPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp s) { softmaxes.push_back(s); });
    for (SoftmaxOp softmax : softmaxes) {
      std::optional<Match> m = match(softmax);
      if (!m)
        continue;
      std::optional<AttentionMaskForm> form =
          m->mask ? recognizeAttentionMask(m->mask) : AttentionMaskForm();
      int64_t tq = typeOf(m->q).getDimSize(2), tk = typeOf(m->k).getDimSize(2);
      if (!form || (form->causal && tq != tk))
        continue;
      OpBuilder b(m->output);
      AttentionOp attention = buildMaskedAttention(
          b, m->output.getLoc(), m->q, m->k, m->v, *form, m->scale);
      m->output.getResult().replaceAllUsesWith(attention.getOutput());
      // The chain, use before definition (the transposed keys may have
      // other users).
      for (Operation *op : m->chain)
        if (op->use_empty())
          op->erase();
    }
  }
};

} // namespace
