//===- MixedPrecision.cpp - bf16 compute, f32 weights and loss ------------===//
//
// Turns an f32 forward into a mixed-precision one: bf16 compute with f32
// master weights. The function's signature does not change (parameters,
// buffers and inputs stay f32 arguments, the loss stays an f32 result), but
// everything computed from the parameters runs on bf16 tensors (the kernels
// accumulate in f32). Unlike PyTorch's autocast, which also runs norms,
// softmax and losses in f32 (so the residual stream that adds their outputs
// stays f32), every op downstream of a parameter is bf16 here, except the
// loss itself.
//
// The rule is one forward sweep. A value is *low* (bf16) when it is a
// parameter (read through one convert, placed before its first use) or the
// result of an op that has a low floating-point operand; such an op gets
// its other f32 operands converted (once per value, constants rebuilt as
// bf16 constants) and its f32 results retyped. Two results stay f32 whatever
// their operands: attention's log-sum-exp (the op's contract for bf16
// queries) and cross-entropy's sum, so the loss chain after it (the division
// by the token count) runs in f32. Values computed only from inputs,
// buffers, integers and constants (RoPE tables from positions, masks) stay
// f32 until they meet bf16 compute; a low value returned by the function is
// converted back to f32.
//
// Autodiff then sees `convert(param)`, whose VJP converts the bf16
// cotangent back: gradients, the optimizer step and its state are f32.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERMIXEDPRECISION
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

RankedTensorType floatTensorType(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<FloatType>(tensor.getElementType()) ? tensor
                                                           : RankedTensorType();
}

/// Results that keep f32 when the op computes in bf16.
bool keepsF32Result(Operation *op, unsigned index) {
  if (isa<AttentionOp>(op))
    return index == 1; // lse
  if (isa<CrossEntropyOp>(op))
    return index == 0; // sum
  return false;
}

/// Operands that stay f32 when the op computes in bf16 (the VJP ops of the
/// results above, for forwards written by hand).
bool keepsF32Operand(Operation *op, unsigned index) {
  if (auto grad = dyn_cast<AttentionGradOp>(op))
    return op->getOperand(index) == grad.getLse();
  if (isa<CrossEntropyGradOp>(op))
    return index == 0; // grad of the sum
  return false;
}

