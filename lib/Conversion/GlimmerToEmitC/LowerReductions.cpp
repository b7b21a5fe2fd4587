//===- LowerReductions.cpp - Reductions, softmax and cross-entropy --------===//

#include "Lowering.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace glimmer;

std::optional<LogicalResult> OpLowering::lowerReductions() {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](ReduceOp r) {
        return one(call(Kernel::reduce)
                       .literal(reductionLiteral(r.getKind()))
                       .operand(map(r.getInput()))
                       .ints(r.getDims())
                       .boolean(r.getKeepDims()));
      })
      .Case([&](CumsumOp c) {
        return one(call(Kernel::cumsum, c.getInput()).integer(c.getDim()));
      })
      .Case([&](ArgsortOp a) {
        return one(call(Kernel::argsort, a.getInput())
                       .integer(a.getDim())
                       .boolean(a.getDescending()));
      })
      .Case([&](SoftmaxOp s) {
        return one(call(Kernel::softmax, s.getInput()).integer(s.getDim()));
      })
      .Case([&](SoftmaxGradOp s) {
        return one(call(Kernel::softmaxGrad, {s.getGrad(), s.getOutputValue()})
                       .integer(s.getDim()));
      })
      .Case([&](CrossEntropyOp c) {
        return many(call(Kernel::crossEntropy, {c.getLogits(), c.getLabels()})
                        .integer(c.getIgnoreIndex())
                        .dtype(typeOf(c.getSum()).getElementType()));
      })
      .Case([&](CrossEntropyGradOp c) {
        return one(call(Kernel::crossEntropyGrad,
                        {c.getGrad(), c.getLogits(), c.getLabels()})
                       .integer(c.getIgnoreIndex()));
      })
      .Default(std::nullopt);
}
