//===- GlimmerToEmitC.cpp - glimmer -> runtime calls in EmitC -------------===//
//
// Each glimmer op becomes one `emitc.call_opaque` of its runtime kernel.
// Attributes are rendered as C++ literals (shapes and index lists as braced
// lists, doubles with 17 significant digits so that they round-trip
// exactly, enums as qualified enumerators).
//
//===----------------------------------------------------------------------===//

#include "FusionKernel.h"
#include "glimmer/Conversion/Passes.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace glimmer {
#define GEN_PASS_DEF_CONVERTGLIMMERTOEMITC
#include "glimmer/Conversion/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

constexpr llvm::StringLiteral kTensorType = "glimmer_rt::Tensor";
constexpr llvm::StringLiteral kFrameType = "glimmer_rt::Frame&";

std::string realLiteral(double v) {
  if (std::isnan(v))
    return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v))
    return v > 0 ? "std::numeric_limits<double>::infinity()"
                 : "-std::numeric_limits<double>::infinity()";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  std::string s = buf;
  // Keep it a floating-point literal.
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}

std::string intList(ArrayRef<int64_t> values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}

/// {"cp", "dp_shard"}
std::string axesLiteral(ArrayAttr axes) {
  std::string s = "glimmer_rt::Axes{";
  for (auto [i, a] : llvm::enumerate(axes))
    s += (i ? ", \"" : "\"") + cast<StringAttr>(a).getValue().str() + "\"";
  return s + "}";
}

std::string reductionLiteral(ReductionKind kind) {
  std::string name = stringifyReductionKind(kind).str();
  name[0] = std::toupper(name[0]);
  return "glimmer_rt::Reduction::" + name;
}

std::string dtypeLiteral(Type t) {
  const char *name = nullptr;
  if (t.isF32())
    name = "F32";
  else if (t.isF64())
    name = "F64";
  else if (t.isBF16())
    name = "BF16";
  else if (t.isF16())
    name = "F16";
  else if (t.isInteger(64))
    name = "I64";
  else if (t.isInteger(32))
    name = "I32";
  else if (t.isInteger(1))
    name = "Bool";
  else
    return "";
  return std::string("glimmer_rt::DType::") + name;
}

/// Builds one runtime call: operands and literal arguments in call order.
class Call {
public:
  Call(OpBuilder &b, Location loc, StringRef callee)
      : b(b), loc(loc), callee(("glimmer_rt::" + callee).str()) {}

  Call &operand(Value v) {
    args.push_back(b.getIndexAttr(operands.size()));
    operands.push_back(v);
    return *this;
  }
  /// An optional tensor operand: an undefined Tensor when absent.
  Call &optional(Value v) {
    return v ? operand(v) : literal("glimmer_rt::Tensor()");
  }
  Call &literal(StringRef text) {
    args.push_back(emitc::OpaqueAttr::get(b.getContext(), text));
    return *this;
  }
  Call &integer(int64_t v) { return literal(std::to_string(v)); }
  Call &real(double v) { return literal(realLiteral(v)); }
  Call &real(FloatAttr v) { return real(v.getValueAsDouble()); }
  Call &real(const APFloat &v) { return real(v.convertToDouble()); }
  Call &boolean(bool v) { return literal(v ? "true" : "false"); }
  Call &ints(ArrayRef<int64_t> v) { return literal(intList(v)); }
  Call &dtype(Type t) { return literal(dtypeLiteral(t)); }
  /// A norm's result type, when it is not its input's (the runtime's
  /// default argument).
  Call &resultTypeIfNot(Value input, Value result) {
    Type in = cast<RankedTensorType>(input.getType()).getElementType();
    Type out = cast<RankedTensorType>(result.getType()).getElementType();
    return in == out ? *this : dtype(out);
  }
  /// Attention's sequence-major flags, when any is set (the runtime's
  /// default argument is all head-major).
  template <typename AttentionLike>
  Call &attentionLayout(AttentionLike a) {
    if (!a.anySequenceMajor())
      return *this;
    std::string flags;
    for (auto which : {AttentionLike::kQuery, AttentionLike::kKey,
                       AttentionLike::kValue, AttentionLike::kOutput})
      flags += std::string(flags.empty() ? "" : ", ") +
               (a.isSequenceMajor(which) ? "true" : "false");
    return literal("glimmer_rt::AttentionLayout{" + flags + "}");
  }

