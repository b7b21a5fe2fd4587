//===- LowerFusion.cpp - glimmer.fusion to a fused kernel's call ----------===//
//
// A fusion becomes a call of its CUDA kernel (the program carries the
// kernels' source) that also names a function running its ops one by one,
// which the CPU runs.
//
//===----------------------------------------------------------------------===//

#include "FusionKernel.h"
#include "Lowering.h"

using namespace mlir;
using namespace glimmer;

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
  OpLowering lowering(*this, fusion);
  Value inputs = lowering.listOf(fusion.getInputs());
  std::string results = "std::vector<glimmer_rt::FusedResult>{";
  for (auto [i, r] : llvm::enumerate(fusion.getResults())) {
    auto t = cast<RankedTensorType>(r.getType());
    results += (i ? ", {" : "{") + dtypeLiteral(t.getElementType()) + ", " +
               intList(t.getShape()) + "}";
  }
  results += "}";
  Value outputs = lowering.buildList(lowering.call(Kernel::fused)
                                         .literal(kFusedKernels)
                                         .integer(index)
                                         .operand(inputs)
                                         .literal(results)
                                         .literal(ops->second));
  lowering.release(inputs);
  return lowering.takeAll(outputs);
}

LogicalResult FunctionLowering::emitFusedOps(FusionOp fusion, StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(emitted);
  auto argType =
      emitc::OpaqueType::get(ctx, "const std::vector<glimmer_rt::Tensor>&");
  auto fn = emitc::FuncOp::create(b, fusion.getLoc(), name,
                                  b.getFunctionType({argType}, {list}));
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
    mapping[arg] = RuntimeCall(b, arg.getLoc(), Kernel::element)
                       .operand(entry->getArgument(0))
                       .integer(arg.getArgNumber())
                       .build(tensor)[0];
  for (Operation &op : body.without_terminator())
    if (failed(lower(&op))) {
      result = failure();
      break;
    }
  if (succeeded(result)) {
    auto yield = cast<YieldOp>(body.getTerminator());
    emitc::ReturnOp::create(
        b, fusion.getLoc(),
        OpLowering(*this, fusion).listOf(yield.getValues()));
  }
  mapping = std::move(outer);
  lastPath = std::move(outerPath);
  return result;
}
