//===- AttentionMasks.cpp - Attention masks as per-token terms ------------===//
//
// Hugging Face builds its attention masks by broadcasting per-token values
// against each other (transformers' masking_utils: causal, sliding-window,
// token-type and padding functions combined with and/or). Traced and
// imported, a mask is a tree of selects (`a & b` is select(a, b, false),
// `a | b` is select(a, true, b)) over
//  * constant [Tq, Tk] matrices: what depended only on indices (causal,
//    window) folds at import;
//  * comparisons of a query-side value [B, 1, Tq, 1] with a key-side value
//    [B, 1, 1, Tk], both broadcast to [B, 1, Tq, Tk];
//  * per-token conditions of one side (padding).
// This reads such a tree into the terms glimmer.attention takes. What it
// cannot read (another combination) is left to the caller, which keeps the
// attention spelled out, exactly as the model computes it.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/AttentionMasks.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;

namespace glimmer {

std::optional<AttentionMaskForm>
classifyMaskMatrix(int64_t rows, int64_t cols, const std::vector<bool> &bits) {
  AttentionMaskForm form;
  if (llvm::all_of(bits, [](bool x) { return x; }))
    return form;
  // Causality and windows compare positions, which the indices are only on
  // a square matrix.
  if (rows != cols)
    return std::nullopt;
  // Each row must be one run of true entries [lo, hi].
  std::vector<int64_t> lo(rows), hi(rows);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t first = -1, last = -1;
    for (int64_t j = 0; j < cols; ++j)
      if (bits[size_t(i * cols + j)]) {
        if (first < 0)
          first = j;
        else if (last != j - 1)
          return std::nullopt;
        last = j;
      }
    if (first < 0)
      return std::nullopt;
    lo[size_t(i)] = first;
    hi[size_t(i)] = last;
  }
  bool causal = true, open = true;
  for (int64_t i = 0; i < rows; ++i) {
    causal &= hi[size_t(i)] == i;
    open &= hi[size_t(i)] == cols - 1;
  }
  if (!causal && !open)
    return std::nullopt;
  form.causal = causal;
  // A window W keeps keys j with i - j < W: lo = max(0, i - W + 1).
  for (int64_t i = 0; i < rows; ++i)
    if (lo[size_t(i)] > 0) {
      form.window = i - lo[size_t(i)] + 1;
      break;
    }
  int64_t w = form.window.value_or(rows + 1);
  for (int64_t i = 0; i < rows; ++i)
    if (lo[size_t(i)] != std::max<int64_t>(0, i - w + 1))
      return std::nullopt;
  return form;
}

namespace {

/// The operand of a broadcast_in_dim that keeps the rank and every
/// dimension's place (it only widens dimensions of size 1), else `v`.
Value throughWidening(Value v) {
  while (auto bc = v.getDefiningOp<BroadcastInDimOp>()) {
    auto in = cast<RankedTensorType>(bc.getInput().getType());
    auto out = cast<RankedTensorType>(bc.getType());
    if (in.getRank() != out.getRank())
      break;
    bool identity = true;
    for (auto [i, d] : llvm::enumerate(bc.getDims()))
      identity &= d == int64_t(i);
    if (!identity)
      break;
    v = bc.getInput();
  }
  return v;
}

/// Through widening broadcasts and reshapes that only add or drop unit
/// dimensions ahead of the last two ([Tq, Tk] -> [1, 1, Tq, Tk]): the value
/// the mask code computed.
Value throughUnitDims(Value v) {
  while (true) {
    v = throughWidening(v);
    auto r = v.getDefiningOp<ReshapeOp>();
    if (!r)
      return v;
    auto in = cast<RankedTensorType>(r.getInput().getType());
    auto out = cast<RankedTensorType>(r.getType());
    if (in.getRank() < 2 ||
        in.getShape().take_back(2) != out.getShape().take_back(2))
      return v;
    v = r.getInput();
  }
}

/// The value of a splat constant, seen through broadcasts.
std::optional<Attribute> splatOf(Value v) {
  while (auto bc = v.getDefiningOp<BroadcastInDimOp>())
    v = bc.getInput();
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<Attribute>();
}

std::optional<bool> boolSplat(Value v) {
  auto a = splatOf(v);
  if (!a)
    return std::nullopt;
  if (auto i = dyn_cast<IntegerAttr>(*a); i && i.getType().isInteger(1))
    return i.getValue().getBoolValue();
  return std::nullopt;
}


std::optional<int64_t> intSplat(Value v) {
  auto a = splatOf(v);
  if (!a)
    return std::nullopt;
  if (auto i = dyn_cast<IntegerAttr>(*a); i && !i.getType().isInteger(1))
    return i.getValue().getSExtValue();
  return std::nullopt;
}

/// A constant boolean mask [..., Tq, Tk] (each of its last two dimensions
/// the full size or 1) that is the same matrix for every batch entry and
/// head: that [Tq, Tk] matrix.
std::optional<std::vector<bool>> constantMatrix(Value v, int64_t tq,
                                                int64_t tk) {
  v = throughUnitDims(v);
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  auto type = cast<RankedTensorType>(v.getType());
  if (!dense || !type.getElementType().isInteger(1) || type.getRank() < 2)
    return std::nullopt;
  ArrayRef<int64_t> s = type.getShape().take_back(2);
  bool rowsWide = s[0] == tq, colsWide = s[1] == tk;
  if (!(rowsWide || s[0] == 1) || !(colsWide || s[1] == 1))
    return std::nullopt;
  std::vector<bool> all(dense.getValues<bool>().begin(),
                        dense.getValues<bool>().end());
  int64_t slice = s[0] * s[1];
  for (size_t n = size_t(slice); n < all.size(); ++n)
    if (all[n] != all[n % size_t(slice)])
      return std::nullopt;
  std::vector<bool> m(size_t(tq * tk));
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t j = 0; j < tk; ++j)
      m[size_t(i * tk + j)] =
          all[size_t((rowsWide ? i : 0) * s[1] + (colsWide ? j : 0))];
  return m;
}

