//===- TokenInputs.cpp - What the SPMD passes agree a token tensor is -----===//

#include "TokenInputs.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace glimmer;

static bool isIntegerTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<IntegerType>(tensor.getElementType());
}

Value glimmer::detail::findTokens(func::FuncOp func) {
  SmallVector<Value> candidates;
  func.walk([&](EmbeddingOp e) {
    // Seen through the CP permutation, so that the partitioner finds them
    // after glimmer-prepare-cp-inputs.
    Value ids = e.getIds();
    if (auto permute = ids.getDefiningOp<CpPermuteOp>())
      ids = permute.getInput();
    auto arg = dyn_cast<BlockArgument>(ids);
    if (arg && cast<RankedTensorType>(arg.getType()).getRank() == 2 &&
        !llvm::is_contained(candidates, arg))
      candidates.push_back(arg);
  });
  // A vision encoder's own position embedding must not be mistaken for the
  // text: prefer the ids the vision merge reads.
  for (Value v : candidates)
    if (llvm::any_of(v.getUsers(), llvm::IsaPred<VisionBankIndicesOp>))
      return v;
  return candidates.empty() ? Value() : candidates.front();
}

llvm::DenseSet<Value> glimmer::detail::computePrepValues(func::FuncOp func) {
  llvm::DenseSet<Value> prep;
  for (BlockArgument arg : func.getArguments())
    if (isIntegerTensor(arg.getType()))
      prep.insert(arg);
  for (Operation &op : func.getBody().front().without_terminator()) {
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
  return prep;
}

SmallVector<OpOperand *>
glimmer::detail::findPrepBoundaries(func::FuncOp func,
                                    const llvm::DenseSet<Value> &prep) {
  SmallVector<OpOperand *> uses;
  for (Operation &op : func.getBody().front()) {
    // Ops that only produce prep values stay on the full batch and sequence.
    bool producesPrep =
        op.getNumResults() > 0 &&
        llvm::all_of(op.getResults(), [&](Value r) { return prep.contains(r); });
    if (producesPrep || isa<func::ReturnOp>(op))
      continue;
    for (OpOperand &use : op.getOpOperands()) {
      Value v = use.get();
      if (!prep.contains(v))
        continue;
      DenseElementsAttr splat;
      if (matchPattern(v, m_Constant(&splat)) && splat.isSplat())
        continue;
      uses.push_back(&use);
    }
  }
  return uses;
}

std::optional<int64_t>
glimmer::detail::findSequenceDim(ArrayRef<int64_t> shape, int64_t batch,
                                 int64_t seq) {
  if (shape.empty() || (shape[0] != 1 && shape[0] != batch))
    return std::nullopt;
  for (int64_t d = 1; d < int64_t(shape.size()); ++d) {
    if (shape[d] == seq)
      return d;
    if (shape[d] != 1 && shape[d] != batch)
      break;
  }
  return std::nullopt;
}

bool glimmer::detail::isFlattenedTokens(ArrayRef<int64_t> shape,
                                        int64_t batch, int64_t seq) {
  return !shape.empty() && shape[0] == batch * seq && batch > 1;
}
