//===- PropagateSharding.cpp - Shardings to a fixed point through op rules ===//
//
// Phase 2 of the sharding engine: from the seeds (the user's sharding
// constraints, then the parameter plan, then the sequence-parallel
// constraints, then the data inputs) every value gets the sharding that the
// ops' sharding rules imply. The only knowledge of ops is their
// ShardingRuleOpInterface; the state of every value is a per-dimension list
// of mesh axes plus partial axes, written out as #glimmer.sharding.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "ShardingLayout.h"
#include "TokenInputs.h"

#include "glimmer_contract/SpmdContext.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <set>
#include <tuple>

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERPROPAGATESHARDING
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// A value's sharding while propagating.
struct State : Layout {
  /// Seeds are never changed.
  bool fixed = false;
  /// The propagation round that gave each dimension its axes (lower wins a
  /// conflict): a dimension split by a later, lower-priority seed does not
  /// outrank another value's split of the same factor because an earlier
  /// seed made another of its dimensions (or its partial axes) split.
  SmallVector<unsigned> priority;
};

std::string axesText(ArrayRef<StringRef> axes) {
  return "[" + llvm::join(axes, ", ") + "]";
}

class Propagator {
public:
  Propagator(MeshAttr mesh, FlatSymbolRefAttr meshRef, bool reportConflicts)
      : mesh(mesh), meshRef(meshRef), reportConflicts(reportConflicts) {}

  /// Makes `v` a seed with sharding `s`; fails (with a diagnostic at `loc`)
  /// when `s` does not fit `v`'s type or the mesh.
  LogicalResult seed(Value v, ShardingAttr s, Location loc) {
    auto type = cast<RankedTensorType>(v.getType());
    if (s.getMesh() != meshRef)
      return emitError(loc) << "sharding refers to mesh " << s.getMesh()
                            << ", but propagation runs on " << meshRef;
    if (failed(s.verifyFor([&] { return emitError(loc); }, type, mesh)))
      return failure();
    State st;
    static_cast<Layout &>(st) = Layout::of(s, type.getRank());
    st.fixed = true;
    st.priority.assign(type.getRank(), round);
    states[v] = std::move(st);
    return success();
  }

  /// Seeds added from now on, and values they shard, rank below the ones
  /// before.
  void nextRound() { ++round; }

  /// Keeps `v` replicated: data inputs are bound whole unless a seed says
  /// otherwise, so propagation never splits them.
  void pinReplicated(Value v) {
    State st;
    st.dims.resize(cast<RankedTensorType>(v.getType()).getRank());
    st.priority.assign(st.dims.size(), ~0u);
    st.fixed = true;
    states[v] = std::move(st);
  }

  /// Propagates through every op of `ops` (in both directions) until
  /// nothing changes.
  void run(ArrayRef<Operation *> ops) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation *op : ops)
        changed |= visit(op);
      for (Operation *op : llvm::reverse(ops))
        changed |= visit(op);
    }
  }

  /// The sharding of `v`, or null when it is replicated.
  ShardingAttr shardingOf(Value v) {
    auto it = states.find(v);
    if (it == states.end() || it->second.isReplicated())
      return {};
    return toAttr(it->second, v.getContext());
  }

  ShardingAttr toAttr(const Layout &st, MLIRContext *ctx) {
    auto strings = [&](ArrayRef<StringRef> axes) {
      SmallVector<Attribute> out;
      for (StringRef a : axes)
        out.push_back(StringAttr::get(ctx, a));
      return ArrayAttr::get(ctx, out);
    };
    SmallVector<Attribute> dims;
    for (const Axes &a : st.dims)
      dims.push_back(strings(a));
    return ShardingAttr::get(ctx, meshRef, ArrayAttr::get(ctx, dims),
                             strings(st.partial));
  }

  ShardingAttr replicated(Value v) {
    return toAttr(
        Layout::replicated(cast<RankedTensorType>(v.getType()).getRank()),
        v.getContext());
  }

