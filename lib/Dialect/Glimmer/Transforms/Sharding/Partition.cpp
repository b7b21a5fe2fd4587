//===- Partition.cpp - Annotated global view -> per-rank program ----------===//
//
// Phase 3 of the sharding engine: every value takes its rank-local type
// from its propagated sharding, and each operand is brought to the sharding
// the op's rule expects by one reshard(from, to), which picks the
// collectives. Ops themselves are unchanged but for their local types,
// except the few that the handlers of PartitionHandlers.h rewrite: the
// attributes that hold sizes, a row-parallel linear's bias (which each use
// adds once after the reduction, to its piece under sp), the
// sequence-parallel constraints and the vocabulary.
//
// Two conventions for what a rank's gradient of a value is, by axis:
// - over tp, every rank's loss is the whole loss, so the cotangent of a
//   value the ranks share is complete on each; a value replicated over tp
//   that feeds work split over tp is marked glimmer.pvary (its VJP sums the
//   ranks' shares), and a gather whose consumer's work is not split over
//   its axes is invariant;
// - over the token axes (dp_replicate, dp_shard, cp), each rank's loss is
//   its tokens' share, returned as a partial sum (glimmer.partial) and
//   reduced once after autodiff, so the cotangent of a shared value is a
//   share everywhere: no pvary, every gather's VJP sums (reduce-scatter),
//   and the loss's partial sum may only be scaled.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "PartitionHandlers.h"
#include "TokenInputs.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERPARTITION
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

namespace {

class Partitioner {
public:
  Partitioner(func::FuncOp func, MeshAttr mesh, FlatSymbolRefAttr meshRef,
              Axes tokenAxes)
      : func(func), values(func, mesh, meshRef),
        tokenAxes(std::move(tokenAxes)) {}

  LogicalResult run();

private:
  OpBuilder &builder() { return values.builder(); }
  MeshAttr mesh() const { return values.getMesh(); }
  /// The propagated sharding of a value (replicated when it has none).
  Layout propagated(Value v);

  /// The arguments become the rank's piece. The runtime cuts it from the
  /// full tensor as glimmer.sharded says (a block of every split dimension).
  LogicalResult partitionArguments();
  /// The program is per-rank now: the global-view annotations go.
  void dropGlobalView();

  /// values.reshard, then the bias of a row-parallel projection whose
  /// partial result `v` is, added to the complete value in the layout it is
  /// wanted in.
  Value complete(Value v, const Layout &from, const Layout &to,
                 RankedTensorType global, Location loc,
                 ArrayRef<StringRef> sharedWork = {});
  LogicalResult partition(Operation *op);
  /// Results leave the function replicated and complete, but for the
  /// loss's partial sum over token axes.
  void partitionReturn(func::ReturnOp ret);
  /// An op reading the loss's partial sum over token axes: scaling keeps it
  /// partial, anything else is an error.
  LogicalResult partitionPartialUse(Operation *op);

  /// The generic step, by the op's rule: the axes of each factor, the
  /// operands resharded to their projection, the results' local types.
  LogicalResult partitionByRule(Operation *op, const ShardingRule &rule);
  /// The op's factor axes: its results' propagated shardings decide the
  /// factors they contain, its operands' the contractions.
  SmallVector<Axes> factorAxesOf(Operation *op, const ShardingRule &rule);
  /// Operand `i` of `op` resharded as the rule's `factorAxes` project onto
  /// it, with pvary where it stays replicated over axes of `splitBy` (the
  /// axes that split the op's work).
  void reshardOperand(Operation *op, unsigned i, const ShardingRule &rule,
                      ArrayRef<Axes> factorAxes, ArrayRef<StringRef> splitBy);
  /// Over token axes only the loss may be a partial sum (`tokenReduced`, the
  /// token axes of the op's reductions).
  LogicalResult checkTokenReductions(Operation *op,
                                     ArrayRef<StringRef> tokenReduced);
  /// The handlers of the ops the generic step does not finish
  /// (PartitionHandlers.h).
  void applyHandlers(Operation *op, const ShardingRule &rule,
                     ArrayRef<Axes> factorAxes);

