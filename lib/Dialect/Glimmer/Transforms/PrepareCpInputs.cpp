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

    // Values computed from integer inputs and constants only.
    llvm::DenseSet<Value> prep = computePrepValues(func);

    OpBuilder b(func.getContext());
    DenseMap<Value, Value> permuted;
    auto permute = [&](Value v, Location loc) -> Value {
      auto it = permuted.find(v);
      if (it != permuted.end())
        return it->second;
      auto type = cast<RankedTensorType>(v.getType());
      ArrayRef<int64_t> shape = type.getShape();
      Value result;
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&func.getBody().front());
      auto permuteDim1 = [&](Value x) {
        return CpPermuteOp::create(b, loc, x, int64_t(1), cp, balancer)
            .getResult();
      };
      std::optional<int64_t> seqDim = findSequenceDim(shape, batch, seq);
      if (seqDim) {
        result = CpPermuteOp::create(b, loc, v, *seqDim, cp, balancer);
      } else if (isFlattenedTokens(shape, batch, seq)) {
        SmallVector<int64_t> split{batch, seq};
        split.append(shape.begin() + 1, shape.end());
        Value s = ReshapeOp::create(
            b, loc, RankedTensorType::get(split, type.getElementType()), v);
        result = ReshapeOp::create(b, loc, type, permuteDim1(s));
      } else if (!shape.empty() && shape[0] == seq && batch == 1) {
        result = CpPermuteOp::create(b, loc, v, int64_t(0), cp, balancer);
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