private:
  void conflict(Operation *op, unsigned t, unsigned numOperands, unsigned d,
                const Twine &why) {
    if (!reportConflicts || !reported.insert({op, t, d}).second)
      return;
    op->emitRemark() << "sharding conflict: "
                     << (t < numOperands ? "operand #" : "result #")
                     << (t < numOperands ? t : t - numOperands) << " dimension "
                     << d << " " << why;
  }

  /// Tensor `t` of `op`'s rule: its operands, then its results.
  static Value valueOf(Operation *op, unsigned t) {
    unsigned numOperands = op->getNumOperands();
    return t < numOperands ? op->getOperand(t) : op->getResult(t - numOperands);
  }

  /// Propagates through `op` once: whether a value's sharding grew.
  bool visit(Operation *op) {
    auto iface = dyn_cast<ShardingRuleOpInterface>(op);
    if (!iface)
      return false;
    ShardingRule rule = iface.getShardingRule();
    return proposeShardings(op, rule, decideFactors(op, rule));
  }

  /// Axes per factor, from the values that already have a sharding; the
  /// first value to shard a factor decides, and an axis serves one factor.
  SmallVector<Axes> decideFactors(Operation *op, const ShardingRule &rule) {
    unsigned numOperands = op->getNumOperands();
    unsigned numFactors = rule.getFactors().size();
    SmallVector<Axes> factorAxes(numFactors);
    SmallVector<bool> decided(numFactors, false);
    llvm::StringSet<> taken;
    // Dimensions split by higher-priority seeds decide first.
    SmallVector<std::tuple<unsigned, unsigned, unsigned>> order;
    for (unsigned t = 0; t < rule.getNumTensors(); ++t) {
      auto it = states.find(valueOf(op, t));
      if (it == states.end())
        continue;
      for (unsigned d = 0; d < it->second.dims.size(); ++d)
        if (!it->second.dims[d].empty())
          order.push_back({it->second.priority[d], t, d});
    }
    llvm::stable_sort(order, [](const auto &a, const auto &b) {
      return std::get<0>(a) < std::get<0>(b);
    });
    for (auto [prio, t, d] : order) {
      (void)prio;
      auto it = states.find(valueOf(op, t));
      ArrayRef<unsigned> fs = rule.getTensor(t)[d];
      const Axes &axes = it->second.dims[d];
      if (fs.empty())
        continue;
      std::optional<SmallVector<Axes>> maybeSplit =
          splitOverFactors(axes, fs, rule, mesh);
      if (!maybeSplit) {
        conflict(op, t, numOperands, d,
                 "is split over " + axesText(axes) +
                     ", which does not divide its factors; it will be "
                     "resharded");
        continue;
      }
      SmallVector<Axes> &split = *maybeSplit;
      for (auto [k, f] : llvm::enumerate(fs)) {
        if (split[k].empty())
          continue;
        if (rule.getFactor(f).kind == FactorKind::NeedReplication) {
          conflict(op, t, numOperands, d,
                   "is split over " + axesText(split[k]) +
                       " where the op needs the whole extent; it will be "
                       "resharded to replicated");
          continue;
        }
        if (decided[f]) {
          if (factorAxes[f] != split[k])
            conflict(op, t, numOperands, d,
                     "is split over " + axesText(split[k]) +
                         " but another value of the op splits the same "
                         "factor over " +
                         axesText(factorAxes[f]) + "; it will be resharded");
          continue;
        }
        if (llvm::any_of(split[k],
                         [&](StringRef a) { return taken.contains(a); })) {
          conflict(op, t, numOperands, d,
                   "is split over " + axesText(split[k]) +
                       ", axes another factor of the op already uses; it "
                       "will be resharded");
          continue;
        }
        factorAxes[f] = split[k];
        decided[f] = true;
        for (StringRef a : split[k])
          taken.insert(a);
      }
    }
    return factorAxes;
  }

  /// Every value of the op takes the factors' axes where it has none yet.
  bool proposeShardings(Operation *op, const ShardingRule &rule,
                        ArrayRef<Axes> factorAxes) {
    unsigned numOperands = op->getNumOperands();
    unsigned numFactors = rule.getFactors().size();
    bool changed = false;
    for (unsigned t = 0; t < rule.getNumTensors(); ++t) {
      Value v = valueOf(op, t);
      const ShardingRule::TensorFactors &tensor = rule.getTensor(t);
      Layout proposed;
      proposed.dims = projectFactors(rule, tensor, factorAxes, mesh);
      if (t >= numOperands)
        for (unsigned f = 0; f < numFactors; ++f)
          if (rule.getFactor(f).kind == FactorKind::Reduction)
            proposed.partial.append(factorAxes[f]);
      if (proposed.isReplicated())
        continue;
      // Arguments are bound whole or by their seeds: the runtime holds no
      // argument split over the token axes (parameters are the same on
      // every data-parallel rank; their FSDP storage is a seed of its own).
      if (isa<BlockArgument>(v))
        for (Axes &axes : proposed.dims)
          if (llvm::any_of(axes, isTokenAxis))
            axes.clear();
      auto [it, inserted] = states.try_emplace(v);
      State &st = it->second;
      if (inserted) {
        st.dims.resize(tensor.size());
        st.priority.assign(tensor.size(), ~0u);
      }
      if (st.fixed)
        continue;
      for (auto [d, axes] : llvm::enumerate(proposed.dims)) {
        if (!st.dims[d].empty() || axes.empty() ||
            llvm::any_of(axes, [&](StringRef a) { return st.uses(a); }))
          continue;
        st.dims[d] = axes;
        st.priority[d] = round;
        changed = true;
      }
      if (st.partial.empty() && !proposed.partial.empty() &&
          llvm::none_of(proposed.partial,
                        [&](StringRef a) { return st.uses(a); })) {
        st.partial = proposed.partial;
        changed = true;
      }
    }
    return changed;
  }

  MeshAttr mesh;
  FlatSymbolRefAttr meshRef;
  bool reportConflicts;
  unsigned round = 0;
  DenseMap<Value, State> states;
  std::set<std::tuple<Operation *, unsigned, unsigned>> reported;
};

