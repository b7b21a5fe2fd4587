//===- GlimmerToEmitC.cpp - glimmer -> runtime calls in EmitC -------------===//
//
// Each glimmer op becomes one `emitc.call_opaque` of its runtime kernel.
// Attributes are rendered as C++ literals (shapes and index lists as braced
// lists, doubles with 17 significant digits so that they round-trip
// exactly, enums as qualified enumerators). This file lowers functions and
// dispatches each op to its family's lowering (Lower*.cpp).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"
#include "glimmer/Conversion/Passes.h"
#include "glimmer/Dialect/Glimmer/IR/DType.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "llvm/ADT/TypeSwitch.h"

namespace glimmer {
#define GEN_PASS_DEF_CONVERTGLIMMERTOEMITC
#include "glimmer/Conversion/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace glimmer {

std::string dtypeLiteral(Type t) {
  std::optional<DType> dtype = dtypeOf(t);
  if (!dtype)
    return "";
  return "glimmer_rt::DType::" + std::string(dtypeEnumerator(*dtype));
}

} // namespace glimmer

static constexpr llvm::StringLiteral kTensorType = "glimmer_rt::Tensor";
static constexpr llvm::StringLiteral kFrameType = "glimmer_rt::Frame&";

StringRef FunctionLowering::modulePathOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return name.getName().getValue();
  return "";
}

FunctionLowering::FunctionLowering(OpBuilder &b, func::FuncOp func,
                                   FusedKernelTable &kernels)
    : b(b), func(func), ctx(func.getContext()), kernels(kernels) {
  tensor = emitc::OpaqueType::get(ctx, kTensorType);
  list = emitc::OpaqueType::get(ctx, "std::vector<glimmer_rt::Tensor>");
}

LogicalResult FunctionLowering::run() {
  if (!func.getBody().hasOneBlock())
    return func.emitError() << "only single-block functions can be lowered";
  auto frameType = emitc::OpaqueType::get(ctx, kFrameType);
  auto emitFunc = emitc::FuncOp::create(b, func.getLoc(), func.getName(),
                                        b.getFunctionType({frameType}, {}));
  // Outlined layers are called by the program's functions only.
  if (func.isPrivate())
    emitFunc.setSpecifiersAttr(b.getStrArrayAttr({"static"}));
  emitted = emitFunc;
  Block *entry = emitFunc.addEntryBlock();
  frame = entry->getArgument(0);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);

  // Each value is released after its last use, so that the program's peak
  // memory is that of its live values, not of every value it computes. Ops
  // lowered to no call (sharding_constraint, pvary, stop_gradient) alias
  // their input's variable: a variable is released after the last use of
  // any value it holds. Arguments and returned values are held by the frame.
  Block &body = func.getBody().front();
  for (Operation &op : body) {
    for (Value operand : op.getOperands()) {
      Value var = variableOf(operand);
      if (isa<BlockArgument>(var) || isa<func::ReturnOp>(op))
        held.insert(var);
      lastUse[var] = &op;
    }
    for (Value r : op.getResults())
      lastUse.try_emplace(variableOf(r), &op);
  }
  for (Operation &op : body)
    for (Value r : op.getResults())
      if (variableOf(r) == r && !held.contains(r))
        releaseAfter[lastUse.lookup(r)].push_back(r);
  for (Operation *op = &body.front(); op; op = op->getNextNode()) {
    // A rolled run releases what its calls used last itself.
    if (auto call = dyn_cast<func::CallOp>(op))
      if (Operation *last = lowerRun(call)) {
        op = last;
        continue;
      }
    if (failed(lower(op)))
      return failure();
    releaseTemporaries(op->getLoc());
    for (Value v : releaseAfter.lookup(op))
      releaseValue(v);
  }
  emitc::ReturnOp::create(b, func.getLoc(), Value());

  // A C-linkage entry point for dlsym.
  if (func.isPrivate())
    return success();
  b.setInsertionPointAfter(emitFunc);
  emitc::VerbatimOp::create(b, func.getLoc(),
                            ("extern \"C\" void glimmer_entry_" +
                             func.getName() + "(glimmer_rt::Frame &frame) { " +
                             func.getName() + "(frame); }")
                                .str());
  return success();
}

Value FunctionLowering::variableOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ShardingConstraintOp, PvaryOp, StopGradientOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

void FunctionLowering::releaseTemporaries(Location loc) {
  for (Value t : temporaries)
    RuntimeCall(b, loc, Kernel::release).operand(t).build({});
  temporaries.clear();
}

void FunctionLowering::aliasInput(Value result, Value input) {
  // A stored input is read from its store where used (map).
  if (!stored.count(variableOf(input)))
    mapping[result] = map(input);
}

