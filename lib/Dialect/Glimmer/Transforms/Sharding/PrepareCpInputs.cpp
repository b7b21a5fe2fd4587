//===- PrepareCpInputs.cpp - Full-sequence prep, then the CP permutation --===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "TokenInputs.h"

#include "mlir/IR/Builders.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERPREPARECPINPUTS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

namespace {

/// What an op does with the order of the sequence, for the message.
std::string orderedUse(Operation *op) {
  if (isa<SliceOp>(op))
    return "a slice along the sequence";
  if (isa<PadOp>(op))
    return "padding along the sequence";
  if (isa<ConcatOp>(op))
    return "a concatenation along the sequence";
  if (isa<CumsumOp>(op))
    return "a cumulative sum along the sequence";
  if (isa<ReshapeOp>(op))
    return "a reshape splits the sequence dimension";
  if (isa<AttentionOp>(op))
    return "causal attention without positions masks by the tokens' order";
  return "it reads the sequence in order";
}

/// The permutation reorders the tokens of every value the model computes:
/// an op whose result depends on that order (a slice, a scan, a reshape
/// that splits the sequence, attention masked by indices) would compute
/// something else. Read off the ops' sharding rules: a sequence dimension
/// must be one factor that passes through or is summed; one needed whole
/// is fine only where the op is blind to the order (max/min reductions,
/// softmax, attention's keys masked by explicit positions).
LogicalResult checkTokenOrder(func::FuncOp func, const DenseSet<Value> &prep,
                              const TokenDims &roles) {
  // Only values computed from integer inputs are permuted: an argument of
  // another kind along the sequence (a learned per-position table, a float
  // mask) would meet the permuted tokens in its own order.
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || prep.contains(arg) || arg.use_empty())
      continue;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (roles.role(arg, d) != TokenDims::Role::Sequence)
        continue;
      auto name =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttr);
      InFlightDiagnostic diag = (*arg.getUsers().begin())->emitOpError();
      diag << "cannot be partitioned over cp: argument #" << arg.getArgNumber();
      if (name)
        diag << " ('" << name.getValue() << "')";
      diag << " runs along the sequence (dimension " << d
           << ") but is not computed from integer inputs, so it cannot "
              "follow the load-balancing permutation";
      return failure();
    }
  }
  WalkResult walk = func.walk([&](ShardingRuleOpInterface iface) {
    Operation *op = iface;
    if (op->getNumResults() > 0 &&
        llvm::all_of(op->getResults(),
                     [&](Value r) { return prep.contains(r); }))
      return WalkResult::advance();
    ShardingRule rule = iface.getShardingRule();
    unsigned numOperands = op->getNumOperands();
    auto attention = dyn_cast<AttentionOp>(op);
    bool orderBlind =
        isa<ReduceOp, SoftmaxOp>(op) ||
        (attention && (attention.getQueryPositions() || !attention.getCausal()));
    for (unsigned t = 0; t < rule.getNumTensors(); ++t) {
      Value v = t < numOperands ? op->getOperand(t)
                                : op->getResult(t - numOperands);
      for (auto [d, fs] : llvm::enumerate(rule.getTensor(t))) {
        if (roles.role(v, d) != TokenDims::Role::Sequence)
          continue;
        bool ordered =
            fs.size() > 1 ||
            (fs.size() == 1 &&
             rule.getFactor(fs.front()).kind == FactorKind::NeedReplication &&
             !orderBlind);
        if (ordered) {
          op->emitOpError() << "cannot be partitioned over cp: "
                            << orderedUse(op)
                            << ", whose order the load-balancing "
                               "permutation changes";
          return WalkResult::interrupt();
        }
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

struct PrepareCpInputsPass
    : public glimmer::impl::GlimmerPrepareCpInputsBase<PrepareCpInputsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SpmdAttr spmd = requireRecordedSpmd(module, getArgument());
    if (!spmd)
      return signalPassFailure();
    SpmdContext layout = spmd.getLayout();
    if (layout.cp() == 1)
      return;
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(runOnFunction(func, layout)))
        return signalPassFailure();
  }

  LogicalResult runOnFunction(func::FuncOp func, const SpmdContext &layout) {
    if (func.isExternal())
      return success();
    Value tokens = findTokens(func);
    if (!tokens)
      return func.emitError()
             << "glimmer-prepare-cp-inputs: cannot find the token ids (a "
                "rank-2 integer argument used by glimmer.embedding) that "
                "define the sequence to shard";
    auto tokensType = cast<RankedTensorType>(tokens.getType());
    int64_t batch = tokensType.getDimSize(0), seq = tokensType.getDimSize(1);
    int64_t cp = layout.cp();
    Balancer balancer = layout.balancer == CpBalancer::HeadTail
                            ? Balancer::HeadTail
                            : Balancer::Contiguous;
    int64_t chunks = balancer == Balancer::HeadTail ? 2 * cp : cp;
    if (seq % chunks != 0)
      return func.emitError()
             << "sequence length " << seq << " is not divisible by " << chunks
             << " (the " << stringifyBalancer(balancer)
             << " balancer with cp = " << cp << " needs " << chunks
             << " equal chunks)";

    // Values computed from integer inputs and constants only, and which of
    // their dimensions are the sequence (by the ops' rules, not by size).
    llvm::DenseSet<Value> prep = computePrepValues(func);
    TokenDims roles(func, tokens);
    if (Operation *mixer = roles.mixingOp())
      return mixer->emitOpError()
             << "cannot be partitioned over cp: it combines the batch and "
                "the sequence of the token ids, so the sequence cannot be "
                "told apart";

    if (failed(checkTokenOrder(func, prep, roles)))
      return failure();

    OpBuilder b(func.getContext());
    DenseMap<Value, Value> permuted;
    auto permute = [&](Value v, Location loc) -> Value {
      auto it = permuted.find(v);
      if (it != permuted.end())
        return it->second;
      auto type = cast<RankedTensorType>(v.getType());
      ArrayRef<int64_t> shape = type.getShape();
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&func.getBody().front());
      Value result;
      // Every sequence dimension (a key-side table has one per attention
      // side) follows the tokens' permutation.
      for (int64_t d : roles.sequenceDims(v))
        result = CpPermuteOp::create(b, loc, result ? result : v, d, cp,
                                     balancer);
      if (!result &&
          roles.role(v, 0) == TokenDims::Role::FlattenedTokens) {
        // [B*T, ...], batch major: permuted as [B, T, ...].
        SmallVector<int64_t> split{batch, seq};
        split.append(shape.begin() + 1, shape.end());
        Value s = ReshapeOp::create(
            b, loc, RankedTensorType::get(split, type.getElementType()), v);
        Value p = CpPermuteOp::create(b, loc, s, int64_t(1), cp, balancer);
        result = ReshapeOp::create(b, loc, type, p);
      }
      permuted[v] = result;
      return result;
    };

    for (OpOperand *use : findPrepBoundaries(func, prep))
      if (Value p = permute(use->get(), use->getOwner()->getLoc()))
        use->set(p);
    return success();
  }
};

} // namespace
