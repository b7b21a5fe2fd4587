//===- Partition.cpp - Annotated global view -> per-rank program ----------===//
//
// Phase 3 of the sharding engine: every value takes its rank-local type
// from its propagated sharding, and each operand is brought to the sharding
// the op's rule expects by one reshard(from, to), which picks the
// collectives. A value replicated over axes that split the op's work is
// marked with glimmer.pvary, whose VJP sums the ranks' shares of its
// cotangent. Ops themselves are unchanged but for their local types (and
// the attributes that hold sizes), except a row-parallel linear's bias,
// which each use adds once after the reduction (to its piece under sp).
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "PartitionHandlers.h"
#include "ShardingFactors.h"

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

/// How a value is distributed: axes per dimension, partial axes.
struct Layout {
  SmallVector<Axes> dims;
  Axes partial;

  static Layout replicated(unsigned rank) {
    Layout l;
    l.dims.resize(rank);
    return l;
  }
  static Layout of(ShardingAttr s, unsigned rank) {
    Layout l;
    for (unsigned d = 0; d < rank; ++d)
      l.dims.push_back(Axes(s.getDimAxes(d)));
    l.partial = Axes(s.getPartialAxes());
    return l;
  }
  bool operator==(const Layout &o) const {
    return dims == o.dims && partial == o.partial;
  }
  bool uses(StringRef a) const {
    return llvm::is_contained(partial, a) ||
           llvm::any_of(dims, [&](const Axes &x) {
             return llvm::is_contained(x, a);
           });
  }
};

class Partitioner {
public:
  Partitioner(func::FuncOp func, MeshAttr mesh, FlatSymbolRefAttr meshRef)
      : func(func), mesh(mesh), meshRef(meshRef), b(func.getContext()) {}

  LogicalResult run();

private:
  RankedTensorType localType(RankedTensorType global, const Layout &l) {
    SmallVector<int64_t> shape(global.getShape());
    for (auto [d, axes] : llvm::enumerate(l.dims))
      shape[d] /= axesSize(axes, mesh);
    return RankedTensorType::get(shape, global.getElementType());
  }
  ArrayAttr axesAttr(ArrayRef<StringRef> axes) {
    return b.getStrArrayAttr(axes);
  }
  const Layout &layoutOf(Value v) {
    auto it = layouts.find(v);
    if (it == layouts.end())
      it = layouts
               .insert({v, Layout::replicated(
                               cast<RankedTensorType>(v.getType()).getRank())})
               .first;
    return it->second;
  }
  /// The propagated sharding of a value (replicated when it has none).
  Layout propagated(Value v);

  /// `v` (held as `from`, global type `global`) as `to`: partial sums are
  /// all-reduced (reduce-scattered when `to` splits them), a split that
  /// moves to another dimension is one all-to-all, other split dimensions
  /// that `to` does not split alike are all-gathered, and dimensions `to`
  /// splits are cut locally. `sharedWork`
  /// are the axes that split the consumer's work: a gather over them feeds
  /// per-rank work (its cotangents are shares, summed by the gather's VJP);
  /// any other gather is `invariant` (its VJP takes the rank's slice).
  Value reshard(Value v, const Layout &from, const Layout &to,
                RankedTensorType global, Location loc,
                ArrayRef<StringRef> sharedWork = {});
  /// reshard, then the bias of a row-parallel projection whose partial
  /// result `v` is, added to the complete value in the layout it is wanted
  /// in (a piece of it under sp: the sum is reduce-scattered first).
  Value complete(Value v, const Layout &from, const Layout &to,
                 RankedTensorType global, Location loc,
                 ArrayRef<StringRef> sharedWork = {});
  LogicalResult partition(Operation *op);

