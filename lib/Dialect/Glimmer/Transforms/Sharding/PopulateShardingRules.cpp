//===- PopulateShardingRules.cpp - Show each op's sharding rule -----------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERPOPULATESHARDINGRULES
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {
struct PopulateShardingRulesPass
    : public glimmer::impl::GlimmerPopulateShardingRulesBase<
          PopulateShardingRulesPass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](ShardingRuleOpInterface op) {
      ShardingRule rule = op.getShardingRule();
      if (failed(rule.verify(op)))
        return WalkResult::interrupt();
      op->setAttr(kShardingRuleAttr,
                  StringAttr::get(op->getContext(), rule.str()));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
