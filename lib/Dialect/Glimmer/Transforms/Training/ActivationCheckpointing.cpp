//===- ActivationCheckpointing.cpp - Recompute blocks in their backward ---===//
//
// A training step holds every activation a block's backward reads from the
// block's forward until that backward runs: with depth, those activations
// are most of a step's memory. Checkpointing a block keeps less (its inputs
// only, or also the results that are expensive to compute again) and
// computes the rest again right before the block's backward, so that the
// memory is free for the whole time in between. Blocks and their forward
// and backward runs are read off the ops' module paths (Layers.h), as
// glimmer-outline-layers reads them; the copies carry the originals'
// locations, so that pass outlines the recomputation with the backward.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Layers.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

#include <functional>
#include <limits>

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERACTIVATIONCHECKPOINTING
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

enum class Mode { Full, Selective, Budget };

/// Runs of foreign ops a block's segment takes in, as glimmer-outline-
/// layers' default (its max-foreign).
constexpr unsigned kMaxForeign = 3;

bool isCollective(Operation *op) {
  return isa<AllGatherOp, AllReduceOp, ReduceScatterOp, AllToAllOp>(op);
}

/// Ops a recomputation may copy: the copy computes the same bits (no
/// memory effects, no random ops exist), or is a collective, which every
/// rank of its group runs at the same place of the same function.
bool isRecomputable(Operation *op) {
  if (op->getNumRegions() != 0 || op->getNumResults() == 0 ||
      isa<ConstantOp>(op))
    return false;
  return isCollective(op) || isMemoryEffectFree(op);
}

/// What selective checkpointing keeps: the results of the ops that cost
/// the most to compute again per byte (GEMMs, attention, convolutions) and
/// of communication.
bool isExpensive(Operation *op) {
  return isa<LinearOp, MatmulOp, AttentionOp, Conv2dOp>(op) || isCollective(op);
}

int64_t bytesOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return 0;
  int64_t bits = t.getElementType().getIntOrFloatBitWidth();
  return t.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

/// Whether `fn` is a training step's backward: it returns gradients.
bool returnsGradients(func::FuncOp fn) {
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (fn.getResultAttr(i, kGradAttr) ||
        fn.getResultAttr(i, kActivationGradAttr))
      return true;
  return false;
}

/// One block of a function: its forward ops (before its backward) and the
/// results of those that its backward reads.
struct BlockPlan {
  /// The first op of the block's backward (its last segment).
  Operation *backward;
  DenseSet<Operation *> forward;
  /// Results of forward ops read from `backward` on (in op order).
  SmallVector<Value> saved;
  /// Results of forward ops that another block reads before `backward`:
  /// that block's inputs, which stay.
  DenseSet<Value> passedOn;
};

