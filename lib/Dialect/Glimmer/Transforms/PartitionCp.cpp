//===- PartitionCp.cpp - Global view -> per-rank program for CP -----------===//
//
// After glimmer-prepare-cp-inputs, every sequence value of the model's
// floating-point computation descends from a glimmer.cp_permute. This pass
// makes the program rank-local: each permuted value is cut to the rank's
// contiguous slice (glimmer.local_shard; with the head-tail permutation that
// slice is chunks r and 2C-1-r), and the sequence dimension is tracked
// through every op, whose result types shrink accordingly. Ops that need
// the whole sequence get collectives:
//
// - attention all-gathers K and V along the sequence on `cp` (their VJP, a
//   reduce-scatter, sums dK/dV back), and uses the full permuted positions
//   for the keys: all-gathering the ranks' slices in rank order restores the
//   permuted order;
// - cross_entropy's valid-token count is summed over `cp`, so the loss each
//   rank returns is its share of the global token mean (ranks' losses and
//   gradients sum to the global ones).
//
// Everything else (the vision encoder, vision_gather with the replicated
// bank, norms, GEMMs, RoPE on explicit positions) runs locally.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERPARTITIONCP
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

class Partitioner {
public:
  Partitioner(func::FuncOp func, int64_t cp, FlatSymbolRefAttr mesh)
      : func(func), cp(cp), mesh(mesh), b(func.getContext()) {}

  LogicalResult run();

private:
  /// The sequence dimension of a local value, or -1 (replicated).
  int64_t seqDim(Value v) const {
    auto it = dims.find(v);
    return it == dims.end() ? -1 : it->second;
  }
  RankedTensorType localType(RankedTensorType t, int64_t dim) {
    SmallVector<int64_t> shape(t.getShape());
    shape[dim] /= cp;
    return RankedTensorType::get(shape, t.getElementType());
  }
  ArrayAttr cpAxes() { return b.getStrArrayAttr({"cp"}); }
  Value shard(Value v, int64_t dim, Location loc) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getDimSize(dim) % cp != 0)
      return nullptr;
    Value s = LocalShardOp::create(b, loc, localType(type, dim), v, mesh,
                                   cpAxes(), b.getI64IntegerAttr(dim));
    dims[s] = dim;
    return s;
  }
  LogicalResult lower(Operation *op);
  /// Brings a replicated operand to the layout of a local value with
  /// sequence dim `dim`: splats and broadcasts of a smaller value are
  /// cut locally.
  Value conform(Value v, int64_t dim, Location loc);

  func::FuncOp func;
  int64_t cp;
  FlatSymbolRefAttr mesh;
  OpBuilder b;
  DenseMap<Value, int64_t> dims;
  /// Values whose rank-local content is a partial sum over cp.
  DenseSet<Value> partial;
};

Value Partitioner::conform(Value v, int64_t dim, Location loc) {
  if (seqDim(v) == dim)
    return v;
  if (seqDim(v) >= 0)
    return nullptr;
  // Replicated operands that carry the full sequence but are uniform along
  // it (splats, broadcasts over it) are rebuilt at the local shape. They are
  // not sliced: the slice's transpose would put every rank's cotangent on
  // the replicated source, so gradients (e.g. of a norm weight broadcast
  // over tokens) would be counted once per rank.
  auto type = cast<RankedTensorType>(v.getType());
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr)) && attr.isSplat()) {
    auto local = localType(type, dim);
    Value c = ConstantOp::create(
        b, loc, DenseElementsAttr::get(local, attr.getSplatValue<Attribute>()));
    dims[c] = dim;
    return c;
  }
  if (auto bc = v.getDefiningOp<BroadcastInDimOp>()) {
    ArrayRef<int64_t> bdims = bc.getDims();
    auto it = llvm::find(bdims, dim);
    bool overSeq =
        it == bdims.end() ||
        cast<RankedTensorType>(bc.getInput().getType())
                .getDimSize(it - bdims.begin()) == 1;
    if (!overSeq)
      return nullptr;
    Value local = BroadcastInDimOp::create(b, loc, localType(type, dim),
                                           bc.getInput(), bc.getDimsAttr());
    dims[local] = dim;
    return local;
  }
  return nullptr;
}

