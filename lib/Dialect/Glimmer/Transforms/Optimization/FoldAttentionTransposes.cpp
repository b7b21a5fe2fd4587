//===- FoldAttentionTransposes.cpp - Attention reads [B, T, H, D] ---------===//
//
// A projection's output split into heads is [B, T, H, D]; attention's
// operands are [B, H, T, D]. Models transpose in between (and back after the
// output), and their backward transposes the gradients the same way: each
// transpose moves a whole activation through memory. Attention whose
// kernel reads any strides takes those tensors as they are instead, marked
// in `sequence_major`.
//
// Only attention that the CUDA backend runs in cuDNN's fused kernels is
// rewritten (bf16, no positions, documents, blocks or window): other
// attention runs kernels that read head-major tensors, for which the
// runtime would transpose the operands itself, so folding there would only
// move the transposes (and duplicate the ones a forward and its backward
// share).
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "llvm/ADT/SetVector.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERFOLDATTENTIONTRANSPOSES
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

constexpr int64_t kSwap[] = {0, 2, 1, 3};

/// A transpose exchanging dimensions 1 and 2 of a rank-4 tensor (its own
/// inverse).
bool isSwap(Operation *op) {
  auto t = dyn_cast_or_null<TransposeOp>(op);
  return t && t.getPermutation() == ArrayRef<int64_t>(kSwap);
}

/// x's [B, T, H, D] source when x is such a transpose's result.
Value swapSource(Value x) {
  Operation *def = x.getDefiningOp();
  return isSwap(def) ? def->getOperand(0) : Value();
}

/// Whether every use of `v` is a swap (and there is at least one use, or
/// none at all when `allowUnused`).
bool onlySwapUsers(Value v, bool allowUnused) {
  if (v.use_empty())
    return allowUnused;
  return llvm::all_of(v.getUsers(), isSwap);
}

template <typename AttentionLike>
bool readsAnyLayout(AttentionLike a) {
  return !a.anySequenceMajor() && !a.getQueryPositions() &&
         !a.getQueryDocuments() && !a.getQueryBlocks() && !a.getWindow() &&
         cast<RankedTensorType>(a.getQuery().getType())
             .getElementType()
             .isBF16();
}

struct Folder {
  /// Transposes whose uses this pass changed: erased if left unused.
  llvm::SetVector<Operation *> touched;

  /// Uses `source` for operand `index` of `op`.
  void takeSource(Operation *op, unsigned index, Value source) {
    touched.insert(op->getOperand(index).getDefiningOp());
    op->setOperand(index, source);
  }

  /// `result` becomes sequence-major: its swaps read it directly (they
  /// yield the same value), and any other user gets one swap back.
  void flipResult(OpBuilder &b, Value result) {
    Type headMajor = result.getType();
    result.setType(swapHeadsAndSequence(headMajor));
    SmallVector<Operation *> swaps;
    for (Operation *user : result.getUsers())
      if (isSwap(user))
        swaps.push_back(user);
    if (llvm::any_of(result.getUsers(),
                     [](Operation *u) { return !isSwap(u); })) {
      b.setInsertionPointAfterValue(result);
      auto back = TransposeOp::create(b, result.getLoc(), headMajor, result,
                                      b.getDenseI64ArrayAttr(kSwap));
      result.replaceUsesWithIf(back, [&](OpOperand &use) {
        return use.getOwner() != back && !isSwap(use.getOwner());
      });
      touched.insert(back);
    }
    for (Operation *swap : swaps) {
      swap->getResult(0).replaceAllUsesWith(result);
      touched.remove(swap);
      swap->erase();
    }
  }

  void setFlags(Operation *op, OpBuilder &b, ArrayRef<bool> flags) {
    op->setAttr("sequence_major", b.getDenseBoolArrayAttr(flags));
  }

  /// Each of q, k, v that a swap produced is read in place; the output is
  /// written sequence-major when a swap reads it.
  void fold(AttentionOp a) {
    if (!readsAnyLayout(a))
      return;
    OpBuilder b(a);
    bool flags[4] = {false, false, false, false};
    for (unsigned i = 0; i < 3; ++i)
      if (Value source = swapSource(a->getOperand(i))) {
        takeSource(a, i, source);
        flags[i] = true;
      }
    if (llvm::any_of(a.getOutput().getUsers(), isSwap)) {
      flipResult(b, a.getOutput());
      flags[3] = true;
    }
    if (llvm::is_contained(flags, true))
      setFlags(a, b, flags);
  }

  /// An operand and its gradient flip together (one layout each), when the
  /// operand comes from a swap and the gradient only goes into swaps;
  /// output and grad flip together when both come from swaps. Anything
  /// else would trade one transpose for another.
  void fold(AttentionGradOp g) {
    if (!readsAnyLayout(g))
      return;
    OpBuilder b(g);
    bool flags[4] = {false, false, false, false};
    // Operands 1..3 are q, k, v; results 0..2 their gradients.
    for (unsigned i = 0; i < 3; ++i) {
      Value source = swapSource(g->getOperand(1 + i));
      if (!source || !onlySwapUsers(g->getResult(i), /*allowUnused=*/true))
        continue;
      takeSource(g, 1 + i, source);
      flipResult(b, g->getResult(i));
      flags[i] = true;
    }
    Value output = swapSource(g.getOutput()), grad = swapSource(g.getGrad());
    if (output && grad) {
      takeSource(g, 4, output);
      takeSource(g, 0, grad);
      flags[3] = true;
    }
    if (llvm::is_contained(flags, true))
      setFlags(g, b, flags);
  }

  /// Erases the touched transposes left unused, and the swaps that only
  /// those read.
  void eraseUnused() {
    SmallVector<Operation *> work(touched.begin(), touched.end());
    DenseSet<Operation *> erased;
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!op || erased.contains(op) || !op->use_empty())
        continue;
      Operation *def = op->getOperand(0).getDefiningOp();
      op->erase();
      erased.insert(op);
      if (isSwap(def))
        work.push_back(def);
    }
  }
};

struct FoldAttentionTransposesPass
    : glimmer::impl::GlimmerFoldAttentionTransposesBase<
          FoldAttentionTransposesPass> {
  void runOnOperation() override {
    // Collected first: folding erases transposes after each op.
    SmallVector<AttentionOp> forwards;
    SmallVector<AttentionGradOp> backwards;
    getOperation()->walk([&](AttentionOp a) { forwards.push_back(a); });
    getOperation()->walk([&](AttentionGradOp g) { backwards.push_back(g); });
    // Forwards first: their outputs' transposes feed the backward.
    Folder folder;
    for (AttentionOp a : forwards)
      folder.fold(a);
    for (AttentionGradOp g : backwards)
      folder.fold(g);
    folder.eraseUnused();
  }
};

} // namespace
