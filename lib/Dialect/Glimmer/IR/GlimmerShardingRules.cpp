//===- GlimmerShardingRules.cpp - Sharding rules of the glimmer ops -------===//
//
// One ShardingRuleOpInterface implementation per op that is not elementwise
// (elementwise ops use the interface's default). docs/ShardingEngine.md has
// the table of these rules.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

using namespace mlir;
using namespace glimmer;

using DimFactors = ShardingRule::DimFactors;
using TensorFactors = ShardingRule::TensorFactors;
constexpr FactorKind kPass = FactorKind::PassThrough;
constexpr FactorKind kReduce = FactorKind::Reduction;
constexpr FactorKind kReplicate = FactorKind::NeedReplication;

namespace {
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// A factor for a dimension of `size` (none for size 1, which no sharding
/// can split).
DimFactors dim(ShardingRule &rule, int64_t size, FactorKind kind = kPass) {
  if (size == 1)
    return {};
  return {rule.addFactor(size, kind)};
}

/// One factor per dimension of `shape`, all of `kind`, except the
/// dimensions in `special` (given their own kind).
TensorFactors tensor(ShardingRule &rule, ArrayRef<int64_t> shape,
                     FactorKind kind = kPass,
                     ArrayRef<std::pair<int64_t, FactorKind>> special = {}) {
  TensorFactors t;
  for (auto [d, size] : llvm::enumerate(shape)) {
    FactorKind k = kind;
    for (auto [sd, sk] : special)
      if (sd == int64_t(d))
        k = sk;
    t.push_back(dim(rule, size, k));
  }
  return t;
}

/// Each dimension of `shape` where `keep(d)` holds shares the factor of the
/// same dimension of `like`; the others get `kind` factors of their own.
template <typename Keep>
TensorFactors sameExcept(ShardingRule &rule, const TensorFactors &like,
                         ArrayRef<int64_t> shape, Keep keep,
                         FactorKind kind = kReplicate) {
  TensorFactors t;
  for (auto [d, size] : llvm::enumerate(shape))
    t.push_back(keep(int64_t(d)) ? like[d] : dim(rule, size, kind));
  return t;
}
} // namespace

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

ShardingRule ConstantOp::getShardingRule() {
  ShardingRule rule;
  rule.addResult(tensor(rule, shapeOf(getOutput())));
  return rule;
}

ShardingRule IotaOp::getShardingRule() {
  // A split counting dimension would need each rank's offset.
  ShardingRule rule;
  rule.addResult(tensor(rule, shapeOf(getOutput()), kPass,
                        {{getDim(), kReplicate}}));
  return rule;
}

ShardingRule ReshapeOp::getShardingRule() {
  return ShardingRule::reshape(shapeOf(getInput()), shapeOf(getOutput()));
}

ShardingRule TransposeOp::getShardingRule() {
  ShardingRule rule;
  TensorFactors in = tensor(rule, shapeOf(getInput()));
  TensorFactors out;
  for (int64_t p : getPermutation())
    out.push_back(in[p]);
  rule.addOperand(in);
  rule.addResult(out);
  return rule;
}

ShardingRule BroadcastInDimOp::getShardingRule() {
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getOutput());
  TensorFactors result(out.size()), input(in.size());
  for (auto [i, d] : llvm::enumerate(getDims()))
    if (in[i] == out[d]) // a broadcast size-1 dimension has no factor
      input[i] = result[d] = dim(rule, out[d]);
  for (auto [d, size] : llvm::enumerate(out))
    if (result[d].empty())
      result[d] = dim(rule, size);
  rule.addOperand(input);
  rule.addResult(result);
  return rule;
}

ShardingRule SliceOp::getShardingRule() {
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput());
  auto whole = [&](int64_t d) {
    return getStart()[d] == 0 && getLimit()[d] == in[d] && getStride()[d] == 1;
  };
  // A cut dimension needs the whole input on every rank.
  TensorFactors input;
  for (auto [d, size] : llvm::enumerate(in))
    input.push_back(dim(rule, size, whole(d) ? kPass : kReplicate));
  rule.addOperand(input);
  rule.addResult(sameExcept(rule, input, shapeOf(getOutput()), whole));
  return rule;
}

ShardingRule ConcatOp::getShardingRule() {
  ShardingRule rule;
  int64_t axis = getDim();
  ArrayRef<int64_t> out = shapeOf(getOutput());
  TensorFactors result = tensor(rule, out, kPass, {{axis, kReplicate}});
  auto notAxis = [&](int64_t d) { return d != axis; };
  for (Value in : getInputs())
    rule.addOperand(sameExcept(rule, result, shapeOf(in), notAxis));
  rule.addResult(result);
  return rule;
}

