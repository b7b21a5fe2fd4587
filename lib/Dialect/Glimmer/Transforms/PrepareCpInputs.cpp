//===- PrepareCpInputs.cpp - Full-sequence prep, then the CP permutation --===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

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