/// The sharding constraints by what put them there.
enum class ConstraintClass {
  /// The user's own.
  User,
  /// The batch and sequence splits over the token axes
  /// (glimmer.token_split).
  TokenSplit,
  /// Sequence parallelism's residual stream, split along the sequence over
  /// tp (glimmer.sequence_parallel).
  SequenceSplit,
  /// Sequence parallelism's column-parallel inputs, whole over tp
  /// (glimmer.sequence_parallel).
  SequenceWhole,
};

ConstraintClass classOf(ShardingConstraintOp c) {
  if (c->getAttr(kTokenSplitAttr))
    return ConstraintClass::TokenSplit;
  if (!c->getAttr(kSequenceParallelAttr))
    return ConstraintClass::User;
  std::string_view tp = meshAxisName(MeshAxis::Tp);
  ShardingAttr s = c.getSharding();
  for (unsigned d = 0; d < s.getDims().size(); ++d)
    if (llvm::is_contained(s.getDimAxes(d), StringRef(tp.data(), tp.size())))
      return ConstraintClass::SequenceSplit;
  return ConstraintClass::SequenceWhole;
}

/// The seeds of one propagation round: the constraints of one class, or
/// the arguments with a glimmer.sharding of one kind.
struct SeedRound {
  enum Source { Constraints, Parameters, DataInputs } source;
  ConstraintClass constraints = ConstraintClass::User;
};

/// The rounds, highest priority first: the user's constraints, the
/// parameter plan, the sequence-parallel residual stream (after the plan,
/// so its split never overrides it inside a block; it names the token axes
/// too), the column-parallel inputs whole over tp, the token splits (these
/// two after the stream: their sequence split over cp alone would reach the
/// stream's norms first and keep tp out of them), data inputs.
constexpr SeedRound kSeedRounds[] = {
    {SeedRound::Constraints, ConstraintClass::User},
    {SeedRound::Parameters},
    {SeedRound::Constraints, ConstraintClass::SequenceSplit},
    {SeedRound::Constraints, ConstraintClass::SequenceWhole},
    {SeedRound::Constraints, ConstraintClass::TokenSplit},
    {SeedRound::DataInputs},
};