void FunctionLowering::releaseValue(Value v) {
  Location loc = v.getLoc();
  if (auto it = stored.find(v); it != stored.end())
    RuntimeCall(b, loc, Kernel::releaseStored)
        .operand(it->second.store)
        .integer(it->second.iteration)
        .integer(it->second.column)
        .build({});
  else
    RuntimeCall(b, loc, Kernel::release).operand(map(v)).build({});
}

bool FunctionLowering::isArgument(Value v) {
  auto arg = dyn_cast_if_present<BlockArgument>(v);
  return arg && arg.getOwner()->getParentOp() == func.getOperation();
}

Value FunctionLowering::map(Value v) {
  if (Value mapped = mapping.lookup(v))
    return mapped;
  // A copy for this op alone: the store keeps the value for later ops.
  if (auto it = stored.find(variableOf(v)); it != stored.end()) {
    Value copy = RuntimeCall(b, v.getLoc(), Kernel::stored)
                     .operand(it->second.store)
                     .integer(it->second.iteration)
                     .integer(it->second.column)
                     .build(tensor)[0];
    temporaries.push_back(copy);
    return copy;
  }
  if (!isArgument(v))
    return Value();
  // Read where first used: an argument only list ops read (an optimizer's
  // parameters) needs no variable at all (OpLowering::listOf).
  auto arg = cast<BlockArgument>(v);
  std::string comment;
  static const std::pair<const char *, const char *> kinds[] = {
      {"input", kInputAttr}, {"param", kParamAttr}, {"buffer", kBufferAttr}};
  for (auto [kind, attr] : kinds)
    if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr))
      comment = ("// " + Twine(kind) + " " + name.getValue()).str();
  if (comment.empty())
    comment = "// argument " + std::to_string(arg.getArgNumber());
  emitc::VerbatimOp::create(b, arg.getLoc(), comment);
  return mapping[v] = RuntimeCall(b, arg.getLoc(), Kernel::input)
                          .operand(frame)
                          .integer(arg.getArgNumber())
                          .build(tensor)[0];
}

void FunctionLowering::takeResults(Operation *op, Value results) {
  Location loc = op->getLoc();
  bool onlyReturned =
      op->getNumResults() > 1 && llvm::all_of(op->getResults(), [](Value r) {
        return r.hasOneUse() && isa<func::ReturnOp>(*r.user_begin());
      });
  if (onlyReturned) {
    // An optimizer step's new parameters and moments: one call, instead of
    // a variable and an output per tensor.
    SmallVector<int64_t> indices;
    for (Value r : op->getResults()) {
      indices.push_back(r.use_begin()->getOperandNumber());
      returned.insert(r);
    }
    RuntimeCall(b, loc, Kernel::outputList)
        .operand(frame)
        .operand(results)
        .ints(indices)
        .build({});
  } else {
    SmallVector<Value> taken;
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      taken.push_back(RuntimeCall(b, loc, Kernel::take)
                          .operand(results)
                          .integer(i)
                          .build(tensor)[0]);
    bind(op, taken);
  }
}

LogicalResult FunctionLowering::lower(Operation *op) {
  Location loc = op->getLoc();
  StringRef path = modulePathOf(loc);
  if (!path.empty() && path != lastPath) {
    emitc::VerbatimOp::create(b, loc, ("// " + path).str());
    lastPath = path.str();
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](func::ReturnOp ret) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands()))
          if (!returned.contains(v))
            RuntimeCall(b, loc, Kernel::output)
                .operand(frame)
                .integer(i)
                .operand(map(v))
                .build({});
        return success();
      })
      .Case([&](MeshOp) { return success(); })
      .Case([&](FusionOp f) { return lowerFusion(f); })
      .Case([&](func::CallOp c) { return lowerCall(c); })
      .Case([&](ShardingConstraintOp s) {
        aliasInput(s.getResult(), s.getInput());
        return success();
      })
      .Case([&](PvaryOp p) {
        // Identity forward; it exists for its VJP.
        aliasInput(p.getResult(), p.getInput());
        return success();
      })
      .Case([&](StopGradientOp s) {
        // Identity forward; it exists for its (empty) VJP.
        aliasInput(s.getResult(), s.getInput());
        return success();
      })
      .Default(
          [&](Operation *other) { return OpLowering(*this, other).lower(); });
}

