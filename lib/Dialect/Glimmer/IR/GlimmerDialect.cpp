//===- GlimmerDialect.cpp - Glimmer dialect -------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace glimmer;

#include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.cpp.inc"

void GlimmerDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.cpp.inc"
      >();
  registerAttributes();
}

LogicalResult GlimmerDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  if (attr.getName() == getSpmdAttrName()) {
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << getSpmdAttrName()
                             << "' may only be attached to a builtin.module";
    if (!isa<SpmdAttr>(attr.getValue()))
      return op->emitError() << "'" << getSpmdAttrName()
                             << "' must be a #glimmer.spmd attribute";
    return success();
  }
  return op->emitError() << "unknown glimmer attribute '"
                         << attr.getName().getValue() << "' on an operation";
}

LogicalResult GlimmerDialect::verifyRegionArgAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned argIndex,
                                                       NamedAttribute attr) {
  if (attr.getName() != getShardingAttrName())
    return op->emitError() << "unknown glimmer argument attribute '"
                           << attr.getName().getValue() << "'";
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitError() << "'" << getShardingAttrName()
                           << "' must be a #glimmer.sharding attribute";
  Value arg = op->getRegion(regionIndex).getArgument(argIndex);
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!type)
    return op->emitError() << "argument #" << argIndex
                           << " has a sharding but is not a ranked tensor";
  auto meshOp = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      op, sharding.getMesh());
  if (!meshOp)
    return op->emitError() << "sharding of argument #" << argIndex
                           << " refers to unknown mesh " << sharding.getMesh();
  return sharding.verifyFor(
      [&]() {
        return op->emitError() << "argument #" << argIndex << ": ";
      },
      type, meshOp.getMesh());
}

SpmdAttr glimmer::getRecordedSpmd(ModuleOp module) {
  return module->getAttrOfType<SpmdAttr>(GlimmerDialect::getSpmdAttrName());
}

SpmdAttr glimmer::requireRecordedSpmd(ModuleOp module, StringRef passName) {
  SpmdAttr attr = getRecordedSpmd(module);
  if (!attr)
    module.emitError() << "'" << passName
                       << "' needs the SPMD layout recorded on the module; run "
                          "glimmer-attach-spmd first (e.g. glimmer-opt "
                          "--spmd=cp=2 --glimmer-attach-spmd ...)";
  return attr;
}
