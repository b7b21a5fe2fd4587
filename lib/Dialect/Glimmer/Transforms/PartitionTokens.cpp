//===- PartitionTokens.cpp - Global view -> per-rank program for DP and CP ===//
//
// Shards the token-side computation: the batch over the data-parallel axes
// (dp_replicate, dp_shard) and the sequence over cp. Every value computed
// from integer inputs (vision-bank indices, shifted labels, positions) is
// computed on the full batch and sequence first; where it enters the
// model's floating-point computation it is cut to this rank's piece
// (glimmer.local_shard), and the two sharded dimensions are tracked through
// every op, whose result types shrink accordingly. Under cp the entry points
// are the glimmer.cp_permute ops of glimmer-prepare-cp-inputs (with the
// head-tail permutation, the rank's sequence slice is chunks r and 2C-1-r);
// without cp they are found the same way that pass finds them. Ops that
// need data from other ranks get collectives:
//
// - attention all-gathers K and V along the sequence on `cp` (their VJP, a
//   reduce-scatter, sums dK/dV back), and uses the full permuted positions
//   for the keys: all-gathering the ranks' slices in rank order restores the
//   permuted order. Samples are independent, so the batch needs nothing;
// - cross_entropy's valid-token count is summed over every token axis, so
//   the loss each rank returns is its share of the global token mean (ranks'
//   losses and gradients sum to the global ones).
//
// Everything else (the vision encoder with all images, vision_gather with
// the replicated bank and global row indices, norms, GEMMs, RoPE on explicit
// positions) runs locally.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "TokenInputs.h"

#include "glimmer/Dialect/Glimmer/IR/OpEmitter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERPARTITIONTOKENS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// Which dimensions of a rank-local value are split: `batch` over the dp
/// axes, `seq` over cp (-1: not split). Both may name the same dimension
/// after a reshape merges them (batch major).
struct Sharding {
  int64_t batch = -1;
  int64_t seq = -1;

  bool isLocal() const { return batch >= 0 || seq >= 0; }
  bool operator==(const Sharding &o) const {
    return batch == o.batch && seq == o.seq;
  }
  bool operator!=(const Sharding &o) const { return !(*this == o); }
  bool splits(int64_t dim) const { return batch == dim || seq == dim; }
  /// Maps the split dimensions through `f` (a dimension of this value to
  /// one of another).
  template <typename F> Sharding map(F f) const {
    return {batch >= 0 ? int64_t(f(batch)) : -1,
            seq >= 0 ? int64_t(f(seq)) : -1};
  }
};

class Partitioner {
public:
  Partitioner(func::FuncOp func, const SpmdContext &layout,
              FlatSymbolRefAttr mesh, Value tokens)
      : func(func), mesh(mesh), b(func.getContext()), roles(func, tokens) {
    cp = layout.cp();
    dp = layout.dpReplicate() * layout.dpShard();
    mb = layout.microbatches;
    SmallVector<StringRef> dpNames, tokenNames;
    for (MeshAxis axis : {MeshAxis::DpReplicate, MeshAxis::DpShard})
      if (layout.degree(axis) > 1) {
        std::string_view name = meshAxisName(axis);
        dpNames.push_back(StringRef(name.data(), name.size()));
      }
    tokenNames = dpNames;
    if (cp > 1)
      tokenNames.push_back("cp");
    dpAxes = b.getStrArrayAttr(dpNames);
    cpAxes = b.getStrArrayAttr({"cp"});
    tokenAxes = b.getStrArrayAttr(tokenNames);
  }

