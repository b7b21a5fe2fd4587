//===- OutOfScope.cpp - Core ATen ops refused with their reason -----------===//
//
// Core ATen ops outside the scope of the front ends: each is refused at its
// node (so the error points at the model's Python line) with why, instead
// of as an unknown operator. The scope is docs/CoreAtenCoverage.md's.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerOutOfScopeConverters() {
  auto refuse = [this](std::string name, std::string why) {
    converters[name] = [this, name, why](OpCall *) {
      fail(name + " is out of scope: " + why);
    };
  };
  const char *complex = "complex tensors are not supported";
  for (const char *op : {"aten::_fft_r2c", "aten::_fft_c2r", "aten::_fft_c2c"})
    refuse(op, complex);
  const char *rng =
      "a program is a deterministic function of its inputs, so it cannot "
      "draw random numbers; pass the random tensor as an input";
  for (const char *op :
       {"aten::rand", "aten::randn", "aten::randperm", "aten::randint",
        "aten::bernoulli", "aten::normal", "aten::normal_functional",
        "aten::uniform", "aten::cauchy", "aten::exponential",
        "aten::geometric", "aten::log_normal", "aten::multinomial",
        "aten::poisson"})
    refuse(op, rng);
  // Dropout that drops nothing (p = 0, or not training) is the identity
  // with a mask of ones.
  converters["aten::native_dropout"] = [this, rng](OpCall *n) {
    bool train = in(n, 2).kind == Imp::None || in(n, 2).asInt() != 0;
    if (train && in(n, 1).asDouble() > 0)
      fail(std::string("aten::native_dropout with p > 0 in training is out "
                       "of scope: ") + rng);
    MValue x = tensorIn(n, 0);
    setOut(n, 0, in(n, 0));
    setOut(n, 1, Imp::ofTensor(splat(shapeOf(x), i1(), 1.0)));
  };
  const char *dataDependent =
      "its result's size (or value on the host) depends on tensor values, "
      "which a program compiled for fixed shapes cannot have";
  for (const char *op : {"aten::nonzero", "aten::_local_scalar_dense"})
    refuse(op, dataDependent);
  const char *layout = "it addresses the tensor's memory layout (strides), "
                       "which a program's tensors do not have";
  for (const char *op : {"aten::as_strided", "aten::empty_strided"})
    refuse(op, layout);
}
