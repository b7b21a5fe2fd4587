//===- MaterializeMesh.cpp - Declare the mesh of the recorded layout ------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERMATERIALIZEMESH
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {
struct MaterializeMeshPass
    : public glimmer::impl::GlimmerMaterializeMeshBase<MaterializeMeshPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SpmdAttr spmd = requireRecordedSpmd(module, getArgument());
    if (!spmd)
      return signalPassFailure();
    SpmdContext layout = spmd.getLayout();

    SmallVector<StringAttr> names;
    SmallVector<int64_t> sizes;
    for (unsigned i = 0; i < kNumMeshAxes; ++i) {
      auto axis = static_cast<MeshAxis>(i);
      names.push_back(StringAttr::get(&getContext(), meshAxisName(axis)));
      sizes.push_back(layout.degree(axis));
    }
    auto mesh = MeshAttr::get(&getContext(), names, sizes);

    if (auto existing = SymbolTable::lookupSymbolIn(module, "mesh")) {
      auto meshOp = dyn_cast<MeshOp>(existing);
      if (meshOp && meshOp.getMesh() == mesh)
        return markAllAnalysesPreserved();
      existing->emitError()
          << "symbol @mesh already exists and does not match the recorded "
             "SPMD layout (expected glimmer.mesh @mesh = "
          << mesh << ")";
      return signalPassFailure();
    }
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    MeshOp::create(builder, module.getLoc(), "mesh", mesh);
  }
};
} // namespace
