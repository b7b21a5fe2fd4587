//===- FuseElementwise.cpp - Group elementwise chains into fusions --------===//
//
// Chains of elementwise and index ops become glimmer.fusion ops, which a
// backend runs as one kernel: the values between the ops stay in registers
// instead of each being written to and read back from device memory.
// Groups grow from their last op towards their producers (see Passes.td for
// the rules); all analysis happens first, then each group is rewritten.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERFUSEELEMENTWISE
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

constexpr unsigned kMaxOps = 64;
constexpr unsigned kMaxInputs = 16;
/// The most ops (views aside) between two sibling fusions that merge: the
/// second one's results are computed that much earlier and held meanwhile.
constexpr unsigned kMaxSiblingGap = 4;

int64_t numElements(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

struct Group {
  Operation *root;
  llvm::SetVector<Operation *> ops; // in the order they joined
  /// Members that stay in the block as well, for their other users.
  DenseSet<Operation *> copies;
};

/// Ops cheap enough to compute again inside a group when they have other
/// users: index maps and conversions.
bool isCheapToCopy(Operation *op) {
  return isa<BroadcastInDimOp, ReshapeOp, TransposeOp, SliceOp, ConvertOp,
             ConstantOp>(op);
}

class BlockFuser {
public:
  explicit BlockFuser(Block &block) : block(block) {}

  void run() {
    SmallVector<Group> groups;
    for (Operation &op : llvm::reverse(block)) {
      if (groupOf.contains(&op) || !FusionOp::isFusible(&op) ||
          isa<ReshapeOp, ConstantOp>(op))
        continue;
      Group g{&op, {}};
      grow(g);
      if (worthFusing(g)) {
        for (Operation *member : g.ops)
          if (!g.copies.contains(member))
            groupOf[member] = groups.size();
        // A copy's operands from outside become this fusion's inputs: a
        // group formed later that takes them in must keep them as results.
        for (Operation *copy : g.copies)
          for (Value v : copy->getOperands())
            if (!g.ops.contains(v.getDefiningOp()))
              copyReaders[v].push_back(g.root);
        groups.push_back(std::move(g));
      }
    }
    for (Group &g : groups)
      rewrite(g);
    // Copied ops whose every user is now in a fusion.
    SmallVector<Operation *> dead;
    for (Group &g : groups)
      for (Operation *op : g.copies)
        if (!groupOf.contains(op)) // else a later group moved it
          dead.push_back(op);
    llvm::sort(dead, [](Operation *a, Operation *b) {
      return b->isBeforeInBlock(a);
    });
    dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
    for (Operation *op : dead)
      if (op->use_empty())
        op->erase();
    mergeSiblings();
  }

private:
  /// Takes in producers of the group's ops while the rules allow.
  void grow(Group &g) {
    g.ops.insert(g.root);
    int64_t loop = numElements(g.root->getResult(0));
    ArrayRef<int64_t> loopShape = shapeOf(g.root->getResult(0));
    for (unsigned next = 0; next < g.ops.size(); ++next) {
      Operation *member = g.ops[next];
      for (Value operand : member->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (!producer || producer->getBlock() != &block ||
            g.ops.contains(producer) || groupOf.contains(producer) ||
            !FusionOp::isFusible(producer) || g.ops.size() >= kMaxOps)
          continue;
        if (!isa<ConstantOp>(producer) && 4 * numElements(operand) < loop)
          continue;
        bool ok = true;
        for (Operation *user : producer->getResult(0).getUsers()) {
          // A copied member's original stays and keeps reading this.
          if (g.ops.contains(user) && !g.copies.contains(user))
            continue;
          // Used outside: a further result, computed where the root was.
          if (shapeOf(operand) != loopShape ||
              user->getBlock() != &block || !g.root->isBeforeInBlock(user)) {
            ok = false;
            break;
          }
        }
        // Fusions formed before that copied one of its users read it where
        // their last op was.
        for (Operation *reader : copyReaders.lookup(operand))
          if (ok && (shapeOf(operand) != loopShape ||
                     !g.root->isBeforeInBlock(reader)))
            ok = false;
        // Else a cheap op is copied in (it stays for its other users: the
        // RoPE tables broadcast for the forward and the backward).
        bool copy = !ok && isCheapToCopy(producer);
        if (!ok && !copy)
          continue;
        g.ops.insert(producer);
        if (inputs(g).size() > kMaxInputs) {
          g.ops.pop_back();
          continue;
        }
        if (copy)
          g.copies.insert(producer);
      }
    }
  }

  /// Values the group's ops read that no op of the group defines, in order
  /// of first use.
  static llvm::SetVector<Value> inputs(const Group &g) {
    llvm::SetVector<Value> in;
    for (Operation *op : sorted(g))
      for (Value v : op->getOperands())
        if (!g.ops.contains(v.getDefiningOp()))
          in.insert(v);
    return in;
  }

  static SmallVector<Operation *> sorted(const Group &g) {
    SmallVector<Operation *> ops(g.ops.begin(), g.ops.end());
    llvm::sort(ops, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    return ops;
  }

  static bool worthFusing(const Group &g) {
    unsigned compute = 0;
    for (Operation *op : g.ops)
      if (!isa<ReshapeOp, ConstantOp>(op))
        ++compute;
    return compute >= 2 && !inputs(g).empty() && !g.root->use_empty();
  }

  void rewrite(Group &g) {
    SmallVector<Operation *> ops = sorted(g);
    llvm::SetVector<Value> in = inputs(g);
    SmallVector<Value> results;
    for (Operation *op : ops)
      for (Value r : op->getResults())
        if (!g.copies.contains(op) &&
            llvm::any_of(r.getUsers(), [&](Operation *user) {
              return !g.ops.contains(user);
            }))
          results.push_back(r);
    // Every outside user was in groups rewritten before (which copied what
    // they read): the ops are dead.
    if (results.empty()) {
      for (Operation *op : llvm::reverse(ops))
        if (!g.copies.contains(op))
          op->erase();
      return;
    }
    OpBuilder b(g.root);
    SmallVector<Type> resultTypes;
    for (Value r : results)
      resultTypes.push_back(r.getType());
    auto fusion = FusionOp::create(b, g.root->getLoc(), resultTypes,
                                   in.getArrayRef());
    Block *body = b.createBlock(&fusion.getBody());
    IRMapping map;
    for (Value v : in)
      map.map(v, body->addArgument(v.getType(), v.getLoc()));
    b.setInsertionPointToStart(body);
    for (Operation *op : ops)
      b.clone(*op, map);
    SmallVector<Value> yielded;
    for (Value r : results)
      yielded.push_back(map.lookup(r));
    YieldOp::create(b, g.root->getLoc(), yielded);
    for (auto [old, now] : llvm::zip(results, fusion.getResults()))
      old.replaceUsesWithIf(now, [&](OpOperand &use) {
        return !g.ops.contains(use.getOwner());
      });
    for (Operation *op : llvm::reverse(ops))
      if (!g.copies.contains(op))
        op->erase();
  }

  /// Fusions of one shape that read a common operand of that size become
  /// one, at the first's place, so the operand is read once (SwiGLU's
  /// backward reads the output gradient and both projections for each of
  /// its two results).
  /// The second may move up only if its inputs are all defined by then and
  /// at most kMaxSiblingGap ops lie between (it holds its results longer).
  void mergeSiblings() {
    SmallVector<FusionOp> fusions(block.getOps<FusionOp>());
    for (size_t i = 0; i < fusions.size(); ++i) {
      if (!fusions[i])
        continue;
      for (size_t j = i + 1; j < fusions.size(); ++j) {
        FusionOp f = fusions[i], g = fusions[j];
        if (!g)
          continue;
        if (gapExceeded(f, g))
          break;
        if (!mergeable(f, g))
          continue;
        fusions[i] = merge(f, g);
        fusions[j] = nullptr;
      }
    }
  }

  static bool gapExceeded(FusionOp f, FusionOp g) {
    unsigned gap = 0;
    for (Operation *op = f->getNextNode(); op && op != g.getOperation();
         op = op->getNextNode())
      if (!isa<ReshapeOp>(op) && ++gap > kMaxSiblingGap)
        return true;
    return false;
  }

  static bool mergeable(FusionOp f, FusionOp g) {
    if (shapeOf(f.getResults().front()) != shapeOf(g.getResults().front()))
      return false;
    llvm::SetVector<Value> in(f.getInputs().begin(), f.getInputs().end());
    int64_t loop = numElements(f.getResults().front());
    bool shared = false; // a full-size operand both read (not a table)
    for (Value v : g.getInputs()) {
      shared |= in.contains(v) && numElements(v) == loop;
      Operation *def = v.getDefiningOp();
      if (def && def->getBlock() == f->getBlock() && !def->isBeforeInBlock(f))
        return false; // defined after f (or by it)
      in.insert(v);
    }
    size_t ops = f.getBody().front().getOperations().size() +
                 g.getBody().front().getOperations().size();
    return shared && in.size() <= kMaxInputs && ops <= kMaxOps;
  }

  static FusionOp merge(FusionOp f, FusionOp g) {
    llvm::SetVector<Value> in(f.getInputs().begin(), f.getInputs().end());
    in.insert(g.getInputs().begin(), g.getInputs().end());
    SmallVector<Type> types(f.getResultTypes());
    llvm::append_range(types, g.getResultTypes());
    OpBuilder b(f);
    auto m = FusionOp::create(b, f.getLoc(), types, in.getArrayRef());
    Block *body = b.createBlock(&m.getBody());
    for (Value v : in)
      body->addArgument(v.getType(), v.getLoc());
    b.setInsertionPointToStart(body);
    SmallVector<Value> yielded;
    for (FusionOp part : {f, g}) {
      Block &old = part.getBody().front();
      IRMapping map;
      for (auto [arg, input] : llvm::zip(old.getArguments(), part.getInputs()))
        map.map(arg, body->getArgument(unsigned(llvm::find(in, input) -
                                                in.begin())));
      for (Operation &op : old.without_terminator())
        b.clone(op, map);
      for (Value v : cast<YieldOp>(old.getTerminator()).getValues())
        yielded.push_back(map.lookup(v));
    }
    YieldOp::create(b, f.getLoc(), yielded);
    unsigned nf = f->getNumResults();
    for (auto [k, r] : llvm::enumerate(f.getResults()))
      r.replaceAllUsesWith(m.getResult(unsigned(k)));
    for (auto [k, r] : llvm::enumerate(g.getResults()))
      r.replaceAllUsesWith(m.getResult(nf + unsigned(k)));
    f->erase();
    g->erase();
    return m;
  }

  Block &block;
  DenseMap<Operation *, size_t> groupOf;
  /// Values that copies in fusions formed so far read, and those fusions'
  /// last ops.
  DenseMap<Value, SmallVector<Operation *>> copyReaders;
};

struct FuseElementwisePass
    : glimmer::impl::GlimmerFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      for (Block &block : func.getBody())
        BlockFuser(block).run();
  }
};

} // namespace
