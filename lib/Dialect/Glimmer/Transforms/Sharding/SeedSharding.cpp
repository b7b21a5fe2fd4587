//===- SeedSharding.cpp - Parameter shardings from the TP plan ------------===//
//
// Phase 1 of the sharding engine for tensor parallelism. The default plan
// is read off the graph: a projection whose output feeds attention's Q/K/V
// or, through elementwise work, another projection (the MLP's up/gate) is
// column-parallel; the projections that consume the split activations get
// their row-parallel split from propagation. A plan file overrides it by
// state_dict name patterns.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "Seeds.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <deque>

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERSEEDSHARDING
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

namespace {

enum class Style { Colwise, Rowwise, Replicate };

struct PlanEntry {
  /// Points into SeedShardingPass::patterns (GlobPattern keeps references
  /// into its pattern text).
  StringRef pattern;
  llvm::GlobPattern glob;
  Style style;
  bool used = false;
};

/// A linear whose weight is a named parameter of the function.
struct Projection {
  LinearOp op;
  BlockArgument weight;
  StringRef name;
};

/// Ops through which a projection's output keeps its meaning (its features):
/// shape changes and elementwise work.
bool isTransparent(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() ||
         isa<ReshapeOp, TransposeOp, SliceOp, BroadcastInDimOp, ConcatOp,
             ConvertOp, RopeOp, SelectOp, ShardingConstraintOp>(op);
}

/// Why the default plan makes a projection column-parallel.
struct Reach {
  enum Kind { None, Attention, Projection, Loss } kind = None;
  /// For attention: the op, the heads the projection's features split
  /// into, and whether they are key/value heads.
  AttentionOp attention;
  int64_t heads = 0;
  bool keyValue = false;
};

class DefaultPlan {
public:
  explicit DefaultPlan(func::FuncOp func) {
    // The nearest projections each value is computed from (stopping at
    // each linear), in program order.
    for (Operation &op : func.getBody().front()) {
      llvm::SmallSetVector<Operation *, 4> from;
      if (isa<LinearOp>(op)) {
        from.insert(&op);
      } else {
        for (Value v : op.getOperands())
          if (auto it = sources.find(v); it != sources.end())
            from.insert(it->second.begin(), it->second.end());
      }
      for (Value r : op.getResults())
        sources[r] = SmallVector<Operation *>(from.begin(), from.end());
    }
  }

  /// Where the output of `proj` goes. `group` is the projection and its
  /// siblings (the linears reading the same input: Q/K/V, gate/up).
  Reach reach(LinearOp proj, ArrayRef<Operation *> group) {
    Reach found;
    int64_t features = proj.getWeight().getType().getDimSize(0);
    int64_t heads = 0;
    SmallVector<Value> work = {proj.getResult()};
    DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        unsigned index = use.getOperandNumber();
        if (auto attention = dyn_cast<AttentionOp>(user); attention && index < 3) {
          found.kind = Reach::Attention;
          found.attention = attention;
          found.heads = heads;
          found.keyValue = index > 0;
          return found;
        }
        // The output projection: vocab-parallel, with a loss-parallel
        // cross-entropy.
        if (isa<CrossEntropyOp>(user) && index == 0) {
          found.kind = Reach::Loss;
          return found;
        }
        if (isa<LinearOp>(user) && index == 0 && user != proj) {
          found.kind = Reach::Projection;
          continue;
        }
        if (!isTransparent(user))
          continue;
        // Mixing in another value is fine when it comes from the same
        // projections (RoPE's halves, gate * up) or from none at all
        // (positions, constants); the residual stream stops the walk.
        bool ok = llvm::all_of(user->getOpOperands(), [&](OpOperand &other) {
          if (&other == &use)
            return true;
          auto it = sources.find(other.get());
          return it == sources.end() ||
                 llvm::all_of(it->second, [&](Operation *s) {
                   return llvm::is_contained(group, s);
                 });
        });
        if (!ok)
          continue;
        // The first reshape that splits the features into [heads, dim].
        if (auto r = dyn_cast<ReshapeOp>(user); r && heads == 0) {
          ArrayRef<int64_t> out = r.getOutput().getType().getShape();
          ArrayRef<int64_t> in = r.getInput().getType().getShape();
          if (out.size() == in.size() + 1 && in.back() == features &&
              out[out.size() - 2] * out.back() == features)
            heads = out[out.size() - 2];
        }
        for (Value r : user->getResults())
          work.push_back(r);
      }
    }
    return found;
  }

private:
  DenseMap<Value, SmallVector<Operation *>> sources;
};