  SmallVector<Value> build(TypeRange results) {
    auto call = emitc::CallOpaqueOp::create(b, loc, results, callee, operands,
                                            b.getArrayAttr(args));
    return SmallVector<Value>(call.getResults());
  }

private:
  OpBuilder &b;
  Location loc;
  std::string callee;
  SmallVector<Attribute> args;
  SmallVector<Value> operands;
};

/// The module path of an op, from the importer's NameLoc, or "".
StringRef modulePathOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return name.getName().getValue();
  return "";
}

/// The program's fused kernels: one CUDA source, kernels numbered in order
/// of first use; fusions whose kernels read alike share one. A kernel works
/// on flat indices, so fusions of different shapes can share it (a text norm
/// over 2 x 16 tokens and a vision norm over 32 patches); the functions that
/// run a fusion's ops one by one (what the CPU runs) hold the shapes, so
/// there is one per kernel and signature.
struct FusedKernelTable {
  std::map<std::string, int> byBody;
  std::map<std::string, std::string> opsBySignature;
  std::map<int, int> opsPerKernel;
  std::string source;
};

constexpr llvm::StringLiteral kFusedKernels = "glimmer_fused_kernels";

class FunctionLowering {
public:
  FunctionLowering(OpBuilder &b, func::FuncOp func, FusedKernelTable &kernels)
      : b(b), func(func), ctx(func.getContext()), kernels(kernels) {
    tensorType = emitc::OpaqueType::get(ctx, kTensorType);
    listType = emitc::OpaqueType::get(ctx, "std::vector<glimmer_rt::Tensor>");
  }

  LogicalResult run();

private:
  LogicalResult lowerFusion(FusionOp fusion);
  /// `static std::vector<Tensor> NAME(const std::vector<Tensor> &)` running
  /// the fusion's ops one by one, before the function being lowered.
  LogicalResult emitFusedOps(FusionOp fusion, StringRef name);

  Value map(Value v) { return mapping.lookup(v); }
  LogicalResult lower(Operation *op);
  Type tensorTypes() { return tensorType; }
  SmallVector<Type> tensorTypes(unsigned n) {
    return SmallVector<Type>(n, tensorType);
  }
  void bind(Operation *op, ArrayRef<Value> results) {
    for (auto [old, now] : llvm::zip(op->getResults(), results))
      mapping[old] = now;
  }

  OpBuilder &b;
  func::FuncOp func;
  MLIRContext *ctx;
  Type tensorType;
  Type listType; // std::vector<glimmer_rt::Tensor>
  Value frame;
  DenseMap<Value, Value> mapping;
  std::string lastPath;
  FusedKernelTable &kernels;
  Operation *emitted = nullptr; // the emitc.func being built
};

