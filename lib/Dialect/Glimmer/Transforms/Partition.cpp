//===- Partition.cpp - Annotated global view -> per-rank program ----------===//
//
// Phase 3 of the sharding engine: every value takes its rank-local type
// from its propagated sharding, and each operand is brought to the sharding
// the op's rule expects by one reshard(from, to), which picks the
// collectives. Ops themselves are unchanged but for their local types (and
// the attributes that hold sizes), except a row-parallel linear's bias,
// which each use adds once after the reduction (to its piece under sp), and
// the vocabulary handlers.
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

#include "PartitionHandlers.h"
#include "ShardingFactors.h"
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
  /// The partial axes over which the sum is the loss's per-rank share.
  Axes tokenPartial() const {
    Axes out;
    for (StringRef a : partial)
      if (isTokenAxis(a))
        out.push_back(a);
    return out;
  }
};

bool isPrefix(ArrayRef<StringRef> prefix, ArrayRef<StringRef> axes) {
  return prefix.size() <= axes.size() &&
         std::equal(prefix.begin(), prefix.end(), axes.begin());
}

class Partitioner {
public:
  Partitioner(func::FuncOp func, MeshAttr mesh, FlatSymbolRefAttr meshRef,
              Axes tokenAxes)
      : func(func), mesh(mesh), meshRef(meshRef), b(func.getContext()),
        tokenAxes(std::move(tokenAxes)) {}

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

