//===- PrepareBatch.cpp - The global batch before it is split -------------===//
//
// What must be done on the whole batch, in the global view, before the
// sharding engine splits the tokens over the data and context axes or the
// runtime runs the batch in micro-batches: the loss's valid-token count is
// taken on the full labels (a rank or a micro-batch only sees its own), the
// loss of flattened tokens is taken on the unflattened batch and sequence
// (so that their splits survive), and with micro-batches every value
// computed from integer inputs is cut to the current micro-batch where it
// enters the model.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "TokenInputs.h"

#include "glimmer/Dialect/Glimmer/IR/OpEmitter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERPREPAREBATCH
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// `cross_entropy(reshape(x), reshape(l))` where both reshapes only merge
/// the leading token dimensions (`[B, T, V] -> [B*T, V]`, `[B, T] ->
/// [B*T]`) is `cross_entropy(x, l)`: the sum and the count are over the same
/// tokens. Kept merged, a sequence split over cp inside a batch split over
/// dp could not be described as one split of the merged dimension. A
/// conversion between the reshape and the loss (mixed precision) moves
/// before the reshape.
void unflattenLoss(CrossEntropyOp ce) {
  auto labels = ce.getLabels().getDefiningOp<ReshapeOp>();
  Value logits = ce.getLogits();
  auto convert = logits.getDefiningOp<ConvertOp>();
  auto reshape = (convert ? convert.getInput() : logits).getDefiningOp<ReshapeOp>();
  if (!labels || !reshape)
    return;
  auto x = cast<RankedTensorType>(reshape.getInput().getType());
  auto l = cast<RankedTensorType>(labels.getInput().getType());
  ArrayRef<int64_t> xs = x.getShape();
  if (xs.size() < 2 || xs.drop_back() != l.getShape() ||
      xs.back() != cast<RankedTensorType>(logits.getType()).getShape().back())
    return;
  OpBuilder b(ce);
  Value unflat = reshape.getInput();
  if (convert)
    unflat = ConvertOp::create(
        b, convert.getLoc(),
        x.clone(cast<RankedTensorType>(convert.getType()).getElementType()),
        unflat);
  ce.getLogitsMutable().assign(unflat);
  ce.getLabelsMutable().assign(labels.getInput());
  Operation *dead[] = {convert ? convert.getOperation() : nullptr,
                       reshape.getOperation(), labels.getOperation()};
  for (Operation *op : dead)
    if (op && op->use_empty())
      op->erase();
}