  /// An error of `op` that names the token axes it cannot be partitioned
  /// over; the reason follows.
  InFlightDiagnostic tokenAxesError(Operation *op, ArrayRef<StringRef> axes) {
    return op->emitOpError()
           << "cannot be partitioned over " << llvm::join(axes, ", ") << ": ";
  }

  func::FuncOp func;
  PartitionedValues values;
  /// Every op's rule, built before any type turns local (rules read
  /// shapes).
  DenseMap<Operation *, ShardingRule> rules;
  /// Reshards already made: (value, target layout and shared work) -> the
  /// resharded value.
  DenseMap<Value, llvm::StringMap<Value>> reshards;
  /// Row-parallel projections' results (partial) -> the bias each use adds
  /// once the sum is complete.
  DenseMap<Value, Value> pendingBias;
  /// The token axes of the layout (degree > 1), in mesh order.
  Axes tokenAxes;
};

Layout Partitioner::propagated(Value v) {
  unsigned rank = cast<RankedTensorType>(v.getType()).getRank();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto s = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                     kShardingAttr))
      return Layout::of(s, rank);
    return Layout::replicated(rank);
  }
  Operation *def = v.getDefiningOp();
  if (auto c = dyn_cast<ShardingConstraintOp>(def))
    return Layout::of(c.getSharding(), rank);
  if (auto list = def->getAttrOfType<ArrayAttr>(kShardingsAttr))
    return Layout::of(
        cast<ShardingAttr>(list[cast<OpResult>(v).getResultNumber()]), rank);
  return Layout::replicated(rank);
}

Value Partitioner::complete(Value v, const Layout &from, const Layout &to,
                            RankedTensorType global, Location loc,
                            ArrayRef<StringRef> sharedWork) {
  Value sum = values.reshard(v, from, to, global, loc, sharedWork);
  auto pending = pendingBias.find(v);
  if (pending == pendingBias.end())
    return sum;
  return addRowParallelBias(values, sum, pending->second, to, global, loc);
}

LogicalResult Partitioner::partition(Operation *op) {
  builder().setInsertionPoint(op);
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    partitionReturn(ret);
    return success();
  }
  if (llvm::any_of(op->getOperands(), [&](Value v) {
        return !values.layoutOf(v).tokenPartial().empty();
      }))
    return partitionPartialUse(op);
  if (auto c = dyn_cast<ShardingConstraintOp>(op);
      c && c->hasAttr(kSequenceParallelAttr)) {
    partitionSequenceParallelConstraint(values, c);
    return success();
  }
  auto it = rules.find(op);
  if (it == rules.end())
    return op->emitOpError()
           << "has no sharding rule, so it cannot be partitioned";
  return partitionByRule(op, it->second);
}

void Partitioner::partitionReturn(func::ReturnOp ret) {
  // The loss's partial sum is reduced once after autodiff
  // (glimmer-reduce-partials): the result is marked with its axes.
  for (OpOperand &use : ret->getOpOperands()) {
    Value v = use.get();
    RankedTensorType global = values.globalType(v);
    Layout held = values.layoutOf(v); // a copy: the reshard may grow the map
    Layout want = Layout::replicated(global.getRank());
    want.partial = held.tokenPartial();
    use.set(complete(v, held, want, global, ret.getLoc()));
    if (!want.partial.empty())
      func.setResultAttr(use.getOperandNumber(), kPartialAttr,
                         values.axesAttr(want.partial));
  }
}