  func::FuncOp func;
  MeshAttr mesh;
  FlatSymbolRefAttr meshRef;
  OpBuilder b;
  /// Global (unsharded) type of every value, and its layout in the
  /// partitioned program.
  DenseMap<Value, RankedTensorType> globalTypes;
  DenseMap<Value, Layout> layouts;
  /// Every op's rule, built before any type turns local (rules read
  /// shapes).
  DenseMap<Operation *, ShardingRule> rules;
  /// Reshards already made: (value, target layout and shared work) -> the
  /// resharded value.
  DenseMap<Value, llvm::StringMap<Value>> reshards;
  /// Row-parallel projections' results (partial) -> the bias each use adds
  /// once the sum is complete.
  DenseMap<Value, Value> pendingBias;
};

Layout Partitioner::propagated(Value v) {
  unsigned rank = cast<RankedTensorType>(v.getType()).getRank();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto s = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                     "glimmer.sharding"))
      return Layout::of(s, rank);
    return Layout::replicated(rank);
  }
  Operation *def = v.getDefiningOp();
  if (auto c = dyn_cast<ShardingConstraintOp>(def))
    return Layout::of(c.getSharding(), rank);
  if (auto list = def->getAttrOfType<ArrayAttr>("glimmer.shardings"))
    return Layout::of(
        cast<ShardingAttr>(list[cast<OpResult>(v).getResultNumber()]), rank);
  return Layout::replicated(rank);
}

Value Partitioner::reshard(Value v, const Layout &from, const Layout &to,
                           RankedTensorType global, Location loc,
                           ArrayRef<StringRef> sharedWork) {
  if (from == to)
    return v;
  Layout cur = from;
  // Partial over A to split over A along one dimension (the sum after a
  // row-parallel projection, kept sequence-split under sp): one
  // reduce-scatter instead of an all-reduce and a slice.
  if (!cur.partial.empty() && to.partial.empty()) {
    for (unsigned d = 0; d < cur.dims.size(); ++d) {
      if (!cur.dims[d].empty() || to.dims[d] != cur.partial)
        continue;
      Layout next = cur;
      next.partial.clear();
      next.dims[d] = to.dims[d];
      if (!(next == to))
        continue;
      return ReduceScatterOp::create(
          b, loc, localType(global, next),
          ReductionKindAttr::get(b.getContext(), ReductionKind::Sum), v,
          meshRef, axesAttr(cur.partial), b.getI64IntegerAttr(d));
    }
  }
  if (!cur.partial.empty()) {
    // Every operand layout the rules ask for is complete (no partial).
    v = AllReduceOp::create(
        b, loc, v.getType(),
        ReductionKindAttr::get(b.getContext(), ReductionKind::Sum), v,
        meshRef, axesAttr(cur.partial));
    cur.partial.clear();
  }
  // Split over A along d to split over A along e (sequence-split to
  // head-split): one all-to-all moves every rank's elements where they
  // belong, instead of a gather of the whole value and a cut.
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d].empty() || cur.dims[d] == to.dims[d] || !to.dims[d].empty())
      continue;
    for (unsigned e = 0; e < cur.dims.size(); ++e) {
      if (e == d || !cur.dims[e].empty() || to.dims[e] != cur.dims[d])
        continue;
      Layout next = cur;
      next.dims[e] = cur.dims[d];
      next.dims[d].clear();
      v = AllToAllOp::create(b, loc, localType(global, next), v, meshRef,
                             axesAttr(cur.dims[d]), b.getI64IntegerAttr(e),
                             b.getI64IntegerAttr(d));
      cur = next;
      break;
    }
  }
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d].empty() || cur.dims[d] == to.dims[d])
      continue;
    Layout next = cur;
    next.dims[d].clear();
    // Its cotangents are the ranks' shares when every rank's work uses the
    // whole gathered value; when the target cuts it again over an axis
    // (split over A on d -> split over A on e), each rank's slice cotangent
    // is complete, and the cut's VJP gathers them: invariant.
    bool shares = llvm::all_of(cur.dims[d], [&](StringRef a) {
      return llvm::is_contained(sharedWork, a) && !to.uses(a);
    });
    v = AllGatherOp::create(b, loc, localType(global, next), v, meshRef,
                            axesAttr(cur.dims[d]), b.getI64IntegerAttr(d),
                            shares ? UnitAttr() : b.getUnitAttr());
    cur = next;
  }
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d] == to.dims[d])
      continue;
    Layout next = cur;
    next.dims[d] = to.dims[d];
    v = LocalShardOp::create(b, loc, localType(global, next), v, meshRef,
                             axesAttr(to.dims[d]), b.getI64IntegerAttr(d));
    cur = next;
  }
  return v;
}

