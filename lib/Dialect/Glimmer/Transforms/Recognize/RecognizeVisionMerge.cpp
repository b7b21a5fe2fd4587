//===- RecognizeVisionMerge.cpp - Image-feature merge -> vision ops -------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERRECOGNIZEVISIONMERGE
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

/// Looks through reshapes (which keep row-major element order).
Value skipReshapes(Value v) {
  while (auto r = v.getDefiningOp<ReshapeOp>())
    v = r.getInput();
  return v;
}

/// Looks through reshapes and broadcasts: what a mask was expanded from.
Value skipReshapesAndBroadcasts(Value v) {
  while (true) {
    if (auto r = v.getDefiningOp<ReshapeOp>())
      v = r.getInput();
    else if (auto b = v.getDefiningOp<BroadcastInDimOp>())
      v = b.getInput();
    else
      return v;
  }
}

/// True when `v` is a constant (possibly broadcast) whose every element is
/// the integer `expected`.
bool isSplatInt(Value v, int64_t expected) {
  v = skipReshapesAndBroadcasts(v);
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<IntegerType>(attr.getElementType()))
    return false;
  return attr.getSplatValue<APInt>().getSExtValue() == expected;
}

struct SelectToVisionGather : OpRewritePattern<SelectOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SelectOp select,
                                PatternRewriter &rewriter) const override {
    auto outType = cast<RankedTensorType>(select.getType());
    if (outType.getRank() != 3 || !isa<FloatType>(outType.getElementType()))
      return rewriter.notifyMatchFailure(select, "not a [B, T, D] select");
    int64_t batch = outType.getDimSize(0), seq = outType.getDimSize(1);

    // mask = (tokens == IMG), [B, T].
    auto compare =
        skipReshapesAndBroadcasts(select.getCond()).getDefiningOp<CompareOp>();
    if (!compare || compare.getDirection() != CompareDirection::EQ)
      return rewriter.notifyMatchFailure(select, "condition is not a compare");
    auto tokensType = cast<RankedTensorType>(compare.getLhs().getType());
    if (tokensType.getShape() != ArrayRef<int64_t>{batch, seq} ||
        !isa<IntegerType>(tokensType.getElementType()))
      return rewriter.notifyMatchFailure(select, "mask is not [B, T] tokens");
    DenseElementsAttr imageId;
    if (!matchPattern(skipReshapesAndBroadcasts(compare.getRhs()),
                      m_Constant(&imageId)) ||
        !imageId.isSplat())
      return rewriter.notifyMatchFailure(select, "no constant image token id");
    int64_t imageTokenId = imageId.getSplatValue<APInt>().getSExtValue();

    // rows = embedding(bank, max(idx, 0)), [B, T, D]; under mixed
    // precision possibly widened to the text embeddings' f32 (then the
    // bank is widened instead: fewer elements, the same values).
    Value onTrue = skipReshapes(select.getOnTrue());
    auto widen = onTrue.getDefiningOp<ConvertOp>();
    if (widen)
      onTrue = skipReshapes(widen.getInput());
    auto rows = onTrue.getDefiningOp<EmbeddingOp>();
    auto rowsType = rows ? cast<RankedTensorType>(rows.getType())
                         : RankedTensorType();
    if (!rows || rowsType.getShape() != outType.getShape() ||
        (!widen && rowsType != outType))
      return rewriter.notifyMatchFailure(select, "true side is not a gather");
    if (widen && !widensExactly(rowsType.getElementType(),
                                outType.getElementType()))
      return rewriter.notifyMatchFailure(select,
                                         "true side is not a widened gather");
    auto clamp = rows.getIds().getDefiningOp<MaxOp>();
    if (!clamp || !isSplatInt(clamp.getRhs(), 0))
      return rewriter.notifyMatchFailure(select, "indices are not clamped");

    // idx = reshape(cumsum(flatten(int(mask)), 0)) - 1 over the flattened batch.
    auto sub = skipReshapes(clamp.getLhs()).getDefiningOp<SubOp>();
    if (!sub || !isSplatInt(sub.getRhs(), 1))
      return rewriter.notifyMatchFailure(select, "indices are not cumsum - 1");
    auto cumsum = skipReshapes(sub.getLhs()).getDefiningOp<CumsumOp>();
    auto flatType =
        cumsum ? cast<RankedTensorType>(cumsum.getType()) : RankedTensorType();
    if (!cumsum || flatType.getRank() != 1 ||
        flatType.getDimSize(0) != batch * seq || cumsum.getDim() != 0)
      return rewriter.notifyMatchFailure(
          select, "prefix sum is not over the flattened batch");
    auto toInt = skipReshapes(cumsum.getInput()).getDefiningOp<ConvertOp>();
    if (!toInt ||
        skipReshapes(toInt.getInput()) != compare.getResult())
      return rewriter.notifyMatchFailure(select,
                                         "prefix sum is not of the same mask");

    Value bank = rows.getTable();
    if (widen) {
      auto bankType = cast<RankedTensorType>(bank.getType());
      bank = ConvertOp::create(
          rewriter, widen.getLoc(),
          RankedTensorType::get(bankType.getShape(), outType.getElementType()),
          bank);
    }
    Value embeds = select.getOnFalse();
    auto idx = VisionBankIndicesOp::create(
        rewriter, compare.getLoc(), compare.getLhs(),
        rewriter.getI64IntegerAttr(imageTokenId));
    rewriter.replaceOpWithNewOp<VisionGatherOp>(select, embeds, bank, idx);
    return success();
  }
};

struct RecognizeVisionMergePass
    : public glimmer::impl::GlimmerRecognizeVisionMergeBase<
          RecognizeVisionMergePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SelectToVisionGather>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
