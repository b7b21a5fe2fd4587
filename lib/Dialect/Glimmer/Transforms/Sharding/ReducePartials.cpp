//===- ReducePartials.cpp - Sum partial results inside the program -------===//
//
// The partitioner and autodiff mark results that each rank holds as a
// partial sum (glimmer.partial = [axes]). Summing them in the program, once,
// keeps every reduction visible in the IR (and in the generated code's
// collectives), so a runtime never needs to know which results to combine.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/IR/Builders.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERREDUCEPARTIALS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

struct ReducePartialsPass
    : public glimmer::impl::GlimmerReducePartialsBase<ReducePartialsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      for (unsigned i = 0; i < func.getNumResults(); ++i) {
        auto axes = func.getResultAttrOfType<ArrayAttr>(i, kPartialAttr);
        if (!axes)
          continue;
        if (!module.lookupSymbol<MeshOp>("mesh")) {
          func.emitError() << "result #" << i
                           << " is a partial sum but the module has no "
                              "@mesh; run glimmer-materialize-mesh first";
          return signalPassFailure();
        }
        OpBuilder b(ret);
        Value v = ret.getOperand(i);
        Value sum = AllReduceOp::create(
            b, ret.getLoc(), v.getType(),
            ReductionKindAttr::get(&getContext(), ReductionKind::Sum), v,
            FlatSymbolRefAttr::get(&getContext(), "mesh"), axes);
        ret.setOperand(i, sum);
        func.removeResultAttr(i, StringAttr::get(&getContext(), kPartialAttr));
      }
    }
  }
};

} // namespace
