//===- Indexing.cpp - Indexing, gather and scatter converters -------------===//
//
// Ops that read or write rows picked by index tensors or masks: advanced
// indexing (x[idx], x[mask]), index_select and masked_scatter, each as row
// gathers of the dialect's embedding op.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

#include <torch/csrc/jit/ir/constants.h>

#include <algorithm>

using namespace glimmer;
using namespace glimmer::detail;

MValue OpConverter::gatherRows(MValue x, MValue idx) {
  auto s = shapeOf(x);
  if (s.empty())
    fail("indexing a zero-dim tensor");
  int64_t row = numElements(s.drop_front());
  MValue g = EmbeddingOp::create(b, loc, reshape(x, {s[0], row}), idx);
  std::vector<int64_t> out(shapeOf(idx).begin(), shapeOf(idx).end());
  out.insert(out.end(), s.begin() + 1, s.end());
  return reshape(g, out);
}

// The position in `self` flattened of each element of `index` for gather
// and scatter along `dim`: index's value on dim, the element's own
// coordinate elsewhere (index is at most self's size on the other
// dimensions); index is checked against self's size on dim.
MValue OpConverter::scatterPositions(MValue self, int64_t dim, MValue index,
                                     const char *what) {
  auto s = shapeOf(self);
  auto shape = shapeOf(index);
  if (shape.size() != s.size())
    fail(std::string(what) + "'s index must have the rank of its input");
  MValue idx = CheckIndicesOp::create(b, loc, convert(index, i64()),
                                      b.getI64IntegerAttr(s[dim]),
                                      b.getStringAttr(what),
                                      mlir::IntegerAttr());
  MValue linear;
  int64_t stride = 1;
  for (int64_t k = int64_t(s.size()) - 1; k >= 0; --k) {
    MValue at = k == dim ? idx
                         : MValue(IotaOp::create(b, loc,
                                                 tensorType(shape, i64()),
                                                 b.getI64IntegerAttr(k)));
    MValue term = stride == 1
                      ? at
                      : MValue(MulOp::create(
                            b, loc, at, splat(shape, i64(), double(stride))));
    linear = linear ? MValue(AddOp::create(b, loc, linear, term)) : term;
    stride *= s[k];
  }
  return reshape(linear, {numElements(shape)});
}

// x read at positions `idx` (1-D or a scalar) of dimension `dim`: that
// dimension moved to the front, a row gather, and moved back.
MValue OpConverter::selectAlong(MValue x, int64_t dim, MValue idx) {
  int64_t rank = shapeOf(x).size();
  if (rank == 0)
    fail("selecting along a dimension of a zero-dim tensor");
  idx = reshape(convert(idx, i64()), {numElements(shapeOf(idx))});
  if (dim == 0)
    return gatherRows(x, idx);
  std::vector<int64_t> front{dim}, back;
  for (int64_t k = 0; k < rank; ++k) {
    if (k != dim)
      front.push_back(k);
    back.push_back(k == dim ? 0 : k < dim ? k + 1 : k);
  }
  return transpose(gatherRows(transpose(x, front), idx), back);
}

