//===- SequenceParallelHandlers.cpp - Sequence-parallel constraints -------===//
//
// Under sp the seeds cut the residual stream along the sequence over tp;
// the constraints that say so are partitioned as cuts only, so that every
// gather happens at the consumer that needs the whole sequence.
//
//===----------------------------------------------------------------------===//

#include "PartitionHandlers.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

void glimmer::detail::partitionSequenceParallelConstraint(
    PartitionedValues &values, ShardingConstraintOp op) {
  Value in = op.getInput(), out = op.getOutput();
  RankedTensorType global = values.globalType(in);
  Layout held = values.layoutOf(in), want = held;
  Layout asked = Layout::of(op.getSharding(), global.getRank());
  for (unsigned d = 0; d < want.dims.size(); ++d)
    if (isPrefix(held.dims[d], asked.dims[d]))
      want.dims[d] = asked.dims[d];
  Value local = values.reshard(in, held, want, global, op.getLoc());
  op.getInputMutable().assign(local);
  values.set(local, global, want);
  values.set(out, global, want);
  out.setType(local.getType());
}
