//===- PartitionedValues.cpp - Values of the per-rank program -------------===//
//
// reshard picks the collectives that bring a value from one layout to
// another (ShardingEngine.md's table).
//
//===----------------------------------------------------------------------===//

#include "PartitionedValues.h"
#include "glimmer_contract/Attributes.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

PartitionedValues::PartitionedValues(func::FuncOp func, MeshAttr mesh,
                                     FlatSymbolRefAttr meshRef)
    : mesh(mesh), meshRef(meshRef), b(func.getContext()) {
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (type && isa<FloatType>(type.getElementType()) &&
        func.getArgAttr(arg.getArgNumber(), kParamAttr))
      trained.insert(arg);
  }
  for (Operation &op : body)
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return trained.contains(v); }))
      trained.insert(op.getResults().begin(), op.getResults().end());
}

RankedTensorType PartitionedValues::localType(RankedTensorType global,
                                              const Layout &l) const {
  SmallVector<int64_t> shape(global.getShape());
  for (auto [d, axes] : llvm::enumerate(l.dims))
    shape[d] /= axesSize(axes, mesh);
  return RankedTensorType::get(shape, global.getElementType());
}

const Layout &PartitionedValues::layoutOf(Value v) {
  auto it = layouts.find(v);
  if (it == layouts.end())
    it = layouts
             .insert({v, Layout::replicated(
                             cast<RankedTensorType>(v.getType()).getRank())})
             .first;
  return it->second;
}

InFlightDiagnostic PartitionedValues::tokenAxesError(Location loc,
                                                     ArrayRef<StringRef> axes) {
  broken = true;
  return emitError(loc) << "cannot be partitioned over "
                        << llvm::join(axes, ", ") << ": ";
}

Value PartitionedValues::reshard(Value v, const Layout &from, const Layout &to,
                                 RankedTensorType global, Location loc,
                                 ArrayRef<StringRef> sharedWork) {
  if (from == to)
    return v;
  // Each step brings `cur` closer to `to`; one that finds them equal (after
  // a reduce-scatter) emits nothing.
  Layout cur = from;
  Value local = reducePartials(v, cur, to, global, loc);
  local = moveSplits(local, cur, to, global, loc);
  local = gatherSplits(local, cur, to, global, loc, sharedWork);
  return cutSplits(local, trained.contains(v), cur, to, global, loc);
}

Value PartitionedValues::reducePartials(Value v, Layout &cur, const Layout &to,
                                        RankedTensorType global, Location loc) {
  Axes reduce;
  for (StringRef a : cur.partial)
    if (!llvm::is_contained(to.partial, a))
      reduce.push_back(a);
  if (reduce.empty())
    return v;
  // Partial over A to split over A along one dimension (the sum after a
  // row-parallel projection, kept sequence-split under sp): one
  // reduce-scatter instead of an all-reduce and a slice.
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    Axes joined = cur.dims[d];
    joined.append(reduce.begin(), reduce.end());
    if (to.dims[d] != joined)
      continue;
    Layout next = cur;
    next.partial = to.partial;
    next.dims[d] = joined;
    if (!(next == to))
      continue;
    cur = next;
    return ReduceScatterOp::create(
        b, loc, localType(global, next),
        ReductionKindAttr::get(b.getContext(), ReductionKind::Sum), v, meshRef,
        axesAttr(reduce), b.getI64IntegerAttr(d));
  }
  cur.partial = to.partial;
  return AllReduceOp::create(
      b, loc, v.getType(),
      ReductionKindAttr::get(b.getContext(), ReductionKind::Sum), v, meshRef,
      axesAttr(reduce));
}

Value PartitionedValues::moveSplits(Value v, Layout &cur, const Layout &to,
                                    RankedTensorType global, Location loc) {
  // The axes a dimension is split over beyond the ones `to` keeps (`to`'s
  // are a prefix of them) move to another dimension that `to` splits over
  // them next: one all-to-all moves every rank's elements where they
  // belong (sequence-split to head-split), instead of a gather of the whole
  // value and a cut.
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d] == to.dims[d] || !isPrefix(to.dims[d], cur.dims[d]))
      continue;
    Axes moving(cur.dims[d].begin() + to.dims[d].size(), cur.dims[d].end());
    for (unsigned e = 0; e < cur.dims.size(); ++e) {
      Axes joined = cur.dims[e];
      joined.append(moving.begin(), moving.end());
      if (e == d || to.dims[e] != joined)
        continue;
      Layout next = cur;
      next.dims[e] = joined;
      next.dims[d] = to.dims[d];
      v = AllToAllOp::create(b, loc, localType(global, next), v, meshRef,
                             axesAttr(moving), b.getI64IntegerAttr(e),
                             b.getI64IntegerAttr(d));
      cur = next;
      break;
    }
  }
  return v;
}

Value PartitionedValues::gatherSplits(Value v, Layout &cur, const Layout &to,
                                      RankedTensorType global, Location loc,
                                      ArrayRef<StringRef> sharedWork) {
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    // Keep the leading axes both agree on; gather the rest.
    unsigned keep = 0;
    while (keep < cur.dims[d].size() && keep < to.dims[d].size() &&
           cur.dims[d][keep] == to.dims[d][keep])
      ++keep;
    if (keep == cur.dims[d].size())
      continue;
    Axes gathered(cur.dims[d].begin() + keep, cur.dims[d].end());
    Layout next = cur;
    next.dims[d].resize(keep);
    // Its cotangents are the ranks' shares when every rank's work uses the
    // whole gathered value, and always over token axes (each rank's loss
    // is a share); when the target cuts it again over a tp axis (split
    // over A on d -> split over A on e), each rank's slice cotangent is
    // complete, and the cut's VJP gathers them: invariant.
    bool shares = llvm::all_of(gathered, [&](StringRef a) {
      return isTokenAxis(a) ||
             (llvm::is_contained(sharedWork, a) && !to.uses(a));
    });
    v = AllGatherOp::create(b, loc, localType(global, next), v, meshRef,
                            axesAttr(gathered), b.getI64IntegerAttr(d),
                            shares ? UnitAttr() : b.getUnitAttr());
    cur = next;
  }
  return v;
}

Value PartitionedValues::cutSplits(Value v, bool isTrained, Layout &cur,
                                   const Layout &to, RankedTensorType global,
                                   Location loc) {
  for (unsigned d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d] == to.dims[d])
      continue;
    Axes added(to.dims[d].begin() + cur.dims[d].size(), to.dims[d].end());
    Axes overTokens;
    for (StringRef a : added)
      if (isTokenAxis(a))
        overTokens.push_back(a);
    if (!overTokens.empty() && isTrained)
      tokenAxesError(loc, overTokens)
          << "a value computed from trained parameters, the same on every "
             "rank there, would be cut along dimension "
          << d
          << " (each rank's gradient of it would then be counted once "
             "per rank)";
    Layout next = cur;
    next.dims[d] = to.dims[d];
    v = LocalShardOp::create(b, loc, localType(global, next), v, meshRef,
                             axesAttr(added), b.getI64IntegerAttr(d));
    cur = next;
  }
  return v;
}
