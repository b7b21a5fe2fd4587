//===- Layers.cpp - A model's repeated blocks, read off op locations ------===//

#include "glimmer/Dialect/Glimmer/Transforms/Layers.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

StringRef glimmer::modulePathOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (StringRef path = modulePathOf(l); !path.empty())
        return path;
  return "";
}

StringRef glimmer::layerOf(Operation *op) {
  StringRef path = modulePathOf(op->getLoc());
  size_t end = 0;
  while (end < path.size()) {
    size_t next = path.find('.', end);
    StringRef component = path.slice(end, next);
    if (!component.empty() && llvm::all_of(component, llvm::isDigit))
      return path.take_front(next == StringRef::npos ? path.size() : next);
    if (next == StringRef::npos)
      break;
    end = next + 1;
  }
  return "";
}

SmallVector<glimmer::LayerSegment>
glimmer::layerSegments(Block &body, unsigned maxForeign,
                       function_ref<bool(Operation *)> ignore) {
  // Runs of consecutive ops of one block ("" for none).
  SmallVector<LayerSegment> runs;
  for (Operation &op : body.without_terminator()) {
    StringRef layer = ignore && ignore(&op) ? StringRef() : layerOf(&op);
    if (runs.empty() || runs.back().layer != layer)
      runs.push_back({layer, {}});
    runs.back().ops.push_back(&op);
  }
  SmallVector<LayerSegment> segments;
  for (size_t i = 0; i < runs.size();) {
    if (runs[i].layer.empty()) {
      ++i;
      continue;
    }
    LayerSegment s = runs[i];
    size_t j = i + 1;
    while (j + 1 < runs.size() && runs[j].ops.size() <= maxForeign &&
           runs[j + 1].layer == runs[i].layer) {
      s.ops.append(runs[j].ops);
      s.ops.append(runs[j + 1].ops);
      j += 2;
    }
    i = j;
    segments.push_back(std::move(s));
  }
  return segments;
}

double glimmer::estimatedCost(Operation *op) {
  if (op->getNumResults() == 0)
    return 0;
  auto numel = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor ? double(tensor.getNumElements()) : 0.0;
  };
  double out = numel(op->getResult(0).getType());
  auto lastDim = [](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getRank() ? double(t.getShape().back()) : 1.0;
  };
  if (isa<LinearOp, MatmulOp>(op))
    return 2 * out * lastDim(op->getOperand(0));
  if (auto a = dyn_cast<AttentionOp>(op)) {
    auto k = cast<RankedTensorType>(a.getKey().getType());
    return 4 * out *
           double(k.getDimSize(a.isSequenceMajor(AttentionOp::kKey) ? 1 : 2));
  }
  if (auto c = dyn_cast<Conv2dOp>(op)) {
    auto w = cast<RankedTensorType>(c.getWeight().getType());
    return 2 * out *
           double(w.getDimSize(1) * w.getDimSize(2) * w.getDimSize(3));
  }
  return out;
}