// x[..., i_p, ..., i_{p+k-1}, ...]: integer index tensors on adjacent
// dimensions [p, p + k) (None elsewhere), broadcast together to a shape
// S. The result is x's dimensions before p, S, then x's dimensions after
// p + k (PyTorch's rule for adjacent indices): the indexed dimensions move
// to the front, merge into one, and one row gather reads them at the
// linear index ((i_p * s_{p+1} + i_{p+1}) * s_{p+2} + ...). Every index
// but the first is checked against its dimension (check_indices), so that
// one out of range fails instead of reading a neighbouring row; the
// gather checks the linear index. Negative indices fail those checks.
void OpConverter::convertIndex(OpCall *n) {
  MValue x = tensorIn(n, 0);
  Imp &indices = in(n, 1);
  if (indices.kind != Imp::List)
    fail("aten::index expects a list of indices");
  auto s = shapeOf(x);
  int64_t first = -1, count = 0, maskAt = -1;
  for (size_t d = 0; d < indices.list.size(); ++d) {
    const Imp &e = indices.list[d];
    if (e.kind == Imp::None)
      continue;
    if (e.kind != Imp::Tensor)
      fail("aten::index expects tensor or None indices");
    if (elemOf(e.tensor).isInteger(1))
      maskAt = int64_t(d);
    if (first >= 0 && int64_t(d) != first + count)
      fail("indexing non-adjacent dimensions with tensors is not "
           "supported (their result dimensions go first in PyTorch)");
    if (first < 0)
      first = int64_t(d);
    ++count;
  }
  if (first < 0)
    fail("aten::index without an index tensor");
  std::vector<int64_t> common;
  MValue linear;
  if (maskAt >= 0) {
    if (count != 1)
      fail("indexing with a boolean mask and other index tensors together "
           "is not supported");
    auto ms = shapeOf(indices.list[maskAt].tensor);
    if (first + int64_t(ms.size()) > int64_t(s.size()) ||
        !std::equal(ms.begin(), ms.end(), s.begin() + first))
      fail("the boolean mask's shape " + shapeString(ms) +
           " does not match the indexed dimensions of a tensor of shape " +
           shapeString(s));
    count = int64_t(ms.size());
    linear = maskPositions(n, size_t(maskAt), common);
  }
  if (first + count > int64_t(s.size()))
    fail("too many indices for a tensor of rank " + std::to_string(s.size()));
  if (maskAt < 0)
    linear = linearIndex(indices.list, first, count, s, common);
  // Indexed dimensions first, merged.
  int64_t rank = int64_t(s.size());
  std::vector<int64_t> perm, rest;
  for (int64_t d = first; d < first + count; ++d)
    perm.push_back(d);
  for (int64_t d = 0; d < rank; ++d)
    if (d < first || d >= first + count) {
      perm.push_back(d);
      rest.push_back(s[d]);
    }
  int64_t merged = 1;
  for (int64_t d = first; d < first + count; ++d)
    merged *= s[d];
  std::vector<int64_t> flat{merged};
  flat.insert(flat.end(), rest.begin(), rest.end());
  MValue g = gatherRows(reshape(transpose(x, perm), flat), linear);
  if (first == 0) {
    setTensor(n, g);
    return;
  }
  // [S..., before..., after...] -> [before..., S..., after...].
  int64_t c = int64_t(common.size());
  std::vector<int64_t> back;
  for (int64_t d = 0; d < first; ++d)
    back.push_back(c + d);
  for (int64_t d = 0; d < c; ++d)
    back.push_back(d);
  for (int64_t d = c + first; d < c + int64_t(rest.size()); ++d)
    back.push_back(d);
  setTensor(n, transpose(g, back));
}

/// The `count` integer index tensors from dimension `first` broadcast
/// together (their shape into `common`) and merged into one linear index.
MValue OpConverter::linearIndex(const std::vector<Imp> &indices, int64_t first,
                             int64_t count, llvm::ArrayRef<int64_t> s,
                             std::vector<int64_t> &common) {
  for (int64_t j = 0; j < count; ++j)
    common = j == 0
                 ? std::vector<int64_t>(shapeOf(indices[first].tensor).begin(),
                                        shapeOf(indices[first].tensor).end())
                 : broadcastShapes(common, shapeOf(indices[first + j].tensor));
  MValue linear;
  for (int64_t j = 0; j < count; ++j) {
    MValue idx = broadcastTo(convert(indices[first + j].tensor, i64()), common);
    if (j == 0) {
      linear = idx;
      continue;
    }
    int64_t size = s[first + j];
    idx = CheckIndicesOp::create(b, loc, idx, b.getI64IntegerAttr(size),
                                 b.getStringAttr("embedding"),
                                 mlir::IntegerAttr());
    linear = AddOp::create(
        b, loc,
        MulOp::create(b, loc, linear, splat(common, i64(), double(size))), idx);
  }
  return linear;
}