ShardingRule PadOp::getShardingRule() {
  ShardingRule rule;
  auto unpadded = [&](int64_t d) {
    return getLow()[d] == 0 && getHigh()[d] == 0;
  };
  ArrayRef<int64_t> in = shapeOf(getInput());
  TensorFactors input;
  for (auto [d, size] : llvm::enumerate(in))
    input.push_back(dim(rule, size, unpadded(d) ? kPass : kReplicate));
  rule.addOperand(input);
  rule.addResult(sameExcept(rule, input, shapeOf(getOutput()), unpadded));
  return rule;
}

//===----------------------------------------------------------------------===//
// Reductions and scans
//===----------------------------------------------------------------------===//

ShardingRule ReduceOp::getShardingRule() {
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput());
  // A sum over a split dimension is a partial sum; max and min are not sums,
  // so their reduced dimensions are needed whole.
  FactorKind reduced =
      getKind() == ReductionKind::Sum ? kReduce : kReplicate;
  TensorFactors input, result;
  for (auto [d, size] : llvm::enumerate(in)) {
    bool isReduced = llvm::is_contained(getDims(), int64_t(d));
    input.push_back(dim(rule, size, isReduced ? reduced : kPass));
    if (!isReduced)
      result.push_back(input.back());
    else if (getKeepDims())
      result.push_back({});
  }
  rule.addOperand(input);
  rule.addResult(result);
  return rule;
}

/// Every dimension of every input is summed: a split one makes the scalar
/// result a partial sum over its axes.
ShardingRule SumSquaresOp::getShardingRule() {
  ShardingRule rule;
  for (Value input : getInputs())
    rule.addOperand(tensor(rule, shapeOf(input), kReduce));
  rule.addResult({});
  return rule;
}

/// One operand and one result of the same shape, with `dimension` needed
/// whole (a scan, a softmax, a permutation along it).
static ShardingRule alongAxisRule(Operation *op, int64_t dimension) {
  ShardingRule rule;
  TensorFactors t = tensor(rule, shapeOf(op->getOperand(0)), kPass,
                           {{dimension, kReplicate}});
  rule.addOperand(t);
  rule.addResult(t);
  return rule;
}

ShardingRule CumsumOp::getShardingRule() {
  return alongAxisRule(*this, getDim());
}
ShardingRule ArgsortOp::getShardingRule() {
  return alongAxisRule(*this, getDim());
}
ShardingRule SoftmaxOp::getShardingRule() {
  return alongAxisRule(*this, getDim());
}

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

ShardingRule EmbeddingOp::getShardingRule() {
  // A lookup is onehot(ids) @ table: the vocabulary is its contraction. A
  // table split by rows (vocab-parallel) leaves each rank the rows it holds
  // and zeros elsewhere, a partial sum (the partitioner's handler makes the
  // ids local and masks the rest).
  ShardingRule rule;
  ArrayRef<int64_t> table = shapeOf(getTable());
  TensorFactors ids = tensor(rule, shapeOf(getIds()));
  DimFactors vocab = dim(rule, table[0], kReduce);
  DimFactors hidden = dim(rule, table[1]);
  TensorFactors result = ids;
  result.push_back(hidden);
  rule.addOperand({vocab, hidden});
  rule.addOperand(ids);
  rule.addResult(result);
  return rule;
}

ShardingRule LinearOp::getShardingRule() {
  // y[..., n] = sum_k x[..., k] W[n, k] (+ b[n]).
  ShardingRule rule;
  ArrayRef<int64_t> x = shapeOf(getInput()), w = shapeOf(getWeight());
  TensorFactors input = tensor(rule, x.drop_back());
  TensorFactors result = input;
  DimFactors k = dim(rule, w[1], kReduce), n = dim(rule, w[0]);
  input.push_back(k);
  result.push_back(n);
  rule.addOperand(input);
  rule.addOperand({n, k});
  if (getBias())
    rule.addOperand({n});
  rule.addResult(result);
  return rule;
}