/// Propagation through one function.
class FunctionPropagation {
public:
  FunctionPropagation(func::FuncOp func, MeshAttr mesh,
                      FlatSymbolRefAttr meshRef, bool reportConflicts)
      : func(func), prop(mesh, meshRef, reportConflicts) {
    func.walk([&](Operation *op) { ops.push_back(op); });
  }

  /// Seeds round by round, each run to a fixed point, and writes the
  /// shardings out.
  LogicalResult run() {
    pinReplicated();
    for (auto [i, round] : llvm::enumerate(kSeedRounds)) {
      if (i > 0)
        prop.nextRound();
      if (failed(seed(round)))
        return failure();
      prop.run(ops);
    }
    writeShardings();
    return success();
  }

private:
  bool isParam(unsigned i) {
    return func.getArgAttr(i, kParamAttr) || func.getArgAttr(i, kBufferAttr);
  }

  /// The data inputs without a seed, and what every rank computes from
  /// integer inputs, stay whole: the latter is cut where the token-split
  /// seeds say (splat constants are the same whole or cut, and are rebuilt
  /// at their local shapes).
  void pinReplicated() {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (!isParam(i) && !func.getArgAttr(i, kShardingAttr))
        prop.pinReplicated(func.getArgument(i));
    for (Value v : computePrepValues(func)) {
      DenseElementsAttr splat;
      if (isa<RankedTensorType>(v.getType()) &&
          !(matchPattern(v, m_Constant(&splat)) && splat.isSplat()))
        prop.pinReplicated(v);
    }
  }

  LogicalResult seed(const SeedRound &round) {
    if (round.source == SeedRound::Constraints) {
      for (Operation *op : ops)
        if (auto c = dyn_cast<ShardingConstraintOp>(op))
          if (classOf(c) == round.constraints &&
              failed(prop.seed(c.getOutput(), c.getSharding(), c.getLoc())))
            return failure();
      return success();
    }
    bool params = round.source == SeedRound::Parameters;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto s = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
      if (!s || isParam(i) != params)
        continue;
      if (failed(
              prop.seed(func.getArgument(i), s, func.getArgument(i).getLoc())))
        return failure();
    }
    return success();
  }

  /// The fixed point, as glimmer.shardings on ops and glimmer.sharding on
  /// the function's arguments and results.
  void writeShardings() {
    MLIRContext *ctx = func.getContext();
    for (Operation *op : ops) {
      if (op->getNumResults() == 0 || isa<ShardingConstraintOp>(op) ||
          !llvm::all_of(op->getResultTypes(),
                        [](Type t) { return isa<RankedTensorType>(t); }))
        continue;
      SmallVector<Attribute> shardings;
      bool any = false;
      for (Value r : op->getResults()) {
        ShardingAttr s = prop.shardingOf(r);
        any |= bool(s);
        shardings.push_back(s ? s : prop.replicated(r));
      }
      if (any)
        op->setAttr(kShardingsAttr, ArrayAttr::get(ctx, shardings));
    }
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (ShardingAttr s = prop.shardingOf(func.getArgument(i)))
        func.setArgAttr(i, kShardingAttr, s);
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (ShardingAttr s = prop.shardingOf(v))
        func.setResultAttr(i, kShardingAttr, s);
  }

  func::FuncOp func;
  Propagator prop;
  SmallVector<Operation *> ops;
};

struct PropagateShardingPass
    : public glimmer::impl::GlimmerPropagateShardingBase<
          PropagateShardingPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // With a recorded layout that splits nothing but pipeline stages,
    // glimmer-partition does nothing, so there is nothing to annotate.
    if (SpmdAttr spmd = getRecordedSpmd(module);
        spmd && spmd.getLayout().tp() == 1 &&
        TokenAxes::of(spmd.getLayout()).empty())
      return;
    MeshOp meshOp = requireMesh(module, getArgument());
    if (!meshOp)
      return signalPassFailure();
    auto meshRef = FlatSymbolRefAttr::get(&getContext(), "mesh");
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(FunctionPropagation(func, meshOp.getMesh(), meshRef,
                                     reportConflicts)
                     .run()))
        return signalPassFailure();
    }
  }
};

} // namespace