  /// `v` (held as `from`, global type `global`) as `to`: partial sums that
  /// `to` does not keep are all-reduced (reduce-scattered when `to` splits
  /// them), a split that moves to another dimension is one all-to-all, the
  /// axes a dimension is split over beyond what `to` keeps of them (its
  /// leading axes) are all-gathered, and axes `to` adds are cut locally.
  /// `sharedWork` are the axes that split the consumer's work: a gather
  /// over them feeds per-rank work (its cotangents are shares, summed by the
  /// gather's VJP); any other gather over tp is `invariant` (its VJP takes
  /// the rank's slice). A cut over token axes of a value computed from
  /// trained parameters is an error (its VJP, a gather, would make each
  /// rank's gradient share whole).
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
  /// An op reading the loss's partial sum over token axes: scaling keeps it
  /// partial, anything else is an error.
  LogicalResult partitionPartialUse(Operation *op);
  /// An error of `op` (or at `loc`) that names the token axes it cannot be
  /// partitioned over; the reason follows.
  InFlightDiagnostic tokenAxesError(Operation *op, ArrayRef<StringRef> axes) {
    broken = true;
    return op->emitOpError()
           << "cannot be partitioned over " << llvm::join(axes, ", ") << ": ";
  }
  InFlightDiagnostic tokenAxesError(Location loc, ArrayRef<StringRef> axes) {
    broken = true;
    return emitError(loc) << "cannot be partitioned over "
                          << llvm::join(axes, ", ") << ": ";
  }

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
  /// The token axes of the layout (degree > 1), in mesh order.
  Axes tokenAxes;
  /// Values computed from trained parameters (their gradients flow back).
  DenseSet<Value> trained;
  /// Set when an error was emitted (a reshard that cannot be made).
  bool broken = false;
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
  Value original = v;
  Layout cur = from;
  Axes reduce;
  for (StringRef a : cur.partial)
    if (!llvm::is_contained(to.partial, a))
      reduce.push_back(a);
  // Partial over A to split over A along one dimension (the sum after a
  // row-parallel projection, kept sequence-split under sp): one
  // reduce-scatter instead of an all-reduce and a slice.
  if (!reduce.empty()) {
    for (unsigned d = 0; d < cur.dims.size(); ++d) {
      Axes joined = cur.dims[d];
      joined.append(reduce.begin(), reduce.end());
      if (to.dims[d] != joined)
        continue;
      Layout next = cur;
      next.partial = to.partial;
      next.dims[d] = joined;
      if (!(next == to))
        continue;
      return ReduceScatterOp::create(
          b, loc, localType(global, next),
          ReductionKindAttr::get(b.getContext(), ReductionKind::Sum), v,
          meshRef, axesAttr(reduce), b.getI64IntegerAttr(d));
    }
    v = AllReduceOp::create(
        b, loc, v.getType(),
        ReductionKindAttr::get(b.getContext(), ReductionKind::Sum), v,
        meshRef, axesAttr(reduce));
    cur.partial = to.partial;
  }
  // The axes a dimension is split over beyond the ones `to` keeps (`to`'s
  // are a prefix of them) move to another dimension that `to` splits over
  // them next: one all-to-all moves every rank's elements where they
  // belong (sequence-split to head-split), instead of a gather of the whole
  // value and a cut.
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d] == to.dims[d] || !isPrefix(to.dims[d], cur.dims[d]))
      continue;
    Axes moving(cur.dims[d].begin() + to.dims[d].size(), cur.dims[d].end());
    for (unsigned e = 0; e < cur.dims.size(); ++e) {
      Axes joined = cur.dims[e];
      joined.append(moving.begin(), moving.end());
      if (e == d || to.dims[e] != joined)
        continue;
      Layout next = cur;
      next.dims[e] = joined;
      next.dims[d] = to.dims[d];
      v = AllToAllOp::create(b, loc, localType(global, next), v, meshRef,
                             axesAttr(moving), b.getI64IntegerAttr(e),
                             b.getI64IntegerAttr(d));
      cur = next;
      break;
    }
  }
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    // Keep the leading axes both agree on; gather the rest.
    unsigned keep = 0;
    while (keep < cur.dims[d].size() && keep < to.dims[d].size() &&
           cur.dims[d][keep] == to.dims[d][keep])
      ++keep;
    if (keep == cur.dims[d].size())
      continue;
    Axes gathered(cur.dims[d].begin() + keep, cur.dims[d].end());
    Layout next = cur;
    next.dims[d].resize(keep);
    // Its cotangents are the ranks' shares when every rank's work uses the
    // whole gathered value, and always over token axes (each rank's loss
    // is a share); when the target cuts it again over a tp axis (split
    // over A on d -> split over A on e), each rank's slice cotangent is
    // complete, and the cut's VJP gathers them: invariant.
    bool shares = llvm::all_of(gathered, [&](StringRef a) {
      return isTokenAxis(a) ||
             (llvm::is_contained(sharedWork, a) && !to.uses(a));
    });
    v = AllGatherOp::create(b, loc, localType(global, next), v, meshRef,
                            axesAttr(gathered), b.getI64IntegerAttr(d),
                            shares ? UnitAttr() : b.getUnitAttr());
    cur = next;
  }
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d] == to.dims[d])
      continue;
    Axes added(to.dims[d].begin() + cur.dims[d].size(), to.dims[d].end());
    Axes overTokens;
    for (StringRef a : added)
      if (isTokenAxis(a))
        overTokens.push_back(a);
    if (!overTokens.empty() && trained.contains(original))
      tokenAxesError(loc, overTokens)
          << "a value computed from trained parameters, the same on every "
             "rank there, would be cut along dimension "
          << d << " (each rank's gradient of it would then be counted once "
                  "per rank)";
    Layout next = cur;
    next.dims[d] = to.dims[d];
    v = LocalShardOp::create(b, loc, localType(global, next), v, meshRef,
                             axesAttr(added), b.getI64IntegerAttr(d));
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
  // (Over token axes cotangents are shares anyway.)
  Axes split;
  for (unsigned d = 0; d + 1 < to.dims.size(); ++d)
    for (StringRef a : to.dims[d])
      if (!isTokenAxis(a))
        split.push_back(a);
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
    // Results leave the function replicated and complete, but for the
    // loss's partial sum over token axes, which is reduced once after
    // autodiff (glimmer-reduce-partials): the result is marked with them.
    for (OpOperand &use : ret->getOpOperands()) {
      Value v = use.get();
      RankedTensorType global = globalTypes.lookup(v);
      Layout held = layoutOf(v); // a copy: the reshard may grow the map
      Layout want = Layout::replicated(global.getRank());
      want.partial = held.tokenPartial();
      use.set(complete(v, held, want, global, loc));
      if (!want.partial.empty())
        func.setResultAttr(use.getOperandNumber(), "glimmer.partial",
                           axesAttr(want.partial));
    }
    return success();
  }
  if (llvm::any_of(op->getOperands(), [&](Value v) {
        return !layoutOf(v).tokenPartial().empty();
      }))
    return partitionPartialUse(op);
  // The sequence-parallel constraints steer propagation and cut the
  // residual stream, but never gather: the consumers reshard what they read
  // (a column-parallel projection gathers its input itself, so that the
  // gather's VJP sums the ranks' shares).
  if (auto c = dyn_cast<ShardingConstraintOp>(op);
      c && c->hasAttr("glimmer.sequence_parallel")) {
    Value in = c.getInput(), out = c.getOutput();
    RankedTensorType global = globalTypes.lookup(in);
    // Copied first: inserting into the maps may move their entries.
    Layout held = layoutOf(in), want = held;
    Layout asked = Layout::of(c.getSharding(), global.getRank());
    for (unsigned d = 0; d < want.dims.size(); ++d)
      if (isPrefix(held.dims[d], asked.dims[d]))
        want.dims[d] = asked.dims[d];
    Value local = reshard(in, held, want, global, loc);
    c.getInputMutable().assign(local);
    globalTypes[local] = global;
    globalTypes[out] = global;
    layouts[local] = want;
    layouts[out] = want;
    out.setType(local.getType());
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
  // Operands as they are held (their producers are partitioned already),
  // but a constraint's sharding says all: what it leaves whole is whole.
  if (!isa<ShardingConstraintOp>(op))
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
    // A copy: the reshard below may grow the map.
    Layout held = layoutOf(v);
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
      if (!isTokenAxis(a) && !want.uses(a) && !gathered(a))
        shares.push_back(a);
    if (!shares.empty() && isa<FloatType>(global.getElementType()))
      local = PvaryOp::create(b, loc, local.getType(), local, meshRef,
                              axesAttr(shares));
    if (local != v)
      op->setOperand(i, local);
    globalTypes.try_emplace(local, global);
  }

  // Results: local types, and partial over the split contractions. Over
  // token axes only the loss may be a partial sum (each rank's share of
  // it), and it must be one over every token axis: a loss whole on some
  // ranks would be counted once per rank.
  Axes partial, tokenReduced;
  for (auto [f, axes] : llvm::enumerate(factorAxes))
    if (rule.getFactor(f).kind == FactorKind::Reduction) {
      partial.append(axes);
      for (StringRef a : axes)
        if (isTokenAxis(a))
          tokenReduced.push_back(a);
    }
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