LogicalResult FunctionLowering::run() {
  if (!func.getBody().hasOneBlock())
    return func.emitError() << "only single-block functions can be lowered";
  auto frameType = emitc::OpaqueType::get(ctx, kFrameType);
  auto emitFunc = emitc::FuncOp::create(
      b, func.getLoc(), func.getName(),
      b.getFunctionType({frameType}, {}));
  emitted = emitFunc;
  Block *entry = emitFunc.addEntryBlock();
  frame = entry->getArgument(0);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);

  for (BlockArgument arg : func.getArguments()) {
    std::string comment;
    for (StringRef kind : {"input", "param", "buffer"})
      if (auto name = func.getArgAttrOfType<StringAttr>(
              arg.getArgNumber(), ("glimmer." + kind).str()))
        comment = ("// " + kind + " " + name.getValue()).str();
    if (comment.empty())
      comment = "// argument " + std::to_string(arg.getArgNumber());
    emitc::VerbatimOp::create(b, arg.getLoc(), comment);
    mapping[arg] = Call(b, arg.getLoc(), "input")
                       .operand(frame)
                       .integer(arg.getArgNumber())
                       .build(tensorType)[0];
  }
  // Each value is released after its last use, so that the program's peak
  // memory is that of its live values, not of every value it computes. Ops
  // lowered to no call (sharding_constraint, pvary) alias their input's
  // variable: a variable is released after the last use of any value it
  // holds. Arguments and returned values are held by the frame.
  Block &body = func.getBody().front();
  auto variableOf = [](Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<ShardingConstraintOp, PvaryOp>(def))
        break;
      v = def->getOperand(0);
    }
    return v;
  };
  DenseMap<Value, Operation *> lastUse;
  DenseSet<Value> held;
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
  DenseMap<Operation *, SmallVector<Value>> releaseAfter;
  for (Operation &op : body)
    for (Value r : op.getResults())
      if (variableOf(r) == r && !held.contains(r))
        releaseAfter[lastUse.lookup(r)].push_back(r);
  for (Operation &op : body) {
    if (failed(lower(&op)))
      return failure();
    for (Value v : releaseAfter.lookup(&op))
      Call(b, op.getLoc(), "release").operand(map(v)).build({});
  }
  emitc::ReturnOp::create(b, func.getLoc(), Value());

  // A C-linkage entry point for dlsym.
  b.setInsertionPointAfter(emitFunc);
  emitc::VerbatimOp::create(
      b, func.getLoc(),
      ("extern \"C\" void glimmer_entry_" + func.getName() +
       "(glimmer_rt::Frame &frame) { " + func.getName() + "(frame); }")
          .str());
  return success();
}