LogicalResult Partitioner::partitionByRule(Operation *op,
                                           const ShardingRule &rule) {
  SmallVector<Axes> factorAxes = factorAxesOf(op, rule);
  Axes splitBy;
  for (const Axes &axes : factorAxes)
    splitBy.append(axes);
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    reshardOperand(op, i, rule, factorAxes, splitBy);

  // Results: local types, and partial over the split contractions.
  Axes partial, tokenReduced;
  for (auto [f, axes] : llvm::enumerate(factorAxes))
    if (rule.getFactor(f).kind == FactorKind::Reduction) {
      partial.append(axes);
      for (StringRef a : axes)
        if (isTokenAxis(a))
          tokenReduced.push_back(a);
    }
  if (failed(checkTokenReductions(op, tokenReduced)))
    return failure();
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    Layout l;
    l.dims = projectFactors(rule, rule.getResults()[r], factorAxes, mesh());
    l.partial = partial;
    RankedTensorType global = cast<RankedTensorType>(result.getType());
    result.setType(values.localType(global, l));
    values.set(result, global, std::move(l));
  }
  applyHandlers(op, rule, factorAxes);
  return success();
}

SmallVector<Axes> Partitioner::factorAxesOf(Operation *op,
                                            const ShardingRule &rule) {
  SmallVector<Axes> factorAxes(rule.getFactors().size());
  SmallVector<bool> decided(rule.getFactors().size(), false);
  auto readFactors = [&](const Layout &l,
                         const ShardingRule::TensorFactors &t) {
    for (auto [d, fs] : llvm::enumerate(t)) {
      std::optional<SmallVector<Axes>> split =
          splitOverFactors(l.dims[d], fs, rule, mesh());
      if (!split)
        continue;
      for (auto [k, f] : llvm::enumerate(fs)) {
        if (decided[f] || (*split)[k].empty() ||
            rule.getFactor(f).kind == FactorKind::NeedReplication)
          continue;
        bool clash = llvm::any_of((*split)[k], [&](StringRef a) {
          return llvm::any_of(factorAxes, [&](const Axes &x) {
            return llvm::is_contained(x, a);
          });
        });
        if (clash)
          continue;
        factorAxes[f] = (*split)[k];
        decided[f] = true;
      }
    }
  };
  for (unsigned r = 0; r < op->getNumResults(); ++r)
    readFactors(propagated(op->getResult(r)), rule.getResults()[r]);
  // Operands as they are held (their producers are partitioned already),
  // but a constraint's sharding says all: what it leaves whole is whole.
  if (!isa<ShardingConstraintOp>(op))
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      readFactors(values.layoutOf(op->getOperand(i)), rule.getOperands()[i]);
  // A factor split where some value of the op cannot show it (a minor
  // factor of a dimension whose major factor is not split completely, as
  // when a sequence split meets the merge of batch and sequence) is not
  // split at all: every value must agree on the op's factors.
  for (bool changed = true; changed;) {
    changed = false;
    for (unsigned t = 0; t < rule.getNumTensors(); ++t)
      for (const ShardingRule::DimFactors &fs : rule.getTensor(t)) {
        bool blocked = false;
        for (unsigned f : fs) {
          if (blocked && !factorAxes[f].empty()) {
            factorAxes[f].clear();
            changed = true;
          }
          if (axesSize(factorAxes[f], mesh()) != rule.getFactor(f).size)
            blocked = true;
        }
      }
  }
  return factorAxes;
}

