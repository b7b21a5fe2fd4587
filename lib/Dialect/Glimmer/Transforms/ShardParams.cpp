//===- ShardParams.cpp - FSDP: parameters sharded over (dp_shard, cp) -----===//
//
// With dp_shard > 1 each rank keeps only its piece of every parameter (and,
// through @apply_step, of its gradient and optimizer state): dimension 0 is
// split over the group dp_shard x cp, as torchtitan does, since the cp ranks
// of a data-parallel replica hold the same parameters and can share their
// storage too. The forward all-gathers a parameter right before its first
// use; autodiff turns that all_gather into a reduce_scatter, which gives
// each rank the sum over the group of its piece's gradient. With tensor
// parallelism a parameter's tensor-parallel piece is FSDP-split further
// along the dimension tp splits.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERSHARDPARAMS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

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
    if (!requireMesh(module, getArgument()))
      return signalPassFailure();
    SmallVector<StringRef> axes{"dp_shard"};
    if (layout.cp() > 1)
      axes.push_back("cp");
    int64_t group = layout.dpShard() * layout.cp();
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        shardFunction(func, axes, group);
  }

  void shardFunction(func::FuncOp func, ArrayRef<StringRef> axes,
                     int64_t group) {
    OpBuilder b(func.getContext());
    auto mesh = FlatSymbolRefAttr::get(func.getContext(), "mesh");
    ArrayAttr axesAttr = b.getStrArrayAttr(axes);
    Block &body = func.getBody().front();
    SmallVector<std::string> replicated;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto name = func.getArgAttrOfType<StringAttr>(i, "glimmer.param");
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!name || !type || !isa<FloatType>(type.getElementType()))
        continue;
      // A tensor-parallel piece (split on one dimension over tp) is split
      // further along the same dimension, minor to the tp split: its FSDP
      // pieces gather back to the tensor-parallel piece, and the rank holds
      // 1/(tp * group) of the parameter.
      int64_t dim = 0;
      SmallVector<StringRef> pieceAxes;
      if (auto d = func.getArgAttrOfType<IntegerAttr>(i, "glimmer.sharded_dim")) {
        dim = d.getInt();
        for (Attribute a :
             func.getArgAttrOfType<ArrayAttr>(i, "glimmer.sharded_axes"))
          pieceAxes.push_back(cast<StringAttr>(a).getValue());
        if (llvm::any_of(pieceAxes, [&](StringRef a) {
              return llvm::is_contained(axes, a);
            }))
          continue;
      }
      if (type.getRank() == 0 || type.getDimSize(dim) % group != 0) {
        std::string entry;
        llvm::raw_string_ostream os(entry);
        os << "'" << name.getValue() << "' (" << type << ")";
        replicated.push_back(entry);
        continue;
      }
      SmallVector<int64_t> shape(type.getShape());
      shape[dim] /= group;
      auto local = RankedTensorType::get(shape, type.getElementType());
      arg.setType(local);
      pieceAxes.append(axes.begin(), axes.end());
      func.setArgAttr(i, "glimmer.sharded_dim", b.getI64IntegerAttr(dim));
      func.setArgAttr(i, "glimmer.sharded_axes", b.getStrArrayAttr(pieceAxes));
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
      auto gathered = AllGatherOp::create(b, arg.getLoc(), type, arg, mesh,
                                          axesAttr, b.getI64IntegerAttr(dim));
      arg.replaceAllUsesExcept(gathered, gathered);
    }
    func.setType(b.getFunctionType(body.getArgumentTypes(),
                                   func.getResultTypes()));
    // On the location, not the op: a remark is informational and should
    // not print the whole function with it.
    if (!replicated.empty())
      emitRemark(func.getLoc()) << "FSDP over " << llvm::join(axes, " x ") << " ("
                        << group << " ranks) keeps " << replicated.size()
                        << " parameter" << (replicated.size() == 1 ? "" : "s")
                        << " replicated (dimension 0 not divisible by "
                        << group << "): " << llvm::join(replicated, ", ");
  }
};

} // namespace