/// A per-token value broadcast along the other side: [Bs, 1..., T, 1]
/// (query side) or [Bs, 1..., 1, T] (key side), Bs the batch or 1, of rank
/// 2 to 4.
bool isSide(Value v, bool query, int64_t t) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() < 2 || type.getRank() > 4)
    return false;
  ArrayRef<int64_t> s = type.getShape();
  int64_t r = type.getRank();
  for (int64_t d = 1; d < r - 2; ++d)
    if (s[d] != 1)
      return false;
  return query ? s[r - 2] == t && s[r - 1] == 1
               : s[r - 2] == 1 && s[r - 1] == t;
}

/// `x` for `!x` as the importer writes it: select(x, false, true), or
/// `x == 0` of x converted to an integer.
Value negated(Value v) {
  v = throughWidening(v);
  if (auto sel = v.getDefiningOp<SelectOp>()) {
    std::optional<bool> t = boolSplat(sel.getOnTrue()),
                        f = boolSplat(sel.getOnFalse());
    if (t && f && !*t && *f)
      return sel.getCond();
  }
  if (auto cmp = v.getDefiningOp<CompareOp>()) {
    auto conv = cmp.getLhs().getDefiningOp<ConvertOp>();
    std::optional<int64_t> zero = intSplat(cmp.getRhs());
    if (cmp.getDirection() == CompareDirection::EQ && conv && zero &&
        *zero == 0 &&
        cast<RankedTensorType>(conv.getInput().getType())
            .getElementType()
            .isInteger(1))
      return conv.getInput();
  }
  return Value();
}

/// The mask as a conjunction of its terms.
struct Conjunction {
  std::vector<bool> constant; // empty: all true
  /// "causal or same block" terms: the causal matrix and the block.
  struct Block {
    std::vector<bool> orMatrix;
    Value query, key;
    bool members = false;
  };
  std::vector<Block> blocks;
  /// Per-token conditions on one side (padding).
  std::vector<Value> queryKeep, keyKeep;
  /// "same id" terms, qd == kd (packed sequences).
  std::vector<std::pair<Value, Value>> sameIds;
};

class Reader {
public:
  Reader(int64_t tq, int64_t tk) : tq(tq), tk(tk) {}

