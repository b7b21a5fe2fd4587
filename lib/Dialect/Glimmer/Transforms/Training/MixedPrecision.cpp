//===- MixedPrecision.cpp - bf16 compute, f32 weights and loss ------------===//
//
// Turns an f32 forward into a mixed-precision one: bf16 compute with f32
// master weights. The function's signature does not change. Two policies,
// one forward sweep in program order:
//
// `bf16` (the default, the faster): every op downstream of a parameter
// computes in bf16. A value is *low* when it is bf16 or a parameter; an op
// with a low floating-point operand *demotes*: its f32 operands are
// converted (a parameter right before its first use) and its results are
// bf16. Norms, softmax and the residual stream are bf16 tensors (their
// kernels accumulate in f32).
//
// `autocast`: the precision of PyTorch's autocast(torch.bfloat16). Each op
// is classified:
//  - *bf16 ops* (linear, matmul, conv2d, attention) read bf16 operands;
//  - *f32 ops* (rms_norm, layer_norm, softmax, exp, log, pow, rsqrt, reduce
//    sum, sum_squares, cumsum) read f32: a bf16 operand is widened (exact);
//  - cross_entropy reads bf16 logits as they are (its kernels compute in
//    f32, which is what widening them first would give);
//  - every other op *promotes*, as PyTorch's type promotion does under
//    autocast: it computes in f32 when one of its floating-point operands
//    is f32 (its bf16 operands are widened), in bf16 when all are bf16.
//    As in PyTorch, operands of a lower category do not take part: splat
//    constants (Python scalars) below 0-d values (possibly broadcast)
//    below dimensioned tensors (`x * 0.5` stays bf16).
// Rounding to bf16 then happens only where autocast rounds: at the outputs
// of bf16 ops and of ops whose inputs are all bf16, and at the inputs of
// bf16 ops; the residual stream, which adds bf16 branch outputs to f32
// embeddings, stays f32.
//
// Under both, f32 operands are converted once per value (constants rebuilt
// as bf16 constants, broadcasts/reshapes/transposes on a bf16 copy of their
// input), attention's log-sum-exp and cross-entropy's sum stay f32, and a
// bf16 value the function returns is converted back to f32. Autodiff then
// sees the converts, whose VJPs convert the cotangents back: gradients,
// the optimizer step and its state are f32.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
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

/// How an op chooses its precision (the file comment lists the classes).
enum class Precision { Bf16, F32, AsIs, Promote, Demote };

/// The class of `op` under the `autocast` policy (under `bf16` every op
/// demotes).
Precision classifyAutocast(Operation *op) {
  if (isa<LinearOp, MatmulOp, Conv2dOp, AttentionOp, AttentionGradOp>(op))
    return Precision::Bf16;
  if (isa<RmsNormOp, LayerNormOp, SoftmaxOp, ExpOp, LogOp, PowOp, RsqrtOp,
          SumSquaresOp, CumsumOp>(op))
    return Precision::F32;
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return reduce.getKind() == ReductionKind::Sum ? Precision::F32
                                                  : Precision::Promote;
  if (isa<CrossEntropyOp, CrossEntropyGradOp>(op))
    return Precision::AsIs;
  return Precision::Promote;
}

/// Results that keep f32 when the op reads bf16.
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