  LogicalResult run();

private:
  Sharding sharding(Value v) const {
    auto it = dims.find(v);
    return it == dims.end() ? Sharding() : it->second;
  }
  /// How many ranks split dimension `d` under `s`.
  int64_t factor(const Sharding &s, int64_t d) const {
    return (s.batch == d ? dp * mb : 1) * (s.seq == d ? cp : 1);
  }
  RankedTensorType localType(RankedTensorType global, const Sharding &s) {
    SmallVector<int64_t> shape(global.getShape());
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      shape[d] /= factor(s, d);
    return RankedTensorType::get(shape, global.getElementType());
  }
  /// The unsharded type of a (possibly local) value.
  RankedTensorType globalType(Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    Sharding s = sharding(v);
    SmallVector<int64_t> shape(type.getShape());
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      shape[d] *= factor(s, d);
    return RankedTensorType::get(shape, type.getElementType());
  }
  /// Cuts a replicated value (no gradient flows into it) along `dim` over
  /// `axes` of `n` ranks; `s` is the result's sharding.
  Value shard(Value v, int64_t dim, ArrayAttr axes, int64_t n,
              const Sharding &s, Location loc) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getDimSize(dim) % n != 0)
      return nullptr;
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] /= n;
    Value r = LocalShardOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), v, mesh,
        axes, b.getI64IntegerAttr(dim));
    dims[r] = s;
    return r;
  }
  /// The batch piece of a full value whose dimension 0 is the batch (or
  /// the flattened batch-major tokens), which the pass checked divides:
  /// the rank's samples, then the current micro-batch of them.
  Value shardBatch(Value v, Location loc) {
    if (dp > 1)
      v = LocalShardOp::create(b, loc, piece(v, dp), v, mesh, dpAxes,
                               b.getI64IntegerAttr(0));
    if (mb > 1)
      v = MicrobatchSliceOp::create(b, loc, piece(v, mb), v, microbatch,
                                    b.getI64IntegerAttr(mb),
                                    b.getI64IntegerAttr(0));
    dims[v] = Sharding{0, -1};
    return v;
  }
  /// The type of one of `n` pieces of `v` along dimension 0.
  static RankedTensorType piece(Value v, int64_t n) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    assert(shape[0] % n == 0 && "the pass checked divisibility");
    shape[0] /= n;
    return type.clone(shape);
  }
  LogicalResult takeCountsOnFullBatch();
  Value unpermuted(Value v, const DenseSet<Value> &prep,
                   DenseMap<Value, Value> &memo);
  void shardPrepBoundaries();
  LogicalResult lowerPermute(CpPermuteOp permute);
  LogicalResult lower(Operation *op);
  /// Brings an operand to the layout `target` of a local op: a value
  /// already in it is returned; splats and broadcasts uniform along the
  /// dimensions it lacks are rebuilt at the local shape. Null otherwise.
  Value conform(Value v, const Sharding &target, Location loc);
  /// The union of the operands' shardings (of operands of rank `rank`);
  /// failure when two operands split different dimensions.
  FailureOr<Sharding> combine(ValueRange operands, int64_t rank);

  func::FuncOp func;
  FlatSymbolRefAttr mesh;
  OpBuilder b;
  /// The batch and sequence dimensions of the values of the global
  /// program, read before any op is lowered.
  TokenDims roles;
  int64_t cp, dp, mb;
  /// The function's micro-batch index (with mb > 1).
  Value microbatch;
  ArrayAttr dpAxes, cpAxes, tokenAxes;
  DenseMap<Value, Sharding> dims;
  /// Values whose rank-local content is a partial sum over the token axes.
  DenseSet<Value> partial;
};

Value Partitioner::conform(Value v, const Sharding &target, Location loc) {
  Sharding s = sharding(v);
  if (s == target)
    return v;
  // A dimension the value splits must be split the same way in the target.
  if ((s.batch >= 0 && s.batch != target.batch) ||
      (s.seq >= 0 && s.seq != target.seq))
    return nullptr;
  // Operands that carry the full extent of a dimension the target splits
  // but are uniform along it (splats, broadcasts over it) are rebuilt at the
  // local shape. They are not sliced: the slice's transpose would put every
  // rank's cotangent on the replicated source, so gradients (e.g. of a norm
  // weight broadcast over tokens) would be counted once per rank.
  RankedTensorType local = localType(globalType(v), target);
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr)) && attr.isSplat()) {
    Value c = ConstantOp::create(
        b, loc, DenseElementsAttr::get(local, attr.getSplatValue<Attribute>()));
    dims[c] = target;
    return c;
  }
  if (auto bc = v.getDefiningOp<BroadcastInDimOp>()) {
    ArrayRef<int64_t> bdims = bc.getDims();
    auto input = cast<RankedTensorType>(bc.getInput().getType());
    auto uniformAlong = [&](int64_t d) {
      auto it = llvm::find(bdims, d);
      return it == bdims.end() || input.getDimSize(it - bdims.begin()) == 1;
    };
    for (int64_t d : {target.batch, target.seq})
      if (d >= 0 && !s.splits(d) && !uniformAlong(d))
        return nullptr;
    Value r = BroadcastInDimOp::create(b, loc, local, bc.getInput(),
                                       bc.getDimsAttr());
    dims[r] = target;
    return r;
  }
  return nullptr;
}