LogicalResult Partitioner::run() {
  Block &body = func.getBody().front();
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
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (partial.contains(v))
      func.setResultAttr(i, "glimmer.partial", b.getStrArrayAttr({"cp"}));
  return success();
}

LogicalResult Partitioner::lower(Operation *op) {
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  // Permuted values become local where the model uses them.
  if (auto permute = dyn_cast<CpPermuteOp>(op)) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : permute.getResult().getUses())
      uses.push_back(&use);
    for (OpOperand *use : uses) {
      // Keys of attention see the whole permuted sequence.
      if (auto attn = dyn_cast<AttentionOp>(use->getOwner())) {
        auto [start, length] = attn.getODSOperandIndexAndLength(4);
        if (length == 1 && use->getOperandNumber() == start)
          continue;
      }
      b.setInsertionPointAfter(permute);
      Value s = shard(permute.getResult(), permute.getDim(), loc);
      if (!s)
        return permute.emitOpError()
               << "cannot be sharded over cp = " << cp;
      use->set(s);
    }
    return success();
  }
  bool anyLocal = llvm::any_of(op->getOperands(),
                               [&](Value v) { return seqDim(v) >= 0; });
  if (isa<func::ReturnOp>(op))
    return success();
  if (!anyLocal) {
    // A replicated op consuming a partial value would double count.
    // Scaling a partial sum (the loss) by replicated values keeps it a
    // partial sum; anything else would count it cp times.
    unsigned numPartial = llvm::count_if(
        op->getOperands(), [&](Value v) { return partial.contains(v); });
    if (numPartial == 0)
      return success();
    bool scales = isa<ConvertOp, NegOp>(op) ||
                  (isa<MulOp>(op) && numPartial == 1) ||
                  (isa<DivOp>(op) && numPartial == 1 &&
                   partial.contains(op->getOperand(0)));
    if (!scales)
      return op->emitOpError()
             << "uses a value that is a partial sum over cp; only scaling it "
                "(the loss) is supported";
    for (Value r : op->getResults())
      partial.insert(r);
    return success();
  }

  auto fail = [&](const Twine &why) {
    return op->emitOpError() << "cannot be partitioned for context "
                                "parallelism: "
                             << why;
  };
  auto setLocal = [&](Value r, int64_t dim) {
    r.setType(localType(cast<RankedTensorType>(r.getType()), dim));
    dims[r] = dim;
  };

  // Elementwise ops (and norms, gelu, softmax over another dim): every
  // operand in the same layout, results too.
  if (op->hasTrait<OpTrait::Elementwise>() ||
      isa<SelectOp, ConvertOp, RmsNormOp, LayerNormOp, ShardingConstraintOp,
          SoftmaxOp>(op)) {
    int64_t dim = -1;
    for (Value v : op->getOperands())
      if (seqDim(v) >= 0)
        dim = seqDim(v);
    if (auto s = dyn_cast<SoftmaxOp>(op))
      if (int64_t(s.getDim()) == dim)
        return fail("softmax across the sequence");
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    for (OpOperand &use : op->getOpOperands()) {
      auto t = cast<RankedTensorType>(use.get().getType());
      if (t.getRank() != resultType.getRank())
        continue; // norm weights etc.
      Value c = conform(use.get(), dim, loc);
      if (!c)
        return fail("an operand carries the full sequence in another layout");
      use.set(c);
    }
    for (Value r : op->getResults())
      setLocal(r, dim);
    return success();
  }
  if (auto bc = dyn_cast<BroadcastInDimOp>(op)) {
    int64_t d = bc.getDims()[seqDim(bc.getInput())];
    setLocal(bc.getResult(), d);
    return success();
  }
  if (auto t = dyn_cast<TransposeOp>(op)) {
    int64_t d = seqDim(t.getInput());
    int64_t pos = llvm::find(t.getPermutation(), d) -
                  t.getPermutation().begin();
    setLocal(t.getResult(), pos);
    return success();
  }
  if (auto r = dyn_cast<ReshapeOp>(op)) {
    // In global shapes: the result dim whose group of input dims contains
    // the whole sequence dim. Merging it with other dims keeps a consistent
    // rank-local row-major layout; splitting it does not.
    auto local = cast<RankedTensorType>(r.getInput().getType());
    auto out = cast<RankedTensorType>(r.getResult().getType());
    int64_t d = seqDim(r.getInput());
    int64_t before = 1;
    for (int64_t i = 0; i < d; ++i)
      before *= local.getDimSize(i);
    int64_t through = before * local.getDimSize(d) * cp;
    int64_t acc = 1;
    for (int64_t j = 0; j < out.getRank(); ++j) {
      int64_t next = acc * out.getDimSize(j);
      if (acc <= before && through <= next) {
        setLocal(r.getResult(), j);
        return success();
      }
      if (next > before)
        break;
      acc = next;
    }
    return fail("a reshape splits the sequence dimension");
  }
  if (auto s = dyn_cast<SliceOp>(op)) {
    int64_t d = seqDim(s.getInput());
    auto in = cast<RankedTensorType>(s.getInput().getType());
    if (s.getStart()[d] != 0 || s.getLimit()[d] != in.getDimSize(d) * cp ||
        s.getStride()[d] != 1)
      return fail("a slice along the sequence");
    SmallVector<int64_t> limit(s.getLimit());
    limit[d] /= cp;
    s.setLimit(limit);
    setLocal(s.getResult(), d);
    return success();
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    int64_t d = -1;
    for (Value v : c.getInputs())
      if (seqDim(v) >= 0)
        d = seqDim(v);
    if (d == int64_t(c.getDim()))
      return fail("a concatenation along the sequence");
    for (OpOperand &use : op->getOpOperands()) {
      Value v = conform(use.get(), d, loc);
      if (!v)
        return fail("a concatenated operand carries the full sequence");
      use.set(v);
    }
    setLocal(c.getResult(), d);
    return success();
  }
  if (auto p = dyn_cast<PadOp>(op)) {
    int64_t d = seqDim(p.getInput());
    if (p.getLow()[d] != 0 || p.getHigh()[d] != 0)
      return fail("padding along the sequence");
    setLocal(p.getResult(), d);
    return success();
  }
  if (auto r = dyn_cast<ReduceOp>(op)) {
    int64_t d = seqDim(r.getInput());
    if (llvm::is_contained(r.getDims(), d))
      return fail("a reduction across the sequence");
    int64_t removed = 0;
    for (int64_t x : r.getDims())
      removed += x < d;
    setLocal(r.getResult(), r.getKeepDims() ? d : d - removed);
    return success();
  }
  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    if (seqDim(e.getTable()) >= 0)
      return fail("a sharded embedding table");
    setLocal(e.getResult(), seqDim(e.getIds()));
    return success();
  }
  if (auto l = dyn_cast<LinearOp>(op)) {
    int64_t d = seqDim(l.getInput());
    if (seqDim(l.getWeight()) >= 0 || d < 0 ||
        d == cast<RankedTensorType>(l.getInput().getType()).getRank() - 1)
      return fail("a GEMM contracting over the sequence");
    setLocal(l.getResult(), d);
    return success();
  }
  if (auto m = dyn_cast<MatmulOp>(op)) {
    auto t = cast<RankedTensorType>(m.getLhs().getType());
    int64_t d = seqDim(m.getLhs());
    int64_t rank = t.getRank();
    bool rowsOfLhs = d == (m.getTransposeLhs() ? rank - 1 : rank - 2);
    int64_t e = seqDim(m.getRhs());
    bool colsOfRhs = e == (m.getTransposeRhs() ? rank - 2 : rank - 1);
    if (d < 0 && e >= 0 && colsOfRhs) {
      // [.., K] x [K, T]: the sequence runs along the result's columns.
      setLocal(m.getResult(), rank - 1);
      return success();
    }
    if (d < 0 || e >= 0 || (d >= rank - 2 && !rowsOfLhs))
      return fail("a GEMM contracting over the sequence");
    setLocal(m.getResult(), d < rank - 2 ? d : rank - 2);
    return success();
  }
  if (auto r = dyn_cast<RopeOp>(op)) {
    if (seqDim(r.getInput()) != 1 || seqDim(r.getPositions()) != 1)
      return fail("RoPE operands are not sharded along the sequence");
    setLocal(r.getResult(), 1);
    return success();
  }
  if (auto v = dyn_cast<VisionGatherOp>(op)) {
    if (seqDim(v.getBank()) >= 0)
      return fail("a sharded vision bank");
    if (seqDim(v.getEmbeds()) != 1 || seqDim(v.getIndices()) != 1)
      return fail("vision_gather operands are not sharded alike");
    setLocal(v.getResult(), 1);
    return success();
  }
  if (auto a = dyn_cast<AttentionOp>(op)) {
    if (seqDim(a.getQuery()) != 2)
      return fail("the query is not sharded along its sequence dimension");
    if (a.getQueryDocuments())
      return fail("document masks under context parallelism");
    // K/V: all-gather the local slices (rank order = permuted order).
    SmallVector<Value> kv;
    for (Value x : {a.getKey(), a.getValue()}) {
      if (seqDim(x) != 2)
        return fail("keys/values are not sharded along the sequence");
      auto full = cast<RankedTensorType>(x.getType());
      SmallVector<int64_t> shape(full.getShape());
      shape[2] *= cp;
      kv.push_back(AllGatherOp::create(
          b, loc, RankedTensorType::get(shape, full.getElementType()), x,
          mesh, cpAxes(), b.getI64IntegerAttr(2)));
    }
    a.getKeyMutable().assign(kv[0]);
    a.getValueMutable().assign(kv[1]);
    if (a.getCausal()) {
      if (!a.getQueryPositions() || seqDim(a.getQueryPositions()) != 1 ||
          seqDim(a.getKeyPositions()) >= 0)
        return fail("causal attention needs permuted positions");
    }
    setLocal(a.getOutput(), 2);
    setLocal(a.getLse(), 2);
    return success();
  }
  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    int64_t d = seqDim(ce.getLogits());
    auto logits = cast<RankedTensorType>(ce.getLogits().getType());
    if (d < 0 || d == logits.getRank() - 1 || seqDim(ce.getLabels()) != d)
      return fail("logits and labels are not sharded alike");
    // The count becomes global; the sum stays this rank's partial sum.
    b.setInsertionPointAfter(ce);
    Value count = ce.getCount();
    auto global = AllReduceOp::create(
        b, loc, count.getType(),
        ReductionKindAttr::get(b.getContext(), ReductionKind::Sum), count,
        mesh, cpAxes());
    count.replaceAllUsesExcept(global, global);
    partial.insert(ce.getSum());
    return success();
  }
  return fail("no context-parallel rule for this op");
}

struct PartitionCpPass
    : public glimmer::impl::GlimmerPartitionCpBase<PartitionCpPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SpmdAttr spmd = requireRecordedSpmd(module, getArgument());
    if (!spmd)
      return signalPassFailure();
    SpmdContext layout = spmd.getLayout();
    if (layout.cp() == 1)
      return;
    auto meshOp = module.lookupSymbol<MeshOp>("mesh");
    if (!meshOp) {
      module.emitError() << "'" << getArgument()
                         << "' needs @mesh; run glimmer-materialize-mesh first";
      return signalPassFailure();
    }
    auto mesh = FlatSymbolRefAttr::get(&getContext(), "mesh");
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Partitioner partitioner(func, layout.cp(), mesh);
      if (failed(partitioner.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
