//===- LowerOptimizers.cpp - Optimizer updates and multi-tensor ops -------===//

#include "Lowering.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace glimmer;

namespace {

/// AdamW's arguments after its tensors (or lists of them): the step, the
/// hyperparameters and the optional gradient scale.
template <typename AdamW>
RuntimeCall adamwArguments(OpLowering &l, RuntimeCall c, AdamW a) {
  c.operand(l.map(a.getStep()))
      .real(a.getLr())
      .real(a.getBeta1())
      .real(a.getBeta2())
      .real(a.getEps())
      .real(a.getWeightDecay())
      .optional(l.map(a.getGradScale()));
  return c;
}

} // namespace

std::optional<LogicalResult> OpLowering::lowerOptimizers() {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](AdamWUpdateOp a) {
        return many(adamwArguments(
            *this,
            call(Kernel::adamwUpdate,
                 {a.getParam(), a.getGrad(), a.getExpAvg(), a.getExpAvgSq()}),
            a));
      })
      .Case([&](AdamWUpdateListOp a) {
        Value lists[] = {listOf(a.getParams()), listOf(a.getGrads()),
                         listOf(a.getExpAvgs()), listOf(a.getExpAvgSqs())};
        RuntimeCall update = call(Kernel::adamwUpdateList);
        for (Value list : lists)
          update.operand(list);
        Value results = buildList(adamwArguments(*this, update, a));
        for (Value list : lists)
          release(list);
        return takeAll(results);
      })
      .Case([&](SgdUpdateOp s) {
        return one(call(Kernel::sgdUpdate, {s.getParam(), s.getGrad()})
                       .real(s.getLr())
                       .real(s.getWeightDecay())
                       .optional(map(s.getGradScale())));
      })
      .Case([&](ConvertListOp c) {
        Value inputs = listOf(c.getInputs());
        Value results = buildList(
            call(Kernel::convertList)
                .operand(inputs)
                .dtype(typeOf(c.getOutputs().front()).getElementType()));
        release(inputs);
        return takeAll(results);
      })
      .Case([&](SumSquaresOp s) {
        Value inputs = listOf(s.getInputs());
        LogicalResult result =
            one(call(Kernel::sumSquares)
                    .operand(inputs)
                    .dtype(typeOf(s.getOutput()).getElementType()));
        release(inputs);
        return result;
      })
      .Default(std::nullopt);
}