  /// Adds the terms of `v` (an i1 mask of the full shape) to `c`.
  bool conjoin(Value v, Conjunction &c) {
    if (std::optional<bool> s = boolSplat(v))
      return *s; // all true adds nothing; all false is no attention form
    v = throughUnitDims(v);
    Value side = v;
    if (cast<RankedTensorType>(side.getType()).getElementType().isInteger(1)) {
      if (isSide(side, true, tq)) {
        c.queryKeep.push_back(side);
        return true;
      }
      if (isSide(side, false, tk)) {
        c.keyKeep.push_back(side);
        return true;
      }
    }
    Value q, k;
    if (readEquality(v, q, k)) {
      c.sameIds.push_back({q, k});
      return true;
    }
    if (auto m = constantMatrix(v, tq, tk)) {
      if (c.constant.empty())
        c.constant = *m;
      else
        for (size_t e = 0; e < m->size(); ++e)
          c.constant[e] = c.constant[e] && (*m)[e];
      return true;
    }
    auto sel = v.getDefiningOp<SelectOp>();
    if (!sel)
      return false;
    std::optional<bool> t = boolSplat(sel.getOnTrue()),
                        f = boolSplat(sel.getOnFalse());
    if (f && !*f) // cond & on_true (cond itself when on_true is true)
      return conjoin(sel.getCond(), c) &&
             (t ? *t : conjoin(sel.getOnTrue(), c));
    if (t && *t) // cond | on_false
      return disjoin(sel.getCond(), sel.getOnFalse(), c);
    return false;
  }

private:
  /// `a | b` with one side the causal matrix and the other a block term.
  bool disjoin(Value a, Value b, Conjunction &c) {
    for (auto [m, other] : {std::pair{a, b}, std::pair{b, a}}) {
      std::optional<std::vector<bool>> matrix = constantMatrix(m, tq, tk);
      if (!matrix)
        continue;
      Conjunction::Block block{*matrix, Value(), Value()};
      if (!readBlock(other, block))
        return false;
      c.blocks.push_back(block);
      return true;
    }
    return false;
  }

  /// `qb == kb && qb >= 0` (or kb >= 0), in either order; or membership of
  /// both sides, `inQ && inK` (one block).
  bool readBlock(Value v, Conjunction::Block &block) {
    v = throughUnitDims(v);
    auto sel = v.getDefiningOp<SelectOp>();
    std::optional<bool> f = sel ? boolSplat(sel.getOnFalse()) : std::nullopt;
    if (!f || *f)
      return false;
    Value a = throughUnitDims(sel.getCond()),
          b = throughUnitDims(sel.getOnTrue());
    if (isSide(b, true, tq) && isSide(a, false, tk))
      std::swap(a, b);
    if (isSide(a, true, tq) && isSide(b, false, tk) &&
        cast<RankedTensorType>(a.getType()).getElementType().isInteger(1)) {
      block.query = a;
      block.key = b;
      block.members = true;
      return true;
    }
    for (auto [eq, guard] : {std::pair{sel.getCond(), sel.getOnTrue()},
                             std::pair{sel.getOnTrue(), sel.getCond()}}) {
      Value q, k;
      if (!readEquality(eq, q, k))
        continue;
      Value g = throughUnitDims(guard);
      auto cmp = g.getDefiningOp<CompareOp>();
      if (!cmp)
        continue;
      std::optional<int64_t> bound = intSplat(cmp.getRhs());
      Value x = throughUnitDims(cmp.getLhs());
      bool nonNegative =
          bound && ((cmp.getDirection() == CompareDirection::GE && *bound == 0) ||
                    (cmp.getDirection() == CompareDirection::GT && *bound == -1));
      if (!nonNegative || (x != q && x != k))
        continue;
      block.query = q;
      block.key = k;
      return true;
    }
    return false;
  }

  /// `q == k` of a query-side and a key-side integer value, broadcast.
  bool readEquality(Value v, Value &q, Value &k) {
    auto cmp = v.getDefiningOp<CompareOp>();
    if (!cmp || cmp.getDirection() != CompareDirection::EQ ||
        !isa<IntegerType>(
            cast<RankedTensorType>(cmp.getLhs().getType()).getElementType()))
      return false;
    Value l = throughUnitDims(cmp.getLhs()), r = throughUnitDims(cmp.getRhs());
    if (isSide(r, true, tq) && isSide(l, false, tk))
      std::swap(l, r);
    if (!isSide(l, true, tq) || !isSide(r, false, tk))
      return false;
    q = l;
    k = r;
    return true;
  }

  int64_t tq, tk;
};

} // namespace

std::optional<double> floatSplat(Value v) {
  auto a = splatOf(v);
  if (!a)
    return std::nullopt;
  if (auto f = dyn_cast<FloatAttr>(*a))
    return f.getValueAsDouble();
  return std::nullopt;
}