Value Partitioner::complete(Value v, const Layout &from, const Layout &to,
                            RankedTensorType global, Location loc,
                            ArrayRef<StringRef> sharedWork) {
  Value sum = reshard(v, from, to, global, loc, sharedWork);
  auto pending = pendingBias.find(v);
  if (pending == pendingBias.end())
    return sum;
  // The bias follows the features (the last dimension) of the wanted
  // layout; everything else of it is replicated.
  Value bias = pending->second;
  auto biasType = cast<RankedTensorType>(bias.getType());
  Layout piece = Layout::replicated(1);
  piece.dims[0] = to.dims.back();
  Value local = reshard(bias, layoutOf(bias), piece, biasType, loc);
  // Added to a piece of the tokens (split over these axes), each rank's
  // cotangent of the bias is a share of the whole: pvary sums them.
  Axes split;
  for (unsigned d = 0; d + 1 < to.dims.size(); ++d)
    split.append(to.dims[d]);
  if (!split.empty())
    local = PvaryOp::create(b, loc, local.getType(), local, meshRef,
                            axesAttr(split));
  auto type = cast<RankedTensorType>(sum.getType());
  Value broadcast = BroadcastInDimOp::create(
      b, loc, type, local, b.getDenseI64ArrayAttr({type.getRank() - 1}));
  Value out = AddOp::create(b, loc, sum, broadcast);
  for (Value x : {broadcast, out}) {
    globalTypes[x] = global;
    layouts[x] = to;
  }
  return out;
}