/// x[mask] keeps the rows at the mask's true entries, a count known only
/// from the values. The trace fixed it (every shape after this holds it):
/// the program gathers that many rows at the true entries' linear positions
/// and fails on a batch whose mask selects another number. Returns those
/// positions, their shape in `common`.
MValue OpConverter::maskPositions(OpCall *n, size_t maskAt,
                               std::vector<int64_t> &common) {
  const Imp &maskImp = in(n, 1).list[maskAt];
  MValue mask = maskImp.tensor;
  int64_t rows = numElements(shapeOf(mask));
  if (maskImp.value.defined()) {
    // A mask known at import time: its true entries are constants.
    at::Tensor where = maskImp.value.reshape({-1}).nonzero().reshape({-1}).to(
        c10::ScalarType::Long);
    if (where.size(0) == 0)
      fail("the boolean mask selects no entries in the traced example; "
           "empty tensors are not supported");
    common = {where.size(0)};
    return constantFromTensor(where);
  }
  at::Tensor example = n->exampleValue(
      1, maskAt,
      "indexing with a boolean mask computed at run time takes the "
      "number of entries it selects from the traced example");
  int64_t selected = example.count_nonzero().item<int64_t>();
  if (selected == 0)
    fail("the boolean mask selects no entries in the traced example; "
         "empty tensors are not supported");
  common = {selected};
  return checkedMaskPositions(mask, rows, selected);
}

/// The positions of the `selected` true entries of a run-time mask of
/// `rows` entries, checked to be all of them.
MValue OpConverter::checkedMaskPositions(MValue mask, int64_t rows,
                                      int64_t selected) {
  // With cs the mask's running count, the k-th true entry sits at
  // #{j : cs[j] <= k}. One more row, k = selected, is all entries when no
  // more are true, so 2 * rows - 1 - it lies in [0, rows) only then; a
  // missing entry reads as rows: one range check covers both ways the
  // batch's count can differ from the example's.
  MValue cs = CumsumOp::create(b, loc, reshape(convert(mask, i64()), {rows}),
                               b.getI64IntegerAttr(0));
  std::vector<int64_t> grid{selected + 1, rows};
  MValue ks =
      IotaOp::create(b, loc, tensorType(grid, i64()), b.getI64IntegerAttr(0));
  MValue pos = reduce(
      ReductionKind::Sum,
      convert(compare(CompareDirection::LE,
                      Imp::ofTensor(broadcastTo(reshape(cs, {1, rows}), grid)),
                      Imp::ofTensor(ks)),
              i64()),
      {1}, false);
  MValue end = slice(pos, 0, selected, selected + 1, 1);
  end = SubOp::create(b, loc, splat({1}, i64(), double(2 * rows - 1)), end);
  MValue checked = ConcatOp::create(
      b, loc, mlir::ValueRange{slice(pos, 0, 0, selected, 1), end},
      b.getI64IntegerAttr(0));
  std::string what =
      "index (a boolean mask selects " + std::to_string(selected) +
      " entries in the traced example, a count the program's shapes "
      "hold; this batch's mask selects another number)";
  checked = CheckIndicesOp::create(b, loc, checked, b.getI64IntegerAttr(rows),
                                   b.getStringAttr(what), mlir::IntegerAttr());
  return slice(checked, 0, 0, selected, 1);
}

