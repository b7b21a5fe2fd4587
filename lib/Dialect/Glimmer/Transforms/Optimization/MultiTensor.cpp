//===- MultiTensor.cpp - Per-parameter updates and casts as list ops -----===//
//
// An optimizer step updates every parameter with one step count and one
// set of hyperparameters, and a mixed-precision step casts every parameter
// to bf16: one op per parameter is one kernel launch each on a GPU, most
// of them on small tensors. As one adamw_update_list and one convert_list
// they share a few launches; every result keeps its bits.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <tuple>

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERMULTITENSOR
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

/// Whether every use of `op`'s results is an op of `at`'s block after `at`
/// (or inside one).
bool usedOnlyAfter(Operation *op, Operation *at) {
  for (Operation *user : op->getUsers()) {
    Operation *u = at->getBlock()->findAncestorOpInBlock(*user);
    if (!u || u == at || u->isBeforeInBlock(at))
      return false;
  }
  return true;
}

/// The updates of one group become one list op in place of the last; an
/// update whose results are used before that stays as it is.
void groupUpdates(ArrayRef<AdamWUpdateOp> group) {
  AdamWUpdateOp last = group.back();
  SmallVector<AdamWUpdateOp> members;
  for (AdamWUpdateOp op : group)
    if (op == last || usedOnlyAfter(op, last))
      members.push_back(op);
  if (members.size() < 2)
    return;
  SmallVector<Value> params, grads, expAvgs, expAvgSqs;
  SmallVector<Type> types;
  for (AdamWUpdateOp op : members) {
    params.push_back(op.getParam());
    grads.push_back(op.getGrad());
    expAvgs.push_back(op.getExpAvg());
    expAvgSqs.push_back(op.getExpAvgSq());
    types.push_back(op.getParam().getType());
  }
  OpBuilder b(last);
  auto list = AdamWUpdateListOp::create(
      b, last.getLoc(), types, types, types, params, grads, expAvgs, expAvgSqs,
      last.getStep(), last.getGradScale(), last.getLrAttr(),
      last.getBeta1Attr(), last.getBeta2Attr(), last.getEpsAttr(),
      last.getWeightDecayAttr());
  for (auto [k, op] : llvm::enumerate(members)) {
    op.getNewParam().replaceAllUsesWith(list.getNewParams()[k]);
    op.getNewExpAvg().replaceAllUsesWith(list.getNewExpAvgs()[k]);
    op.getNewExpAvgSq().replaceAllUsesWith(list.getNewExpAvgSqs()[k]);
    op->erase();
  }
}

/// The casts of one group become one list op in place of the first: their
/// operands are function arguments, defined before any op.
void groupCasts(ArrayRef<ConvertOp> group) {
  if (group.size() < 2)
    return;
  SmallVector<Value> inputs;
  SmallVector<Type> types;
  for (ConvertOp op : group) {
    inputs.push_back(op.getInput());
    types.push_back(op.getType());
  }
  ConvertOp first = group.front();
  OpBuilder b(first);
  auto list = ConvertListOp::create(b, first.getLoc(), types, inputs);
  for (size_t k = 0; k < group.size(); ++k) {
    ConvertOp op = group[k];
    op.getOutput().replaceAllUsesWith(list.getOutputs()[k]);
    op->erase();
  }
}

struct MultiTensorPass
    : glimmer::impl::GlimmerMultiTensorBase<MultiTensorPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        return;
      Block &body = func.getBody().front();
      // Updates by (step, grad_scale, lr, beta1, beta2, eps, weight_decay),
      // and casts of arguments by result element type, in program order.
      using Key =
          std::tuple<void *, void *, double, double, double, double, double>;
      std::map<Key, SmallVector<AdamWUpdateOp>> updates;
      SmallVector<Key> updateOrder;
      DenseMap<Type, SmallVector<ConvertOp>> casts;
      SmallVector<Type> castOrder;
      for (Operation &op : body) {
        if (auto a = dyn_cast<AdamWUpdateOp>(op)) {
          Key key{a.getStep().getAsOpaquePointer(),
                  a.getGradScale() ? a.getGradScale().getAsOpaquePointer()
                                   : nullptr,
                  a.getLr().convertToDouble(),
                  a.getBeta1().convertToDouble(),
                  a.getBeta2().convertToDouble(),
                  a.getEps().convertToDouble(),
                  a.getWeightDecay().convertToDouble()};
          auto [it, added] = updates.try_emplace(key);
          if (added)
            updateOrder.push_back(key);
          it->second.push_back(a);
        } else if (auto c = dyn_cast<ConvertOp>(op)) {
          auto arg = dyn_cast<BlockArgument>(c.getInput());
          if (!arg || arg.getOwner() != &body ||
              c.getInput().getType() == c.getType())
            continue;
          Type to = cast<ShapedType>(c.getType()).getElementType();
          auto [it, added] = casts.try_emplace(to);
          if (added)
            castOrder.push_back(to);
          it->second.push_back(c);
        }
      }
      for (const Key &key : updateOrder)
        groupUpdates(updates[key]);
      for (Type to : castOrder)
        groupCasts(casts[to]);
    });
  }
};

} // namespace