ShardingRule MatmulOp::getShardingRule() {
  ShardingRule rule;
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs());
  int64_t rank = lhs.size();
  TensorFactors batch = tensor(rule, lhs.drop_back(2));
  int64_t m = getTransposeLhs() ? lhs[rank - 1] : lhs[rank - 2];
  int64_t k = getTransposeLhs() ? lhs[rank - 2] : lhs[rank - 1];
  int64_t n = getTransposeRhs() ? rhs[rank - 2] : rhs[rank - 1];
  DimFactors fm = dim(rule, m), fk = dim(rule, k, kReduce), fn = dim(rule, n);
  TensorFactors l = batch, r = batch, out = batch;
  if (getTransposeLhs())
    l.append({fk, fm});
  else
    l.append({fm, fk});
  if (getTransposeRhs())
    r.append({fn, fk});
  else
    r.append({fk, fn});
  out.append({fm, fn});
  rule.addOperand(l);
  rule.addOperand(r);
  rule.addResult(out);
  return rule;
}

/// Norms over the last dimension: leading dimensions pass through (so
/// sequence parallelism splits tokens), the normalized one is needed whole;
/// the weight (and bias) follow it.
static ShardingRule normRule(Operation *op) {
  ShardingRule rule;
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0));
  TensorFactors t = tensor(rule, x.drop_back());
  DimFactors features = dim(rule, x.back(), kReplicate);
  t.push_back(features);
  rule.addOperand(t);
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    rule.addOperand({features});
  rule.addResult(t);
  return rule;
}

ShardingRule RmsNormOp::getShardingRule() { return normRule(*this); }
ShardingRule LayerNormOp::getShardingRule() { return normRule(*this); }

ShardingRule RopeOp::getShardingRule() {
  // input [B, T, H, D], positions [B, T]: features rotate in pairs, so D is
  // needed whole; heads pass through.
  ShardingRule rule;
  ArrayRef<int64_t> x = shapeOf(getInput());
  TensorFactors input = tensor(rule, x, kPass, {{3, kReplicate}});
  rule.addOperand(input);
  rule.addOperand({input[0], input[1]});
  rule.addResult(input);
  return rule;
}

ShardingRule AttentionOp::getShardingRule() {
  // query [B, Hq, Tq, D], key/value [B, Hkv, Tk, D] (or sequence-major,
  // [B, T, H, D]: the same factors, heads and sequence exchanged); Hq = Hkv
  // * G with query head h using key head h / G, so the query's head
  // dimension is the factors (kv head, group), major to minor. Keys are
  // needed whole along Tk (context parallelism all-gathers them in its
  // handler); the contracted head dimension of Q and K is needed whole
  // (softmax sits between the two products).
  ShardingRule rule;
  auto headMajor = [&](Value x, AttentionTensor which) {
    Type t = x.getType();
    return cast<RankedTensorType>(
               isSequenceMajor(which) ? swapHeadsAndSequence(t) : t)
        .getShape();
  };
  ArrayRef<int64_t> q = headMajor(getQuery(), kQuery),
                    k = headMajor(getKey(), kKey);
  DimFactors b = dim(rule, q[0]);
  DimFactors kvHeads = dim(rule, k[1]);
  DimFactors qHeads = kvHeads;
  if (q[1] != k[1])
    qHeads.append(dim(rule, q[1] / k[1]));
  DimFactors tq = dim(rule, q[2]);
  DimFactors tk = dim(rule, k[2], kReplicate);
  DimFactors dqk = dim(rule, q[3], kReplicate);
  DimFactors dv = dim(rule, k[3]);
  auto laidOut = [&](AttentionTensor which, DimFactors h, DimFactors t,
                     DimFactors d) -> TensorFactors {
    if (isSequenceMajor(which))
      return {b, t, h, d};
    return {b, h, t, d};
  };
  rule.addOperand(laidOut(kQuery, qHeads, tq, dqk));
  rule.addOperand(laidOut(kKey, kvHeads, tk, dqk));
  rule.addOperand(laidOut(kValue, kvHeads, tk, dv));
  if (getQueryPositions()) {
    rule.addOperand({b, tq});
    rule.addOperand({b, tk});
  }
  if (getQueryDocuments()) {
    rule.addOperand({b, tq});
    rule.addOperand({b, tk});
  }
  if (getQueryBlocks()) {
    rule.addOperand({b, tq});
    rule.addOperand({b, tk});
  }
  rule.addResult(laidOut(kOutput, qHeads, tq, dv));
  rule.addResult({b, qHeads, tq});
  return rule;
}