struct ActivationCheckpointingPass
    : glimmer::impl::GlimmerActivationCheckpointingBase<
          ActivationCheckpointingPass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<Mode> parsed = parseMode();
    if (!parsed)
      return signalPassFailure();
    if (mode == "none")
      return;
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock() &&
          returnsGradients(fn))
        run(fn.getBody().front(), *parsed);
  }

  std::optional<Mode> parseMode() {
    auto fail = [&](const Twine &message) -> std::optional<Mode> {
      getOperation().emitError()
          << "glimmer-activation-checkpointing: " << message;
      return std::nullopt;
    };
    if (mode == "budget") {
      if (budget < 0)
        return fail("mode=budget needs a budget of zero or more bytes "
                    "(budget=N)");
      return Mode::Budget;
    }
    if (mode != "none" && mode != "full" && mode != "selective")
      return fail("unknown mode '" + mode +
                  "' (expected none, full, selective or budget)");
    if (budget >= 0)
      return fail("budget=" + Twine(int64_t(budget)) +
                  " is for mode=budget, not mode=" + mode);
    return mode == "selective" ? Mode::Selective : Mode::Full;
  }

  void run(Block &body, Mode m) {
    DenseMap<Operation *, int64_t> pos;
    for (Operation &op : body)
      pos[&op] = int64_t(pos.size());

    // Each block with a backward: its last segment, after a first.
    auto isConstant = [](Operation *op) { return isa<ConstantOp>(op); };
    llvm::MapVector<StringRef, SmallVector<LayerSegment *>> segmentsOf;
    SmallVector<LayerSegment> segments =
        layerSegments(body, kMaxForeign, isConstant);
    for (LayerSegment &s : segments)
      segmentsOf[s.layer].push_back(&s);
    SmallVector<BlockPlan> plans;
    for (auto &[layer, list] : segmentsOf) {
      if (list.size() < 2)
        continue;
      BlockPlan plan;
      plan.backward = list.back()->ops.front();
      int64_t start = pos.lookup(plan.backward);
      for (Operation &op : body) {
        if (pos.lookup(&op) >= start)
          break;
        if (!isConstant(&op) && layerOf(&op) == layer)
          plan.forward.insert(&op);
      }
      for (Operation &op : body) {
        if (!plan.forward.contains(&op))
          continue;
        for (Value v : op.getResults()) {
          bool late = false, elsewhere = false;
          for (Operation *user : v.getUsers()) {
            Operation *u = body.findAncestorOpInBlock(*user);
            if (!u)
              continue;
            if (pos.lookup(u) >= start)
              late = true;
            else if (!plan.forward.contains(u))
              elsewhere = true;
          }
          if (elsewhere)
            plan.passedOn.insert(v);
          else if (late)
            plan.saved.push_back(v);
        }
      }
      if (!plan.saved.empty())
        plans.push_back(std::move(plan));
    }

    // What stays: by the mode, or, for a budget, the most expensive to
    // compute again per byte while they fit (the results of one op
    // together: they are computed again together).
    DenseSet<Operation *> kept;
    if (m == Mode::Budget)
      kept = chooseWithinBudget(plans);
    auto keeps = [&](Operation *def) {
      if (!isRecomputable(def))
        return true;
      switch (m) {
      case Mode::Full:
        return false;
      case Mode::Selective:
        return isExpensive(def);
      case Mode::Budget:
        return kept.contains(def);
      }
      return true;
    };

    for (BlockPlan &plan : plans) {
      OpBuilder b(plan.backward);
      int64_t start = pos.lookup(plan.backward);
      DenseMap<Value, Value> copies;
      // The value `v` has right before the backward: itself when it stays,
      // else a copy of its op reading its operands' values there.
      std::function<Value(Value)> valueAt = [&](Value v) -> Value {
        if (Value c = copies.lookup(v))
          return c;
        Operation *def = v.getDefiningOp();
        if (!def || !plan.forward.contains(def) || plan.passedOn.contains(v) ||
            keeps(def))
          return v;
        IRMapping map;
        for (Value operand : def->getOperands())
          map.map(operand, valueAt(operand));
        Operation *copy = b.clone(*def, map);
        for (auto [r, c] : llvm::zip(def->getResults(), copy->getResults()))
          copies[r] = c;
        return copies.lookup(v);
      };
      for (Value v : plan.saved) {
        Value c = valueAt(v);
        if (c == v)
          continue;
        // Reads from the backward on (copies have no position: none reads
        // `v`, they read its copy).
        v.replaceUsesWithIf(c, [&](OpOperand &use) {
          Operation *u = body.findAncestorOpInBlock(*use.getOwner());
          auto it = u ? pos.find(u) : pos.end();
          return it != pos.end() && it->second >= start;
        });
      }
    }
  }

  /// The ops whose saved results a budget keeps: those that cannot be
  /// computed again first, then by cost per byte (collectives first),
  /// each while the kept bytes stay within the budget.
  DenseSet<Operation *> chooseWithinBudget(ArrayRef<BlockPlan> plans) {
    struct Candidate {
      Operation *op;
      int64_t bytes;
      double perByte;
    };
    llvm::MapVector<Operation *, int64_t> bytes;
    for (const BlockPlan &plan : plans)
      for (Value v : plan.saved)
        bytes[v.getDefiningOp()] += bytesOf(v);
    DenseSet<Operation *> kept;
    int64_t used = 0;
    SmallVector<Candidate> candidates;
    for (auto [op, n] : bytes) {
      if (!isRecomputable(op)) {
        kept.insert(op);
        used += n;
        continue;
      }
      double perByte =
          isCollective(op)
              ? std::numeric_limits<double>::infinity()
              : estimatedCost(op) / double(std::max<int64_t>(n, 1));
      candidates.push_back({op, n, perByte});
    }
    llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) {
      return a.perByte > b.perByte;
    });
    for (const Candidate &c : candidates)
      if (used + c.bytes <= budget) {
        kept.insert(c.op);
        used += c.bytes;
      }
    return kept;
  }
};

} // namespace