LogicalResult Partitioner::partition(Operation *op) {
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    // Results leave the function complete and replicated.
    for (OpOperand &use : ret->getOpOperands()) {
      Value v = use.get();
      RankedTensorType global = globalTypes.lookup(v);
      use.set(complete(v, layoutOf(v), Layout::replicated(global.getRank()),
                       global, loc));
    }
    return success();
  }
  auto it = rules.find(op);
  if (it == rules.end())
    return op->emitOpError()
           << "has no sharding rule, so it cannot be partitioned";
  const ShardingRule &rule = it->second;
  unsigned numOperands = op->getNumOperands();

  // The op's factor axes: its results' propagated shardings decide the
  // factors they contain, its operands' the contractions.
  SmallVector<Axes> factorAxes(rule.getFactors().size());
  SmallVector<bool> decided(rule.getFactors().size(), false);
  auto readFactors = [&](const Layout &l, const ShardingRule::TensorFactors &t) {
    for (auto [d, fs] : llvm::enumerate(t)) {
      std::optional<SmallVector<Axes>> split =
          splitOverFactors(l.dims[d], fs, rule, mesh);
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
  // Operands as they are held (their producers are partitioned already).
  for (unsigned i = 0; i < numOperands; ++i)
    readFactors(layoutOf(op->getOperand(i)), rule.getOperands()[i]);
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
          if (axesSize(factorAxes[f], mesh) != rule.getFactor(f).size)
            blocked = true;
        }
      }
  }
  Axes splitBy;
  for (const Axes &axes : factorAxes)
    splitBy.append(axes);

  // Operands as the rule expects them.
  for (unsigned i = 0; i < numOperands; ++i) {
    Value v = op->getOperand(i);
    RankedTensorType global = globalTypes.lookup(v);
    Layout want;
    want.dims = projectFactors(rule, rule.getOperands()[i], factorAxes, mesh);
    const Layout &held = layoutOf(v);
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
    Value local =
        cached ? cached : complete(v, held, want, global, loc, splitBy);
    cached = local;
    // Replicated over axes that split the op's work: each rank's cotangent
    // of this use is a share of the whole. Axes the reshard gathered over
    // are summed by the gather's VJP already (an all-reduced partial sum is
    // not: its VJP passes the cotangent through).
    auto gathered = [&](StringRef a) {
      return llvm::any_of(held.dims, [&](const Axes &x) {
        return llvm::is_contained(x, a);
      });
    };
    Axes shares;
    for (StringRef a : splitBy)
      if (!want.uses(a) && !gathered(a))
        shares.push_back(a);
    if (!shares.empty() && isa<FloatType>(global.getElementType()))
      local = PvaryOp::create(b, loc, local.getType(), local, meshRef,
                              axesAttr(shares));
    if (local != v)
      op->setOperand(i, local);
    globalTypes.try_emplace(local, global);
  }

  // Results: local types, and partial over the split contractions.
  Axes partial;
  for (auto [f, axes] : llvm::enumerate(factorAxes))
    if (rule.getFactor(f).kind == FactorKind::Reduction)
      partial.append(axes);
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    Layout l;
    l.dims = projectFactors(rule, rule.getResults()[r], factorAxes, mesh);
    l.partial = partial;
    RankedTensorType global = cast<RankedTensorType>(result.getType());
    globalTypes[result] = global;
    result.setType(localType(global, l));
    layouts[result] = l;
  }

  // The vocabulary handlers (PartitionHandlers.h).
  auto vocabSplit = [&](const ShardingRule::DimFactors &fs) -> Axes {
    return fs.empty() ? Axes() : factorAxes[fs.front()];
  };
  if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
    Axes axes = vocabSplit(rule.getOperands()[0][0]);
    if (!axes.empty()) {
      Value y = embedding.getResult();
      Value share = partitionVocabParallelEmbedding(
          b, embedding, {meshRef, axes, axesSize(axes, mesh)});
      // Copied first: inserting into the maps may move their entries.
      Layout l = layouts[y];
      RankedTensorType global = globalTypes[y];
      layouts[share] = l;
      globalTypes[share] = global;
    }
    return success();
  }
  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    Axes axes = vocabSplit(rule.getOperands()[0].back());
    if (!axes.empty()) {
      Value oldResults[] = {ce.getSum(), ce.getCount()};
      SmallVector<std::pair<Layout, RankedTensorType>> kept;
      for (Value r : oldResults)
        kept.push_back({layouts[r], globalTypes[r]});
      auto [sum, count] = partitionLossParallelCrossEntropy(
          b, ce, {meshRef, axes, axesSize(axes, mesh)});
      for (auto [v, k] : llvm::zip(SmallVector<Value>{sum, count}, kept)) {
        layouts[v] = k.first;
        globalTypes[v] = k.second;
      }
      for (Value r : oldResults) {
        layouts.erase(r);
        globalTypes.erase(r);
      }
    }
    return success();
  }

  // A row-parallel projection's bias must be added once, after the sum of
  // the ranks' partial products, not by every rank: each use adds it to
  // the complete sum in the layout it wants (Partitioner::complete), so
  // under sp the sum is reduce-scattered and the bias added to the piece.
  if (auto linear = dyn_cast<LinearOp>(op); linear && linear.getBias() &&
                                               !partial.empty()) {
    Value bias = linear.getBias();
    linear.getBiasMutable().clear();
    // Added to the complete sum, the bias is not a per-rank share.
    if (auto share = bias.getDefiningOp<PvaryOp>()) {
      bias = share.getInput();
      if (share->use_empty())
        share->erase();
    }
    pendingBias[linear.getResult()] = bias;
    return success();
  }

  // Attributes that hold sizes of split dimensions.
  if (auto slice = dyn_cast<SliceOp>(op)) {
    SmallVector<int64_t> limit(slice.getLimit());
    auto local = cast<RankedTensorType>(slice.getInput().getType());
    for (auto [d, axes] : llvm::enumerate(layouts[slice.getResult()].dims))
      if (!axes.empty())
        limit[d] = local.getDimSize(d);
    slice.setLimit(limit);
  }
  if (auto c = dyn_cast<ConstantOp>(op)) {
    // A copy: the map grows below.
    Layout l = layouts[c.getResult()];
    if (!(l == Layout::replicated(l.dims.size()))) {
      DenseElementsAttr value = cast<DenseElementsAttr>(c.getValue());
      auto type = cast<RankedTensorType>(c.getResult().getType());
      if (value.isSplat()) {
        c.setValueAttr(DenseElementsAttr::get(
            type, value.getSplatValue<Attribute>()));
      } else {
        // Keep the whole constant and cut this rank's piece.
        RankedTensorType global = globalTypes.lookup(c.getResult());
        c.getResult().setType(global);
        SmallVector<OpOperand *> uses;
        for (OpOperand &use : c.getResult().getUses())
          uses.push_back(&use);
        b.setInsertionPointAfter(c);
        Value piece = reshard(c.getResult(), Layout::replicated(global.getRank()),
                              l, global, loc);
        for (OpOperand *use : uses)
          use->set(piece);
        globalTypes[piece] = global;
        layouts[piece] = l;
        layouts[c.getResult()] = Layout::replicated(global.getRank());
      }
    }
  }
  return success();
}

