//===- GlimmerDialect.cpp - Glimmer dialect -------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

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
  if (attr.getName() == kTracedInputsAttr) {
    // The importer's record of inputs the traced program holds as constants:
    // each name with the digest of the example's values.
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !dict ||
        !llvm::all_of(dict, [](NamedAttribute e) {
          return isa<StringAttr>(e.getValue());
        }))
      return op->emitError() << "'glimmer.traced_inputs' is a dictionary of "
                                "input names to digests, on a module";
    return success();
  }
  if (attr.getName() == kSequenceParallelAttr ||
      attr.getName() == kTokenSplitAttr) {
    // A constraint a seed made: the sequence-parallel plan's, or a token
    // split (propagated after the TP plan, in that order reversed).
    if (!isa<ShardingConstraintOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' is a unit attribute of "
                                "glimmer.sharding_constraint";
    return success();
  }
  if (attr.getName() == kStagePrologueAttr) {
    if (!isa<FunctionOpInterface>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'glimmer.stage_prologue' is a unit "
                                "attribute of a function";
    return success();
  }
  if (attr.getName() == kStageAttr) {
    // glimmer-split-stages' pipeline stage functions.
    if (!isa<FunctionOpInterface>(op) || !isa<IntegerAttr>(attr.getValue()))
      return op->emitError()
             << "'glimmer.stage' is an integer attribute of a function";
    return success();
  }
  if (attr.getName() == kShardingRuleAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'glimmer.sharding_rule' must be a string";
    return success();
  }
  if (attr.getName() == kShardingsAttr) {
    // Propagation's result: one sharding per result, each fitting it.
    auto list = dyn_cast<ArrayAttr>(attr.getValue());
    if (!list || list.size() != op->getNumResults())
      return op->emitError() << "'glimmer.shardings' must list one "
                                "#glimmer.sharding per result ("
                             << op->getNumResults() << ")";
    for (auto [i, a] : llvm::enumerate(list)) {
      auto sharding = dyn_cast<ShardingAttr>(a);
      auto type = dyn_cast<RankedTensorType>(op->getResult(i).getType());
      if (!sharding || !type)
        return op->emitError() << "'glimmer.shardings' entry #" << i
                               << " must be a #glimmer.sharding of a ranked "
                                  "tensor result";
      auto meshOp = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
          op, sharding.getMesh());
      if (!meshOp)
        return op->emitError() << "sharding of result #" << i
                               << " refers to unknown mesh "
                               << sharding.getMesh();
      if (failed(sharding.verifyFor(
              [&]() { return op->emitError() << "result #" << i << ": "; },
              type, meshOp.getMesh())))
        return failure();
    }
    return success();
  }
  return op->emitError() << "unknown glimmer attribute '"
                         << attr.getName().getValue() << "' on an operation";
}

/// Checks a `glimmer.sharding` on function argument or result `index` of
/// type `type`; `what` is "argument" or "result".
static LogicalResult verifyValueSharding(Operation *op, StringRef what,
                                         unsigned index, Type type,
                                         NamedAttribute attr) {
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitError() << "'" << GlimmerDialect::getShardingAttrName()
                           << "' must be a #glimmer.sharding attribute";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitError() << what << " #" << index
                           << " has a sharding but is not a ranked tensor";
  auto meshOp =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, sharding.getMesh());
  if (!meshOp)
    return op->emitError() << "sharding of " << what << " #" << index
                           << " refers to unknown mesh " << sharding.getMesh();
  return sharding.verifyFor(
      [&]() { return op->emitError() << what << " #" << index << ": "; },
      tensor, meshOp.getMesh());
}

