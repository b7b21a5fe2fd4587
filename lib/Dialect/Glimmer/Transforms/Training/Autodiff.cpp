//===- Autodiff.cpp - Reverse-mode AD and the optimizer step --------------===//
//
// @grad_step is @forward followed by the reverse sweep: ops are visited in
// reverse order and each op with a cotangent on a result asks its
// VJPOpInterface rule for its operands' cotangents. Only ops on a path from
// a trainable parameter to the loss are differentiated (activity analysis),
// so integer index computations need no rules.
//
// @apply_step is separate so that the driver can accumulate gradients over
// micro-batches between the two. (Reductions across ranks are collectives
// inside the programs: reduce-scatters from autodiff, all-reduces from
// glimmer-reduce-partials.)
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <map>

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERAUTODIFF
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

/// The argument attribute that describes a sharded parameter (its per-rank
/// piece under TP, FSDP or both); it travels with it to its gradient and
/// optimizer state.
constexpr StringRef kShardAttrs[] = {kShardedAttr};

/// Attribute lists as dictionaries, for setting all of a function's
/// argument or result attributes at once (one setArgAttr or setResultAttr
/// per attribute rebuilds every one's: quadratic in the parameter count).
SmallVector<DictionaryAttr> dictionaries(MutableArrayRef<NamedAttrList> lists,
                                         MLIRContext *ctx) {
  SmallVector<DictionaryAttr> dicts;
  for (NamedAttrList &attrs : lists)
    dicts.push_back(attrs.getDictionary(ctx));
  return dicts;
}

/// The mesh axes a piece described by `glimmer.sharded` is split over, in
/// mesh order (the group whose ranks hold its pieces); null when whole.
ArrayAttr shardAxesOf(func::FuncOp func, unsigned arg) {
  auto sharded = func.getArgAttrOfType<ShardingAttr>(arg, kShardedAttr);
  if (!sharded)
    return {};
  SmallVector<StringRef> axes;
  for (unsigned d = 0; d < sharded.getDims().size(); ++d)
    for (StringRef a : sharded.getDimAxes(d))
      axes.push_back(a);
  llvm::sort(axes, [](StringRef x, StringRef y) {
    return *meshAxisFromName(x.str()) < *meshAxisFromName(y.str());
  });
  if (axes.empty())
    return {};
  return Builder(func.getContext()).getStrArrayAttr(axes);
}

/// The mesh axes over which the gradient of `arg` is already summed: those
/// of the all_gathers that are its only uses (their VJP, a reduce_scatter,
/// sums the ranks' cotangents over exactly those axes).
SmallVector<StringRef> gatheredAxes(Value arg) {
  SmallVector<StringRef> axes;
  bool first = true;
  for (Operation *user : arg.getUsers()) {
    // An invariant gather's VJP is a slice, not a sum over its axes.
    auto gather = dyn_cast<AllGatherOp>(user);
    if (!gather || gather.getInvariant())
      return {};
    SmallVector<StringRef> mine;
    for (Attribute a : gather.getAxes())
      mine.push_back(cast<StringAttr>(a).getValue());
    if (first)
      axes = mine;
    else
      llvm::erase_if(axes, [&](StringRef x) {
        return !llvm::is_contained(mine, x);
      });
    first = false;
  }
  return axes;
}

bool isFloatTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<FloatType>(tensor.getElementType());
}

Value splat(OpBuilder &b, Location loc, RankedTensorType type, double v) {
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), v)));
}

struct AutodiffPass : public glimmer::impl::GlimmerAutodiffBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override;

  /// What a gradient function is built from `forward` as.
  struct GradSpec {
    std::string name;
    /// The (last) result is the scalar loss, seeded with 1; otherwise each
    /// result's cotangent is an argument (a pipeline stage's backward).
    bool scalarLoss = true;
    /// The axes over which the loss is a per-rank partial sum.
    ArrayAttr lossPartial;
  };
  /// Builds the gradient function; returns the indices of the
  /// differentiated parameters, or failure.
  FailureOr<SmallVector<unsigned>> buildGradStep(func::FuncOp forward,
                                                 const GradSpec &spec);
  /// A parameter that several pipeline ranks hold (tied weights): its
  /// gradient is summed over pp in every rank's optimizer step (ranks that
  /// do not hold it add zeros, so the collectives match), and counted in
  /// the norm by its first holder only.
  struct SharedGrad {
    std::string name;
    RankedTensorType type;
    bool held;
    bool countInNorm;
  };
  /// `pipeline`: the norm also sums over the other stages' parameters.
  LogicalResult buildApplyStep(func::FuncOp forward,
                               ArrayRef<unsigned> params, Type lossType,
                               StringRef name, bool pipeline,
                               ArrayRef<SharedGrad> shared = {});
  void buildPipelineSteps(ArrayRef<func::FuncOp> stages);
};

void AutodiffPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (optimizer != "adamw" && optimizer != "sgd") {
    module.emitError() << "glimmer-autodiff: unknown optimizer '" << optimizer
                       << "' (expected adamw or sgd)";
    return signalPassFailure();
  }
  // Pipeline stages (glimmer-split-stages): each rank trains its stages.
  SmallVector<func::FuncOp> stages;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr(kStageAttr))
      stages.push_back(fn);
  if (!stages.empty())
    return buildPipelineSteps(stages);
  auto forward = module.lookupSymbol<func::FuncOp>(functionName);
  if (!forward) {
    module.emitError() << "glimmer-autodiff: no function @" << functionName
                       << " to differentiate";
    return signalPassFailure();
  }
  if (optimizer != "adamw" && optimizer != "sgd") {
    module.emitError() << "glimmer-autodiff: unknown optimizer '" << optimizer
                       << "' (expected adamw or sgd)";
    return signalPassFailure();
  }
  for (StringRef name : {"grad_step", "apply_step"})
    if (module.lookupSymbol(name)) {
      module.emitError() << "glimmer-autodiff: the module already has @"
                         << name;
      return signalPassFailure();
    }
  FunctionType type = forward.getFunctionType();
  if (type.getNumResults() != 1 ||
      !isFloatTensor(type.getResult(0)) ||
      cast<RankedTensorType>(type.getResult(0)).getRank() != 0) {
    forward.emitError() << "glimmer-autodiff: @" << functionName
                        << " must return one floating-point scalar (the "
                           "loss), but it returns "
                        << type.getResults();
    return signalPassFailure();
  }
  GradSpec spec{"grad_step", true,
                forward.getResultAttrOfType<ArrayAttr>(0, kPartialAttr)};
  FailureOr<SmallVector<unsigned>> params = buildGradStep(forward, spec);
  if (failed(params))
    return signalPassFailure();
  if (failed(buildApplyStep(forward, *params, type.getResult(0), "apply_step",
                            /*pipeline=*/false)))
    return signalPassFailure();
}