/// Lowers `op` at the builder's insertion point.
LogicalResult FunctionLowering::lower(Operation *op) {
  Location loc = op->getLoc();
  StringRef path = modulePathOf(loc);
  if (!path.empty() && path != lastPath) {
    emitc::VerbatimOp::create(b, loc, ("// " + path).str());
    lastPath = path.str();
  }
  auto call = [&](StringRef callee) { return Call(b, loc, callee); };
  auto one = [&](Call c) {
    bind(op, c.build(tensorType));
    return success();
  };
  auto many = [&](Call c) {
    bind(op, c.build(tensorTypes(op->getNumResults())));
    return success();
  };
  auto typeOf = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  // The multi-tensor ops: their operands go in as one runtime list, and
  // their results are taken one by one from the list that comes back.
  auto listOf = [&](ValueRange values) {
    Call list = call("tensorList");
    for (Value v : values)
      list.operand(map(v));
    return list.build(listType)[0];
  };
  auto takeAll = [&](Value results) {
    SmallVector<Value> taken;
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      taken.push_back(
          call("take").operand(results).integer(i).build(tensorType)[0]);
    bind(op, taken);
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](func::ReturnOp ret) -> LogicalResult {
        for (auto [i, v] : llvm::enumerate(ret.getOperands()))
          call("output").operand(frame).integer(i).operand(map(v)).build({});
        return success();
      })
      .Case([&](MeshOp) { return success(); })
      .Case([&](FusionOp f) { return lowerFusion(f); })
      .Case([&](ShardingConstraintOp s) -> LogicalResult {
        mapping[s.getResult()] = map(s.getInput());
        return success();
      })
      .Case([&](PvaryOp p) -> LogicalResult {
        // Identity forward; it exists for its VJP.
        mapping[p.getResult()] = map(p.getInput());
        return success();
      })
      .Case([&](ConstantOp c) -> LogicalResult {
        auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
        if (!attr)
          return c.emitOpError() << "only dense constants can be lowered";
        RankedTensorType t = typeOf(c.getResult());
        std::vector<double> values;
        if (isa<FloatType>(t.getElementType())) {
          for (APFloat v : attr.getValues<APFloat>()) {
            bool lost;
            v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                      &lost);
            values.push_back(v.convertToDouble());
            if (attr.isSplat())
              break;
          }
        } else {
          for (APInt v : attr.getValues<APInt>()) {
            values.push_back(t.getElementType().isInteger(1)
                                 ? double(v.getZExtValue())
                                 : double(v.getSExtValue()));
            if (attr.isSplat())
              break;
          }
        }
        if (attr.isSplat())
          return one(call("full")
                         .dtype(t.getElementType())
                         .ints(t.getShape())
                         .real(values[0]));
        std::string list = "std::vector<double>{";
        for (size_t i = 0; i < values.size(); ++i)
          list += (i ? ", " : "") + realLiteral(values[i]);
        list += "}";
        return one(call("constant")
                       .dtype(t.getElementType())
                       .ints(t.getShape())
                       .literal(list));
      })
      .Case<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, ErfOp, SigmoidOp,
            SiluOp, ReluOp, SinOp, CosOp>([&](Operation *u) -> LogicalResult {
        return one(call(u->getName().stripDialect()).operand(map(u->getOperand(0))));
      })
      .Case([&](GeluOp g) -> LogicalResult {
        return one(call("gelu")
                       .operand(map(g.getInput()))
                       .boolean(g.getApproximate() == GeluApproximation::Tanh));
      })
      .Case<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp>(
          [&](Operation *bin) {
            return one(call(bin->getName().stripDialect())
                           .operand(map(bin->getOperand(0)))
                           .operand(map(bin->getOperand(1))));
          })
      .Case([&](CompareOp c) -> LogicalResult {
        return one(call("compare")
                       .literal(("glimmer_rt::CompareDir::" +
                                 stringifyCompareDirection(c.getDirection())
                                     .upper()))
                       .operand(map(c.getLhs()))
                       .operand(map(c.getRhs())));
      })
      .Case([&](SelectOp s) -> LogicalResult {
        return one(call("select")
                       .operand(map(s.getCond()))
                       .operand(map(s.getOnTrue()))
                       .operand(map(s.getOnFalse())));
      })
      .Case([&](ConvertOp c) -> LogicalResult {
        return one(call("convert")
                       .operand(map(c.getInput()))
                       .dtype(typeOf(c.getOutput()).getElementType()));
      })
      .Case([&](ReduceOp r) -> LogicalResult {
        std::string kind = stringifyReductionKind(r.getKind()).str();
        kind[0] = std::toupper(kind[0]);
        return one(call("reduce")
                       .literal("glimmer_rt::Reduction::" + kind)
                       .operand(map(r.getInput()))
                       .ints(r.getDims())
                       .boolean(r.getKeepDims()));
      })
      .Case([&](CumsumOp c) -> LogicalResult {
        return one(
            call("cumsum").operand(map(c.getInput())).integer(c.getDim()));
      })
      .Case([&](IotaOp i) -> LogicalResult {
        RankedTensorType t = typeOf(i.getOutput());
        return one(call("iota")
                       .dtype(t.getElementType())
                       .ints(t.getShape())
                       .integer(i.getDim()));
      })
      .Case([&](ReshapeOp r) -> LogicalResult {
        return one(call("reshape")
                       .operand(map(r.getInput()))
                       .ints(typeOf(r.getOutput()).getShape()));
      })
      .Case([&](TransposeOp t) -> LogicalResult {
        return one(call("transpose")
                       .operand(map(t.getInput()))
                       .ints(t.getPermutation()));
      })
      .Case([&](BroadcastInDimOp bc) -> LogicalResult {
        return one(call("broadcastInDim")
                       .operand(map(bc.getInput()))
                       .ints(typeOf(bc.getOutput()).getShape())
                       .ints(bc.getDims()));
      })
      .Case([&](SliceOp s) -> LogicalResult {
        return one(call("slice")
                       .operand(map(s.getInput()))
                       .ints(s.getStart())
                       .ints(s.getLimit())
                       .ints(s.getStride()));
      })
      .Case([&](ConcatOp c) -> LogicalResult {
        Call list = call("tensorList");
        for (Value v : c.getInputs())
          list.operand(map(v));
        Value parts = list.build(listType)[0];
        Value result = call("concat").operand(parts).integer(c.getDim())
                           .build(tensorType)[0];
        // The list would otherwise hold the parts until the function returns.
        call("release").operand(parts).build({});
        bind(op, result);
        return success();
      })
      .Case([&](SumSquaresOp ss) -> LogicalResult {
        Call list = call("tensorList");
        for (Value v : ss.getInputs())
          list.operand(map(v));
        Value inputs = list.build(listType)[0];
        Value result = call("sumSquares")
                           .operand(inputs)
                           .dtype(typeOf(ss.getOutput()).getElementType())
                           .build(tensorType)[0];
        call("release").operand(inputs).build({});
        bind(op, result);
        return success();
      })
      .Case([&](PadOp p) -> LogicalResult {
        return one(call("pad")
                       .operand(map(p.getInput()))
                       .ints(p.getLow())
                       .ints(p.getHigh())
                       .real(p.getValue()));
      })
      .Case([&](EmbeddingOp e) -> LogicalResult {
        return one(call("embedding")
                       .operand(map(e.getTable()))
                       .operand(map(e.getIds())));
      })
      .Case([&](EmbeddingGradOp e) -> LogicalResult {
        return one(call("embeddingGrad")
                       .operand(map(e.getGrad()))
                       .operand(map(e.getIds()))
                       .integer(typeOf(e.getOutput()).getDimSize(0)));
      })
      .Case([&](LinearOp l) -> LogicalResult {
        return one(call("linear")
                       .operand(map(l.getInput()))
                       .operand(map(l.getWeight()))
                       .optional(map(l.getBias())));
      })
      .Case([&](MatmulOp m) -> LogicalResult {
        return one(call("matmul")
                       .operand(map(m.getLhs()))
                       .operand(map(m.getRhs()))
                       .boolean(m.getTransposeLhs())
                       .boolean(m.getTransposeRhs()));
      })
      .Case([&](RmsNormOp n) -> LogicalResult {
        return one(call("rmsNorm")
                       .operand(map(n.getInput()))
                       .operand(map(n.getWeight()))
                       .real(n.getEps())
                       .resultTypeIfNot(n.getInput(), n.getOutput()));
      })
      .Case([&](AddRmsNormOp n) -> LogicalResult {
        return many(call("addRmsNorm")
                        .operand(map(n.getLhs()))
                        .operand(map(n.getRhs()))
                        .operand(map(n.getWeight()))
                        .real(n.getEps())
                        .resultTypeIfNot(n.getSum(), n.getOutput()));
      })
      .Case([&](RmsNormGradOp n) -> LogicalResult {
        return many(call("rmsNormGrad")
                        .operand(map(n.getGrad()))
                        .operand(map(n.getInput()))
                        .operand(map(n.getWeight()))
                        .real(n.getEps()));
      })
      .Case([&](LayerNormOp n) -> LogicalResult {
        return one(call("layerNorm")
                       .operand(map(n.getInput()))
                       .operand(map(n.getWeight()))
                       .operand(map(n.getBias()))
                       .real(n.getEps())
                       .resultTypeIfNot(n.getInput(), n.getOutput()));
      })
      .Case([&](LayerNormGradOp n) -> LogicalResult {
        return many(call("layerNormGrad")
                        .operand(map(n.getGrad()))
                        .operand(map(n.getInput()))
                        .operand(map(n.getWeight()))
                        .real(n.getEps()));
      })
      .Case([&](RopeOp r) -> LogicalResult {
        return one(call("rope")
                       .operand(map(r.getInput()))
                       .operand(map(r.getPositions()))
                       .real(r.getTheta())
                       .literal(r.getStyle() == RopeStyle::Half
                                    ? "glimmer_rt::RopeStyle::Half"
                                    : "glimmer_rt::RopeStyle::Interleaved")
                       .boolean(r.getInverse()));
      })
      .Case([&](AttentionOp a) -> LogicalResult {
        return many(call("attention")
                        .operand(map(a.getQuery()))
                        .operand(map(a.getKey()))
                        .operand(map(a.getValue()))
                        .optional(map(a.getQueryPositions()))
                        .optional(map(a.getKeyPositions()))
                        .optional(map(a.getQueryDocuments()))
                        .optional(map(a.getKeyDocuments()))
                        .optional(map(a.getQueryBlocks()))
                        .optional(map(a.getKeyBlocks()))
                        .boolean(a.getCausal())
                        .integer(a.getWindow().value_or(0))
                        .real(a.getScale())
                        .attentionLayout(a));
      })
      .Case([&](AttentionGradOp a) -> LogicalResult {
        return many(call("attentionGrad")
                        .operand(map(a.getGrad()))
                        .operand(map(a.getQuery()))
                        .operand(map(a.getKey()))
                        .operand(map(a.getValue()))
                        .operand(map(a.getOutput()))
                        .operand(map(a.getLse()))
                        .optional(map(a.getQueryPositions()))
                        .optional(map(a.getKeyPositions()))
                        .optional(map(a.getQueryDocuments()))
                        .optional(map(a.getKeyDocuments()))
                        .optional(map(a.getQueryBlocks()))
                        .optional(map(a.getKeyBlocks()))
                        .boolean(a.getCausal())
                        .integer(a.getWindow().value_or(0))
                        .real(a.getScale())
                        .attentionLayout(a));
      })
      .Case([&](SoftmaxOp s) -> LogicalResult {
        return one(
            call("softmax").operand(map(s.getInput())).integer(s.getDim()));
      })
      .Case([&](SoftmaxGradOp s) -> LogicalResult {
        return one(call("softmaxGrad")
                       .operand(map(s.getGrad()))
                       .operand(map(s.getOutputValue()))
                       .integer(s.getDim()));
      })
      .Case([&](CrossEntropyOp c) -> LogicalResult {
        return many(call("crossEntropy")
                        .operand(map(c.getLogits()))
                        .operand(map(c.getLabels()))
                        .integer(c.getIgnoreIndex())
                        .dtype(typeOf(c.getSum()).getElementType()));
      })
      .Case([&](CrossEntropyGradOp c) -> LogicalResult {
        return one(call("crossEntropyGrad")
                       .operand(map(c.getGrad()))
                       .operand(map(c.getLogits()))
                       .operand(map(c.getLabels()))
                       .integer(c.getIgnoreIndex()));
      })
      .Case([&](Conv2dOp c) {
        return one(call("conv2d")
                       .operand(map(c.getInput()))
                       .operand(map(c.getWeight()))
                       .optional(map(c.getBias()))
                       .ints(c.getStride())
                       .ints(c.getPadding()));
      })
      .Case([&](Conv2dGradOp c) {
        return many(call("conv2dGrad")
                        .operand(map(c.getGrad()))
                        .operand(map(c.getInput()))
                        .operand(map(c.getWeight()))
                        .ints(c.getStride())
                        .ints(c.getPadding()));
      })
      .Case([&](AdamWUpdateOp a) -> LogicalResult {
        return many(call("adamwUpdate")
                        .operand(map(a.getParam()))
                        .operand(map(a.getGrad()))
                        .operand(map(a.getExpAvg()))
                        .operand(map(a.getExpAvgSq()))
                        .operand(map(a.getStep()))
                        .real(a.getLr())
                        .real(a.getBeta1())
                        .real(a.getBeta2())
                        .real(a.getEps())
                        .real(a.getWeightDecay())
                        .optional(map(a.getGradScale())));
      })
      .Case([&](AdamWUpdateListOp a) -> LogicalResult {
        Value params = listOf(a.getParams()), grads = listOf(a.getGrads()),
              expAvgs = listOf(a.getExpAvgs()),
              expAvgSqs = listOf(a.getExpAvgSqs());
        Value results = call("adamwUpdateList")
                            .operand(params)
                            .operand(grads)
                            .operand(expAvgs)
                            .operand(expAvgSqs)
                            .operand(map(a.getStep()))
                            .real(a.getLr())
                            .real(a.getBeta1())
                            .real(a.getBeta2())
                            .real(a.getEps())
                            .real(a.getWeightDecay())
                            .optional(map(a.getGradScale()))
                            .build(listType)[0];
        // The lists would otherwise hold their tensors until the function
        // returns.
        for (Value list : {params, grads, expAvgs, expAvgSqs})
          call("release").operand(list).build({});
        return takeAll(results);
      })
      .Case([&](ConvertListOp c) -> LogicalResult {
        Value inputs = listOf(c.getInputs());
        Value results =
            call("convertList")
                .operand(inputs)
                .dtype(typeOf(c.getOutputs().front()).getElementType())
                .build(listType)[0];
        call("release").operand(inputs).build({});
        return takeAll(results);
      })
      .Case([&](SgdUpdateOp s) -> LogicalResult {
        return one(call("sgdUpdate")
                       .operand(map(s.getParam()))
                       .operand(map(s.getGrad()))
                       .real(s.getLr())
                       .real(s.getWeightDecay())
                       .optional(map(s.getGradScale())));
      })
      .Case([&](CheckIndicesOp c) -> LogicalResult {
        std::optional<int64_t> ignore = c.getIgnoreIndex();
        return one(call("checkIndices")
                       .operand(map(c.getIds()))
                       .integer(c.getBound())
                       .boolean(ignore.has_value())
                       .integer(ignore.value_or(0))
                       .literal("\"" + c.getCheckedOp().str() + "\""));
      })
      .Case([&](VisionBankIndicesOp v) -> LogicalResult {
        return one(call("visionBankIndices")
                       .operand(map(v.getTokens()))
                       .integer(v.getImageTokenId()));
      })
      .Case([&](VisionGatherOp v) -> LogicalResult {
        return one(call("visionGather")
                       .operand(map(v.getEmbeds()))
                       .operand(map(v.getBank()))
                       .operand(map(v.getIndices())));
      })
      .Case([&](VisionGatherGradOp v) -> LogicalResult {
        return many(call("visionGatherGrad")
                        .operand(map(v.getGrad()))
                        .operand(map(v.getIndices()))
                        .integer(typeOf(v.getBankGrad()).getDimSize(0)));
      })
      .Case<CpPermuteOp, CpUnpermuteOp>([&](Operation *p) -> LogicalResult {
        bool inverse = isa<CpUnpermuteOp>(p);
        auto dim = p->getAttrOfType<IntegerAttr>("dim").getInt();
        auto cp = p->getAttrOfType<IntegerAttr>("cp").getInt();
        Balancer balancer = inverse ? cast<CpUnpermuteOp>(p).getBalancer()
                                    : cast<CpPermuteOp>(p).getBalancer();
        return one(call("cpPermute")
                       .operand(map(p->getOperand(0)))
                       .integer(dim)
                       .integer(cp)
                       .literal(balancer == Balancer::HeadTail
                                    ? "glimmer_rt::Balancer::HeadTail"
                                    : "glimmer_rt::Balancer::Contiguous")
                       .boolean(inverse));
      })
      .Case([&](AllGatherOp g) -> LogicalResult {
        return one(call("allGather")
                       .operand(map(g.getInput()))
                       .literal(axesLiteral(g.getAxes()))
                       .integer(g.getDim()));
      })
      .Case([&](ReduceScatterOp r) -> LogicalResult {
        return one(call("reduceScatter")
                       .literal(reductionLiteral(r.getKind()))
                       .operand(map(r.getInput()))
                       .literal(axesLiteral(r.getAxes()))
                       .integer(r.getDim()));
      })
      .Case([&](AllToAllOp a) -> LogicalResult {
        return one(call("allToAll")
                       .operand(map(a.getInput()))
                       .literal(axesLiteral(a.getAxes()))
                       .integer(a.getSplitDim())
                       .integer(a.getConcatDim()));
      })
      .Case([&](AllReduceOp r) -> LogicalResult {
        return one(call("allReduce")
                       .literal(reductionLiteral(r.getKind()))
                       .operand(map(r.getInput()))
                       .literal(axesLiteral(r.getAxes())));
      })
      .Case([&](MicrobatchSliceOp m) -> LogicalResult {
        return one(call("microbatchSlice")
                       .operand(map(m.getInput()))
                       .operand(map(m.getIndex()))
                       .integer(m.getPieces())
                       .integer(m.getDim()));
      })
      .Case([&](LocalShardOp l) -> LogicalResult {
        return one(call("localShard")
                       .operand(map(l.getInput()))
                       .literal(axesLiteral(l.getAxes()))
                       .integer(l.getDim()));
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitOpError()
               << "has no runtime lowering";
      });
}