// masked_scatter(self, mask, source): the i-th true element of the mask
// (broadcast to self's shape, in row-major order) takes the i-th element of
// the flattened source. A mask that selects whole rows (a [..., 1] mask
// broadcast over the last dimension) reads source rows instead: the same
// core pattern as a cumsum-index gather (indices from a prefix sum of the
// mask, a row gather, a select), which glimmer-recognize-vision-merge
// turns into vision ops. Any other mask is the same pattern over single
// elements.
void OpConverter::convertMaskedScatter(OpCall *n) {
  MValue self = tensorIn(n, 0), mask = tensorIn(n, 1), source = tensorIn(n, 2);
  auto s = shapeOf(self);
  std::vector<int64_t> shape(s.begin(), s.end());
  // A row mask: [..., 1] (broadcast over the last dimension, by
  // masked_scatter or by the trace), or [...] broadcast over it by the
  // trace (a broadcast_in_dim onto the leading dimensions; a [...] operand
  // itself would broadcast along the trailing dimensions instead).
  std::vector<int64_t> rowShape(s.begin(), s.end() - (s.empty() ? 0 : 1));
  auto isRowMask = [&](MValue v, bool leadingBroadcast) {
    auto vs = shapeOf(v);
    if (vs.size() == s.size() && !vs.empty() && vs.back() == 1 &&
        vs.drop_back() == llvm::ArrayRef<int64_t>(rowShape))
      return true;
    return leadingBroadcast && vs == llvm::ArrayRef<int64_t>(rowShape);
  };
  MValue rowMask;
  if (s.size() >= 2 && isRowMask(mask, false))
    rowMask = mask;
  for (MValue v = mask; s.size() >= 2 && !rowMask;) {
    auto bc = v.getDefiningOp<BroadcastInDimOp>();
    if (!bc)
      break;
    bool leading = true;
    for (auto [i, d] : llvm::enumerate(bc.getDims()))
      leading &= d == int64_t(i);
    if (isRowMask(bc.getInput(), leading))
      rowMask = bc.getInput();
    v = bc.getInput();
  }
  bool rowsOnly = bool(rowMask);
  // Whole rows: unit j of `units` rows of `width` elements each.
  int64_t width = rowsOnly ? s.back() : 1;
  int64_t units = numElements(s) / std::max<int64_t>(width, 1);
  MValue unitMask = rowsOnly ? reshape(rowMask, rowShape)
                             : broadcastTo(mask, shape);
  if (numElements(shapeOf(source)) % width != 0)
    fail("masked_scatter: the source's " +
         std::to_string(numElements(shapeOf(source))) +
         " elements are not whole rows of " + std::to_string(width));
  int64_t sourceUnits = numElements(shapeOf(source)) / width;
  MValue bank = reshape(source, {sourceUnits, width});
  MValue flat = reshape(convert(unitMask, i64()), {units});
  MValue csum = CumsumOp::create(b, loc, flat, b.getI64IntegerAttr(0));
  std::vector<int64_t> unitShape = rowsOnly ? rowShape : shape;
  MValue idx =
      reshape(binary<SubOp>(Imp::ofTensor(csum), Imp::ofInt(1)), unitShape);
  // Positions before the first true entry read unit 0 and are not
  // selected; a mask with more true entries than the source has units
  // fails in the gather, as PyTorch fails.
  MValue clamped = binary<MaxOp>(Imp::ofTensor(idx), Imp::ofInt(0));
  MValue gathered = EmbeddingOp::create(b, loc, bank, clamped);
  std::vector<int64_t> maskShape = unitShape;
  maskShape.push_back(1);
  MValue m = reshape(broadcastTo(reshape(unitMask, maskShape),
                                 [&] {
                                   std::vector<int64_t> full = unitShape;
                                   full.push_back(width);
                                   return full;
                                 }()),
                     shape);
  setTensor(n, SelectOp::create(b, loc, m,
                                reshape(convert(gathered, elemOf(self)), shape),
                                self));
}