FailureOr<Sharding> Partitioner::combine(ValueRange operands, int64_t rank) {
  Sharding target;
  for (Value v : operands) {
    if (cast<RankedTensorType>(v.getType()).getRank() != rank)
      continue;
    Sharding s = sharding(v);
    for (auto [mine, theirs] :
         {std::pair{&target.batch, s.batch}, std::pair{&target.seq, s.seq}}) {
      if (theirs < 0)
        continue;
      if (*mine >= 0 && *mine != theirs)
        return failure();
      *mine = theirs;
    }
  }
  return target;
}

LogicalResult Partitioner::run() {
  if (Operation *mixer = roles.mixingOp()) {
    SmallVector<StringRef> names;
    for (Attribute a : tokenAxes)
      names.push_back(cast<StringAttr>(a).getValue());
    return mixer->emitOpError()
           << "cannot be partitioned over " << llvm::join(names, ", ")
           << ": it combines the batch and the sequence of the token ids, "
              "so neither can be split";
  }
  Block &body = func.getBody().front();
  if (mb > 1) {
    auto index = RankedTensorType::get({}, b.getI64Type());
    if (failed(func.insertArgument(
            func.getNumArguments(), index,
            b.getDictionaryAttr(
                b.getNamedAttr("glimmer.microbatch", b.getUnitAttr())),
            func.getLoc())))
      return failure();
    microbatch = func.getArgument(func.getNumArguments() - 1);
  }
  if (failed(takeCountsOnFullBatch()))
    return failure();
  if (cp == 1)
    shardPrepBoundaries();
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(lower(op)))
      return failure();
  // Result types follow the new local values.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  func.setType(b.getFunctionType(func.getArgumentTypes(),
                                 ret.getOperandTypes()));
  // A micro-batch's share of the loss is summed by the runtime, over calls;
  // only mesh axes are reduced in the program.
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (partial.contains(v) && !tokenAxes.empty())
      func.setResultAttr(i, "glimmer.partial", tokenAxes);
  return success();
}

// The loss is a mean over the valid tokens of the global batch. Their count
// depends on the labels alone, which every rank holds in full (integer
// inputs are prepared on the full batch), so it is counted there, before
// any cut: no collective, and the same count in every micro-batch (a
// micro-batch's own count could not be summed over the others, which run
// later). The cross_entropy's own count is left unused.
LogicalResult Partitioner::takeCountsOnFullBatch() {
  DenseSet<Value> prep = computePrepValues(func);
  SmallVector<CrossEntropyOp> losses;
  func.walk([&](CrossEntropyOp ce) { losses.push_back(ce); });
  for (CrossEntropyOp ce : losses) {
    Value count = ce.getCount();
    if (count.use_empty())
      continue;
    if (!prep.contains(ce.getLabels()))
      return ce.emitOpError()
             << "cannot be partitioned: its labels are not computed from "
                "integer inputs alone, so the global count of valid tokens "
                "cannot be taken on the full batch";
    // A permutation does not change how many labels are valid: count them
    // in sequence order, where no op is cut.
    b.setInsertionPoint(ce);
    DenseMap<Value, Value> memo;
    Value labels = unpermuted(ce.getLabels(), prep, memo);
    OpEmitter e{b, ce.getLoc()};
    auto type = cast<RankedTensorType>(labels.getType());
    Value ignore = ConstantOp::create(
        b, ce.getLoc(),
        DenseElementsAttr::get(
            type, b.getIntegerAttr(type.getElementType(), ce.getIgnoreIndex())));
    Value valid = e.convert(e.compare(CompareDirection::NE, labels, ignore),
                            type.clone(b.getI64Type()));
    SmallVector<int64_t> all;
    for (int64_t d = 0; d < type.getRank(); ++d)
      all.push_back(d);
    Value total = e.reduce(ReductionKind::Sum, valid, all);
    count.replaceAllUsesWith(total);
  }
  return success();
}