// Stage s gets @stage_<s>_grad, its backward with the forward recomputed
// from the stage's inputs (so a stage keeps only its boundary activations
// between its forward and backward), and @apply_step_<s> for its
// parameters. The last stage's loss seeds the sweep; the others take the
// cotangents of their results from the next stage.
void AutodiffPass::buildPipelineSteps(ArrayRef<func::FuncOp> stages) {
  func::FuncOp last = stages.back();
  for (func::FuncOp s : stages)
    if (s->getAttrOfType<IntegerAttr>(kStageAttr).getInt() >
        last->getAttrOfType<IntegerAttr>(kStageAttr).getInt())
      last = s;
  FunctionType lastType = last.getFunctionType();
  if (lastType.getNumResults() != 1 || !isFloatTensor(lastType.getResult(0)) ||
      cast<RankedTensorType>(lastType.getResult(0)).getRank() != 0) {
    last.emitError() << "glimmer-autodiff: the last pipeline stage must "
                        "return one floating-point scalar (the loss), but it "
                        "returns "
                     << lastType.getResults();
    return signalPassFailure();
  }
  auto partial = last.getResultAttrOfType<ArrayAttr>(0, kPartialAttr);
  ModuleOp module = getOperation();
  auto prologue = module.lookupSymbol<func::FuncOp>("prologue");
  // The prologue's parameters are updated with stage 0's.
  SmallVector<std::pair<func::FuncOp, unsigned>> prologueParams;
  if (prologue) {
    GradSpec spec{"prologue_grad", false, partial};
    FailureOr<SmallVector<unsigned>> params = buildGradStep(prologue, spec);
    if (failed(params))
      return signalPassFailure();
    for (unsigned i : *params)
      prologueParams.push_back({prologue, i});
  }
  auto spmd = getRecordedSpmd(module);
  int64_t ranks = spmd ? spmd.getLayout().pp() : int64_t(stages.size());
  bool pipeline = ranks > 1;
  // Each pp rank's parameters: those of its stages r, r + pp, ...
  SmallVector<SmallVector<std::pair<func::FuncOp, unsigned>>> byRank(ranks);
  byRank[0].append(prologueParams);
  for (func::FuncOp stage : stages) {
    std::string name = stage.getSymName().str();
    GradSpec spec{name + "_grad", stage == last, partial};
    FailureOr<SmallVector<unsigned>> params = buildGradStep(stage, spec);
    if (failed(params))
      return signalPassFailure();
    int64_t s = stage->getAttrOfType<IntegerAttr>(kStageAttr).getInt();
    for (unsigned i : *params)
      byRank[s % ranks].push_back({stage, i});
  }
  // Parameters several ranks hold (tied weights), with their holders.
  std::map<std::string, SmallVector<int64_t>> holders;
  std::map<std::string, RankedTensorType> types;
  for (auto [rank, all] : llvm::enumerate(byRank))
    for (auto [fn, i] : all) {
      std::string n =
          fn.getArgAttrOfType<StringAttr>(i, kParamAttr).getValue().str();
      auto &h = holders[n];
      if (h.empty() || h.back() != int64_t(rank))
        h.push_back(int64_t(rank));
      types[n] = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    }
  for (auto [rank, all] : llvm::enumerate(byRank)) {
    std::string index = std::to_string(rank);
    Location loc = last.getLoc();
    SmallVector<SharedGrad> shared;
    for (auto &[n, h] : holders)
      if (h.size() > 1)
        shared.push_back({n, types[n], llvm::is_contained(h, int64_t(rank)),
                          h.front() == int64_t(rank)});
    // One optimizer step over parameters from several functions: their
    // arguments gathered on a declaration (discarded after), each once.
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    llvm::StringSet<> seen;
    for (auto [fn, i] : all) {
      auto n = fn.getArgAttrOfType<StringAttr>(i, kParamAttr);
      if (!seen.insert(n.getValue()).second)
        continue;
      types.push_back(fn.getArgumentTypes()[i]);
      attrs.push_back(fn.getArgAttrDict(i));
    }
    auto holder = func::FuncOp::create(b, loc, "apply_params",
                                       b.getFunctionType(types, {}));
    SmallVector<unsigned> indices;
    for (auto [i, a] : llvm::enumerate(attrs)) {
      holder.setArgAttrs(i, a);
      indices.push_back(i);
    }
    LogicalResult built =
        buildApplyStep(holder, indices, lastType.getResult(0),
                       "apply_step_" + index, pipeline, shared);
    holder.erase();
    if (failed(built))
      return signalPassFailure();
  }
}

