//===- OptimizerInPlaceTest.cpp - Updates that replace their state -------===//
//
// An optimizer update writes its new parameter and moments into the old
// ones' storage when the update holds the only handles on them (the trainer
// hands its state over), and into new storage when anything else still
// holds them: the values are the same either way.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Kernels.h"

#include <gtest/gtest.h>

#include <vector>

using namespace glimmer_rt;

namespace {

Tensor filled(std::vector<double> values) {
  Tensor t(DType::F64, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    t.data<double>()[i] = values[i];
  return t;
}

struct State {
  std::vector<Tensor> params, grads, m, v;
};

State fresh() {
  return {{filled({1.0, -2.0, 3.0}), filled({0.5})},
          {filled({0.1, 0.2, -0.3}), filled({-1.0})},
          {filled({0.01, 0.0, -0.02}), filled({0.3})},
          {filled({0.001, 0.002, 0.0}), filled({0.04})}};
}

std::vector<Tensor> update(const State &s) {
  Tensor step(DType::I64, {});
  step.data<int64_t>()[0] = 3;
  return adamwUpdateList(s.params, s.grads, s.m, s.v, step, 1e-2, 0.9, 0.999,
                         1e-8, 0.01);
}

void expectSameValues(const std::vector<Tensor> &a,
                      const std::vector<Tensor> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k)
    for (int64_t i = 0; i < a[k].numel(); ++i)
      EXPECT_EQ(a[k].data<double>()[i], b[k].data<double>()[i]);
}

// Handed over: each result is the storage of the tensor it replaces.
TEST(OptimizerInPlace, SoleOwnerIsUpdatedInPlace) {
  State s = fresh();
  std::vector<const void *> before;
  for (const auto *list : {&s.params, &s.m, &s.v})
    for (const Tensor &t : *list)
      before.push_back(t.raw());
  std::vector<Tensor> out = update(s);
  ASSERT_EQ(out.size(), 6u);
  for (size_t k = 0; k < out.size(); ++k)
    EXPECT_EQ(out[k].raw(), before[k]) << "result " << k;

  // Held elsewhere: new storage, the held tensors keep their values.
  State t = fresh();
  State held = t;
  std::vector<Tensor> copied = update(t);
  for (size_t k = 0; k < copied.size(); ++k)
    EXPECT_NE(copied[k].raw(), before[k]);
  EXPECT_EQ(held.params[0].data<double>()[1], -2.0);
  EXPECT_EQ(held.v[1].data<double>()[0], 0.04);
  expectSameValues(out, copied);
}

// A view (or another handle) on the storage keeps the update out of it.
TEST(OptimizerInPlace, ViewKeepsStorage) {
  State s = fresh();
  Tensor view = s.params[0].view({3, 1});
  std::vector<Tensor> out = update(s);
  EXPECT_NE(out[0].raw(), view.raw());
  EXPECT_EQ(view.data<double>()[0], 1.0);
  EXPECT_EQ(out[1].raw(), s.params[1].raw());
}

} // namespace