// `v` computed without the cp permutations it depends on (they do not change
// shapes, so each op on the way is cloned with the same result types).
Value Partitioner::unpermuted(Value v, const DenseSet<Value> &prep,
                              DenseMap<Value, Value> &memo) {
  if (auto permute = v.getDefiningOp<CpPermuteOp>())
    return permute.getInput();
  Operation *def = v.getDefiningOp();
  if (!def || !prep.contains(v))
    return v;
  if (Value known = memo.lookup(v))
    return known;
  IRMapping map;
  bool changed = false;
  for (Value operand : def->getOperands()) {
    Value u = unpermuted(operand, prep, memo);
    changed |= u != operand;
    map.map(operand, u);
  }
  Value result = v;
  if (changed) {
    Operation *clone = b.clone(*def, map);
    for (auto [old, now] : llvm::zip(def->getResults(), clone->getResults()))
      memo[old] = now;
    result = clone->getResult(cast<OpResult>(v).getResultNumber());
  }
  memo[v] = result;
  return result;
}

// Without cp there is no permutation to mark where full-batch values enter
// the model: find those places as glimmer-prepare-cp-inputs does, and cut
// token-side values there to the rank's samples.
void Partitioner::shardPrepBoundaries() {
  DenseSet<Value> prep = computePrepValues(func);
  DenseMap<Value, Value> sharded;
  for (OpOperand *use : findPrepBoundaries(func, prep)) {
    Value v = use->get();
    auto it = sharded.find(v);
    if (it == sharded.end()) {
      // Dimension 0 is the batch, or the flattened [B*T, ...] tokens (batch
      // major, so the rank's samples are a contiguous piece of it), by the
      // ops' rules.
      TokenDims::Role role = roles.role(v, 0);
      bool tokenSide = role == TokenDims::Role::Batch ||
                       role == TokenDims::Role::FlattenedTokens;
      Value s;
      if (tokenSide) {
        if (Operation *def = v.getDefiningOp())
          b.setInsertionPointAfter(def);
        else
          b.setInsertionPointToStart(&func.getBody().front());
        s = shardBatch(v, use->getOwner()->getLoc());
      }
      it = sharded.insert({v, s}).first;
    }
    if (it->second)
      use->set(it->second);
  }
}

// Permuted values become local where the model uses them: the rank's samples
// (dimension 0, when it is the batch) and its slice of the permuted
// sequence.
LogicalResult Partitioner::lowerPermute(CpPermuteOp permute) {
  Value full = permute.getResult();
  int64_t seqDim = permute.getDim();
  bool hasBatch = dp * mb > 1 && seqDim != 0 &&
                  roles.role(full, 0) == TokenDims::Role::Batch;
  Location loc = permute.getLoc();
  Value samples, local;
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : full.getUses())
    uses.push_back(&use);
  for (OpOperand *use : uses) {
    b.setInsertionPointAfter(permute);
    if (hasBatch && !samples)
      samples = shardBatch(full, loc);
    // Keys of attention see the whole permuted sequence of their samples.
    if (auto attn = dyn_cast<AttentionOp>(use->getOwner())) {
      auto [start, length] = attn.getODSOperandIndexAndLength(4);
      if (length == 1 && use->getOperandNumber() == start) {
        if (samples)
          use->set(samples);
        continue;
      }
    }
    if (!local) {
      if (samples)
        b.setInsertionPointAfter(samples.getDefiningOp());
      Value source = samples ? samples : full;
      local = shard(source, seqDim, cpAxes, cp,
                    Sharding{samples ? 0 : -1, seqDim}, loc);
      if (!local)
        return permute.emitOpError() << "cannot be sharded over cp = " << cp;
    }
    use->set(local);
  }
  return success();
}