LogicalResult FunctionLowering::lowerFusion(FusionOp fusion) {
  FailureOr<std::string> body = emitFusionKernel(fusion, "KERNEL");
  if (failed(body))
    return failure();
  auto [it, added] = kernels.byBody.try_emplace(*body, kernels.byBody.size());
  int index = it->second;
  std::string name = "glimmer_fused_" + std::to_string(index);
  if (added) {
    FailureOr<std::string> kernel = emitFusionKernel(fusion, name);
    if (failed(kernel))
      return failure();
    kernels.source += "\n" + *kernel;
  }
  std::string signature;
  {
    llvm::raw_string_ostream os(signature);
    os << index << ':' << fusion->getOperandTypes() << "->"
       << fusion->getResultTypes();
  }
  auto [ops, newOps] = kernels.opsBySignature.try_emplace(signature);
  if (newOps) {
    // NAME_ops for a kernel's first signature, NAME_ops_1, ... after it.
    int n = kernels.opsPerKernel[index]++;
    ops->second = name + "_ops" + (n ? "_" + std::to_string(n) : "");
    if (failed(emitFusedOps(fusion, ops->second)))
      return failure();
  }
  Location loc = fusion.getLoc();
  Call list(b, loc, "tensorList");
  for (Value v : fusion.getInputs())
    list.operand(map(v));
  Value inputs = list.build(listType)[0];
  std::string results = "std::vector<glimmer_rt::FusedResult>{";
  for (auto [i, r] : llvm::enumerate(fusion.getResults())) {
    auto t = cast<RankedTensorType>(r.getType());
    results += (i ? ", {" : "{") + dtypeLiteral(t.getElementType()) + ", " +
               intList(t.getShape()) + "}";
  }
  results += "}";
  Value outputs = Call(b, loc, "fused")
                      .literal(kFusedKernels)
                      .integer(index)
                      .operand(inputs)
                      .literal(results)
                      .literal(ops->second)
                      .build(listType)[0];
  // The list would otherwise hold the inputs until the function returns.
  Call(b, loc, "release").operand(inputs).build({});
  SmallVector<Value> taken;
  for (unsigned i = 0; i < fusion.getNumResults(); ++i)
    taken.push_back(
        Call(b, loc, "take").operand(outputs).integer(i).build(tensorType)[0]);
  bind(fusion, taken);
  return success();
}