void OpConverter::registerIndexingConverters() {
  auto &C = converters;
  C["aten::index"] = [this](OpCall *n) { convertIndex(n); };
  // gather(self, dim, index): out[i] = self[i with i_dim = index[i]]. One row
  // gather of the flattened tensor at those linear positions.
  C["aten::gather"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0), index = tensorIn(n, 2);
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
    MValue linear = scatterPositions(x, dim, index, "gather");
    MValue rows = gatherRows(reshape(x, {numElements(shapeOf(x))}), linear);
    setTensor(n, reshape(rows, shapeOf(index)));
  };
  // The scatters below: src's values (its first index-shaped block, or a
  // number) added up at the flattened positions `linear` of a tensor of
  // `shape`, one row scatter-add (embedding_grad). Floating-point tensors
  // only.
  auto scatterAdd = [this](MValue linear, MValue rows,
                           llvm::ArrayRef<int64_t> shape) {
    Type elem = elemOf(rows);
    int64_t count = numElements(shapeOf(rows));
    MValue sum = EmbeddingGradOp::create(
        b, loc, tensorType({numElements(shape), 1}, elem),
        reshape(rows, {count, 1}), linear);
    return reshape(sum, shape);
  };
  auto scatterSource = [this](const Imp &src, MValue index, Type elem) {
    auto is = shapeOf(index);
    if (src.kind != Imp::Tensor)
      return splat(is, elem, src.asDouble());
    MValue v = convert(src.tensor, elem);
    if (shapeOf(v).size() != is.size())
      fail("scatter's src must have the rank of its index");
    for (size_t k = 0; k < is.size(); ++k)
      if (shapeOf(v)[k] != is[k])
        v = slice(v, k, 0, is[k], 1);
    return v;
  };
  auto floatSelf = [this](OpCall *n) {
    MValue self = tensorIn(n, 0);
    if (!mlir::isa<mlir::FloatType>(elemOf(self)))
      fail("scatter into a non-floating-point tensor is not supported");
    return self;
  };
  // scatter_add(self, dim, index, src) adds src[i] into self at
  // scatterPositions; scatter writes instead, where some element lands (a
  // position written twice is undefined in PyTorch too).
  auto scatter = [this, scatterAdd, scatterSource, floatSelf](OpCall *n,
                                                              bool add) {
    MValue self = floatSelf(n), index = tensorIn(n, 2);
    auto s = shapeOf(self);
    Type elem = elemOf(self);
    int64_t dim = normDim(in(n, 1).asInt(), s.size());
    MValue linear = scatterPositions(self, dim, index, "scatter");
    MValue values =
        scatterAdd(linear, scatterSource(in(n, 3), index, elem), s);
    if (add) {
      setTensor(n, AddOp::create(b, loc, self, values));
      return;
    }
    MValue hits = scatterAdd(linear, splat(shapeOf(index), elem, 1.0), s);
    MValue written = compare(CompareDirection::GT, Imp::ofTensor(hits),
                             Imp::ofFloat(0.0));
    setTensor(n, select(written, Imp::ofTensor(values), Imp::ofTensor(self)));
  };
  C["aten::scatter_add"] = [scatter](OpCall *n) { scatter(n, true); };
  C["aten::scatter"] = [this, scatter](OpCall *n) {
    if (n->numInputs() > 4 && in(n, 4).kind != Imp::None)
      fail("scatter with a reduce argument is not supported");
    scatter(n, false);
  };
  // scatter_reduce(self, dim, index, src, reduce, include_self): sum, and
  // mean (over the elements that land, self included when asked).
  C["aten::scatter_reduce"] = [this, scatterAdd, scatterSource,
                               floatSelf](OpCall *n) {
    const std::string &mode = in(n, 4).s;
    bool includeSelf =
        n->numInputs() < 6 || in(n, 5).kind != Imp::Bool || in(n, 5).b;
    if (mode != "sum" && mode != "mean")
      fail("scatter_reduce with reduce='" + mode + "' is not supported");
    MValue self = floatSelf(n), index = tensorIn(n, 2);
    auto s = shapeOf(self);
    Type elem = elemOf(self);
    int64_t dim = normDim(in(n, 1).asInt(), s.size());
    MValue linear = scatterPositions(self, dim, index, "scatter_reduce");
    MValue sum = scatterAdd(linear, scatterSource(in(n, 3), index, elem), s);
    MValue hits = scatterAdd(linear, splat(shapeOf(index), elem, 1.0), s);
    MValue landed = compare(CompareDirection::GT, Imp::ofTensor(hits),
                            Imp::ofFloat(0.0));
    MValue base = includeSelf
                      ? self
                      : MValue(select(landed, Imp::ofFloat(0.0),
                                      Imp::ofTensor(self)));
    MValue result = AddOp::create(b, loc, base, sum);
    if (mode == "mean") {
      MValue counts =
          includeSelf
              ? MValue(AddOp::create(b, loc, hits, splat(s, elem, 1.0)))
              : hits;
      MValue divisor =
          select(landed, Imp::ofTensor(counts), Imp::ofFloat(1.0));
      result = DivOp::create(b, loc, result, divisor);
    }
    setTensor(n, result);
  };
  // index_put(self, indices, values, accumulate): integer index tensors on
  // the leading dimensions (merged into one linear index, as aten::index),
  // values broadcast to the indexed shape and added (accumulate) or
  // written at those rows.
  C["aten::index_put"] = [this, scatterAdd, floatSelf](OpCall *n) {
    MValue self = floatSelf(n);
    const Imp &indices = in(n, 1);
    bool accumulate = n->numInputs() > 3 && in(n, 3).kind == Imp::Bool &&
                      in(n, 3).b;
    auto s = shapeOf(self);
    Type elem = elemOf(self);
    int64_t k = 0;
    if (indices.kind == Imp::List)
      while (k < int64_t(indices.list.size()) &&
             indices.list[k].kind == Imp::Tensor &&
             !elemOf(indices.list[k].tensor).isInteger(1))
        ++k;
    if (k == 0 || k != int64_t(indices.list.size()) || k > int64_t(s.size()))
      fail("index_put is supported with integer index tensors on the "
           "leading dimensions");
    std::vector<int64_t> common;
    MValue lin = linearIndex(indices.list, 0, k, s, common);
    int64_t rows = numElements(common);
    int64_t row = numElements(s.drop_front(k));
    MValue starts = MulOp::create(
        b, loc, broadcastTo(reshape(lin, {rows, 1}), {rows, row}),
        splat({rows, row}, i64(), double(row)));
    MValue at = AddOp::create(
        b, loc, starts,
        IotaOp::create(b, loc, tensorType({rows, row}, i64()),
                       b.getI64IntegerAttr(1)));
    at = reshape(at, {rows * row});
    std::vector<int64_t> target = common;
    target.insert(target.end(), s.begin() + k, s.end());
    MValue values = in(n, 2).kind == Imp::Tensor
                        ? broadcastTo(convert(in(n, 2).tensor, elem), target)
                        : splat(target, elem, in(n, 2).asDouble());
    MValue added = scatterAdd(at, values, s);
    if (accumulate) {
      setTensor(n, AddOp::create(b, loc, self, added));
      return;
    }
    MValue hits = scatterAdd(at, splat(target, elem, 1.0), s);
    MValue written = compare(CompareDirection::GT, Imp::ofTensor(hits),
                             Imp::ofFloat(0.0));
    setTensor(n, select(written, Imp::ofTensor(added), Imp::ofTensor(self)));
  };
  C["aten::index_select"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    int64_t dim = normDim(in(n, 1).asInt(), shapeOf(x).size());
    MValue idx = tensorIn(n, 2);
    if (shapeOf(x).empty()) {
      // A zero-dim tensor reads as one row: its one index must be 0 (the
      // gather checks it), and the result stays zero-dim, as in PyTorch.
      if (numElements(shapeOf(idx)) != 1)
        fail("index_select of a zero-dim tensor takes one index, got " +
             std::to_string(numElements(shapeOf(idx))));
      setTensor(n, reshape(selectAlong(reshape(x, {1}), 0, idx), {}));
      return;
    }
    setTensor(n, selectAlong(x, dim, idx));
  };
  // diagonal(self, offset, dim1, dim2): dim1 and dim2 moved last and
  // merged, read at the diagonal's positions; the diagonal is the last
  // dimension of the result.
  C["aten::diagonal"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    auto s = shapeOf(x);
    int64_t rank = s.size(), offset = in(n, 1).asInt();
    int64_t d1 = normDim(in(n, 2).asInt(), rank),
            d2 = normDim(in(n, 3).asInt(), rank);
    if (d1 == d2)
      fail("diagonal's dimensions must differ");
    std::vector<int64_t> perm, shape;
    for (int64_t k = 0; k < rank; ++k)
      if (k != d1 && k != d2) {
        perm.push_back(k);
        shape.push_back(s[k]);
      }
    perm.insert(perm.end(), {d1, d2});
    int64_t rows = s[d1], cols = s[d2];
    int64_t row0 = std::max<int64_t>(-offset, 0),
            col0 = std::max<int64_t>(offset, 0);
    int64_t length = std::max<int64_t>(
        0, std::min(rows - row0, cols - col0));
    if (length == 0)
      fail("diagonal is empty");
    at::Tensor step = at::arange(length, at::kLong);
    at::Tensor positions = (step + row0) * cols + (step + col0);
    shape.push_back(rows * cols);
    MValue flat = reshape(transpose(x, perm), shape);
    setTensor(n, selectAlong(flat, shape.size() - 1,
                             constantFromTensor(positions)));
  };
  // flip: each flipped dimension read at the reversed positions.
  C["aten::flip"] = [this](OpCall *n) {
    MValue x = tensorIn(n, 0);
    for (int64_t d : intList(in(n, 1))) {
      int64_t dim = normDim(d, shapeOf(x).size());
      at::Tensor reversed = at::arange(shapeOf(x)[dim] - 1, -1, -1, at::kLong);
      x = selectAlong(x, dim, constantFromTensor(reversed));
    }
    setTensor(n, x);
  };
  C["aten::masked_scatter"] = [this](OpCall *n) { convertMaskedScatter(n); };
}