/// Checks `glimmer.sharded` on function argument or result `index` of type
/// `type` (`what` is "argument" or "result"): the per-rank piece the runtime
/// holds, cut from the full tensor as the #glimmer.sharding says (each
/// split dimension as glimmer.local_shard cuts it).
static LogicalResult verifyShardedPiece(Operation *op, StringRef what,
                                        unsigned index, Type type,
                                        NamedAttribute attr) {
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!sharding || !tensor ||
      static_cast<int64_t>(sharding.getDims().size()) != tensor.getRank())
    return op->emitError() << what << " #" << index
                           << ": 'glimmer.sharded' must be a "
                              "#glimmer.sharding with one entry per "
                              "dimension of the ranked tensor "
                           << type;
  SmallVector<StringRef> seen;
  for (unsigned d = 0; d < sharding.getDims().size(); ++d)
    for (StringRef axis : sharding.getDimAxes(d)) {
      if (!meshAxisFromName(axis.str()) || llvm::is_contained(seen, axis))
        return op->emitError()
               << what << " #" << index
               << ": 'glimmer.sharded' must split over distinct mesh axes "
                  "(dp_replicate, dp_shard, cp, tp, pp)";
      seen.push_back(axis);
    }
  if (seen.empty() || !sharding.getPartialAxes().empty())
    return op->emitError() << what << " #" << index
                           << ": 'glimmer.sharded' must split at least one "
                              "dimension and have no partial axes";
  return success();
}

static bool isShardedPieceAttr(StringRef name) { return name == kShardedAttr; }

/// Whether `name` is a role attribute whose value is a `kind`: a name (the
/// importer's names of forward inputs, parameters and buffers, autodiff's of
/// gradients and moments), an index in a pipeline cut, or a unit.
static bool isRoleAttr(StringRef name, RoleValue kind) {
  const RoleAttr *role = roleAttrNamed(name);
  return role && role->value == kind;
}

static LogicalResult verifyBoundaryAttr(Operation *op, NamedAttribute attr) {
  auto index = dyn_cast<IntegerAttr>(attr.getValue());
  if (!index || index.getInt() < 0)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a non-negative integer";
  return success();
}

LogicalResult GlimmerDialect::verifyRegionArgAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned argIndex,
                                                       NamedAttribute attr) {
  if (isRoleAttr(attr.getName().getValue(), RoleValue::Name)) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a string";
    return success();
  }
  if (isRoleAttr(attr.getName().getValue(), RoleValue::Index))
    return verifyBoundaryAttr(op, attr);
  if (isRoleAttr(attr.getName().getValue(), RoleValue::Unit)) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a unit attribute";
    return success();
  }
  bool piece = isShardedPieceAttr(attr.getName().getValue());
  if (attr.getName() != getShardingAttrName() && !piece)
    return op->emitError() << "unknown glimmer argument attribute '"
                           << attr.getName().getValue() << "'";
  // Types come from the function type: a declaration has no body to read
  // block arguments from.
  Type type;
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (fn)
    type = fn.getArgumentTypes()[argIndex];
  else
    type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  if (piece)
    return verifyShardedPiece(op, "argument", argIndex, type, attr);
  return verifyValueSharding(op, "argument", argIndex, type, attr);
}

LogicalResult GlimmerDialect::verifyRegionResultAttribute(Operation *op,
                                                          unsigned regionIndex,
                                                          unsigned resultIndex,
                                                          NamedAttribute attr) {
  if (isRoleAttr(attr.getName().getValue(), RoleValue::Index))
    return verifyBoundaryAttr(op, attr);
  if (attr.getName() == kPartialAttr) {
    if (!isa<ArrayAttr>(attr.getValue()))
      return op->emitError()
             << "'glimmer.partial' must be an array of mesh axis names";
    return success();
  }
  if (isRoleAttr(attr.getName().getValue(), RoleValue::Name)) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a string";
    return success();
  }
  bool piece = isShardedPieceAttr(attr.getName().getValue());
  if (attr.getName() != getShardingAttrName() && !piece)
    return op->emitError() << "unknown glimmer result attribute '"
                           << attr.getName().getValue() << "'";
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' on a result needs a function";
  if (piece)
    return verifyShardedPiece(op, "result", resultIndex,
                              fn.getResultTypes()[resultIndex], attr);
  return verifyValueSharding(op, "result", resultIndex,
                             fn.getResultTypes()[resultIndex], attr);
}

SpmdAttr glimmer::getRecordedSpmd(ModuleOp module) {
  return module->getAttrOfType<SpmdAttr>(GlimmerDialect::getSpmdAttrName());
}

MeshOp glimmer::requireMesh(ModuleOp module, StringRef passName) {
  auto mesh = module.lookupSymbol<MeshOp>("mesh");
  if (!mesh)
    module.emitError() << "'" << passName
                       << "' needs @mesh; run glimmer-materialize-mesh first";
  return mesh;
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