LogicalResult FunctionLowering::emitFusedOps(FusionOp fusion, StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(emitted);
  auto argType =
      emitc::OpaqueType::get(ctx, "const std::vector<glimmer_rt::Tensor>&");
  auto fn = emitc::FuncOp::create(b, fusion.getLoc(), name,
                                  b.getFunctionType({argType}, {listType}));
  fn.setSpecifiersAttr(b.getStrArrayAttr({"static"}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  // The body is lowered like a function's, with its own value map.
  DenseMap<Value, Value> outer = std::move(mapping);
  std::string outerPath = std::move(lastPath);
  mapping.clear();
  lastPath.clear();
  Block &body = fusion.getBody().front();
  LogicalResult result = success();
  for (BlockArgument arg : body.getArguments())
    mapping[arg] = Call(b, arg.getLoc(), "element")
                       .operand(entry->getArgument(0))
                       .integer(arg.getArgNumber())
                       .build(tensorType)[0];
  for (Operation &op : body.without_terminator())
    if (failed(lower(&op))) {
      result = failure();
      break;
    }
  if (succeeded(result)) {
    Call list(b, fusion.getLoc(), "tensorList");
    for (Value v : cast<YieldOp>(body.getTerminator()).getValues())
      list.operand(map(v));
    emitc::ReturnOp::create(b, fusion.getLoc(), list.build(listType)[0]);
  }
  mapping = std::move(outer);
  lastPath = std::move(outerPath);
  return result;
}

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
