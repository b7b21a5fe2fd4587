//===- ShardParams.cpp - FSDP: parameter storage over (dp_shard, cp) ------===//
//
// The storage seed of the sharding engine. With dp_shard > 1 each rank
// keeps only its piece of every parameter (and, through @apply_step, of its
// gradient and optimizer state): the group dp_shard x cp, as torchtitan
// does, since the cp ranks of a data-parallel replica hold the same
// parameters and can share their storage too. Storage is not how the
// parameter is computed with: the argument's sharding becomes the storage
// one, and a sharding constraint before the first use keeps the sharding
// propagation gave it, so the partitioner's reshard all-gathers it there
// (autodiff turns that into a reduce-scatter of its gradient). Dimension 0
// is split, minor to tp where tp splits it: TP x FSDP weights are 2-D.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "ShardingFactors.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERSHARDPARAMS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

namespace {

struct ShardParamsPass
    : public glimmer::impl::GlimmerShardParamsBase<ShardParamsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SpmdAttr spmd = requireRecordedSpmd(module, getArgument());
    if (!spmd)
      return signalPassFailure();
    SpmdContext layout = spmd.getLayout();
    if (layout.dpShard() == 1)
      return;
    MeshOp mesh = requireMesh(module, getArgument());
    if (!mesh)
      return signalPassFailure();
    Axes axes{"dp_shard"};
    if (layout.cp() > 1)
      axes.push_back("cp");
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        shardFunction(func, axes, mesh.getMesh());
  }

  void shardFunction(func::FuncOp func, ArrayRef<StringRef> axes,
                     MeshAttr mesh) {
    MLIRContext *ctx = func.getContext();
    OpBuilder b(ctx);
    auto meshRef = FlatSymbolRefAttr::get(ctx, "mesh");
    int64_t group = axesSize(axes, mesh);
    Block &body = func.getBody().front();
    SmallVector<std::string> replicated;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto name = func.getArgAttrOfType<StringAttr>(i, kParamAttr);
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!name || !type || !isa<FloatType>(type.getElementType()))
        continue;
      // The sharding the parameter is computed with (propagation's).
      SmallVector<Axes> compute(type.getRank());
      auto given = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
      if (given)
        for (int64_t d = 0; d < type.getRank(); ++d)
          compute[d] = Axes(given.getDimAxes(d));
      // A storage split already given over the group's axes (a user's) is
      // kept; the parameter is computed with the rest of it.
      SmallVector<Axes> storage = compute;
      bool givenStorage = false;
      for (Axes &x : compute) {
        size_t before = x.size();
        llvm::erase_if(x, [&](StringRef a) { return llvm::is_contained(axes, a); });
        givenStorage |= x.size() != before;
      }
      // Storage is split along dimension 0, as torchtitan's FSDP does, minor
      // to a tensor-parallel split of it (a column-parallel weight's rows):
      // the FSDP pieces gather back to the tensor-parallel piece, and the
      // rank holds 1/(tp * group) of the parameter; a row-parallel weight is
      // then split on both dimensions.
      if (!givenStorage) {
        int64_t pieces = type.getRank() == 0
                             ? 0
                             : axesSize(compute[0], mesh) * group;
        if (pieces == 0 || type.getDimSize(0) % pieces != 0) {
          std::string entry;
          llvm::raw_string_ostream os(entry);
          os << "'" << name.getValue() << "' (" << type;
          if (pieces != 0 && !compute[0].empty())
            os << ", already split over " << llvm::join(compute[0], ", ")
               << ": " << pieces << " pieces";
          os << ")";
          replicated.push_back(entry);
          continue;
        }
        storage[0].append(axes.begin(), axes.end());
      }
      auto attr = [&](ArrayRef<Axes> dims) {
        SmallVector<Attribute> list;
        for (const Axes &d : dims)
          list.push_back(b.getStrArrayAttr(d));
        return ShardingAttr::get(ctx, meshRef, b.getArrayAttr(list),
                                 b.getArrayAttr({}));
      };
      func.setArgAttr(i, kShardingAttr, attr(storage));
      if (arg.use_empty())
        continue;
      // Gathered where it is first needed, not at entry: a runtime that
      // frees values after their last use then holds one full parameter
      // at a time, as FSDP does.
      Operation *first = nullptr;
      for (Operation *user : arg.getUsers()) {
        Operation *inBody = body.findAncestorOpInBlock(*user);
        if (!first || inBody->isBeforeInBlock(first))
          first = inBody;
      }
      b.setInsertionPoint(first);
      auto use =
          ShardingConstraintOp::create(b, arg.getLoc(), arg, attr(compute));
      arg.replaceAllUsesExcept(use, use);
    }
    // On the location, not the op: a remark is informational and should
    // not print the whole function with it.
    if (!replicated.empty())
      emitRemark(func.getLoc())
          << "FSDP over " << llvm::join(axes, " x ") << " (" << group
          << " ranks) keeps " << replicated.size() << " parameter"
          << (replicated.size() == 1 ? "" : "s")
          << " replicated (dimension 0 not divisible by " << group
          << "): " << llvm::join(replicated, ", ");
  }
};

} // namespace