struct MixedPrecisionPass
    : public glimmer::impl::GlimmerMixedPrecisionBase<MixedPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(functionName);
    if (!func || func.isExternal()) {
      module.emitError() << "glimmer-mixed-precision: no function @"
                         << functionName << " with a body";
      return signalPassFailure();
    }
    for (StringRef name : {"grad_step", "apply_step"})
      if (module.lookupSymbol(name)) {
        module.emitError()
            << "glimmer-mixed-precision: the module already has @" << name
            << "; run this pass before glimmer-autodiff";
        return signalPassFailure();
      }
    if (failed(checkF32(func)))
      return signalPassFailure();
    rewrite(func);
  }

  /// The input is an f32 program: every floating-point tensor is f32.
  LogicalResult checkF32(func::FuncOp func) {
    auto bad = [](Type t) {
      RankedTensorType tensor = floatTensorType(t);
      return tensor && !tensor.getElementType().isF32();
    };
    auto diagnose = [&](InFlightDiagnostic diag, Type t) {
      diag << " is " << t
           << "; glimmer-mixed-precision expects an f32 program (import "
              "with --dtype=f32)";
      return failure();
    };
    for (auto [i, t] : llvm::enumerate(func.getArgumentTypes()))
      if (bad(t))
        return diagnose(func.emitError() << "argument #" << i << " of @"
                                         << func.getName(),
                        t);
    for (auto [i, t] : llvm::enumerate(func.getResultTypes()))
      if (bad(t))
        return diagnose(func.emitError() << "result #" << i << " of @"
                                         << func.getName(),
                        t);
    for (Operation &op : func.getBody().front()) {
      for (auto [i, r] : llvm::enumerate(op.getResults()))
        if (bad(r.getType()))
          return diagnose(op.emitOpError() << "result #" << i, r.getType());
    }
    return success();
  }

  void rewrite(func::FuncOp func) {
    Block &body = func.getBody().front();
    OpBuilder b(func.getContext());
    Type low = b.getBF16Type();
    // The bf16 copy of each f32 value that bf16 compute reads.
    DenseMap<Value, Value> lowered;
    // f32 constants and broadcasts rebuilt in bf16, in creation order.
    SmallVector<Operation *> replaced;
    auto isParam = [&](Value v) {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner() == &body &&
             func.getArgAttr(arg.getArgNumber(), "glimmer.param") &&
             floatTensorType(v.getType());
    };
    auto isLow = [&](Value v) {
      RankedTensorType t = floatTensorType(v.getType());
      return (t && t.getElementType() == low) || isParam(v);
    };
    // The bf16 copy of `v`, made right before `user` (its first reader:
    // users are visited in order) unless it exists. Constants are rebuilt
    // in bf16, and broadcasts are rebuilt on a bf16 copy of their input
    // (fewer elements to convert, and the partitioner still sees a
    // broadcast it can rebuild at a rank's local shape).
    std::function<Value(Value, Operation *)> toLow = [&](Value v,
                                                         Operation *user) {
      auto it = lowered.find(v);
      if (it != lowered.end())
        return it->second;
      RankedTensorType type = floatTensorType(v.getType());
      auto lowType = RankedTensorType::get(type.getShape(), low);
      Value result;
      auto constant = v.getDefiningOp<ConstantOp>();
      auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                            : DenseElementsAttr();
      if (dense) {
        const llvm::fltSemantics &sem =
            cast<FloatType>(low).getFloatSemantics();
        auto round = [&](APFloat x) {
          bool lost;
          x.convert(sem, APFloat::rmNearestTiesToEven, &lost);
          return x;
        };
        DenseElementsAttr attr;
        if (dense.isSplat()) {
          attr = DenseElementsAttr::get(lowType,
                                        round(dense.getSplatValue<APFloat>()));
        } else {
          SmallVector<APFloat> values;
          for (APFloat x : dense.getValues<APFloat>())
            values.push_back(round(x));
          attr = DenseElementsAttr::get(lowType, values);
        }
        b.setInsertionPoint(user);
        result = ConstantOp::create(b, constant.getLoc(), attr);
        replaced.push_back(constant);
      } else if (auto bc = v.getDefiningOp<BroadcastInDimOp>()) {
        Value input = toLow(bc.getInput(), user);
        b.setInsertionPoint(user);
        result = BroadcastInDimOp::create(b, bc.getLoc(), lowType, input,
                                          bc.getDimsAttr());
        replaced.push_back(bc);
      } else {
        b.setInsertionPoint(user);
        result = ConvertOp::create(b, v.getLoc(), lowType, v);
      }
      lowered[v] = result;
      return result;
    };

    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        // The signature stays f32.
        for (OpOperand &operand : ret->getOpOperands()) {
          Value v = operand.get();
          RankedTensorType t = floatTensorType(v.getType());
          if (!t || t.getElementType() != low)
            continue;
          b.setInsertionPoint(ret);
          operand.set(ConvertOp::create(
              b, v.getLoc(), RankedTensorType::get(t.getShape(), b.getF32Type()),
              v));
        }
        continue;
      }
      bool computesLow = llvm::any_of(op.getOpOperands(), [&](OpOperand &o) {
        return !keepsF32Operand(&op, o.getOperandNumber()) && isLow(o.get());
      });
      if (!computesLow)
        continue;
      for (OpOperand &operand : op.getOpOperands()) {
        Value v = operand.get();
        RankedTensorType t = floatTensorType(v.getType());
        if (!t || t.getElementType() == low ||
            keepsF32Operand(&op, operand.getOperandNumber()))
          continue;
        operand.set(toLow(v, &op));
      }
      for (OpResult r : op.getResults()) {
        RankedTensorType t = floatTensorType(r.getType());
        if (t && !keepsF32Result(&op, r.getResultNumber()))
          r.setType(RankedTensorType::get(t.getShape(), low));
      }
    }
    // Those that only bf16 compute read (a broadcast before its input).
    for (Operation *op : llvm::reverse(replaced))
      if (op->use_empty())
        op->erase();
  }
};

} // namespace
