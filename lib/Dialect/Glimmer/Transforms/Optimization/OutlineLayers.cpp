//===- OutlineLayers.cpp - Repeated layers as one function each ----------===//
//
// A model's decoder (and vision) layers repeat the same ops on other
// parameters: unrolled, the generated C++ and its build grow with depth.
// Each run of ops that one numbered module (`layers.3`, `vision.layers.0`)
// contributes to a function (its forward, its backward, its recomputation)
// is a segment; segments whose ops are the same up to their operands become
// calls of one private function, so the program holds each distinct kind of
// layer once however deep the model is.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Layers.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace glimmer {
#define GEN_PASS_DEF_GLIMMEROUTLINELAYERS
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

/// A contiguous run of ops of one layer, and the values it reads from
/// before it, in the order it first reads them.
struct Segment {
  SmallVector<Operation *> ops;
  SmallVector<Value> inputs;
  DenseMap<Value, unsigned> inputIndex;
  llvm::hash_code shape;

  bool contains(Operation *op) const {
    return op->getBlock() == ops.front()->getBlock() &&
           !op->isBeforeInBlock(ops.front()) &&
           !ops.back()->isBeforeInBlock(op);
  }
  /// Whether `v` is computed by an op of the segment (or inside one).
  bool defines(Value v) const {
    Operation *def = v.getDefiningOp();
    if (!def)
      def = cast<BlockArgument>(v).getOwner()->getParentOp();
    Operation *at = ops.front()->getBlock()->findAncestorOpInBlock(*def);
    return at && contains(at);
  }
  void finish() {
    llvm::hash_code h = llvm::hash_value(ops.size());
    for (Operation *op : ops) {
      op->walk([&](Operation *nested) {
        for (Value v : nested->getOperands())
          if (!defines(v) && inputIndex.try_emplace(v, inputs.size()).second)
            inputs.push_back(v);
      });
      h = llvm::hash_combine(
          h, OperationEquivalence::computeHash(
                 op, OperationEquivalence::ignoreHashValue,
                 OperationEquivalence::ignoreHashValue,
                 OperationEquivalence::IgnoreLocations));
    }
    shape = h;
  }
};

/// Whether `b` computes what `a` computes on its own inputs: the same ops,
/// attributes and types, reading the inputs at the same positions.
bool sameLayer(const Segment &a, const Segment &b) {
  if (a.ops.size() != b.ops.size() || a.inputs.size() != b.inputs.size() ||
      a.shape != b.shape)
    return false;
  DenseMap<Value, Value> same;
  auto check = [&](Value x, Value y) -> LogicalResult {
    if (auto it = same.find(x); it != same.end())
      return success(it->second == y);
    auto ix = a.inputIndex.find(x), iy = b.inputIndex.find(y);
    return success(ix != a.inputIndex.end() && iy != b.inputIndex.end() &&
                   ix->second == iy->second);
  };
  auto mark = [&](Value x, Value y) { same[x] = y; };
  for (auto [x, y] : llvm::zip(a.ops, b.ops))
    if (!OperationEquivalence::isEquivalentTo(
            x, y, check, mark, OperationEquivalence::IgnoreLocations))
      return false;
  return true;
}

/// The segments of a function's body (layerSegments) of at least `minOps`
/// ops, with their inputs.
SmallVector<Segment> segmentsOf(Block &body, unsigned minOps,
                                unsigned maxForeign) {
  SmallVector<Segment> segments;
  for (LayerSegment &run : layerSegments(body, maxForeign)) {
    if (run.ops.size() < minOps)
      continue;
    Segment s;
    s.ops = std::move(run.ops);
    segments.push_back(std::move(s));
  }
  for (Segment &s : segments)
    s.finish();
  return segments;
}

/// Replaces each segment of `group` by a call of one new function, cloned
/// from the first. Its results are the values any member uses after it.
/// `replaced` maps the values of segments outlined before to the call
/// results that took their place (an input of a later segment may be one);
/// the segments' ops are appended to `dead`, erased once no value of them
/// can be looked up any more.
void outline(func::FuncOp func, ArrayRef<Segment *> group, StringRef name,
             SymbolTable &symbols, DenseMap<Value, Value> &replaced,
             SmallVectorImpl<Operation *> &dead) {
  const Segment &first = *group.front();
  // (op index, result index) of every value some member uses later.
  SmallVector<std::pair<unsigned, unsigned>> escaping;
  for (auto [o, op] : llvm::enumerate(first.ops))
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      if (llvm::any_of(group, [&](Segment *s) {
            return llvm::any_of(s->ops[o]->getResult(r).getUsers(),
                                [&](Operation *user) {
                                  Operation *at =
                                      s->ops.front()->getBlock()
                                          ->findAncestorOpInBlock(*user);
                                  return !s->contains(at);
                                });
          }))
        escaping.push_back({unsigned(o), r});

  SmallVector<Type> inputTypes, resultTypes;
  for (Value v : first.inputs)
    inputTypes.push_back(v.getType());
  for (auto [o, r] : escaping)
    resultTypes.push_back(first.ops[o]->getResult(r).getType());
  OpBuilder b(func);
  auto callee = func::FuncOp::create(
      b, first.ops.front()->getLoc(), name,
      b.getFunctionType(inputTypes, resultTypes));
  callee.setPrivate();
  symbols.insert(callee);
  Block *entry = callee.addEntryBlock();
  IRMapping mapping;
  for (auto [v, arg] : llvm::zip(first.inputs, entry->getArguments())) {
    mapping.map(v, arg);
    if (Value now = replaced.lookup(v))
      mapping.map(now, arg);
  }
  b.setInsertionPointToStart(entry);
  for (Operation *op : first.ops)
    b.clone(*op, mapping);
  SmallVector<Value> returned;
  for (auto [o, r] : escaping)
    returned.push_back(mapping.lookup(first.ops[o]->getResult(r)));
  func::ReturnOp::create(b, callee.getLoc(), returned);

  for (Segment *s : group) {
    SmallVector<Value> inputs;
    for (Value v : s->inputs)
      inputs.push_back(replaced.lookup(v) ? replaced.lookup(v) : v);
    b.setInsertionPoint(s->ops.front());
    auto call =
        func::CallOp::create(b, s->ops.front()->getLoc(), callee, inputs);
    for (auto [i, at] : llvm::enumerate(escaping)) {
      Value old = s->ops[at.first]->getResult(at.second);
      old.replaceAllUsesWith(call.getResult(i));
      replaced[old] = call.getResult(i);
    }
    dead.append(s->ops.rbegin(), s->ops.rend());
  }
}

struct OutlineLayersPass
    : public glimmer::impl::GlimmerOutlineLayersBase<OutlineLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isPrivate() || !func.getBody().hasOneBlock())
        continue;
      SmallVector<Segment> segments =
          segmentsOf(func.getBody().front(), minOps, maxForeign);
      // Groups of the same layer, in the order of their first member.
      SmallVector<SmallVector<Segment *>> groups;
      for (Segment &s : segments) {
        auto it = llvm::find_if(groups, [&](ArrayRef<Segment *> g) {
          return sameLayer(*g.front(), s);
        });
        if (it != groups.end())
          it->push_back(&s);
        else
          groups.push_back({&s});
      }
      unsigned n = 0;
      DenseMap<Value, Value> replaced;
      SmallVector<Operation *> dead;
      for (ArrayRef<Segment *> group : groups)
        if (group.size() >= 2)
          outline(func, group, (func.getName() + "_layer" + Twine(n++)).str(),
                  symbols, replaced, dead);
      for (Operation *op : dead)
        op->erase();
    }
  }
};

} // namespace