/// How strongly a value takes part in type promotion, as PyTorch ranks
/// operands: a dimensioned tensor (2) over a 0-d tensor (1) over a Python
/// scalar (0). Traced programs show a scalar as a splat constant and a 0-d
/// tensor as a rank-0 value, possibly broadcast or reshaped.
int promotionRank(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto constant = dyn_cast<ConstantOp>(def)) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (dense && dense.isSplat())
        return 0;
      break;
    }
    if (auto bc = dyn_cast<BroadcastInDimOp>(def))
      v = bc.getInput();
    else if (auto reshape = dyn_cast<ReshapeOp>(def))
      v = reshape.getInput();
    else
      break;
  }
  return cast<RankedTensorType>(v.getType()).getRank() == 0 ? 1 : 2;
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
    if (policy != "bf16" && policy != "autocast") {
      module.emitError() << "glimmer-mixed-precision: unknown policy '"
                         << policy << "' (expected bf16 or autocast)";
      return signalPassFailure();
    }
    if (failed(checkF32(func)))
      return signalPassFailure();
    rewrite(func, policy == "autocast");
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

  void rewrite(func::FuncOp func, bool autocast) {
    Block &body = func.getBody().front();
    OpBuilder b(func.getContext());
    Type low = b.getBF16Type();
    Type f32 = b.getF32Type();
    // The bf16 copy of each f32 value that bf16 compute reads, and the f32
    // copy of each bf16 value that f32 compute reads.
    DenseMap<Value, Value> lowered, widened;
    // f32 constants, broadcasts and layout ops rebuilt in bf16, in creation
    // order.
    SmallVector<Operation *> replaced;
    auto isLow = [&](Value v) {
      RankedTensorType t = floatTensorType(v.getType());
      return t && t.getElementType() == low;
    };
    // What makes an op demote under `bf16`: a bf16 operand or a parameter.
    auto isParam = [&](Value v) {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner() == &body &&
             func.getArgAttr(arg.getArgNumber(), kParamAttr) &&
             floatTensorType(v.getType());
    };
    auto demotes = [&](Value v) { return isLow(v) || isParam(v); };
    // The bf16 copy of `v`, made right before `user` (its first reader:
    // users are visited in order) unless it exists. Constants are rebuilt
    // in bf16; broadcasts, reshapes and transposes are rebuilt on a bf16
    // copy of their input (fewer elements to convert for a broadcast; the
    // partitioner still sees a broadcast it can rebuild at a rank's local
    // shape; attention still finds the transpose of its operands), so the
    // convert lands on the op that computed the value, where fusion merges
    // it.
    std::function<Value(Value, Operation *)> toLow = [&](Value v,
                                                         Operation *user) {
      if (isLow(v))
        return v;
      auto it = lowered.find(v);
      if (it != lowered.end())
        return it->second;
      RankedTensorType type = floatTensorType(v.getType());
      auto lowType = RankedTensorType::get(type.getShape(), low);
      Value result;
      auto constant = v.getDefiningOp<ConstantOp>();
      auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                            : DenseElementsAttr();
      Operation *def = v.getDefiningOp();
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
      } else if (def && isa<BroadcastInDimOp, ReshapeOp, TransposeOp>(def) &&
                 floatTensorType(def->getOperand(0).getType())) {
        Value input = toLow(def->getOperand(0), user);
        b.setInsertionPoint(user);
        Operation *copy = b.clone(*def);
        copy->setOperand(0, input);
        copy->getResult(0).setType(lowType);
        result = copy->getResult(0);
        replaced.push_back(def);
      } else {
        b.setInsertionPoint(user);
        result = ConvertOp::create(b, v.getLoc(), lowType, v);
      }
      lowered[v] = result;
      return result;
    };
    // The f32 copy of a bf16 value (exact), made right before `user`.
    auto toF32 = [&](Value v, Operation *user) {
      auto it = widened.find(v);
      if (it != widened.end())
        return it->second;
      b.setInsertionPoint(user);
      Value result = ConvertOp::create(
          b, v.getLoc(),
          RankedTensorType::get(floatTensorType(v.getType()).getShape(), f32),
          v);
      widened[v] = result;
      return result;
    };
    auto lowerResults = [&](Operation &op) {
      for (OpResult r : op.getResults()) {
        RankedTensorType t = floatTensorType(r.getType());
        if (t && !keepsF32Result(&op, r.getResultNumber()))
          r.setType(RankedTensorType::get(t.getShape(), low));
      }
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
              b, v.getLoc(), RankedTensorType::get(t.getShape(), f32), v));
        }
        continue;
      }
      // The floating-point operands that follow the op's precision.
      SmallVector<OpOperand *> floats;
      for (OpOperand &o : op.getOpOperands())
        if (floatTensorType(o.get().getType()) &&
            !keepsF32Operand(&op, o.getOperandNumber()))
          floats.push_back(&o);
      auto anyLow = llvm::any_of(floats, [&](OpOperand *o) {
        return isLow(o->get());
      });
      switch (autocast ? classifyAutocast(&op) : Precision::Demote) {
      case Precision::Demote:
        // Computes in bf16 when it reads bf16 or a parameter, as bf16 ops do.
        if (!llvm::any_of(floats,
                          [&](OpOperand *o) { return demotes(o->get()); }))
          break;
        [[fallthrough]];
      case Precision::Bf16:
        for (OpOperand *o : floats)
          if (!isLow(o->get()))
            o->set(toLow(o->get(), &op));
        lowerResults(op);
        break;
      case Precision::F32:
        for (OpOperand *o : floats)
          if (isLow(o->get()))
            o->set(toF32(o->get(), &op));
        break;
      case Precision::AsIs:
        if (anyLow)
          lowerResults(op);
        break;
      case Precision::Promote: {
        if (!anyLow)
          break;
        // f32 when an f32 operand is among those of the highest rank.
        int top = 0;
        for (OpOperand *o : floats)
          top = std::max(top, promotionRank(o->get()));
        bool anyF32 = llvm::any_of(floats, [&](OpOperand *o) {
          return !isLow(o->get()) && promotionRank(o->get()) == top;
        });
        for (OpOperand *o : floats) {
          if (anyF32 && isLow(o->get()))
            o->set(toF32(o->get(), &op));
          else if (!anyF32 && !isLow(o->get()))
            o->set(toLow(o->get(), &op));
        }
        if (!anyF32)
          lowerResults(op);
        break;
      }
      }
    }
    // Those that only bf16 compute read (a broadcast before its input).
    for (Operation *op : llvm::reverse(replaced))
      if (op->use_empty())
        op->erase();
    // A norm that only bf16 compute reads writes bf16 itself: it still
    // computes in f32 and rounds once, as the convert did, without an f32
    // copy of its result (and its backward reads the bf16 cotangent).
    for (Operation &op : body) {
      if (!isa<RmsNormOp, LayerNormOp>(op))
        continue;
      Value result = op.getResult(0);
      if (result.use_empty() || !llvm::all_of(result.getUsers(), [&](Operation *u) {
            auto convert = dyn_cast<ConvertOp>(u);
            return convert && isLow(convert.getOutput());
          }))
        continue;
      result.setType(RankedTensorType::get(
          floatTensorType(result.getType()).getShape(), low));
      for (Operation *u : llvm::make_early_inc_range(result.getUsers())) {
        u->getResult(0).replaceAllUsesWith(result);
        u->erase();
      }
    }
  }
};

} // namespace

StringRef glimmer::mixedPrecisionPolicy(StringRef dtype) {
  if (dtype == "bf16")
    return "bf16";
  if (dtype == "bf16-autocast")
    return "autocast";
  return "";
}