void Partitioner::reshardOperand(Operation *op, unsigned i,
                                 const ShardingRule &rule,
                                 ArrayRef<Axes> factorAxes,
                                 ArrayRef<StringRef> splitBy) {
  OpBuilder &b = builder();
  Location loc = op->getLoc();
  Value v = op->getOperand(i);
  RankedTensorType global = values.globalType(v);
  Layout want;
  want.dims = projectFactors(rule, rule.getOperands()[i], factorAxes, mesh());
  // A copy: the reshard below may grow the map.
  Layout held = values.layoutOf(v);
  // One reshard per value and target: the projections that read the same
  // input (Q, K and V) share its all-gather. Only collectives are reused
  // (they are not Pure, so CSE would not merge them), at the first use,
  // which dominates the later ones in the function's single block.
  std::string key;
  {
    llvm::raw_string_ostream os(key);
    for (const Axes &a : want.dims)
      os << llvm::join(a, ",") << ";";
    os << "|" << llvm::join(splitBy, ",");
  }
  Value &cached = reshards[v][key];
  Value local = cached ? cached : complete(v, held, want, global, loc, splitBy);
  cached = local;
  // Replicated over axes that split the op's work: each rank's cotangent
  // of this use is a share of the whole. Axes the reshard gathered over
  // are summed by the gather's VJP already (an all-reduced partial sum is
  // not: its VJP passes the cotangent through).
  auto gathered = [&](StringRef a) {
    return llvm::any_of(
        held.dims, [&](const Axes &x) { return llvm::is_contained(x, a); });
  };
  Axes shares;
  for (StringRef a : splitBy)
    if (!isTokenAxis(a) && !want.uses(a) && !gathered(a))
      shares.push_back(a);
  if (!shares.empty() && isa<FloatType>(global.getElementType()))
    local = PvaryOp::create(b, loc, local.getType(), local, values.getMeshRef(),
                            values.axesAttr(shares));
  if (local != v)
    op->setOperand(i, local);
  values.addGlobalType(local, global);
}

LogicalResult
Partitioner::checkTokenReductions(Operation *op,
                                  ArrayRef<StringRef> tokenReduced) {
  // The loss must be a partial sum over every token axis: a loss whole on
  // some ranks would be counted once per rank.
  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    if (llvm::any_of(tokenAxes, [&](StringRef a) {
          return !llvm::is_contained(tokenReduced, a);
        })) {
      tokenAxesError(op, tokenAxes) << "the loss is not split over every "
                                       "token axis";
      return failure();
    }
    if (!ce.getCount().use_empty() && !tokenReduced.empty()) {
      tokenAxesError(op, tokenAxes)
          << "its token count is used, but it counts this rank's tokens only";
      return failure();
    }
  } else if (!tokenReduced.empty()) {
    tokenAxesError(op, tokenReduced)
        << "it sums over a dimension split over them (the batch or the "
           "sequence), and only the loss may be such a partial sum";
    return failure();
  }
  return success();
}

void Partitioner::applyHandlers(Operation *op, const ShardingRule &rule,
                                ArrayRef<Axes> factorAxes) {
  auto vocabSplit = [&](const ShardingRule::DimFactors &fs) -> Axes {
    return fs.empty() ? Axes() : factorAxes[fs.front()];
  };
  if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
    Axes axes = vocabSplit(rule.getOperands()[0][0]);
    if (!axes.empty())
      partitionVocabParallelEmbedding(values, embedding, axes);
    return;
  }
  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    Axes axes = vocabSplit(rule.getOperands()[0].back());
    if (!axes.empty())
      partitionLossParallelCrossEntropy(values, ce, axes);
    return;
  }
  if (auto linear = dyn_cast<LinearOp>(op)) {
    if (linear.getBias() &&
        !values.layoutOf(linear.getResult()).partial.empty())
      pendingBias[linear.getResult()] = detachRowParallelBias(linear);
    return;
  }
  if (auto slice = dyn_cast<SliceOp>(op))
    partitionSlice(values, slice);
  if (auto c = dyn_cast<ConstantOp>(op))
    partitionConstant(values, c);
}