FailureOr<SmallVector<unsigned>>
AutodiffPass::buildGradStep(func::FuncOp forward, const GradSpec &spec) {
  OpBuilder b(forward);
  b.setInsertionPointAfter(forward);
  auto gradStep = cast<func::FuncOp>(b.clone(*forward));
  gradStep.setSymName(spec.name);
  gradStep->removeAttr(kStageAttr);
  Block &body = gradStep.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = spec.scalarLoss ? ret.getOperand(0) : Value();
  // A stage's backward: one cotangent argument per result.
  SmallVector<std::pair<Value, Value>> seeds;
  if (!spec.scalarLoss) {
    for (auto [i, r] : llvm::enumerate(ret.getOperands())) {
      unsigned n = gradStep.getNumArguments();
      if (failed(gradStep.insertArgument(
              n, r.getType(),
              b.getDictionaryAttr(b.getNamedAttr(
                  kCotangentAttr, b.getI64IntegerAttr(int64_t(i)))),
              r.getLoc()))) {
        gradStep.erase();
        return failure();
      }
      seeds.push_back({r, gradStep.getArgument(n)});
    }
  }
  // The stage's activation inputs (from the previous stage, or stage 0's
  // from the prologue): their cotangents go back where they came from.
  SmallVector<unsigned> activations;
  for (BlockArgument arg : gradStep.getArguments())
    if ((gradStep.getArgAttr(arg.getArgNumber(), kActivationAttr) ||
         gradStep.getArgAttr(arg.getArgNumber(), kPrologueAttr)) &&
        isFloatTensor(arg.getType()))
      activations.push_back(arg.getArgNumber());

  // Trainable parameters and the values they influence.
  SmallVector<unsigned> trainable;
  for (BlockArgument arg : gradStep.getArguments())
    if (gradStep.getArgAttr(arg.getArgNumber(), kParamAttr) &&
        isFloatTensor(arg.getType()))
      trainable.push_back(arg.getArgNumber());
  if (trainable.empty()) {
    forward.emitError() << "glimmer-autodiff: @" << functionName
                        << " has no trainable parameter (no floating-point "
                           "argument marked glimmer.param)";
    gradStep.erase();
    return failure();
  }
  llvm::DenseSet<Value> varied;
  for (unsigned i : trainable)
    varied.insert(gradStep.getArgument(i));
  for (unsigned i : activations)
    varied.insert(gradStep.getArgument(i));
  for (Operation &op : body.without_terminator()) {
    bool anyVaried = llvm::any_of(op.getOperands(),
                                  [&](Value v) { return varied.contains(v); });
    if (!anyVaried)
      continue;
    for (Value r : op.getResults())
      if (isFloatTensor(r.getType()))
        varied.insert(r);
  }

  // Reverse sweep.
  DenseMap<Value, Value> grads;
  b.setInsertionPoint(ret);
  auto accumulate = [&](Value target, Value g) {
    auto it = grads.find(target);
    if (it == grads.end())
      grads[target] = g;
    else
      it->second = AddOp::create(b, g.getLoc(), it->second, g);
  };
  if (loss && varied.contains(loss))
    grads[loss] = splat(b, loss.getLoc(),
                        cast<RankedTensorType>(loss.getType()), 1.0);
  for (auto [value, cotangent] : seeds)
    if (varied.contains(value))
      accumulate(value, cotangent);
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool anyGrad = false;
    for (Value r : op->getResults()) {
      Value g = grads.lookup(r);
      resultGrads.push_back(g);
      anyGrad |= bool(g);
    }
    if (!anyGrad)
      continue;
    bool anyVariedOperand = llvm::any_of(
        op->getOperands(), [&](Value v) { return varied.contains(v); });
    if (!anyVariedOperand)
      continue;
    auto rule = dyn_cast<VJPOpInterface>(op);
    if (!rule) {
      op->emitOpError() << "has no VJP rule, but it lies on the path from a "
                           "trainable parameter to the loss";
      gradStep.erase();
      return failure();
    }
    SmallVector<Value> operandGrads(op->getNumOperands());
    b.setInsertionPoint(ret);
    if (failed(rule.buildVJP(b, resultGrads, operandGrads))) {
      gradStep.erase();
      return failure();
    }
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
      if (g && varied.contains(operand))
        accumulate(operand, g);
  }

  // Results: the loss, the activation inputs' cotangents (zeros where an
  // input does not reach the outputs: the previous stage still receives
  // one), then each parameter's gradient.
  SmallVector<Value> results;
  if (loss)
    results.push_back(loss);
  b.setInsertionPoint(ret);
  for (unsigned i : activations) {
    Value arg = gradStep.getArgument(i);
    Value g = grads.lookup(arg);
    results.push_back(g ? g
                        : splat(b, arg.getLoc(),
                                cast<RankedTensorType>(arg.getType()), 0.0));
  }
  unsigned firstGrad = results.size();
  SmallVector<unsigned> differentiated;
  for (unsigned i : trainable)
    if (Value g = grads.lookup(gradStep.getArgument(i))) {
      results.push_back(g);
      differentiated.push_back(i);
    }
  if (differentiated.empty() && spec.scalarLoss && activations.empty()) {
    forward.emitError() << "glimmer-autodiff: the loss of @"
                        << forward.getSymName()
                        << " does not depend on any trainable parameter";
    gradStep.erase();
    return failure();
  }
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> resultTypes;
  for (Value r : results)
    resultTypes.push_back(r.getType());
  // The clone's result attributes described @forward's results.
  gradStep.removeResAttrsAttr();
  gradStep.setType(
      b.getFunctionType(gradStep.getArgumentTypes(), resultTypes));
  // Gradients of a per-rank partial loss are per-rank partial sums too,
  // except over the axes that the reduce_scatter (the VJP of a sharded
  // parameter's all_gather) has already summed. (A stage's activation
  // cotangents are whole: a rank's activations reach its own share of the
  // loss only, through collectives whose VJPs sum the rest.)
  // Set at once at the end: each setResultAttr rebuilds every result's
  // attributes (quadratic in the parameter count).
  SmallVector<NamedAttrList> resultAttrs(results.size());
  ArrayAttr lossPartial = spec.lossPartial;
  if (lossPartial && loss)
    resultAttrs[0].set(kPartialAttr, lossPartial);
  for (auto [k, i] : llvm::enumerate(activations)) {
    bool fromPrologue = bool(gradStep.getArgAttr(i, kPrologueAttr));
    resultAttrs[(loss ? 1 : 0) + k].set(
        fromPrologue ? kPrologueGradAttr : kActivationGradAttr,
        gradStep.getArgAttr(i, fromPrologue ? kPrologueAttr : kActivationAttr));
  }
  for (auto [k, i] : llvm::enumerate(differentiated)) {
    auto name = gradStep.getArgAttrOfType<StringAttr>(i, kParamAttr);
    resultAttrs[firstGrad + k].set(kGradAttr, name);
    for (StringRef attr : kShardAttrs)
      if (Attribute a = gradStep.getArgAttr(i, attr))
        resultAttrs[firstGrad + k].set(attr, a);
    SmallVector<StringRef> summed = gatheredAxes(gradStep.getArgument(i));
    SmallVector<StringRef> remaining;
    if (lossPartial)
      for (Attribute a : lossPartial)
        if (!llvm::is_contained(summed, cast<StringAttr>(a).getValue()))
          remaining.push_back(cast<StringAttr>(a).getValue());
    for (StringRef axis : summed) {
      bool isPartial =
          lossPartial && llvm::any_of(lossPartial, [&](Attribute a) {
            return cast<StringAttr>(a).getValue() == axis;
          });
      if (!isPartial) {
        forward.emitError()
            << "glimmer-autodiff: the gradient of parameter '"
            << name.getValue() << "' is summed over '" << axis
            << "' by the reduce_scatter of its all_gather, but the loss is "
               "not a partial sum over '"
            << axis << "': a loss replicated there would be counted once "
                       "per rank";
        gradStep.erase();
        return failure();
      }
    }
    if (!remaining.empty())
      resultAttrs[firstGrad + k].set(kPartialAttr,
                                     b.getStrArrayAttr(remaining));
  }
  gradStep.setAllResultAttrs(dictionaries(resultAttrs, gradStep.getContext()));
  return differentiated;
}