LogicalResult Partitioner::lower(Operation *op) {
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  if (auto permute = dyn_cast<CpPermuteOp>(op))
    return lowerPermute(permute);
  bool anyLocal = llvm::any_of(op->getOperands(), [&](Value v) {
    return sharding(v).isLocal();
  });
  if (isa<func::ReturnOp>(op))
    return success();
  if (!anyLocal) {
    // A replicated op consuming a partial value would double count.
    // Scaling a partial sum (the loss) by replicated values keeps it a
    // partial sum; anything else would count it once per rank.
    unsigned numPartial = llvm::count_if(
        op->getOperands(), [&](Value v) { return partial.contains(v); });
    if (numPartial == 0)
      return success();
    bool scales = isa<ConvertOp, NegOp>(op) ||
                  (isa<MulOp>(op) && numPartial == 1) ||
                  (isa<DivOp>(op) && numPartial == 1 &&
                   partial.contains(op->getOperand(0)));
    if (!scales) {
      SmallVector<StringRef> names;
      for (Attribute a : tokenAxes)
        names.push_back(cast<StringAttr>(a).getValue());
      return op->emitOpError()
             << "uses a value that is a partial sum over "
             << llvm::join(names, ", ")
             << "; only scaling it (the loss) is supported";
    }
    for (Value r : op->getResults())
      partial.insert(r);
    return success();
  }

  auto fail = [&](const Twine &why) {
    SmallVector<StringRef> names;
    for (Attribute a : tokenAxes)
      names.push_back(cast<StringAttr>(a).getValue());
    return op->emitOpError()
           << "cannot be partitioned over " << llvm::join(names, ", ") << ": "
           << why;
  };
  auto setLocal = [&](Value r, const Sharding &s) {
    r.setType(localType(cast<RankedTensorType>(r.getType()), s));
    dims[r] = s;
  };
  auto splitName = [&](const Sharding &s, int64_t d) {
    return s.seq == d ? "the sequence" : "the batch";
  };

  // Elementwise ops (and norms, gelu, softmax over another dim): every
  // operand in the same layout, results too.
  if (op->hasTrait<OpTrait::Elementwise>() ||
      isa<SelectOp, ConvertOp, RmsNormOp, LayerNormOp, ShardingConstraintOp,
          SoftmaxOp>(op)) {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    FailureOr<Sharding> target =
        combine(op->getOperands(), resultType.getRank());
    if (failed(target))
      return fail("operands are split along different dimensions");
    if (auto s = dyn_cast<SoftmaxOp>(op))
      if (target->splits(s.getDim()))
        return fail(Twine("softmax across ") + splitName(*target, s.getDim()));
    for (OpOperand &use : op->getOpOperands()) {
      auto t = cast<RankedTensorType>(use.get().getType());
      if (t.getRank() != resultType.getRank())
        continue; // norm weights etc.
      Value c = conform(use.get(), *target, loc);
      if (!c)
        return fail("an operand carries the full batch or sequence in "
                    "another layout");
      use.set(c);
    }
    for (Value r : op->getResults())
      setLocal(r, *target);
    return success();
  }
  if (auto bc = dyn_cast<BroadcastInDimOp>(op)) {
    ArrayRef<int64_t> bdims = bc.getDims();
    setLocal(bc.getResult(),
             sharding(bc.getInput()).map([&](int64_t d) { return bdims[d]; }));
    return success();
  }
  if (auto t = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> perm = t.getPermutation();
    setLocal(t.getResult(), sharding(t.getInput()).map([&](int64_t d) {
      return llvm::find(perm, d) - perm.begin();
    }));
    return success();
  }
  if (auto r = dyn_cast<ReshapeOp>(op)) {
    // In global shapes: the result dim whose group of input dims contains
    // the whole split dim. Merging it with other dims keeps a consistent
    // rank-local row-major layout (batch major when both merge); splitting
    // it does not.
    ArrayRef<int64_t> in = globalType(r.getInput()).getShape();
    auto out = cast<RankedTensorType>(r.getResult().getType());
    Sharding s = sharding(r.getInput());
    bool ok = true;
    Sharding result = s.map([&](int64_t d) -> int64_t {
      int64_t before = 1;
      for (int64_t i = 0; i < d; ++i)
        before *= in[i];
      int64_t through = before * in[d];
      int64_t acc = 1;
      for (int64_t j = 0; j < out.getRank(); ++j) {
        int64_t next = acc * out.getDimSize(j);
        if (acc <= before && through <= next)
          return j;
        if (next > before)
          break;
        acc = next;
      }
      ok = false;
      return -1;
    });
    if (!ok)
      return fail("a reshape splits the batch or sequence dimension");
    setLocal(r.getResult(), result);
    return success();
  }
  if (auto sl = dyn_cast<SliceOp>(op)) {
    Sharding s = sharding(sl.getInput());
    ArrayRef<int64_t> in = globalType(sl.getInput()).getShape();
    SmallVector<int64_t> limit(sl.getLimit());
    for (int64_t d : {s.batch, s.seq}) {
      if (d < 0)
        continue;
      if (sl.getStart()[d] != 0 || sl.getLimit()[d] != in[d] ||
          sl.getStride()[d] != 1)
        return fail(Twine("a slice along ") + splitName(s, d));
      limit[d] = in[d] / factor(s, d);
    }
    sl.setLimit(limit);
    setLocal(sl.getResult(), s);
    return success();
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    int64_t rank = cast<RankedTensorType>(c.getType()).getRank();
    FailureOr<Sharding> target = combine(c.getInputs(), rank);
    if (failed(target))
      return fail("operands are split along different dimensions");
    if (target->splits(c.getDim()))
      return fail(Twine("a concatenation along ") +
                  splitName(*target, c.getDim()));
    for (OpOperand &use : op->getOpOperands()) {
      Value v = conform(use.get(), *target, loc);
      if (!v)
        return fail("a concatenated operand carries the full batch or "
                    "sequence");
      use.set(v);
    }
    setLocal(c.getResult(), *target);
    return success();
  }
  if (auto p = dyn_cast<PadOp>(op)) {
    Sharding s = sharding(p.getInput());
    for (int64_t d : {s.batch, s.seq})
      if (d >= 0 && (p.getLow()[d] != 0 || p.getHigh()[d] != 0))
        return fail(Twine("padding along ") + splitName(s, d));
    setLocal(p.getResult(), s);
    return success();
  }
  if (auto r = dyn_cast<ReduceOp>(op)) {
    Sharding s = sharding(r.getInput());
    for (int64_t d : {s.batch, s.seq})
      if (d >= 0 && llvm::is_contained(r.getDims(), d))
        return fail(Twine("a reduction across ") + splitName(s, d));
    setLocal(r.getResult(), s.map([&](int64_t d) {
      if (r.getKeepDims())
        return d;
      return d - int64_t(llvm::count_if(r.getDims(),
                                        [&](int64_t x) { return x < d; }));
    }));
    return success();
  }
  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    if (sharding(e.getTable()).isLocal())
      return fail("a sharded embedding table");
    setLocal(e.getResult(), sharding(e.getIds()));
    return success();
  }
  if (auto l = dyn_cast<LinearOp>(op)) {
    Sharding s = sharding(l.getInput());
    int64_t last = cast<RankedTensorType>(l.getInput().getType()).getRank() - 1;
    if (sharding(l.getWeight()).isLocal() || !s.isLocal() || s.splits(last))
      return fail("a GEMM contracting over the batch or sequence");
    setLocal(l.getResult(), s);
    return success();
  }
  if (auto m = dyn_cast<MatmulOp>(op)) {
    int64_t rank = cast<RankedTensorType>(m.getLhs().getType()).getRank();
    int64_t lhsRows = m.getTransposeLhs() ? rank - 1 : rank - 2;
    int64_t rhsCols = m.getTransposeRhs() ? rank - 2 : rank - 1;
    // Leading (batch) dimensions are shared by both operands: one replicated
    // along a dimension the other splits there is brought to the local
    // shape (e.g. a weight broadcast over the batch).
    Sharding lead;
    for (Value v : {m.getLhs(), m.getRhs()}) {
      Sharding s = sharding(v);
      for (auto [mine, theirs] :
           {std::pair{&lead.batch, s.batch}, std::pair{&lead.seq, s.seq}}) {
        if (theirs < 0 || theirs >= rank - 2)
          continue;
        if (*mine >= 0 && *mine != theirs)
          return fail("operands are split along different dimensions");
        *mine = theirs;
      }
    }
    for (OpOperand &use : op->getOpOperands()) {
      Sharding s = sharding(use.get()), want = s;
      if (want.batch < 0)
        want.batch = lead.batch;
      if (want.seq < 0)
        want.seq = lead.seq;
      if (want == s)
        continue;
      Value c = conform(use.get(), want, loc);
      if (!c)
        return fail("an operand carries the full batch or sequence in "
                    "another layout");
      use.set(c);
    }
    Sharding lhs = sharding(m.getLhs()), rhs = sharding(m.getRhs()), result;
    for (auto [l, r, out] : {std::tuple{lhs.batch, rhs.batch, &result.batch},
                             std::tuple{lhs.seq, rhs.seq, &result.seq}}) {
      if (l < 0 && r < 0)
        continue;
      if (l >= 0 && l < rank - 2 && r == l) {
        *out = l;
      } else if (l == lhsRows && r < 0) {
        *out = rank - 2;
      } else if (l < 0 && r == rhsCols) {
        // [.., K] x [K, T]: the split runs along the result's columns.
        *out = rank - 1;
      } else {
        return fail("a GEMM contracting over the batch or sequence");
      }
    }
    setLocal(m.getResult(), result);
    return success();
  }
  if (auto r = dyn_cast<RopeOp>(op)) {
    Sharding s = sharding(r.getInput());
    if (s != sharding(r.getPositions()) || (s.batch >= 0 && s.batch != 0) ||
        (s.seq >= 0 && s.seq != 1))
      return fail("RoPE operands are not split alike along the batch and "
                  "sequence");
    setLocal(r.getResult(), s);
    return success();
  }
  if (auto v = dyn_cast<VisionGatherOp>(op)) {
    if (sharding(v.getBank()).isLocal())
      return fail("a sharded vision bank");
    Sharding s = sharding(v.getEmbeds());
    if (s != sharding(v.getIndices()) || (s.batch >= 0 && s.batch != 0) ||
        (s.seq >= 0 && s.seq != 1))
      return fail("vision_gather operands are not sharded alike");
    setLocal(v.getResult(), s);
    return success();
  }
  if (auto a = dyn_cast<AttentionOp>(op)) {
    Sharding q = sharding(a.getQuery());
    if ((cp > 1 && q.seq != 2) || (q.seq >= 0 && q.seq != 2))
      return fail("the query is not sharded along its sequence dimension");
    if ((dp > 1 && q.batch != 0) || (q.batch >= 0 && q.batch != 0))
      return fail("the query is not sharded along its batch dimension");
    if (cp > 1 && a.getQueryDocuments())
      return fail("document masks under context parallelism");
    // K/V: the query's samples; all-gather the sequence slices (rank order
    // = permuted order).
    SmallVector<Value> kv;
    for (Value x : {a.getKey(), a.getValue()}) {
      if (sharding(x) != q)
        return fail("keys/values are not sharded like the query");
      if (q.seq < 0) {
        kv.push_back(x);
        continue;
      }
      auto local = cast<RankedTensorType>(x.getType());
      SmallVector<int64_t> shape(local.getShape());
      shape[2] *= cp;
      Value g = AllGatherOp::create(
          b, loc, RankedTensorType::get(shape, local.getElementType()), x,
          mesh, cpAxes, b.getI64IntegerAttr(2));
      dims[g] = Sharding{q.batch, -1};
      kv.push_back(g);
    }
    a.getKeyMutable().assign(kv[0]);
    a.getValueMutable().assign(kv[1]);
    // [B, T] masks: the queries' like the query, the keys' like K/V.
    Sharding queryRows{q.batch >= 0 ? 0 : -1, q.seq >= 0 ? 1 : -1};
    Sharding keyRows{q.batch >= 0 ? 0 : -1, -1};
    for (auto [query, key] :
         {std::pair{a.getQueryPositions(), a.getKeyPositions()},
          std::pair{a.getQueryDocuments(), a.getKeyDocuments()}}) {
      if (query && (sharding(query) != queryRows || sharding(key) != keyRows))
        return fail(a.getCausal()
                        ? "causal attention needs permuted positions"
                        : "positions or document ids are not sharded like "
                          "the query and keys");
    }
    if (a.getCausal() && !a.getQueryPositions())
      return fail("causal attention needs permuted positions");
    setLocal(a.getOutput(), q);
    setLocal(a.getLse(), q);
    return success();
  }
  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    Sharding s = sharding(ce.getLogits());
    auto logits = cast<RankedTensorType>(ce.getLogits().getType());
    if (s != sharding(ce.getLabels()) || s.splits(logits.getRank() - 1))
      return fail("logits and labels are not sharded alike");
    if ((dp * mb > 1 && s.batch < 0) || (cp > 1 && s.seq < 0))
      return fail("the loss is not split over every token axis");
    // The count was taken on the full batch (takeCountsOnFullBatch); the
    // sum is this rank's partial sum.
    if (!ce.getCount().use_empty())
      return fail("its token count is used, but it counts this rank's "
                  "tokens only");
    partial.insert(ce.getSum());
    return success();
  }
  return fail("no partitioning rule for this op");
}

