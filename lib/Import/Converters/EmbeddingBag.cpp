//===- EmbeddingBag.cpp - embedding_bag and embedding backward ------------===//
//
// _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
// per_sample_weights, include_last_offset, padding_idx) -> (output,
// offset2bag, bag_size, max_indices): the rows of `weight` at `indices`
// reduced per bag, bag b holding the indices from offsets[b] to the next
// bag's offset (the last bag to the end). Composed of existing ops: a row
// gather, each index's bag from a comparison with the offsets, and a
// segment sum (embedding_grad, the scatter-add of rows) for sum and mean;
// max masks the rows of other bags and reduces. The gather's and the
// scatter-add's VJPs give the weight's and per_sample_weights' gradients.
// embedding_dense_backward, the embedding's own backward, is a scatter-add
// of rows too.
//
//===----------------------------------------------------------------------===//

#include "Converters/Common.h"
#include "OpConverter.h"

#include <limits>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerEmbeddingBagConverters() {
  auto &C = converters;
  C["aten::_embedding_bag"] = [this](OpCall *n) {
    MValue weight = tensorIn(n, 0);
    MValue indices = convert(tensorIn(n, 1), i64());
    MValue offsets = convert(tensorIn(n, 2), i64());
    auto flag = [&](size_t i) {
      return n->numInputs() > i && in(n, i).kind == Imp::Bool && in(n, i).b;
    };
    auto integer = [&](size_t i, int64_t fallback) {
      return n->numInputs() > i && in(n, i).isNumber() ? in(n, i).asInt()
                                                       : fallback;
    };
    if (flag(3))
      fail("embedding_bag with scale_grad_by_freq=True is not supported (it "
           "scales the weight's gradient by each index's frequency)");
    int64_t mode = integer(4, 0);
    if (mode < 0 || mode > 2)
      fail("embedding_bag: unknown mode " + std::to_string(mode) +
           " (0: sum, 1: mean, 2: max)");
    bool hasWeights = n->numInputs() > 6 && in(n, 6).kind == Imp::Tensor;
    if (hasWeights && mode != 0)
      fail("embedding_bag: per_sample_weights are only supported with "
           "mode='sum', as in PyTorch");
    bool includeLast = flag(7);
    int64_t paddingIdx = integer(8, -1);
    if (shapeOf(weight).size() != 2)
      fail("embedding_bag expects a 2-D weight, got " +
           shapeString(shapeOf(weight)));
    if (shapeOf(indices).size() != 1 || shapeOf(offsets).size() != 1)
      fail("embedding_bag expects 1-D indices and offsets (a 2-D input is "
           "flattened by torch.nn.functional.embedding_bag)");
    Type elem = elemOf(weight);
    int64_t count = shapeOf(indices)[0], dim = shapeOf(weight)[1];
    int64_t bags = shapeOf(offsets)[0] - (includeLast ? 1 : 0);
    if (bags <= 0 || count == 0)
      fail("embedding_bag without bags or indices: empty tensors are not "
           "supported");

    // offset2bag: index j lies in bag #{b : offsets[b] <= j} - 1 (offsets
    // start at 0, as PyTorch requires).
    MValue starts = slice(offsets, 0, 0, bags, 1);
    std::vector<int64_t> grid{count, bags};
    MValue position =
        IotaOp::create(b, loc, tensorType(grid, i64()), b.getI64IntegerAttr(0));
    MValue started = compare(CompareDirection::LE,
                             Imp::ofTensor(broadcastTo(reshape(starts, {1, bags}),
                                                       grid)),
                             Imp::ofTensor(position));
    MValue bagOf = reduce(ReductionKind::Sum, convert(started, i64()), {1},
                          false);
    bagOf = binary<MaxOp>(
        Imp::ofTensor(binary<SubOp>(Imp::ofTensor(bagOf), Imp::ofInt(1))),
        Imp::ofInt(0));

    // Indices equal to padding_idx (when given) take no part.
    MValue keep = splat({count}, elem, 1.0);
    if (paddingIdx >= 0)
      keep = convert(compare(CompareDirection::NE, Imp::ofTensor(indices),
                             Imp::ofInt(paddingIdx)),
                     elem);
    MValue sizes = EmbeddingGradOp::create(b, loc, tensorType({bags, 1}, elem),
                                           reshape(keep, {count, 1}), bagOf);
    MValue rows = gatherRows(weight, indices);
    auto perRow = [&](MValue scale) {
      return MValue(MulOp::create(
          b, loc, rows, broadcastTo(reshape(scale, {count, 1}), {count, dim})));
    };
    auto segmentSum = [&](MValue v) {
      return MValue(EmbeddingGradOp::create(
          b, loc, tensorType({bags, dim}, elem), v, bagOf));
    };
    MValue output, maxIndices;
    if (mode == 0) {
      MValue scale = keep;
      if (hasWeights)
        scale = MulOp::create(b, loc, keep, convert(in(n, 6).tensor, elem));
      output = segmentSum(perRow(scale));
    } else if (mode == 1) {
      // An empty bag's sum is 0 and stays 0.
      MValue divisor = binary<MaxOp>(Imp::ofTensor(sizes), Imp::ofFloat(1.0));
      output = DivOp::create(b, loc, segmentSum(perRow(keep)),
                             broadcastTo(divisor, {bags, dim}));
    } else {
      // [bags, count, dim]: index j's row where j is a kept member of bag b,
      // -inf elsewhere; the max over j, 0 for an empty bag.
      std::vector<int64_t> cube{bags, count, dim};
      MValue bagIds = IotaOp::create(b, loc, tensorType({bags, count}, i64()),
                                     b.getI64IntegerAttr(0));
      MValue member = compare(
          CompareDirection::EQ,
          Imp::ofTensor(broadcastTo(reshape(bagOf, {1, count}), {bags, count})),
          Imp::ofTensor(bagIds));
      if (paddingIdx >= 0)
        member = select(
            broadcastTo(reshape(compare(CompareDirection::GT,
                                        Imp::ofTensor(keep), Imp::ofFloat(0.0)),
                                {1, count}),
                        {bags, count}),
            Imp::ofTensor(member), Imp::ofBool(false));
      MValue inBag = broadcastTo(reshape(member, {bags, count, 1}), cube);
      MValue candidates = select(
          inBag, Imp::ofTensor(broadcastTo(reshape(rows, {1, count, dim}), cube)),
          Imp::ofFloat(-std::numeric_limits<double>::infinity()));
      MValue best = reduce(ReductionKind::Max, candidates, {1}, false);
      MValue nonEmpty = broadcastTo(
          compare(CompareDirection::GT, Imp::ofTensor(sizes),
                  Imp::ofFloat(0.0)),
          {bags, dim});
      output = select(nonEmpty, Imp::ofTensor(best), Imp::ofFloat(0.0));
      // max_indices: the weight row of the first member holding the max.
      MValue at = IotaOp::create(b, loc, tensorType(cube, i64()),
                                 b.getI64IntegerAttr(1));
      MValue hit = compare(CompareDirection::EQ, Imp::ofTensor(candidates),
                           Imp::ofTensor(broadcastTo(
                               reshape(best, {bags, 1, dim}), cube)));
      hit = select(inBag, Imp::ofTensor(hit), Imp::ofBool(false));
      MValue first = reduce(
          ReductionKind::Min,
          select(hit, Imp::ofTensor(at), Imp::ofInt(count - 1)), {1}, false);
      maxIndices = select(
          nonEmpty,
          Imp::ofTensor(reshape(gatherRows(indices, reshape(first, {bags * dim})),
                                {bags, dim})),
          Imp::ofInt(0));
    }
    // bag_size as PyTorch reports it: 0s under sum, the kept count
    // otherwise; max_indices is bag_size outside max mode.
    MValue bagSize = mode == 0 ? splat({bags}, i64(), 0)
                               : convert(reshape(sizes, {bags}), i64());
    setOut(n, 0, Imp::ofTensor(output));
    setOut(n, 1, Imp::ofTensor(bagOf));
    setOut(n, 2, Imp::ofTensor(bagSize));
    setOut(n, 3, Imp::ofTensor(mode == 2 ? maxIndices : bagSize));
  };
  // TorchScript records F.embedding_bag as embedding_bag, with the same
  // operands (padding_idx None for -1) and results.
  C["aten::embedding_bag"] = C["aten::_embedding_bag"];
  // embedding_dense_backward(grad_output, indices, num_weights,
  // padding_idx, scale_grad_by_freq): grad_output's rows scatter-added
  // into the table's rows at the indices; the rows of padding_idx get
  // nothing, and with scale_grad_by_freq each row is divided by the count
  // of its index first.
  C["aten::embedding_dense_backward"] = [this](OpCall *n) {
    MValue g = tensorIn(n, 0), idx = tensorIn(n, 1);
    int64_t rows = in(n, 2).asInt(), padding = in(n, 3).asInt();
    bool byFreq = in(n, 4).asInt() != 0;
    auto gs = shapeOf(g), is = shapeOf(idx);
    if (gs.size() != is.size() + 1 || gs.drop_back() != is)
      fail("embedding_dense_backward: grad_output must be the indices' "
           "shape and one dimension more");
    int64_t count = numElements(is), width = gs.back();
    Type elem = elemOf(g);
    MValue ids = CheckIndicesOp::create(
        b, loc, reshape(convert(idx, i64()), {count}),
        b.getI64IntegerAttr(rows), b.getStringAttr("embedding_dense_backward"),
        mlir::IntegerAttr());
    MValue grad = reshape(g, {count, width});
    if (padding >= 0) {
      MValue keep = compare(CompareDirection::NE, Imp::ofTensor(ids),
                            Imp::ofInt(padding));
      grad = select(reshape(keep, {count, 1}), Imp::ofTensor(grad),
                    Imp::ofFloat(0.0));
    }
    if (byFreq) {
      MValue counts =
          EmbeddingGradOp::create(b, loc, tensorType({rows, 1}, elem),
                                  splat({count, 1}, elem, 1.0), ids);
      MValue per = EmbeddingOp::create(b, loc, counts, ids);
      grad = binary<DivOp>(Imp::ofTensor(grad), Imp::ofTensor(per));
    }
    setTensor(n, EmbeddingGradOp::create(
                     b, loc, tensorType({rows, width}, elem), grad, ids));
  };
}