LogicalResult AutodiffPass::buildApplyStep(func::FuncOp forward,
                                           ArrayRef<unsigned> params,
                                           Type lossType, StringRef name,
                                           bool pipeline,
                                           ArrayRef<SharedGrad> shared) {
  bool adamw = optimizer == "adamw";
  double wd = weightDecay >= 0 ? double(weightDecay) : (adamw ? 0.01 : 0.0);
  MLIRContext *ctx = &getContext();
  OpBuilder b(ctx);
  Location loc = forward.getLoc();

  // Arguments: per parameter (param, grad[, exp_avg, exp_avg_sq]), then step.
  SmallVector<Type> argTypes;
  SmallVector<std::pair<StringRef, StringAttr>> argNames;
  for (unsigned i : params) {
    Type t = forward.getArgumentTypes()[i];
    auto name = forward.getArgAttrOfType<StringAttr>(i, kParamAttr);
    argTypes.push_back(t);
    argNames.push_back({kParamAttr, name});
    argTypes.push_back(t);
    argNames.push_back({kGradAttr, name});
    if (adamw) {
      argTypes.append({t, t});
      argNames.push_back({kExpAvgAttr, name});
      argNames.push_back({kExpAvgSqAttr, name});
    }
  }
  auto stepType = RankedTensorType::get({}, b.getI64Type());
  argTypes.push_back(stepType);

  auto module = getOperation();
  bool anySharded = llvm::any_of(params, [&](unsigned i) {
    return bool(forward.getArgAttr(i, kShardedAttr));
  });
  if ((anySharded || pipeline) && !module.lookupSymbol<MeshOp>("mesh"))
    return forward.emitError()
           << "glimmer-autodiff: sharded parameters and pipeline stages need "
              "@mesh for the gradient norm; run glimmer-materialize-mesh "
              "first";
  b.setInsertionPointToEnd(module.getBody());
  auto apply = func::FuncOp::create(b, loc, name,
                                    b.getFunctionType(argTypes, {}));
  Block *entry = apply.addEntryBlock();
  unsigned stride = adamw ? 4 : 2;
  // Set at once: each setArgAttr rebuilds every argument's attributes.
  SmallVector<NamedAttrList> argAttrs(argTypes.size());
  for (auto [i, attr] : llvm::enumerate(argNames)) {
    argAttrs[i].set(attr.first, attr.second);
    // Sharded parameters: the optimizer runs on the rank's piece, with
    // gradient and state cut the same way.
    for (StringRef shardAttr : kShardAttrs)
      if (Attribute a = forward.getArgAttr(params[i / stride], shardAttr))
        argAttrs[i].set(shardAttr, a);
  }
  argAttrs.back().set(kStepAttr, b.getUnitAttr());
  apply.setAllArgAttrs(dictionaries(argAttrs, apply.getContext()));
  b.setInsertionPointToStart(entry);

  auto normType = cast<RankedTensorType>(lossType);
  Type normElem = normType.getElementType();

  // Tied parameters held by several pipeline ranks: their gradients are
  // summed over pp first, in the same order on every rank.
  SmallVector<Value> gradOf;
  llvm::StringSet<> notCounted;
  for (size_t k = 0; k < params.size(); ++k)
    gradOf.push_back(entry->getArgument(k * stride + 1));
  for (const SharedGrad &tied : shared) {
    int64_t k = -1;
    for (size_t j = 0; j < params.size(); ++j)
      if (forward.getArgAttrOfType<StringAttr>(params[j], kParamAttr)
              .getValue() == tied.name)
        k = int64_t(j);
    Value local = tied.held && k >= 0 ? gradOf[size_t(k)]
                                      : splat(b, loc, tied.type, 0.0);
    Value total = AllReduceOp::create(
        b, loc, ReductionKindAttr::get(ctx, ReductionKind::Sum), local,
        FlatSymbolRefAttr::get(ctx, "mesh"), b.getStrArrayAttr({"pp"}));
    if (tied.held && k >= 0) {
      gradOf[size_t(k)] = total;
      if (!tied.countInNorm)
        notCounted.insert(tied.name);
    }
  }

  // Global norm of all gradients (before clipping): one sum_squares per
  // group of gradients sharded over the same axes (its total all-reduced
  // over them) and one over the replicated ones (counted once, not once
  // per rank), each group split further by element type.
  Value sumSq;
  SmallVector<std::pair<ArrayAttr, Value>> shardedSumSq;
  struct Group {
    ArrayAttr axes; // null: replicated
    Type elem;
    SmallVector<Value> grads;
  };
  SmallVector<Group> groups;
  for (size_t k = 0; k < params.size(); ++k) {
    if (notCounted.contains(
            forward.getArgAttrOfType<StringAttr>(params[k], kParamAttr)
                .getValue()))
      continue;
    Value g = gradOf[k];
    Type elem = cast<RankedTensorType>(g.getType()).getElementType();
    ArrayAttr axes = shardAxesOf(forward, params[k]);
    auto it = llvm::find_if(groups, [&](const Group &e) {
      return e.axes == axes && e.elem == elem;
    });
    if (it == groups.end())
      it = groups.insert(groups.end(), Group{axes, elem, {}});
    it->grads.push_back(g);
  }
  for (Group &group : groups) {
    Value s = SumSquaresOp::create(
        b, loc, RankedTensorType::get({}, group.elem), group.grads);
    if (group.elem != normElem)
      s = ConvertOp::create(b, loc, normType, s);
    Value *acc = &sumSq;
    if (group.axes) {
      auto it = llvm::find_if(shardedSumSq, [&](const auto &e) {
        return e.first == group.axes;
      });
      if (it == shardedSumSq.end())
        it = shardedSumSq.insert(shardedSumSq.end(), {group.axes, Value()});
      acc = &it->second;
    }
    *acc = *acc ? Value(AddOp::create(b, loc, *acc, s)) : s;
  }
  for (auto [axes, local] : shardedSumSq) {
    Value total = AllReduceOp::create(
        b, loc, ReductionKindAttr::get(ctx, ReductionKind::Sum), local,
        FlatSymbolRefAttr::get(ctx, "mesh"), axes);
    sumSq = sumSq ? Value(AddOp::create(b, loc, sumSq, total)) : total;
  }
  // Each stage holds its own parameters: their squares add over `pp`.
  if (pipeline) {
    if (!sumSq)
      sumSq = splat(b, loc, normType, 0.0);
    sumSq = AllReduceOp::create(
        b, loc, ReductionKindAttr::get(ctx, ReductionKind::Sum), sumSq,
        FlatSymbolRefAttr::get(ctx, "mesh"), b.getStrArrayAttr({"pp"}));
  }
  Value norm = SqrtOp::create(b, loc, sumSq);

  // clip_grad_norm_: scale = min(1, max_norm / (norm + 1e-6)).
  Value scale;
  if (maxNorm > 0) {
    Value denom = AddOp::create(b, loc, norm, splat(b, loc, normType, 1e-6));
    Value coef =
        DivOp::create(b, loc, splat(b, loc, normType, maxNorm), denom);
    scale = MinOp::create(b, loc, coef, splat(b, loc, normType, 1.0));
  }

  SmallVector<Value> newParams, newAvg, newAvgSq;
  Value step = entry->getArgument(argTypes.size() - 1);
  for (size_t k = 0; k < params.size(); ++k) {
    Value p = entry->getArgument(k * stride);
    Value g = gradOf[k];
    auto pType = cast<RankedTensorType>(p.getType());
    // The clipping coefficient scales the gradient inside the update (no
    // scaled copy of every gradient).
    Value s = scale;
    if (s && pType.getElementType() != normElem)
      s = ConvertOp::create(
          b, loc, RankedTensorType::get({}, pType.getElementType()), s);
    if (adamw) {
      auto update = AdamWUpdateOp::create(
          b, loc, p, g, entry->getArgument(k * stride + 2),
          entry->getArgument(k * stride + 3), step, s, b.getF64FloatAttr(lr),
          b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
          b.getF64FloatAttr(eps), b.getF64FloatAttr(wd));
      newParams.push_back(update.getNewParam());
      newAvg.push_back(update.getNewExpAvg());
      newAvgSq.push_back(update.getNewExpAvgSq());
    } else {
      newParams.push_back(SgdUpdateOp::create(b, loc, p, g, s,
                                              b.getF64FloatAttr(lr),
                                              b.getF64FloatAttr(wd)));
    }
  }
  SmallVector<Value> results{norm};
  results.append(newParams);
  results.append(newAvg);
  results.append(newAvgSq);
  func::ReturnOp::create(b, loc, results);
  SmallVector<Type> resultTypes;
  for (Value r : results)
    resultTypes.push_back(r.getType());
  apply.setType(b.getFunctionType(argTypes, resultTypes));
  size_t n = params.size();
  SmallVector<NamedAttrList> resultAttrs(results.size());
  for (size_t k = 0; k < n; ++k) {
    StringAttr name =
        forward.getArgAttrOfType<StringAttr>(params[k], kParamAttr);
    resultAttrs[1 + k].set(kParamAttr, name);
    if (adamw) {
      resultAttrs[1 + n + k].set(kExpAvgAttr, name);
      resultAttrs[1 + 2 * n + k].set(kExpAvgSqAttr, name);
    }
    for (StringRef shardAttr : kShardAttrs)
      if (Attribute a = forward.getArgAttr(params[k], shardAttr))
        for (size_t r = 0; r < (adamw ? 3 : 1); ++r)
          resultAttrs[1 + r * n + k].set(shardAttr, a);
  }
  apply.setAllResultAttrs(dictionaries(resultAttrs, apply.getContext()));
  return success();
}

} // namespace
