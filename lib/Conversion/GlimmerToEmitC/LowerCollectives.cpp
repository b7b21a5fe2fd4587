//===- LowerCollectives.cpp - Collectives and local shards ----------------===//

#include "Lowering.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace glimmer;

std::optional<LogicalResult> OpLowering::lowerCollectives() {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](AllGatherOp g) {
        return one(call(Kernel::allGather, g.getInput())
                       .literal(axesLiteral(g.getAxes()))
                       .integer(g.getDim()));
      })
      .Case([&](ReduceScatterOp r) {
        return one(call(Kernel::reduceScatter)
                       .literal(reductionLiteral(r.getKind()))
                       .operand(map(r.getInput()))
                       .literal(axesLiteral(r.getAxes()))
                       .integer(r.getDim()));
      })
      .Case([&](AllToAllOp a) {
        return one(call(Kernel::allToAll, a.getInput())
                       .literal(axesLiteral(a.getAxes()))
                       .integer(a.getSplitDim())
                       .integer(a.getConcatDim()));
      })
      .Case([&](AllReduceOp r) {
        return one(call(Kernel::allReduce)
                       .literal(reductionLiteral(r.getKind()))
                       .operand(map(r.getInput()))
                       .literal(axesLiteral(r.getAxes())));
      })
      .Case([&](LocalShardOp l) {
        return one(call(Kernel::localShard, l.getInput())
                       .literal(axesLiteral(l.getAxes()))
                       .integer(l.getDim()));
      })
      .Default(std::nullopt);
}
