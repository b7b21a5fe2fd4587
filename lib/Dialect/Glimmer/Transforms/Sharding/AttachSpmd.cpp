//===- AttachSpmd.cpp - Record the SPMD layout on the module --------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERATTACHSPMD
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

/// A layout as a user reads it in a message.
static std::string describe(const SpmdContext &layout) {
  std::string text = layout.print();
  return text.empty() ? "\"\" (unsharded)" : "\"" + text + "\"";
}

namespace {
struct AttachSpmdPass
    : public glimmer::impl::GlimmerAttachSpmdBase<AttachSpmdPass> {
  using Base::Base;

  // The thread-local context is read here, on the thread that builds the
  // pipeline: passes may later run on worker threads with no scope of their
  // own.
  LogicalResult initialize(MLIRContext *) override {
    if (layout.empty()) {
      context = SpmdContext::current();
      return success();
    }
    std::string error;
    std::optional<SpmdContext> parsed = SpmdContext::parse(layout, &error);
    if (!parsed) {
      errorMessage = "invalid SPMD layout '" + layout + "': " + error;
      return success();
    }
    context = *parsed;
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!errorMessage.empty()) {
      module.emitError() << errorMessage;
      return signalPassFailure();
    }
    auto attr = SpmdAttr::get(&getContext(), context);
    if (SpmdAttr existing = getRecordedSpmd(module)) {
      if (existing == attr)
        return markAllAnalysesPreserved();
      module.emitError() << "module is already compiled for SPMD layout "
                         << describe(existing.getLayout())
                         << "; refusing to record " << describe(context);
      return signalPassFailure();
    }
    module->setAttr(GlimmerDialect::getSpmdAttrName(), attr);
  }

  SpmdContext context;
  std::string errorMessage;
};
} // namespace