ShardingRule CrossEntropyOp::getShardingRule() {
  // Sum and count over all tokens: the token dimensions are reductions. A
  // vocabulary split (logits of a vocab-parallel output projection) is
  // handled: loss-parallel cross-entropy combines the ranks' log-sum-exp
  // and target logits, so no rank holds the full logits.
  ShardingRule rule;
  ArrayRef<int64_t> logits = shapeOf(getLogits());
  TensorFactors tokens = tensor(rule, logits.drop_back(), kReduce);
  TensorFactors l = tokens;
  l.push_back(dim(rule, logits.back(), FactorKind::Handled));
  rule.addOperand(l);
  rule.addOperand(tokens);
  rule.addResult({});
  rule.addResult({});
  return rule;
}

ShardingRule Conv2dOp::getShardingRule() {
  // out[n, o, y, x] = sum_{c, i, j} in[n, c, y*s + i, x*s + j] w[o, c, i, j]:
  // batch and output channels pass through, input channels are a
  // contraction, spatial windows overlap (needed whole).
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), w = shapeOf(getWeight()),
                    out = shapeOf(getOutput());
  DimFactors n = dim(rule, in[0]), c = dim(rule, in[1], kReduce),
             o = dim(rule, w[0]);
  rule.addOperand({n, c, dim(rule, in[2], kReplicate),
                   dim(rule, in[3], kReplicate)});
  rule.addOperand({o, c, dim(rule, w[2], kReplicate),
                   dim(rule, w[3], kReplicate)});
  if (getBias())
    rule.addOperand({o});
  rule.addResult({n, o, dim(rule, out[2], kReplicate),
                  dim(rule, out[3], kReplicate)});
  return rule;
}

//===----------------------------------------------------------------------===//
// Multimodal and context-parallel ops
//===----------------------------------------------------------------------===//

ShardingRule VisionBankIndicesOp::getShardingRule() {
  // A prefix count over the whole flattened batch: computed on the full
  // batch and sequence, before any split.
  ShardingRule rule;
  TensorFactors t = tensor(rule, shapeOf(getTokens()), kReplicate);
  rule.addOperand(t);
  rule.addResult(t);
  return rule;
}

ShardingRule VisionGatherOp::getShardingRule() {
  // embeds [B, T, D], bank [N, D], indices [B, T]: each token's row comes
  // from anywhere in the bank, which is needed whole (replicated over cp);
  // tokens and features pass through.
  ShardingRule rule;
  TensorFactors embeds = tensor(rule, shapeOf(getEmbeds()));
  DimFactors rows = dim(rule, shapeOf(getBank())[0], kReplicate);
  rule.addOperand(embeds);
  rule.addOperand({rows, embeds[2]});
  rule.addOperand({embeds[0], embeds[1]});
  rule.addResult(embeds);
  return rule;
}

ShardingRule CpPermuteOp::getShardingRule() {
  return alongAxisRule(*this, getDim());
}
ShardingRule CpUnpermuteOp::getShardingRule() {
  return alongAxisRule(*this, getDim());
}

//===----------------------------------------------------------------------===//
// Collectives (over other axes than the ones being partitioned)
//===----------------------------------------------------------------------===//

/// A collective along `dimension`: the other dimensions pass through; the
/// collective's own dimension changes size, so operand and result each
/// need theirs whole.
static ShardingRule alongDimRule(Operation *op, int64_t dimension) {
  ShardingRule rule;
  TensorFactors in = tensor(rule, shapeOf(op->getOperand(0)), kPass,
                            {{dimension, kReplicate}});
  TensorFactors out = in;
  out[dimension] =
      dim(rule, shapeOf(op->getResult(0))[dimension], kReplicate);
  rule.addOperand(in);
  rule.addResult(out);
  return rule;
}

ShardingRule AllGatherOp::getShardingRule() {
  return alongDimRule(*this, getDim());
}
ShardingRule ReduceScatterOp::getShardingRule() {
  return alongDimRule(*this, getDim());
}
ShardingRule MicrobatchSliceOp::getShardingRule() {
  ShardingRule rule = alongDimRule(*this, getDim());
  rule.addOperand({});
  return rule;
}
ShardingRule LocalShardOp::getShardingRule() {
  return alongDimRule(*this, getDim());
}
/// Both dimensions the all-to-all cuts and joins change size: whole.
ShardingRule AllToAllOp::getShardingRule() {
  ShardingRule rule;
  TensorFactors in =
      tensor(rule, shapeOf(getInput()), kPass,
             {{getSplitDim(), kReplicate}, {getConcatDim(), kReplicate}});
  TensorFactors out = in;
  for (int64_t d : {getSplitDim(), getConcatDim()})
    out[d] = dim(rule, shapeOf(getOutput())[d], kReplicate);
  rule.addOperand(in);
  rule.addResult(out);
  return rule;
}