LogicalResult Partitioner::partitionPartialUse(Operation *op) {
  SmallVector<unsigned> partialOperands;
  Axes axes;
  bool alike = true;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    Axes p = values.layoutOf(v).tokenPartial();
    if (p.empty())
      continue;
    alike &= axes.empty() || axes == p;
    axes = p;
    partialOperands.push_back(i);
  }
  // Linear in the partial sum: the ranks' results still add up to the
  // whole one.
  unsigned n = partialOperands.size();
  bool scales = isa<ConvertOp, NegOp>(op) || (isa<MulOp>(op) && n == 1) ||
                (isa<DivOp>(op) && n == 1 && partialOperands[0] == 0) ||
                (isa<AddOp, SubOp>(op) && n == op->getNumOperands() && alike);
  if (!scales)
    return op->emitOpError() << "uses a value that is a partial sum over "
                             << llvm::join(axes, ", ")
                             << "; only scaling it (the loss) is supported";
  // Every operand whole and replicated otherwise.
  for (OpOperand &use : op->getOpOperands()) {
    Value v = use.get();
    RankedTensorType global = values.globalType(v);
    Layout held = values.layoutOf(v); // a copy: the reshard may grow the map
    Layout want = Layout::replicated(global.getRank());
    want.partial = held.tokenPartial();
    Value local = complete(v, held, want, global, op->getLoc());
    if (local != v) {
      use.set(local);
      values.addGlobalType(local, global);
      values.setLayout(local, want);
    }
  }
  for (Value r : op->getResults()) {
    auto global = cast<RankedTensorType>(r.getType());
    Layout l = Layout::replicated(global.getRank());
    l.partial = axes;
    values.set(r, global, std::move(l));
  }
  return success();
}

LogicalResult Partitioner::partitionArguments() {
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto global = cast<RankedTensorType>(arg.getType());
    Layout l = propagated(arg);
    values.set(arg, global, l);
    if (!l.partial.empty())
      return emitError(arg.getLoc())
             << "argument #" << arg.getArgNumber()
             << " is a partial sum; the runtime binds whole tensors or "
                "blocks of them";
    if (l.isReplicated())
      continue;
    if (func.getArgAttr(arg.getArgNumber(), kShardedAttr))
      return emitError(arg.getLoc())
             << "argument #" << arg.getArgNumber()
             << " is already a per-rank piece (glimmer.sharded)";
    func.setArgAttr(arg.getArgNumber(), kShardedAttr,
                    func.getArgAttr(arg.getArgNumber(), kShardingAttr));
    arg.setType(values.localType(global, l));
  }
  return success();
}

void Partitioner::dropGlobalView() {
  // A sharding constraint's operand was resharded to its sharding, so the
  // constraint is the identity on local values (and its sharding would not
  // describe their local shapes).
  func.walk([](ShardingConstraintOp c) {
    c.getResult().replaceAllUsesWith(c.getInput());
    c.erase();
  });
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    func.removeArgAttr(i, kShardingAttr);
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    func.removeResultAttr(i, StringAttr::get(func.getContext(), kShardingAttr));
  func.walk([](Operation *op) { op->removeAttr(kShardingsAttr); });
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  func.setType(builder().getFunctionType(body.getArgumentTypes(),
                                         ret.getOperandTypes()));
}

LogicalResult Partitioner::run() {
  Block &body = func.getBody().front();
  for (Operation &op : body)
    if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
      rules[&op] = iface.getShardingRule();
  if (failed(partitionArguments()))
    return failure();
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(partition(op)) || values.isBroken())
      return failure();
  dropGlobalView();
  return success();
}

struct PartitionPass
    : public glimmer::impl::GlimmerPartitionBase<PartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SpmdAttr spmd = requireRecordedSpmd(module, getArgument());
    if (!spmd)
      return signalPassFailure();
    SpmdContext layout = spmd.getLayout();
    TokenAxes tokens = TokenAxes::of(layout);
    if (layout.tp() == 1 && tokens.empty())
      return;
    MeshOp meshOp = requireMesh(module, getArgument());
    if (!meshOp)
      return signalPassFailure();
    auto meshRef = FlatSymbolRefAttr::get(&getContext(), "mesh");
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(
              Partitioner(func, meshOp.getMesh(), meshRef, Axes(tokens.all()))
                  .run()))
        return signalPassFailure();
    }
  }
};

} // namespace
