//===- PrimOps.cpp - TorchScript's prim:: ops -----------------------------===//
//
// What a TorchScript graph has beyond ATen, evaluated at import time:
// constants, module attributes, list and tuple construction and unpacking,
// a tensor's device and dtype, and numbers boxed into tensors.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include <torch/csrc/jit/ir/constants.h>

#include <sstream>

using namespace glimmer;
using namespace glimmer::detail;

void Importer::registerPrimConverters() {
  auto &C = primConverters;
  C["prim::Constant"] = [this](jit::Node *n) {
    if (n->outputs().empty())
      return;
    std::optional<c10::IValue> v = jit::toIValue(n->output());
    if (!v)
      fail("constant of an unsupported kind");
    if (v->isTensor()) {
      Imp t = Imp::ofTensor(constantFromTensor(v->toTensor()));
      t.value = v->toTensor();
      setOut(n, 0, t);
      return;
    }
    Imp out;
    if (!ivalueToImp(*v, out))
      fail("constant of unsupported kind " + v->tagKind());
    setOut(n, 0, out);
  };

  C["prim::GetAttr"] = [this](jit::Node *n) {
    Imp &owner = in(n, 0);
    if (owner.kind != Imp::Module)
      fail("attribute read on a value that is not a module");
    std::string name = n->s(c10::attr::name);
    std::string path = owner.s.empty() ? name : owner.s + "." + name;
    auto it = stateArgs.find(path);
    if (it != stateArgs.end()) {
      setTensor(n, it->second);
      return;
    }
    // Walk the module tree to see what the attribute is.
    c10::IValue value = module._ivalue();
    std::stringstream parts(path);
    std::string part;
    while (std::getline(parts, part, '.'))
      value = value.toObject()->getAttr(part);
    if (value.isModule() || value.isObject()) {
      Imp m;
      m.kind = Imp::Module;
      m.s = path;
      setOut(n, 0, m);
      return;
    }
    if (value.isTensor())
      fail("module attribute '" + path +
           "' is a tensor that is neither a parameter nor a buffer");
    Imp out;
    if (!ivalueToImp(value, out))
      fail("module attribute '" + path + "' has an unsupported kind");
    setOut(n, 0, out);
  };

  C["prim::ListConstruct"] = [this](jit::Node *n) {
    std::vector<Imp> l;
    for (size_t i = 0; i < n->inputs().size(); ++i)
      l.push_back(in(n, i));
    setOut(n, 0, Imp::ofList(std::move(l)));
  };
  C["prim::TupleConstruct"] = C["prim::ListConstruct"];
  auto unpack = [this](jit::Node *n) {
    Imp &l = in(n, 0);
    if (l.kind != Imp::List || l.list.size() != n->outputs().size())
      fail("cannot unpack " + std::to_string(n->outputs().size()) +
           " values from this operand");
    for (size_t i = 0; i < n->outputs().size(); ++i)
      setOut(n, i, l.list[i]);
  };
  C["prim::ListUnpack"] = unpack;
  C["prim::TupleUnpack"] = unpack;
  C["prim::TupleIndex"] = [this](jit::Node *n) {
    Imp &l = in(n, 0);
    int64_t i = in(n, 1).asInt();
    if (l.kind != Imp::List || i < 0 || i >= int64_t(l.list.size()))
      fail("tuple index out of range");
    setOut(n, 0, l.list[i]);
  };
  C["prim::device"] = [this](jit::Node *n) {
    Imp d;
    d.kind = Imp::Device;
    setOut(n, 0, d);
  };
  C["prim::dtype"] = [this](jit::Node *n) {
    Imp &x = in(n, 0);
    if (x.kind != Imp::Tensor)
      fail("dtype of a value that is not a tensor");
    setOut(n, 0, Imp::ofInt(int64_t(scalarTypeFor(elemOf(x.tensor)))));
  };
  // Scalars that TorchScript boxes into zero-dim tensors stay host numbers
  // until a tensor op needs them.
  C["prim::NumToTensor"] = [this](jit::Node *n) { setOut(n, 0, in(n, 0)); };
}