std::optional<AttentionMaskForm> recognizeAttentionMask(Value mask) {
  mask = throughWidening(mask);
  auto type = dyn_cast<RankedTensorType>(mask.getType());
  if (!type || type.getRank() != 4)
    return std::nullopt;
  int64_t tq = type.getDimSize(2), tk = type.getDimSize(3);
  bool finiteDrop = false;
  // An additive mask: 0 where visible, a large negative elsewhere. No row of
  // the forms below is empty (causal attention sees its own position), so
  // adding the most negative float is then exactly masking with -inf.
  if (isa<FloatType>(type.getElementType())) {
    // Known at import: a constant of 0 and large negatives (no row of the
    // constant forms is empty).
    if (auto c = throughUnitDims(mask).getDefiningOp<ConstantOp>()) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense)
        return std::nullopt;
      std::vector<bool> bits;
      for (APFloat x : dense.getValues<APFloat>()) {
        double d = x.convertToDouble();
        if (d != 0.0 && !(d <= -1e30))
          return std::nullopt;
        bits.push_back(d == 0.0);
      }
      auto ctype = cast<RankedTensorType>(c.getType());
      if (ctype.getRank() < 2)
        return std::nullopt;
      int64_t rows = ctype.getDimSize(ctype.getRank() - 2),
              cols = ctype.getDimSize(ctype.getRank() - 1);
      if (rows != tq || cols != tk)
        return std::nullopt;
      for (size_t n = size_t(rows * cols); n < bits.size(); ++n)
        if (bits[n] != bits[n % size_t(rows * cols)])
          return std::nullopt;
      bits.resize(size_t(rows * cols));
      std::optional<AttentionMaskForm> form = classifyMaskMatrix(tq, tk, bits);
      if (form && form->window && !form->causal)
        return std::nullopt;
      return form;
    }
    auto sel = mask.getDefiningOp<SelectOp>();
    std::optional<double> keep =
        sel ? floatSplat(sel.getOnTrue()) : std::nullopt;
    std::optional<double> drop =
        sel ? floatSplat(sel.getOnFalse()) : std::nullopt;
    Value cond = sel ? sel.getCond() : Value();
    if (keep && drop && *keep != 0.0 && *drop == 0.0) {
      // masked_fill(~keep, -big): select(!keep, -big, 0).
      std::swap(keep, drop);
      cond = negated(cond);
    }
    if (!cond || !keep || *keep != 0.0 || !drop || !(*drop <= -1e30))
      return std::nullopt;
    mask = cond;
    // The most negative float rather than -inf: a query that sees no key
    // gets PyTorch's average of all values instead of zeros. Only the forms
    // where every query sees its own key (no padding terms) are exact.
    finiteDrop = std::isfinite(*drop);
  }
  Conjunction c;
  if (!Reader(tq, tk).conjoin(mask, c) || c.blocks.size() > 1 ||
      c.sameIds.size() > 1)
    return std::nullopt;
  std::optional<AttentionMaskForm> form;
  if (c.constant.empty())
    form = AttentionMaskForm();
  else
    form = classifyMaskMatrix(tq, tk, c.constant);
  if (!form)
    return std::nullopt;
  if (!c.blocks.empty()) {
    // window & (causal | block): the or-matrix must be exactly causal.
    const Conjunction::Block &block = c.blocks.front();
    std::optional<AttentionMaskForm> inner =
        classifyMaskMatrix(tq, tk, block.orMatrix);
    if (!inner || !inner->causal || inner->window)
      return std::nullopt;
    // A causal conjunct already cuts every key a block would add.
    if (!form->causal) {
      form->queryBlocks = block.query;
      form->keyBlocks = block.key;
      form->blockMembers = block.members;
    }
    form->causal = true;
  }
  // A window alone (no causality) is not a form glimmer.attention has.
  if (form->window && !form->causal)
    return std::nullopt;
  if (!c.queryKeep.empty() || !c.keyKeep.empty()) {
    if (finiteDrop)
      return std::nullopt;
    form->queryKeep = c.queryKeep;
    form->keyKeep = c.keyKeep;
  }
  if (!c.sameIds.empty()) {
    // The ids are the documents as they are. With padding terms too, the
    // two would have to share the document ids (not read: the mask stays
    // spelled out); a query whose id no key shares would see nothing, which
    // the most negative float does not express.
    if (finiteDrop || !form->queryKeep.empty() || !form->keyKeep.empty())
      return std::nullopt;
    form->queryIds = c.sameIds.front().first;
    form->keyIds = c.sameIds.front().second;
  }
  return form;
}

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A per-token value as the mask code read it ([Bs, 1..., T, 1] or
/// [Bs, 1..., 1, T], Bs the batch or 1) as [B, T].
Value perToken(OpBuilder &b, Location loc, Value x, int64_t batch, int64_t t) {
  RankedTensorType type = typeOf(x);
  int64_t bs = type.getRank() > 2 ? type.getDimSize(0) : 1;
  auto flat = RankedTensorType::get({bs, t}, type.getElementType());
  if (type != flat)
    x = ReshapeOp::create(b, loc, flat, x);
  if (bs != batch)
    x = BroadcastInDimOp::create(
        b, loc, RankedTensorType::get({batch, t}, type.getElementType()), x,
        b.getDenseI64ArrayAttr({0, 1}));
  return x;
}

Value splatI64(OpBuilder &b, Location loc, int64_t batch, int64_t t,
               int64_t value) {
  auto type = RankedTensorType::get({batch, t}, b.getI64Type());
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getI64IntegerAttr(value)));
}