LogicalResult Partitioner::run() {
  Block &body = func.getBody().front();
  for (Operation &op : body)
    if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
      rules[&op] = iface.getShardingRule();
  // Arguments: the rank's piece. The runtime cuts it from the full tensor
  // along one dimension (glimmer.sharded_dim over glimmer.sharded_axes).
  for (BlockArgument arg : body.getArguments()) {
    auto global = cast<RankedTensorType>(arg.getType());
    globalTypes[arg] = global;
    Layout l = propagated(arg);
    layouts[arg] = l;
    SmallVector<unsigned> split;
    for (auto [d, axes] : llvm::enumerate(l.dims))
      if (!axes.empty())
        split.push_back(d);
    if (!l.partial.empty() || split.size() > 1)
      return emitError(arg.getLoc())
             << "argument #" << arg.getArgNumber()
             << " is sharded on more than one dimension or partial; the "
                "runtime holds one split dimension per argument";
    if (split.empty())
      continue;
    if (func.getArgAttr(arg.getArgNumber(), "glimmer.sharded_dim"))
      return emitError(arg.getLoc())
             << "argument #" << arg.getArgNumber()
             << " is already a per-rank piece (glimmer.sharded_dim)";
    func.setArgAttr(arg.getArgNumber(), "glimmer.sharded_dim",
                    b.getI64IntegerAttr(split[0]));
    func.setArgAttr(arg.getArgNumber(), "glimmer.sharded_axes",
                    axesAttr(l.dims[split[0]]));
    arg.setType(localType(global, l));
  }
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(partition(op)))
      return failure();
  // The program is per-rank now: the global-view annotations go. A
  // sharding constraint's operand was resharded to its sharding, so the
  // constraint is the identity on local values (and its sharding would not
  // describe their local shapes).
  func.walk([](ShardingConstraintOp c) {
    c.getResult().replaceAllUsesWith(c.getInput());
    c.erase();
  });
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    func.removeArgAttr(i, "glimmer.sharding");
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    func.removeResultAttr(i, StringAttr::get(func.getContext(),
                                             "glimmer.sharding"));
  func.walk([](Operation *op) { op->removeAttr("glimmer.shardings"); });
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  func.setType(
      b.getFunctionType(body.getArgumentTypes(), ret.getOperandTypes()));
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
    if (layout.tp() == 1)
      return;
    MeshOp meshOp = requireMesh(module, getArgument());
    if (!meshOp)
      return signalPassFailure();
    auto meshRef = FlatSymbolRefAttr::get(&getContext(), "mesh");
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(Partitioner(func, meshOp.getMesh(), meshRef).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
