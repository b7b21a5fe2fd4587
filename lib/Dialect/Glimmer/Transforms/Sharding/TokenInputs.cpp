//===- TokenInputs.cpp - What the SPMD passes agree a token tensor is -----===//

#include "TokenInputs.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

static bool isIntegerTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<IntegerType>(tensor.getElementType());
}

Value glimmer::detail::findTokens(func::FuncOp func) {
  SmallVector<Value> candidates;
  func.walk([&](EmbeddingOp e) {
    // Seen through the micro-batch cut, the CP permutation and the data
    // seeds, so that every SPMD pass finds them after the ones before it.
    Value ids = e.getIds();
    while (Operation *def = ids.getDefiningOp()) {
      if (!isa<CpPermuteOp, MicrobatchSliceOp, ShardingConstraintOp>(def))
        break;
      ids = def->getOperand(0);
    }
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
    // Data movement of a prep value (a folded position table cut to the
    // micro-batch, permuted, reshaped around the permutation) is prep
    // whatever its type: it stays on the full batch until it is cut.
    bool moves = isa<CpPermuteOp, MicrobatchSliceOp, ReshapeOp>(op);
    for (Value r : op.getResults())
      if (moves || isIntegerTensor(r.getType()))
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

unsigned TokenDims::node(Value v, int64_t dim) {
  auto [it, inserted] = nodes.try_emplace({v, dim}, numNodes);
  if (inserted) {
    classes.insert(numNodes);
    ++numNodes;
  }
  return it->second;
}

TokenDims::TokenDims(func::FuncOp func, Value tokens) {
  auto mixesTokens = [&] {
    auto b = nodes.find({tokens, 0}), t = nodes.find({tokens, 1});
    return b != nodes.end() && t != nodes.end() &&
           classes.isEquivalent(b->second, t->second);
  };
  func.walk([&](ShardingRuleOpInterface iface) {
    Operation *op = iface;
    ShardingRule rule = iface.getShardingRule();
    unsigned numOperands = op->getNumOperands();
    // One node per factor of this op; every dimension that is exactly that
    // factor joins it.
    SmallVector<unsigned> factorNodes;
    for (unsigned f = 0; f < rule.getFactors().size(); ++f) {
      classes.insert(numNodes);
      factorNodes.push_back(numNodes++);
    }
    for (unsigned t = 0; t < rule.getNumTensors(); ++t) {
      Value v = t < numOperands ? op->getOperand(t)
                                : op->getResult(t - numOperands);
      for (auto [d, fs] : llvm::enumerate(rule.getTensor(t))) {
        if (fs.empty())
          continue;
        unsigned n = node(v, d);
        if (fs.size() == 1) {
          classes.unionSets(n, factorNodes[fs.front()]);
          continue;
        }
        Merged m{n, {}, {}};
        for (unsigned f : fs) {
          m.parts.push_back(factorNodes[f]);
          m.sizes.push_back(rule.getFactor(f).size);
        }
        merged.push_back(std::move(m));
      }
    }
    // A micro-batch of the batch is still the batch (and the sequence
    // passes through).
    if (auto slice = dyn_cast<MicrobatchSliceOp>(op))
      classes.unionSets(node(slice.getInput(), slice.getDim()),
                        node(slice.getOutput(), slice.getDim()));
    if (!mixer && mixesTokens())
      mixer = op;
  });
  // Two merges of one dimension into factors of the same sizes split it
  // the same way: a [B*T] reshaped back to [B, T] is the batch and the
  // sequence again. Joined pairwise until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (unsigned i = 0; i < merged.size(); ++i)
      for (unsigned j = i + 1; j < merged.size(); ++j) {
        const Merged &a = merged[i], &c = merged[j];
        if (a.sizes != c.sizes || !classes.isEquivalent(a.node, c.node))
          continue;
        for (auto [x, y] : llvm::zip(a.parts, c.parts))
          if (!classes.isEquivalent(x, y)) {
            classes.unionSets(x, y);
            changed = true;
          }
      }
  }
  if (!mixer && mixesTokens())
    mixer = func;
  auto type = cast<RankedTensorType>(tokens.getType());
  // A size-1 batch has no factor: no dimension is the batch then.
  if (type.getDimSize(0) != 1)
    batch = classes.getLeaderValue(node(tokens, 0));
  sequence = classes.getLeaderValue(node(tokens, 1));
  if (batch == kNone)
    return;
  for (const Merged &m : merged)
    if (m.parts.size() == 2 && classes.getLeaderValue(m.parts[0]) == batch &&
        classes.getLeaderValue(m.parts[1]) == sequence)
      flattened.insert(classes.getLeaderValue(m.node));
}

unsigned TokenDims::leaderOf(Value v, int64_t dim) const {
  auto it = nodes.find({v, dim});
  return it == nodes.end() ? kNone : classes.getLeaderValue(it->second);
}

TokenDims::Role TokenDims::role(Value v, int64_t dim) const {
  unsigned leader = leaderOf(v, dim);
  if (leader == kNone)
    return Role::Other;
  if (leader == sequence)
    return Role::Sequence;
  if (leader == batch)
    return Role::Batch;
  return flattened.contains(leader) ? Role::FlattenedTokens : Role::Other;
}

SmallVector<int64_t> TokenDims::sequenceDims(Value v) const {
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < cast<RankedTensorType>(v.getType()).getRank(); ++d)
    if (role(v, d) == Role::Sequence)
      dims.push_back(d);
  return dims;
}

TokenAxes TokenAxes::of(const SpmdContext &layout) {
  TokenAxes axes;
  for (MeshAxis axis : {MeshAxis::DpReplicate, MeshAxis::DpShard, MeshAxis::Cp})
    if (layout.degree(axis) > 1) {
      std::string_view name = meshAxisName(axis);
      (axis == MeshAxis::Cp ? axes.sequence : axes.batch)
          .push_back(StringRef(name.data(), name.size()));
    }
  return axes;
}

SmallVector<StringRef, 3> TokenAxes::all() const {
  SmallVector<StringRef, 3> out(batch.begin(), batch.end());
  out.append(sequence.begin(), sequence.end());
  return out;
}

SmallVector<SmallVector<StringRef, 2>>
glimmer::detail::tokenSplit(const TokenDims &roles, Value v,
                            const TokenAxes &axes) {
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  SmallVector<SmallVector<StringRef, 2>> dims(rank);
  bool sequenceSeen = false;
  for (int64_t d = 0; d < rank; ++d) {
    switch (roles.role(v, d)) {
    case TokenDims::Role::Batch:
    case TokenDims::Role::FlattenedTokens:
      dims[d] = axes.batch;
      break;
    case TokenDims::Role::Sequence:
      if (!sequenceSeen)
        dims[d] = axes.sequence;
      sequenceSeen = true;
      break;
    case TokenDims::Role::Other:
      break;
    }
  }
  return dims;
}
