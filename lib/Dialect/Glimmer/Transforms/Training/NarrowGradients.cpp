//===- NarrowGradients.cpp - Gradients leave @grad_step as computed -------===//
//
// Under mixed precision every parameter is read through a convert to bf16,
// so its gradient is made in bf16 and converted to f32 as the last step of
// @grad_step. The optimizer and sum_squares widen bf16 gradients exactly
// themselves, so the convert (a kernel launch and an f32 copy of every such
// gradient, held until the update) is dropped: the gradient crosses into
// @apply_step in bf16 and the update computes the same bits.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERNARROWGRADIENTS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

/// Whether every use of `grad` (an @apply_step argument) widens a bf16
/// value exactly: the grad operand of an optimizer update or an input of
/// sum_squares.
bool onlyWidenedUses(Value grad) {
  for (OpOperand &use : grad.getUses()) {
    Operation *user = use.getOwner();
    if (auto a = dyn_cast<AdamWUpdateOp>(user);
        a && use.get() == a.getGrad() && a.getParam() != grad &&
        a.getExpAvg() != grad && a.getExpAvgSq() != grad)
      continue;
    if (auto s = dyn_cast<SgdUpdateOp>(user);
        s && use.get() == s.getGrad() && s.getParam() != grad)
      continue;
    if (isa<SumSquaresOp>(user))
      continue;
    return false;
  }
  return true;
}

struct NarrowGradientsPass
    : glimmer::impl::GlimmerNarrowGradientsBase<NarrowGradientsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto grad = module.lookupSymbol<func::FuncOp>("grad_step");
    auto apply = module.lookupSymbol<func::FuncOp>("apply_step");
    if (!grad || !apply || grad.isExternal() || apply.isExternal())
      return;
    // Micro-batches' gradients are summed outside the program, in the
    // type @grad_step returns: they stay in the optimizer's type.
    if (SpmdAttr spmd = getRecordedSpmd(module);
        spmd && spmd.getLayout().microbatches > 1)
      return;
    auto ret = cast<func::ReturnOp>(grad.getBody().front().getTerminator());
    Block &applyBody = apply.getBody().front();
    bool changed = false;
    for (unsigned i = 0; i < grad.getNumResults(); ++i) {
      auto name = grad.getResultAttrOfType<StringAttr>(i, kGradAttr);
      if (!name || grad.getResultAttr(i, kPartialAttr))
        continue;
      auto convert = ret.getOperand(i).getDefiningOp<ConvertOp>();
      if (!convert || !convert->hasOneUse())
        continue;
      auto from = cast<RankedTensorType>(convert.getInput().getType());
      auto to = cast<RankedTensorType>(convert.getType());
      if (!from.getElementType().isBF16() || !to.getElementType().isF32())
        continue;
      // The @apply_step argument that receives it, by name.
      BlockArgument target;
      for (unsigned a = 0; a < apply.getNumArguments(); ++a)
        if (apply.getArgAttrOfType<StringAttr>(a, kGradAttr) == name)
          target = applyBody.getArgument(a);
      if (!target || target.getType() != to || !onlyWidenedUses(target))
        continue;
      ret->setOperand(i, convert.getInput());
      convert->erase();
      target.setType(from);
      changed = true;
    }
    if (!changed)
      return;
    grad.setType(FunctionType::get(&getContext(), grad.getArgumentTypes(),
                                   ret.getOperandTypes()));
    apply.setType(FunctionType::get(&getContext(), applyBody.getArgumentTypes(),
                                    apply.getResultTypes()));
  }
};

} // namespace