struct SeedShardingPass
    : public glimmer::impl::GlimmerSeedShardingBase<SeedShardingPass> {
  using Base::Base;

  LogicalResult readPlan(ModuleOp module, SmallVector<PlanEntry> &plan) {
    auto buffer = llvm::MemoryBuffer::getFile(tpPlan);
    if (!buffer)
      return module.emitError() << "cannot read the TP plan '" << tpPlan
                                << "': " << buffer.getError().message();
    llvm::Expected<llvm::json::Value> json =
        llvm::json::parse((*buffer)->getBuffer());
    if (!json)
      return module.emitError() << "the TP plan '" << tpPlan
                                << "' is not valid JSON: "
                                << llvm::toString(json.takeError());
    const llvm::json::Object *object = json->getAsObject();
    if (!object)
      return module.emitError()
             << "the TP plan '" << tpPlan
             << "' must be a JSON object mapping state_dict name patterns "
                "to \"colwise\", \"rowwise\" or \"replicate\"";
    // JSON objects are unordered; patterns are tried in sorted order, so a
    // plan means the same whatever the file's order (put the more specific
    // pattern first alphabetically, or make patterns disjoint).
    SmallVector<std::string> keys;
    for (const auto &kv : *object)
      keys.push_back(kv.first.str());
    llvm::sort(keys);
    for (const std::string &key : keys) {
      std::optional<StringRef> text = object->getString(key);
      std::optional<Style> style;
      if (text == "colwise")
        style = Style::Colwise;
      else if (text == "rowwise")
        style = Style::Rowwise;
      else if (text == "replicate")
        style = Style::Replicate;
      if (!style)
        return module.emitError()
               << "the TP plan '" << tpPlan << "' gives pattern '" << key
               << "' an unknown style (expected \"colwise\", \"rowwise\" or "
                  "\"replicate\")";
      StringRef pattern = patterns.emplace_back(key);
      llvm::Expected<llvm::GlobPattern> glob =
          llvm::GlobPattern::create(pattern);
      if (!glob)
        return module.emitError() << "the TP plan '" << tpPlan
                                  << "' has a malformed pattern '" << key
                                  << "': " << llvm::toString(glob.takeError());
      plan.push_back({pattern, std::move(*glob), *style});
    }
    return success();
  }

  /// The plan's patterns, at stable addresses.
  std::deque<std::string> patterns;

  /// Attention ops whose key/value heads are fewer than tp.
  llvm::SetVector<AttentionOp> repeatKeyValue;

  /// Repeats each of the `Hkv` key/value heads tp / Hkv times before the
  /// attention (`[B, Hkv, T, D] -> [B, Hkv, r, T, D] -> [B, tp, T, D]`, query
  /// head h still reads key/value head h / (Hq / Hkv)), so the attention
  /// splits tp heads of each: a rank cuts the key/value heads its query heads
  /// read from the replicated projections (Megatron's replicated key/value
  /// heads). The cut's VJP gathers the ranks' cotangents and the repeat's
  /// sums them, so the replicated projections get their complete gradients.
  LogicalResult repeatKeyValueHeads(AttentionOp attention, int64_t tp) {
    // Heads are read at dimension 1 below.
    if (attention.anySequenceMajor())
      return attention.emitError()
             << "cannot repeat key/value heads of sequence-major attention "
                "operands: sequence_major is chosen after partitioning";
    int64_t queryHeads = attention.getQuery().getType().getDimSize(1);
    if (queryHeads % tp != 0)
      return attention.emitError()
             << "cannot split the " << queryHeads
             << " query heads of this attention over tp = " << tp
             << ": choose a tp that divides " << queryHeads;
    OpBuilder b(attention);
    DenseMap<Value, Value> repeated;
    for (unsigned i : {1u, 2u}) {
      Value x = attention->getOperand(i);
      auto type = cast<RankedTensorType>(x.getType());
      int64_t kvHeads = type.getDimSize(1);
      if (kvHeads % tp == 0)
        continue;
      Value &r = repeated[x];
      if (!r) {
        ArrayRef<int64_t> s = type.getShape();
        auto wide = type.clone({s[0], kvHeads, tp / kvHeads, s[2], s[3]});
        Value b5 = BroadcastInDimOp::create(
            b, attention.getLoc(), wide, x, b.getDenseI64ArrayAttr({0, 1, 3, 4}));
        r = ReshapeOp::create(b, attention.getLoc(),
                              type.clone({s[0], tp, s[2], s[3]}), b5);
      }
      attention->setOperand(i, r);
    }
    return success();
  }

  /// Sequence parallelism: the residual stream between blocks is split
  /// along the sequence over tp, and the inputs of the column-parallel
  /// projections are whole. The residual stream is found from the plan,
  /// not from norm ops (models often spell their norms out): it is the
  /// result of the add that takes the output of a row-parallel projection,
  /// the first projection that a column-parallel one's output reaches
  /// (through attention and elementwise work). Propagation then splits the
  /// norms and residual adds, and the partitioner turns the all-reduce after
  /// a row-parallel projection into a reduce-scatter and puts an all-gather
  /// before a column-parallel one. The constraints are marked
  /// glimmer.sequence_parallel: propagation ranks them below the TP plan.
  void seedSequenceParallel(func::FuncOp func,
                            const DenseSet<Operation *> &columnParallel,
                            int64_t tp, FlatSymbolRefAttr mesh,
                            const TokenDims *roles, const TokenAxes &tokens) {
    MLIRContext *ctx = func.getContext();
    OpBuilder b(ctx);
    // The value's token split (its batch and sequence over the data and
    // context axes), with tp added minor to it along dimension `seq` (none
    // for -1): under cp the residual stream is split over cp x tp, and a
    // column-parallel input over cp.
    auto splitAlong = [&](Value v, int64_t seq) {
      int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
      SmallVector<SmallVector<StringRef, 2>> dims(rank);
      if (roles)
        dims = tokenSplit(*roles, v, tokens);
      if (seq >= 0)
        dims[seq].push_back("tp");
      return shardingOf(ctx, mesh, dims);
    };
    auto constrain = [&](Value v, ShardingAttr s, Location loc) {
      auto c = ShardingConstraintOp::create(b, loc, v, s);
      c->setAttr(kSequenceParallelAttr, b.getUnitAttr());
      return c;
    };
    // Row-parallel partners of the column-parallel projections.
    llvm::SetVector<Operation *> rowParallel;
    for (Operation *col : columnParallel) {
      SmallVector<Value> work = {col->getResult(0)};
      DenseSet<Value> seen;
      while (!work.empty()) {
        Value v = work.pop_back_val();
        if (!seen.insert(v).second)
          continue;
        for (Operation *user : v.getUsers()) {
          if (auto linear = dyn_cast<LinearOp>(user)) {
            if (linear.getInput() == v && !columnParallel.contains(user))
              rowParallel.insert(user);
            continue;
          }
          if (isTransparent(user) || isa<AttentionOp>(user))
            for (Value r : user->getResults())
              work.push_back(r);
        }
      }
    }
    // The residual stream, split along the sequence.
    for (Operation *row : rowParallel)
      for (Operation *user :
           llvm::make_early_inc_range(row->getResult(0).getUsers())) {
        auto add = dyn_cast<AddOp>(user);
        if (!add)
          continue;
        auto type = cast<RankedTensorType>(add.getType());
        int64_t seq = type.getRank() - 2; // [..., T, D]
        if (seq < 0 || type.getDimSize(seq) % tp != 0)
          continue;
        b.setInsertionPointAfter(add);
        auto split = constrain(add.getResult(),
                               splitAlong(add.getResult(), seq), add.getLoc());
        add.getResult().replaceAllUsesExcept(split, split);
      }
    // Column-parallel inputs, whole (one constraint per input value).
    DenseMap<Value, Value> whole;
    for (Operation *col : columnParallel) {
      auto linear = cast<LinearOp>(col);
      Value x = linear.getInput();
      auto it = whole.find(x);
      if (it == whole.end()) {
        if (Operation *def = x.getDefiningOp())
          b.setInsertionPointAfter(def);
        else
          b.setInsertionPointToStart(&func.getBody().front());
        it = whole.insert({x, constrain(x, splitAlong(x, -1), linear.getLoc())})
                 .first;
      }
      linear.getInputMutable().assign(it->second);
    }
  }

  /// Embedding tables: the token embedding is vocab-parallel by default
  /// (its rows split over tp; the partitioner makes the ids local and sums
  /// the ranks' shares). It is the lookup whose ids are a data input; a
  /// vision encoder's position table, read with ids from a buffer or the
  /// program, stays replicated. In a plan file, "rowwise" splits a table's
  /// rows (the vocabulary) and "colwise" its columns (the hidden features).
  template <typename ShardingFn>
  LogicalResult seedEmbeddings(func::FuncOp func,
                               MutableArrayRef<PlanEntry> plan, int64_t tp,
                               ShardingFn sharding) {
    auto isDataInput = [&](Value ids) {
      // Through the micro-batch cut, the CP permutation and the batch and
      // sequence splits.
      while (Operation *def = ids.getDefiningOp()) {
        if (!isa<CpPermuteOp, MicrobatchSliceOp, ShardingConstraintOp,
                 LocalShardOp, ReshapeOp>(def))
          return false;
        ids = def->getOperand(0);
      }
      auto arg = cast<BlockArgument>(ids);
      return arg.getOwner()->getParentOp() == func &&
             func.getArgAttr(arg.getArgNumber(), kInputAttr);
    };
    WalkResult walk = func.walk([&](EmbeddingOp op) {
      auto table = dyn_cast<BlockArgument>(op.getTable());
      if (!table || table.getOwner()->getParentOp() != func)
        return WalkResult::advance();
      unsigned arg = table.getArgNumber();
      auto name = func.getArgAttrOfType<StringAttr>(arg, kParamAttr);
      if (!name || func.getArgAttr(arg, kShardingAttr))
        return WalkResult::advance();
      std::optional<Style> style;
      if (!plan.empty()) {
        for (PlanEntry &e : plan)
          if (e.glob.match(name.getValue())) {
            e.used = true;
            style = e.style;
            break;
          }
      } else if (isDataInput(op.getIds())) {
        style = Style::Rowwise;
      }
      if (!style || *style == Style::Replicate)
        return WalkResult::advance();
      bool rows = *style == Style::Rowwise;
      int64_t size = op.getTable().getType().getDimSize(rows ? 0 : 1);
      if (size % tp != 0) {
        op.emitError() << "cannot split the "
                       << (rows ? "vocabulary of " : "hidden size of ")
                       << size << (rows ? " tokens" : "")
                       << " of the embedding '" << name.getValue()
                       << "' over tp = " << tp
                       << (rows ? " (vocab-parallel)" : " (column-parallel)")
                       << ": choose a tp that divides " << size
                       << " (or replicate it with --tp-plan)";
        return WalkResult::interrupt();
      }
      func.setArgAttr(arg, kShardingAttr, sharding({rows, !rows}));
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SpmdAttr spmd = requireRecordedSpmd(module, getArgument());
    if (!spmd)
      return signalPassFailure();
    SpmdContext layout = spmd.getLayout();
    int64_t tp = layout.tp();
    TokenAxes tokenAxes = TokenAxes::of(layout);
    if (tp == 1 && tokenAxes.empty())
      return;
    if (!requireMesh(module, getArgument()))
      return signalPassFailure();
    SmallVector<PlanEntry> plan;
    if (!tpPlan.empty() && failed(readPlan(module, plan)))
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    auto mesh = FlatSymbolRefAttr::get(ctx, "mesh");
    auto sharding = [&](std::initializer_list<bool> split) {
      SmallVector<Attribute> dims;
      for (bool s : split)
        dims.push_back(s ? ArrayAttr::get(ctx, {StringAttr::get(ctx, "tp")})
                         : ArrayAttr::get(ctx, {}));
      return ShardingAttr::get(ctx, mesh, ArrayAttr::get(ctx, dims),
                               ArrayAttr::get(ctx, {}));
    };

    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      // The token ids' batch and sequence, read before any seed changes
      // the program.
      std::optional<TokenDims> roles;
      if (Value tokens = findTokens(func))
        roles.emplace(func, tokens);
      if (!tokenAxes.empty()) {
        if (!roles) {
          func.emitError()
              << "'" << getArgument()
              << "': cannot find the token ids (a rank-2 integer argument "
                 "used by glimmer.embedding) that define the batch and "
                 "sequence to split";
          return signalPassFailure();
        }
        if (Operation *mixer = roles->mixingOp()) {
          mixer->emitOpError()
              << "cannot be partitioned over "
              << llvm::join(tokenAxes.all(), ", ")
              << ": it combines the batch and the sequence of the token ids, "
                 "so neither can be split";
          return signalPassFailure();
        }
      }
      if (tp > 1 && failed(seedTensorParallel(func, plan, tp, mesh, sharding,
                                                layout, roles ? &*roles : nullptr,
                                                tokenAxes)))
        return signalPassFailure();
      if (!tokenAxes.empty() &&
          failed(seedTokenSplits(func, *roles, tokenAxes, mesh)))
        return signalPassFailure();
    }
    for (const PlanEntry &e : plan)
      if (!e.used) {
        module.emitError() << "the TP plan pattern '" << e.pattern
                           << "' matches no linear weight or embedding "
                              "table; they are named by their state_dict "
                              "keys (e.g. 'layers.0.attention.wq.weight')";
        return signalPassFailure();
      }
  }

  /// The tensor-parallel seeds of one function: the plan's weights and
  /// tables, replicated key/value heads, and with sp the residual stream.
  template <typename ShardingFn>
  LogicalResult seedTensorParallel(func::FuncOp func,
                                   MutableArrayRef<PlanEntry> plan, int64_t tp,
                                   FlatSymbolRefAttr mesh, ShardingFn sharding,
                                   const SpmdContext &layout,
                                   const TokenDims *roles,
                                   const TokenAxes &tokenAxes) {
    {
      SmallVector<Projection> projections;
      func.walk([&](LinearOp op) {
        auto weight = dyn_cast<BlockArgument>(op.getWeight());
        if (!weight || weight.getOwner()->getParentOp() != func)
          return;
        auto name = func.getArgAttrOfType<StringAttr>(weight.getArgNumber(),
                                                      kParamAttr);
        if (name)
          projections.push_back({op, weight, name.getValue()});
      });
      DefaultPlan derived(func);
      DenseSet<Operation *> columnParallel;
      for (Projection &p : projections) {
        std::optional<Style> style;
        Reach reach;
        if (!plan.empty()) {
          for (PlanEntry &e : plan)
            if (e.glob.match(p.name)) {
              e.used = true;
              style = e.style;
              break;
            }
        } else {
          SmallVector<Operation *> group;
          for (Operation *user : p.op.getInput().getUsers())
            if (isa<LinearOp>(user))
              group.push_back(user);
          reach = derived.reach(p.op, group);
          if (reach.kind != Reach::None)
            style = Style::Colwise;
        }
        if (!style || *style == Style::Replicate)
          continue;
        auto weightType = cast<RankedTensorType>(p.weight.getType());
        int64_t features = weightType.getDimSize(0);
        int64_t inputs = weightType.getDimSize(1);
        if (*style == Style::Colwise) {
          // GQA with fewer key/value heads than tp (a multiple of them):
          // the key/value projections stay replicated and each rank uses
          // the key/value heads of its query heads (see repeatKeyValue).
          if (reach.kind == Reach::Attention && reach.keyValue &&
              reach.heads > 0 && reach.heads % tp != 0 &&
              tp % reach.heads == 0) {
            repeatKeyValue.insert(reach.attention);
            continue;
          }
          if (reach.kind == Reach::Attention && reach.heads > 0 &&
              reach.heads % tp != 0) {
            InFlightDiagnostic d = p.op.emitError()
                << "cannot split the " << reach.heads
                << (reach.keyValue ? " key/value" : " query")
                << " heads of '" << p.name << "' over tp = " << tp
                << ": choose a tp that divides " << reach.heads;
            if (reach.keyValue)
              d << " or a multiple of it (key/value heads are then "
                   "replicated)";
            d << " (or replicate it with --tp-plan)";
            return failure();
          }
          if (features % tp != 0 && reach.kind == Reach::Loss) {
            p.op.emitError()
                << "cannot split the vocabulary of " << features
                << " tokens of the output projection '" << p.name
                << "' over tp = " << tp
                << " (vocab-parallel): choose a tp that divides " << features
                << " (or replicate it with --tp-plan)";
            return failure();
          }
          if (features % tp != 0) {
            p.op.emitError()
                << "cannot split the " << features
                << " output features of '" << p.name << "' over tp = " << tp
                << " (column-parallel): choose a tp that divides " << features
                << " (or replicate it with --tp-plan)";
            return failure();
          }
        } else if (inputs % tp != 0) {
          p.op.emitError()
              << "cannot split the " << inputs << " input features of '"
              << p.name << "' over tp = " << tp
              << " (row-parallel): choose a tp that divides " << inputs
              << " (or replicate it with --tp-plan)";
          return failure();
        }
        if (*style == Style::Colwise)
          columnParallel.insert(p.op);
        // An annotation already on the weight (a user's) is kept.
        unsigned arg = p.weight.getArgNumber();
        if (func.getArgAttr(arg, kShardingAttr))
          continue;
        bool col = *style == Style::Colwise;
        func.setArgAttr(arg, kShardingAttr, sharding({col, !col}));
        if (Value bias = p.op.getBias())
          if (auto b = dyn_cast<BlockArgument>(bias);
              b && col && !func.getArgAttr(b.getArgNumber(), kShardingAttr))
            func.setArgAttr(b.getArgNumber(), kShardingAttr, sharding({true}));
      }
      for (AttentionOp attention : repeatKeyValue)
        if (failed(repeatKeyValueHeads(attention, tp)))
          return failure();
      repeatKeyValue.clear();
      if (failed(seedEmbeddings(func, plan, tp, sharding)))
        return failure();
      if (layout.sp)
        seedSequenceParallel(func, columnParallel, tp, mesh, roles,
                             tokenAxes);
    }
    return success();
  }
};

} // namespace