struct PartitionTokensPass
    : public glimmer::impl::GlimmerPartitionTokensBase<PartitionTokensPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SpmdAttr spmd = requireRecordedSpmd(module, getArgument());
    if (!spmd)
      return signalPassFailure();
    SpmdContext layout = spmd.getLayout();
    int64_t dp = layout.dpReplicate() * layout.dpShard();
    int64_t mb = layout.microbatches;
    if (layout.cp() == 1 && dp == 1 && mb == 1)
      return;

    MeshOp meshOp = requireMesh(module, getArgument());
    if (!meshOp)
      return signalPassFailure();
    auto mesh = FlatSymbolRefAttr::get(&getContext(), "mesh");
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Value tokens = findTokens(func);
      if (!tokens) {
        func.emitError() << "'" << getArgument()
                         << "': cannot find the token ids (a rank-2 integer "
                            "argument used by glimmer.embedding) that define "
                            "the batch and sequence to shard";
        return signalPassFailure();
      }
      auto type = cast<RankedTensorType>(tokens.getType());
      int64_t batch = type.getDimSize(0);
      if (batch % dp != 0) {
        func.emitError() << "the batch of " << batch
                         << " samples cannot be split over "
                            "dp_replicate×dp_shard = "
                         << dp << " ranks (" << layout.dpReplicate() << "×"
                         << layout.dpShard()
                         << "): the data-parallel degree must divide the "
                            "batch size";
        return signalPassFailure();
      }
      if ((batch / dp) % mb != 0) {
        func.emitError() << "the batch of " << batch << " samples cannot be "
                         << "cut into " << mb << " micro-batches"
                         << (dp > 1 ? " on each of the " + std::to_string(dp) +
                                          " data-parallel ranks"
                                    : std::string())
                         << ": 'microbatches' (--grad-accum) must divide the "
                            "batch per data-parallel rank ("
                         << batch / dp << ")";
        return signalPassFailure();
      }
      Partitioner partitioner(func, layout, mesh, tokens);
      if (failed(partitioner.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