LogicalResult Partitioner::partitionPartialUse(Operation *op) {
  SmallVector<unsigned> partialOperands;
  Axes axes;
  bool alike = true;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    Axes p = layoutOf(v).tokenPartial();
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
    return op->emitOpError()
           << "uses a value that is a partial sum over "
           << llvm::join(axes, ", ")
           << "; only scaling it (the loss) is supported";
  // Every operand whole and replicated otherwise.
  for (OpOperand &use : op->getOpOperands()) {
    Value v = use.get();
    RankedTensorType global = globalTypes.lookup(v);
    Layout held = layoutOf(v); // a copy: the reshard may grow the map
    Layout want = Layout::replicated(global.getRank());
    want.partial = held.tokenPartial();
    Value local = complete(v, held, want, global, op->getLoc());
    if (local != v) {
      use.set(local);
      globalTypes.try_emplace(local, global);
      layouts[local] = want;
    }
  }
  for (Value r : op->getResults()) {
    auto global = cast<RankedTensorType>(r.getType());
    globalTypes[r] = global;
    Layout l = Layout::replicated(global.getRank());
    l.partial = axes;
    layouts[r] = l;
  }
  return success();
}

LogicalResult Partitioner::run() {
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (type && isa<FloatType>(type.getElementType()) &&
        func.getArgAttr(arg.getArgNumber(), "glimmer.param"))
      trained.insert(arg);
  }
  for (Operation &op : body)
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return trained.contains(v); }))
      trained.insert(op.getResults().begin(), op.getResults().end());
  for (Operation &op : body)
    if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
      rules[&op] = iface.getShardingRule();
  // Arguments: the rank's piece. The runtime cuts it from the full tensor
  // as glimmer.sharded says (a block of every split dimension).
  for (BlockArgument arg : body.getArguments()) {
    auto global = cast<RankedTensorType>(arg.getType());
    globalTypes[arg] = global;
    Layout l = propagated(arg);
    layouts[arg] = l;
    if (!l.partial.empty())
      return emitError(arg.getLoc())
             << "argument #" << arg.getArgNumber()
             << " is a partial sum; the runtime binds whole tensors or "
                "blocks of them";
    if (l == Layout::replicated(global.getRank()))
      continue;
    if (func.getArgAttr(arg.getArgNumber(), "glimmer.sharded"))
      return emitError(arg.getLoc())
             << "argument #" << arg.getArgNumber()
             << " is already a per-rank piece (glimmer.sharded)";
    func.setArgAttr(arg.getArgNumber(), "glimmer.sharded",
                    func.getArgAttr(arg.getArgNumber(), "glimmer.sharding"));
    arg.setType(localType(global, l));
  }
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(partition(op)) || broken)
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
      if (failed(Partitioner(func, meshOp.getMesh(), meshRef,
                             Axes(tokens.all()))
                     .run()))
        return signalPassFailure();
    }
  }
};

} // namespace