/// cond ? onTrue : onFalse of [B, T] i64 values.
Value choose(OpBuilder &b, Location loc, Value cond, Value onTrue,
             Value onFalse) {
  return SelectOp::create(b, loc, cond, onTrue, onFalse);
}

} // namespace

AttentionOp buildMaskedAttention(OpBuilder &b, Location loc, Value q, Value k,
                                 Value v, const AttentionMaskForm &form,
                                 double scale) {
  ArrayRef<int64_t> qs = typeOf(q).getShape(), ks = typeOf(k).getShape();
  int64_t batch = qs[0], tq = qs[2], tk = ks[2];
  auto toI64 = [&](Value x) -> Value {
    auto type = RankedTensorType::get(typeOf(x).getShape(), b.getI64Type());
    return type == x.getType() ? x : ConvertOp::create(b, loc, type, x);
  };
  Value qBlocks, kBlocks;
  if (form.queryBlocks) {
    qBlocks = perToken(b, loc, form.queryBlocks, batch, tq);
    kBlocks = perToken(b, loc, form.keyBlocks, batch, tk);
    if (form.blockMembers) {
      // Membership of one block: id 0 for members, -1 for the rest.
      qBlocks = choose(b, loc, qBlocks, splatI64(b, loc, batch, tq, 0),
                       splatI64(b, loc, batch, tq, -1));
      kBlocks = choose(b, loc, kBlocks, splatI64(b, loc, batch, tk, 0),
                       splatI64(b, loc, batch, tk, -1));
    } else {
      qBlocks = toI64(qBlocks);
      kBlocks = toI64(kBlocks);
    }
  }
  // Per-token conditions (padding) as document ids: a query sees only keys
  // of its own id, and ids that fail a condition meet nothing (-1 for
  // queries, -2 for keys).
  Value qDocs, kDocs;
  if (!form.queryKeep.empty() || !form.keyKeep.empty()) {
    auto ids = [&](ArrayRef<Value> keep, int64_t t, int64_t none) {
      Value id = splatI64(b, loc, batch, t, 0);
      for (Value c : keep)
        id = choose(b, loc, perToken(b, loc, c, batch, t), id,
                    splatI64(b, loc, batch, t, none));
      return id;
    };
    qDocs = ids(form.queryKeep, tq, -1);
    kDocs = ids(form.keyKeep, tk, -2);
  }
  // Shared ids (packed sequences) are the documents themselves.
  if (form.queryIds) {
    qDocs = toI64(perToken(b, loc, form.queryIds, batch, tq));
    kDocs = toI64(perToken(b, loc, form.keyIds, batch, tk));
  }
  // Global view: token i sits at position i. The causal mask is a
  // comparison of positions, which survives the CP permutation.
  Value pos;
  if (form.causal)
    pos = IotaOp::create(b, loc,
                         RankedTensorType::get({batch, tq}, b.getI64Type()),
                         b.getI64IntegerAttr(1));
  return AttentionOp::create(
      b, loc, q, k, v, pos, pos, qDocs, kDocs, qBlocks, kBlocks,
      form.causal ? b.getUnitAttr() : nullptr,
      form.window ? b.getI64IntegerAttr(*form.window) : IntegerAttr(),
      b.getF64FloatAttr(scale), /*sequence_major=*/DenseBoolArrayAttr());
}

} // namespace glimmer