struct PrepareBatchPass
    : public glimmer::impl::GlimmerPrepareBatchBase<PrepareBatchPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SpmdAttr spmd = requireRecordedSpmd(module, getArgument());
    if (!spmd)
      return signalPassFailure();
    SpmdContext layout = spmd.getLayout();
    int64_t dp = layout.dpReplicate() * layout.dpShard();
    int64_t mb = layout.microbatches;
    if (dp * layout.cp() * mb == 1)
      return;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(runOnFunction(func, layout)))
        return signalPassFailure();
  }

  LogicalResult runOnFunction(func::FuncOp func, const SpmdContext &layout) {
    int64_t dp = layout.dpReplicate() * layout.dpShard();
    int64_t mb = layout.microbatches;
    Value tokens = findTokens(func);
    if (!tokens)
      return func.emitError()
             << "'" << getArgument()
             << "': cannot find the token ids (a rank-2 integer argument used "
                "by glimmer.embedding) that define the batch and sequence to "
                "split";
    int64_t batch = cast<RankedTensorType>(tokens.getType()).getDimSize(0);
    if (batch % dp != 0)
      return func.emitError()
             << "the batch of " << batch
             << " samples cannot be split over dp_replicate×dp_shard = " << dp
             << " ranks (" << layout.dpReplicate() << "×" << layout.dpShard()
             << "): the data-parallel degree must divide the batch size";
    if ((batch / dp) % mb != 0)
      return func.emitError()
             << "the batch of " << batch << " samples cannot be cut into "
             << mb << " micro-batches"
             << (dp > 1 ? " on each of the " + std::to_string(dp) +
                              " data-parallel ranks"
                        : std::string())
             << ": 'microbatches' (--grad-accum) must divide the batch per "
                "data-parallel rank ("
             << batch / dp << ")";
    if (failed(takeCountsOnFullBatch(func)))
      return failure();
    func.walk(unflattenLoss);
    if (mb > 1)
      return cutMicrobatches(func, tokens, mb);
    return success();
  }

  // The loss is a mean over the valid tokens of the global batch. Their
  // count depends on the labels alone, which every rank holds in full
  // (integer inputs are prepared on the full batch), so it is counted here,
  // before any cut: no collective, and the same count in every micro-batch
  // (a micro-batch's own count could not be summed over the others, which
  // run later). The cross_entropy's own count is left unused.
  LogicalResult takeCountsOnFullBatch(func::FuncOp func) {
    DenseSet<Value> prep = computePrepValues(func);
    SmallVector<CrossEntropyOp> losses;
    func.walk([&](CrossEntropyOp ce) { losses.push_back(ce); });
    OpBuilder b(func.getContext());
    for (CrossEntropyOp ce : losses) {
      Value count = ce.getCount();
      if (count.use_empty())
        continue;
      if (!prep.contains(ce.getLabels()))
        return ce.emitOpError()
               << "cannot be partitioned: its labels are not computed from "
                  "integer inputs alone, so the global count of valid tokens "
                  "cannot be taken on the full batch";
      b.setInsertionPoint(ce);
      OpEmitter e{b, ce.getLoc()};
      Value labels = ce.getLabels();
      auto type = cast<RankedTensorType>(labels.getType());
      Value ignore = ConstantOp::create(
          b, ce.getLoc(),
          DenseElementsAttr::get(type, b.getIntegerAttr(type.getElementType(),
                                                        ce.getIgnoreIndex())));
      Value valid = e.convert(e.compare(CompareDirection::NE, labels, ignore),
                              type.clone(b.getI64Type()));
      SmallVector<int64_t> all;
      for (int64_t d = 0; d < type.getRank(); ++d)
        all.push_back(d);
      count.replaceAllUsesWith(e.reduce(ReductionKind::Sum, valid, all));
    }
    return success();
  }

  // Micro-batches are a serial split of the batch: the function gains the
  // micro-batch index (set by the runtime for each call), and every value
  // computed from integer inputs whose dimension 0 is the batch (or the
  // flattened batch-major tokens) is cut to the micro-batch where it enters
  // the model, so the model is compiled at the micro-batch's shape.
  LogicalResult cutMicrobatches(func::FuncOp func, Value tokens, int64_t mb) {
    OpBuilder b(func.getContext());
    auto index = RankedTensorType::get({}, b.getI64Type());
    if (failed(func.insertArgument(func.getNumArguments(), index,
                                   b.getDictionaryAttr(b.getNamedAttr(
                                       kMicrobatchAttr, b.getUnitAttr())),
                                   func.getLoc())))
      return failure();
    Value microbatch = func.getArgument(func.getNumArguments() - 1);
    TokenDims roles(func, tokens);
    DenseSet<Value> prep = computePrepValues(func);
    DenseMap<Value, Value> cut;
    for (OpOperand *use : findPrepBoundaries(func, prep)) {
      Value v = use->get();
      auto it = cut.find(v);
      if (it == cut.end()) {
        TokenDims::Role role = roles.role(v, 0);
        Value piece;
        if (role == TokenDims::Role::Batch ||
            role == TokenDims::Role::FlattenedTokens) {
          if (Operation *def = v.getDefiningOp())
            b.setInsertionPointAfter(def);
          else
            b.setInsertionPointToStart(&func.getBody().front());
          auto type = cast<RankedTensorType>(v.getType());
          SmallVector<int64_t> shape(type.getShape());
          shape[0] /= mb;
          piece = MicrobatchSliceOp::create(
              b, use->getOwner()->getLoc(), type.clone(shape), v, microbatch,
              b.getI64IntegerAttr(mb), b.getI64IntegerAttr(0));
        }
        it = cut.insert({v, piece}).first;
      }
      if (it->second)
        use->set(it->second);
    }
    return shrinkToMicrobatch(func, roles, mb);
  }

  // The model (every op computing a value that is not prepared on the whole
  // batch) now runs on one micro-batch: its batch dimension, or its
  // flattened batch-major tokens, is `mb` times smaller. Splat constants are
  // rebuilt at that shape; an op that reduces across the batch, or needs it
  // whole, would compute something else on a micro-batch.
  LogicalResult shrinkToMicrobatch(func::FuncOp func, const TokenDims &roles,
                                   int64_t mb) {
    Block &body = func.getBody().front();
    DenseSet<Value> prep = computePrepValues(func);
    auto isBatch = [&](Value v, int64_t d) {
      TokenDims::Role role = roles.role(v, d);
      return role == TokenDims::Role::Batch ||
             role == TokenDims::Role::FlattenedTokens;
    };
    auto shrunk = [&](Value v) {
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (isBatch(v, d) && shape[d] % mb == 0)
          shape[d] /= mb;
      return type.clone(shape);
    };
    auto isModel = [&](Operation &op) {
      return op.getNumResults() > 0 &&
             !llvm::all_of(op.getResults(),
                           [&](Value r) { return prep.contains(r); });
    };
    // Checked on the whole batch's shapes (the rules read them).
    for (Operation &op : body.without_terminator()) {
      if (!isModel(op))
        continue;
      if (auto iface = dyn_cast<ShardingRuleOpInterface>(&op)) {
        ShardingRule rule = iface.getShardingRule();
        unsigned numOperands = op.getNumOperands();
        for (unsigned t = 0; t < rule.getNumTensors(); ++t) {
          Value v = t < numOperands ? op.getOperand(t)
                                    : op.getResult(t - numOperands);
          for (auto [d, fs] : llvm::enumerate(rule.getTensor(t))) {
            if (!isBatch(v, d) || fs.size() != 1)
              continue;
            FactorKind kind = rule.getFactor(fs.front()).kind;
            if (kind == FactorKind::NeedReplication ||
                (kind == FactorKind::Reduction && !isa<CrossEntropyOp>(op)))
              return op.emitOpError()
                     << "cannot be cut into " << mb
                     << " micro-batches: it "
                     << (kind == FactorKind::Reduction ? "reduces across the"
                                                       : "needs the whole")
                     << " batch";
          }
        }
      }
    }
    OpBuilder b(func.getContext());
    DenseMap<Value, Value> splats;
    for (Operation &op : body.without_terminator()) {
      if (!isModel(op))
        continue;
      for (OpOperand &use : op.getOpOperands()) {
        Value v = use.get();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!type || shrunk(v) == type)
          continue;
        DenseElementsAttr splat;
        if (matchPattern(v, m_Constant(&splat)) && splat.isSplat()) {
          Value &small = splats[v];
          if (!small) {
            b.setInsertionPointAfter(v.getDefiningOp());
            small = ConstantOp::create(
                b, v.getLoc(),
                DenseElementsAttr::get(shrunk(v),
                                       splat.getSplatValue<Attribute>()));
          }
          use.set(small);
          continue;
        }
        if (auto arg = dyn_cast<BlockArgument>(v))
          return op.emitOpError()
                 << "cannot be cut into " << mb << " micro-batches: argument #"
                 << arg.getArgNumber()
                 << " brings the whole batch into the model (only values "
                    "computed from integer inputs are cut to the "
                    "micro-batch)";
      }
      for (Value r : op.getResults())
        r.setType(shrunk(r));
      // The sizes a slice keeps of a dimension it does not cut.
      if (auto slice = dyn_cast<SliceOp>(op)) {
        SmallVector<int64_t> limit(slice.getLimit());
        auto out = cast<RankedTensorType>(slice.getType());
        for (int64_t d = 0; d < out.getRank(); ++d)
          if (isBatch(slice.getResult(), d))
            limit[d] = out.getDimSize(d);
        slice.setLimit(limit);
      }
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    func.setType(b.getFunctionType(body.getArgumentTypes(),
                                   ret.getOperandTypes()));
    return success();
  }
};

} // namespace
