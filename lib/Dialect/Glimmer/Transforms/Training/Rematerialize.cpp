//===- Rematerialize.cpp - Recompute cheap values instead of keeping them -===//
//
// A training step keeps many forward values until the backward reads them.
// When such a value is a cheap function (elementwise, index map, RMS norm)
// of values the step keeps until then anyway, computing it again where the
// backward first needs it costs one pass over memory and frees its buffer
// for the whole time between: each norm's output and the attention
// layout's transposes in a decoder layer are such values (a product of two
// activations is not: recomputing it would read twice what it frees). The
// recomputation is the same op on the same operands, so every result keeps
// its bits. An FSDP parameter's all-gather is recomputed the same way (not
// cheap, but what FSDP trades for its memory).
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERREMATERIALIZE
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

bool isCheap(Operation *op) {
  return op->getNumResults() == 1 &&
         (FusionOp::isFusible(op) || isa<RmsNormOp>(op)) &&
         !isa<ConstantOp>(op);
}

/// A parameter's low-precision copy (a convert of a function argument) is
/// kept: the forward's and the backward's GEMMs read it, and computing it
/// again would cost a launch per parameter for memory that is a quarter of
/// the master weights and optimizer state (autocast keeps it too).
bool isParameterCast(Operation *op) {
  return isa<ConvertOp>(op) && isa<BlockArgument>(op->getOperand(0));
}

/// An FSDP parameter gathered whole (from its piece, or from the piece's
/// low-precision copy) is gathered again for the backward instead of kept:
/// between the two passes each rank holds only its pieces, as FSDP's
/// reshard-after-forward does, for one more all-gather per parameter. The
/// piece's copy is kept for it (as a parameter's copy is kept unsharded):
/// a 1/n-th of what the gather frees.
bool isParameterGather(Operation *op) {
  auto gather = dyn_cast<AllGatherOp>(op);
  if (!gather)
    return false;
  Value piece = gather.getInput();
  Operation *def = piece.getDefiningOp();
  return isa<BlockArgument>(piece) || (def && isParameterCast(def));
}

/// Whether `v` is the piece's copy that the re-gather `op` reads as it is.
bool keptPiece(Operation *op, Value v) {
  return isParameterGather(op) && v == op->getOperand(0);
}

/// One decision: `op` is computed again right before `at`, for its uses
/// from `at` on.
struct Remat {
  Operation *op;
  Operation *at;
  int64_t late; // the position of `at`
};

struct RematerializePass
    : glimmer::impl::GlimmerRematerializeBase<RematerializePass> {
  using GlimmerRematerializeBase::GlimmerRematerializeBase;

  void runOnOperation() override {
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        run(fn.getBody().front());
  }

  void run(Block &block) {
    DenseMap<Operation *, int64_t> pos;
    SmallVector<Operation *> order;
    for (Operation &op : block) {
      pos[&op] = int64_t(order.size());
      order.push_back(&op);
    }
    int64_t n = int64_t(order.size());
    // The position of a value's last use in this block; block arguments
    // (held by the caller's frame) count as live to the end.
    auto lastUse = [&](Value v) -> int64_t {
      if (isa<BlockArgument>(v))
        return n;
      int64_t last = -1;
      for (Operation *user : v.getUsers())
        if (Operation *u = block.findAncestorOpInBlock(*user))
          last = std::max(last, pos.lookup(u));
      return last;
    };

    // Decide on the original program: each operand must be live at the
    // recomputation anyway (used there or later), so no lifetime grows.
    SmallVector<Remat> remats;
    for (Operation &op : block) {
      if ((!isCheap(&op) || isParameterCast(&op)) && !isParameterGather(&op))
        continue;
      Value v = op.getResult(0);
      if (cast<RankedTensorType>(v.getType()).getNumElements() < minElements)
        continue;
      SmallVector<int64_t> uses;
      for (Operation *user : v.getUsers())
        if (Operation *u = block.findAncestorOpInBlock(*user))
          uses.push_back(pos.lookup(u));
      llvm::sort(uses);
      uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
      // The widest gap between consecutive uses, the definition counting
      // as the first (a gap before the first use sinks the op to it).
      int64_t prev = pos.lookup(&op), gap = 0, late = -1;
      for (int64_t u : uses) {
        if (u - prev > gap) {
          gap = u - prev;
          late = u;
        }
        prev = u;
      }
      if (late < 0 || gap < minGap)
        continue;
      // Each operand is live there anyway (a leaf the copy reads), or is
      // itself cheap to compute again from such values (a chain).
      llvm::SetVector<Value> leaves;
      std::function<bool(Value, int)> available = [&](Value v, int depth) {
        if (lastUse(v) >= late || keptPiece(&op, v)) {
          leaves.insert(v);
          return true;
        }
        Operation *def = v.getDefiningOp();
        return depth > 0 && def && isCheap(def) &&
               llvm::all_of(def->getOperands(), [&](Value operand) {
                 return available(operand, depth - 1);
               });
      };
      if (!llvm::all_of(op.getOperands(),
                        [&](Value operand) { return available(operand, 3); }))
        continue;
      // The copy reads its large leaves once more: worth it only when that
      // is no more elements than it frees (a norm or a transpose, not a
      // product of two activations, whose recomputation would read twice
      // what it saves). Elements, not bytes: a mixed-precision norm reads
      // its f32 input to free its bf16 result, one pass over memory for
      // half of it.
      int64_t read = 0;
      for (Value leaf : leaves)
        if (cast<RankedTensorType>(leaf.getType()).getNumElements() >=
            minElements)
          read += cast<RankedTensorType>(leaf.getType()).getNumElements();
      if (read > cast<RankedTensorType>(v.getType()).getNumElements())
        continue;
      remats.push_back({&op, order[size_t(late)], late});
    }

    // Apply: a copy reads an operand as it is where it is live at the copy
    // (or the operand's own earlier copy), else a copy of its definition.
    DenseMap<Value, std::pair<Value, Operation *>> copyOf;
    for (const Remat &r : remats) {
      OpBuilder b(r.at);
      std::function<Value(Value)> operandAt = [&](Value v) -> Value {
        auto it = copyOf.find(v);
        if (it != copyOf.end() && it->second.second->isBeforeInBlock(r.at))
          return it->second.first;
        Operation *def = v.getDefiningOp();
        // A value that is live there (or whose definition is no cheap op:
        // never copied) is read as it is.
        if (lastUse(v) >= r.late || !def || !isCheap(def) || keptPiece(r.op, v))
          return v;
        IRMapping map;
        for (Value operand : def->getOperands())
          map.map(operand, operandAt(operand));
        return b.clone(*def, map)->getResult(0);
      };
      IRMapping map;
      for (Value operand : r.op->getOperands())
        map.map(operand, operandAt(operand));
      Operation *copy = b.clone(*r.op, map);
      Value v = r.op->getResult(0), c = copy->getResult(0);
      v.replaceUsesWithIf(c, [&](OpOperand &use) {
        Operation *u = r.op->getBlock()->findAncestorOpInBlock(*use.getOwner());
        return u && u != copy && !u->isBeforeInBlock(r.at);
      });
      copyOf[v] = {c, copy};
    }
    // Ops sunk to their first use (every use moved to the copy).
    for (const Remat &r : llvm::reverse(remats))
      if (r.op->use_empty())
        r.op->erase();
  }
};

} // namespace
