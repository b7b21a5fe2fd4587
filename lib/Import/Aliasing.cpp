//===- Aliasing.cpp - Views and in-place writes on a functional program --===//
//
// PyTorch tensors alias: `p[:, i] = x` (aten::select, then aten::copy_)
// writes into `p`, and a view taken before the write reads the new values
// after it. The glimmer program is functional, so the importer tracks which
// traced values are views of which root, through select and slice: an
// in-place op on a view puts its result back into the root (a masked
// select of the written region, padded to the root's shape), and a view
// read after its root changed is taken again from the new root. A read
// before the write keeps the old value, as in PyTorch.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "glimmer/Dialect/Glimmer/IR/OpEmitter.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

MValue Importer::writeView(MValue base, ArrayRef<ViewStep> steps, MValue v) {
  if (steps.empty())
    return v;
  const ViewStep &s = steps.front();
  MValue inner =
      writeView(applyView(base, s), steps.drop_front(), v);
  if (s.step != 1)
    fail("an in-place write through a slice with step " +
         std::to_string(s.step) + " is not supported");
  auto shape = shapeOf(base);
  if (s.select) {
    std::vector<int64_t> kept(shapeOf(inner).begin(), shapeOf(inner).end());
    kept.insert(kept.begin() + s.dim, 1);
    inner = reshape(inner, kept);
  }
  // The written region padded to the base's shape, chosen where the index
  // along the dimension lies in [start, end).
  std::vector<int64_t> low(shape.size(), 0), high(shape.size(), 0);
  low[s.dim] = s.start;
  high[s.dim] = shape[s.dim] - s.end;
  MValue padded = createChecked<PadOp>(inner, b.getDenseI64ArrayAttr(low),
                                       b.getDenseI64ArrayAttr(high),
                                       b.getF64FloatAttr(0.0));
  OpEmitter e{b, loc};
  auto index = tensorType(shape, i64());
  MValue iota = e.iota(index, s.dim);
  MValue from = e.compare(CompareDirection::GE, iota,
                          splat(shape, i64(), double(s.start)));
  MValue to = e.compare(CompareDirection::LT, iota,
                        splat(shape, i64(), double(s.end)));
  return e.select(from, e.select(to, padded, base), base);
}

void Importer::noteView(jit::Node *node) {
  NodeCall call(*this, node);
  std::optional<ViewStep> step = viewStepOf(&call);
  if (!step)
    return;
  const jit::Value *source = node->input(0);
  View view{source, {}, 0};
  if (auto parent = views.find(source); parent != views.end()) {
    view.root = parent->second.root;
    view.steps = parent->second.steps;
  }
  view.steps.push_back(*step);
  view.version = versions.lookup(view.root);
  views[node->output(0)] = std::move(view);
}

void Importer::refreshView(const jit::Value *v) {
  auto it = views.find(v);
  if (it == views.end())
    return;
  unsigned now = versions.lookup(it->second.root);
  if (now == it->second.version)
    return;
  const Imp &root = env.at(it->second.root);
  env[v] = Imp::ofTensor(applyView(root.tensor, it->second.steps));
  it->second.version = now;
}

void Importer::noteInPlaceWrite(jit::Node *node) {
  std::string kind = node->kind().toQualString();
  // `x |= y` and `x &= y` trace as aten::__ior__ / __iand__; other dunders
  // (__and__, __getitem__) are not in place.
  bool dunderInPlace = kind == "aten::__ior__" || kind == "aten::__iand__";
  if ((!dunderInPlace &&
       (kind.rfind("aten::__", 0) == 0 || kind.back() != '_')) ||
      node->inputs().empty() || node->outputs().empty())
    return;
  const jit::Value *self = node->input(0);
  auto out = env.find(node->output(0));
  auto target = env.find(self);
  if (out == env.end() || target == env.end() ||
      out->second.kind != Imp::Tensor || target->second.kind != Imp::Tensor)
    return;
  // An in-place op keeps its operand's type (PyTorch casts the result, as
  // in an integer tensor's masked_fill_ with a float value).
  MValue written = out->second.tensor;
  if (shapeOf(written) != shapeOf(target->second.tensor))
    fail("the in-place '" + kind + "' changes its operand's shape from " +
         shapeString(shapeOf(target->second.tensor)) + " to " +
         shapeString(shapeOf(written)));
  written = convert(written, elemOf(target->second.tensor));
  env[node->output(0)] = Imp::ofTensor(written);
  // The operand now holds the result; through a view, so does its root.
  const jit::Value *root = self;
  auto view = views.find(self);
  if (view != views.end()) {
    root = view->second.root;
    const Imp &base = env.at(root);
    env[root] = Imp::ofTensor(
        writeView(base.tensor, view->second.steps, written));
  }
  unsigned now = ++versions[root];
  env[self] = Imp::ofTensor(written);
  if (view != views.end())
    view->second.version = now;
}
