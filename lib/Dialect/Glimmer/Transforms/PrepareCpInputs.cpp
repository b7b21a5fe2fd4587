//===- PrepareCpInputs.cpp - Full-sequence prep, then the CP permutation --===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERPREPARECPINPUTS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

bool isIntegerTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<IntegerType>(tensor.getElementType());
}

/// The token ids: the first rank-2 integer argument used as embedding ids.
Value findTokens(func::FuncOp func) {
  Value tokens;
  func.walk([&](EmbeddingOp e) {
    if (tokens)
      return;
    auto arg = dyn_cast<BlockArgument>(e.getIds());
    if (arg && cast<RankedTensorType>(arg.getType()).getRank() == 2)
      tokens = arg;
  });
  return tokens;
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

    // Values computed from integer inputs and constants only.
    llvm::DenseSet<Value> prep;
    for (BlockArgument arg : func.getArguments())
      if (isIntegerTensor(arg.getType()))
        prep.insert(arg);
    for (Operation &op : func.getBody().front().without_terminator()) {
      // Constants of any type count: the importer folds per-position tables
      // it can compute (e.g. float position ids from arange).
      if (isa<ConstantOp>(op)) {
        prep.insert(op.getResult(0));
        continue;
      }
      bool fromPrep = llvm::all_of(op.getOperands(),
                                   [&](Value v) { return prep.contains(v); });
      if (!fromPrep)
        continue;
      for (Value r : op.getResults())
        if (isIntegerTensor(r.getType()))
          prep.insert(r);
    }

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
      // The sequence dim: the first dim past the leading batch-like dims
      // (size B or 1) that has the sequence length.
      int64_t seqDim = -1;
      for (int64_t d = 1; d < int64_t(shape.size()); ++d) {
        if (shape[d] == seq) {
          seqDim = d;
          break;
        }
        if (shape[d] != 1 && shape[d] != batch)
          break;
      }
      if (!shape.empty() && shape[0] != 1 && shape[0] != batch)
        seqDim = -1;
      if (seqDim >= 0) {
        result = CpPermuteOp::create(b, loc, v, seqDim, cp, balancer);
      } else if (!shape.empty() && shape[0] == batch * seq && batch > 1) {
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

    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops) {
      // Ops that only produce prep values stay on the full sequence.
      bool producesPrep =
          op->getNumResults() > 0 &&
          llvm::all_of(op->getResults(),
                       [&](Value r) { return prep.contains(r); });
      if (producesPrep || isa<func::ReturnOp>(op))
        continue;
      for (OpOperand &use : op->getOpOperands()) {
        Value v = use.get();
        if (!prep.contains(v))
          continue;
        DenseElementsAttr splat;
        if (matchPattern(v, m_Constant(&splat)) && splat.isSplat())
          continue;
        if (Value p = permute(v, op->getLoc()))
          use.set(p);
      }
    }
    return success();
  }
};

} // namespace