LogicalResult FunctionLowering::lowerCall(func::CallOp call) {
  Location loc = call.getLoc();
  // The function's own arguments (a layer's parameters) are passed from the
  // frame by index, so that one only calls read needs no variable.
  SmallVector<int64_t> fromFrame;
  RuntimeCall values(b, loc, Kernel::tensorList);
  for (Value v : call.getOperands()) {
    bool argument = isArgument(v);
    fromFrame.push_back(
        argument ? int64_t(cast<BlockArgument>(v).getArgNumber()) : -1);
    if (!argument)
      values.operand(map(v));
  }
  Value valueList = values.build(list)[0], frameInputs = valueList;
  if (llvm::any_of(fromFrame, [](int64_t i) { return i >= 0; })) {
    frameInputs = RuntimeCall(b, loc, Kernel::callInputs)
                      .operand(frame)
                      .ints(fromFrame)
                      .operand(valueList)
                      .build(list)[0];
    RuntimeCall(b, loc, Kernel::release).operand(valueList).build({});
  }
  Value outputs = RuntimeCall(b, loc, Kernel::callFunction)
                      .literal(call.getCallee())
                      .operand(frameInputs)
                      .build(list)[0];
  // The lists hold no handle past the call.
  RuntimeCall(b, loc, Kernel::release).operand(frameInputs).build({});
  takeResults(call, outputs);
  RuntimeCall(b, loc, Kernel::release).operand(outputs).build({});
  return success();
}

LogicalResult OpLowering::lower() {
  using Family = std::optional<LogicalResult> (OpLowering::*)();
  for (Family family :
       {&OpLowering::lowerCreation, &OpLowering::lowerElementwise,
        &OpLowering::lowerShapes, &OpLowering::lowerGathers,
        &OpLowering::lowerReductions, &OpLowering::lowerLinearAlgebra,
        &OpLowering::lowerNorms, &OpLowering::lowerAttention,
        &OpLowering::lowerCollectives, &OpLowering::lowerOptimizers})
    if (std::optional<LogicalResult> result = (this->*family)())
      return *result;
  return op->emitOpError() << "has no runtime lowering";
}

RuntimeCall OpLowering::call(Kernel kernel, ValueRange operands) {
  RuntimeCall c = call(kernel);
  for (Value v : operands)
    c.operand(map(v));
  return c;
}

LogicalResult OpLowering::one(RuntimeCall c) {
  function.bind(op, c.build(function.tensorType()));
  return success();
}

LogicalResult OpLowering::many(RuntimeCall c) {
  function.bind(op, c.build(SmallVector<Type>(op->getNumResults(),
                                              function.tensorType())));
  return success();
}

Value OpLowering::listOf(ValueRange values) {
  // Arguments only: read from the frame as one list.
  if (!values.empty() && llvm::all_of(values, [&](Value v) {
        return function.isArgument(v);
      })) {
    SmallVector<int64_t> indices;
    for (Value v : values)
      indices.push_back(cast<BlockArgument>(v).getArgNumber());
    // Arguments read only here leave the frame with the list, so that a
    // kernel may reuse the storage of those no caller holds either (an
    // optimizer's state updated in place).
    bool onlyHere = llvm::all_of(values, [](Value v) { return v.hasOneUse(); });
    return buildList(call(onlyHere ? Kernel::takeInputList : Kernel::inputList)
                         .operand(function.frameValue())
                         .ints(indices));
  }
  return buildList(call(Kernel::tensorList, values));
}

void OpLowering::release(Value list) {
  call(Kernel::release).operand(list).build({});
}

LogicalResult OpLowering::takeAll(Value results) {
  function.takeResults(op, results);
  return success();
}

namespace {

struct ConvertGlimmerToEmitCPass
    : public glimmer::impl::ConvertGlimmerToEmitCBase<
          ConvertGlimmerToEmitCPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    b.setInsertionPointToStart(module.getBody());
    emitc::IncludeOp::create(b, module.getLoc(), "glimmer_rt/Program.h",
                             /*isStandardInclude=*/false);
    auto lastInclude = emitc::IncludeOp::create(b, module.getLoc(), "limits",
                                                /*isStandardInclude=*/true);
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    FusedKernelTable kernels;
    for (func::FuncOp func : funcs) {
      b.setInsertionPoint(func);
      FunctionLowering lowering(b, func, kernels);
      if (failed(lowering.run()))
        return signalPassFailure();
      func.erase();
    }
    if (!kernels.byBody.empty()) {
      // The fused kernels' CUDA source, compiled by the runtime (NVRTC)
      // where they run on a GPU; before every function that calls them.
      b.setInsertionPointAfter(lastInclude);
      emitc::VerbatimOp::create(
          b, module.getLoc(),
          ("static glimmer_rt::FusedKernels " + kFusedKernels +
           "(R\"glimmer_cuda(#include \"FusionPrelude.cuh\"\n" +
           kernels.source + ")glimmer_cuda\");")
              .str());
    }
    // Mesh declarations have no C++ counterpart.
    for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
      mesh.erase();
    module->removeAttr(GlimmerDialect::getSpmdAttrName());
  }
};

} // namespace

LogicalResult glimmer::emitCpp(ModuleOp module, llvm::raw_ostream &os) {
  OwningOpRef<ModuleOp> copy(module.clone());
  PassManager pm(module.getContext());
  pm.addPass(createConvertGlimmerToEmitC());
  if (failed(pm.run(*copy)))
    return failure();
  return emitc::translateToCpp(*copy, os);
}
