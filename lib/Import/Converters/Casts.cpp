//===- Casts.cpp - Cast and identity converters ---------------------------===//
//
// Element type conversions (to, type_as, float, long, ...) and the ops
// that are the identity on the functional program (contiguous, clone,
// detach, dropout at inference).
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerCastConverters() {
  auto &C = converters;
  auto castTo = [this](OpCall *n, Type elem) {
    Imp &x = in(n, 0);
    if (x.isNumber()) {
      setOut(n, 0,
             mlir::isa<mlir::FloatType>(elem) ? Imp::ofFloat(x.asDouble())
                                              : Imp::ofInt(x.asInt()));
      return;
    }
    setTensor(n, convert(x.tensor, elem));
  };
  C["aten::to"] = [this, castTo](OpCall *n) {
    // to(Tensor other) / to(dtype) / to(device, dtype) / to(dtype, layout...)
    Imp &arg1 = in(n, 1);
    if (arg1.kind == Imp::Tensor) {
      castTo(n, elemOf(arg1.tensor));
      return;
    }
    Imp *dtype = namedInput(n, "dtype");
    if (!dtype || dtype->kind == Imp::None) {
      setOut(n, 0, in(n, 0)); // device-only move
      return;
    }
    castTo(n, elementTypeFor(c10::ScalarType(dtype->asInt())));
  };
  // _to_copy(self, *, dtype, layout, device, ...): the Core ATen cast.
  C["aten::_to_copy"] = C["aten::to"];
  C["aten::type_as"] = [this, castTo](OpCall *n) {
    castTo(n, elemOf(tensorIn(n, 1)));
  };
  C["aten::float"] = [this, castTo](OpCall *n) { castTo(n, f32()); };
  C["aten::double"] = [this, castTo](OpCall *n) {
    castTo(n, overrideFloat(b.getF64Type()));
  };
  C["aten::long"] = [this, castTo](OpCall *n) { castTo(n, i64()); };
  C["aten::bool"] = [this, castTo](OpCall *n) { castTo(n, i1()); };
  auto identity = [this](OpCall *n) { setOut(n, 0, in(n, 0)); };
  C["aten::contiguous"] = identity;
  C["aten::clone"] = identity;
  C["aten::detach"] = identity;
  C["aten::alias"] = identity;
  // Conjugate and negative bits are lazy flags of complex views; the
  // importer's tensors are real, where both are the identity.
  C["aten::resolve_conj"] = identity;
  C["aten::resolve_neg"] = identity;
  C["aten::lift_fresh"] = identity;
  C["aten::dropout"] = [this](OpCall *n) {
    double p = in(n, 1).asDouble();
    bool train = in(n, 2).asInt() != 0;
    if (train && p > 0)
      fail("dropout with p = " + std::to_string(p) +
           " in training mode is not supported (training parity needs a "
           "deterministic program; set dropout to 0)");
    setOut(n, 0, in(n, 0));
  };
  C["aten::feature_dropout"] = C["aten::dropout"];
}
