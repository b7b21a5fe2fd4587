//===- Creation.cpp - Tensor creation converters --------------------------===//
//
// Ops that create tensors from sizes and values: zeros, ones, full, empty
// (and empty_permuted), their _like and new_ forms, fill, and arange.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"

#include <algorithm>
#include <cmath>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerCreationConverters() {
  auto &C = converters;
  auto fillLike = [this](OpCall *n, std::vector<int64_t> shape,
                         Type defaultElem, double value) {
    setTensor(n, splat(shape, dtypeOr(n, defaultElem), value));
  };
  C["aten::zeros"] = [this, fillLike](OpCall *n) {
    fillLike(n, intList(in(n, 0)), f32(), 0);
  };
  // empty: any values will do; zeros keep the program deterministic.
  C["aten::empty"] = C["aten::zeros"];
  // empty_permuted(size, physical_layout, *, dtype): empty with its memory
  // in another dimension order; the logical shape is `size`, and the
  // layout, which only strides would show, does not matter to a program.
  C["aten::empty_permuted"] = C["aten::zeros"];
  C["aten::ones"] = [this, fillLike](OpCall *n) {
    fillLike(n, intList(in(n, 0)), f32(), 1);
  };
  C["aten::full"] = [this, fillLike](OpCall *n) {
    Imp &v = in(n, 1);
    fillLike(n, intList(in(n, 0)), v.kind == Imp::Float ? f32() : i64(),
             v.asDouble());
  };
  // scalar_tensor(s, *, dtype): a zero-dim tensor (f32 by default).
  C["aten::scalar_tensor"] = [this, fillLike](OpCall *n) {
    fillLike(n, {}, f32(), in(n, 0).asDouble());
  };
  auto likeShape = [this](OpCall *n) {
    auto s = shapeOf(tensorIn(n, 0));
    return std::vector<int64_t>(s.begin(), s.end());
  };
  C["aten::zeros_like"] = [this, fillLike, likeShape](OpCall *n) {
    fillLike(n, likeShape(n), elemOf(tensorIn(n, 0)), 0);
  };
  C["aten::ones_like"] = [this, fillLike, likeShape](OpCall *n) {
    fillLike(n, likeShape(n), elemOf(tensorIn(n, 0)), 1);
  };
  C["aten::full_like"] = [this, fillLike, likeShape](OpCall *n) {
    fillLike(n, likeShape(n), elemOf(tensorIn(n, 0)), in(n, 1).asDouble());
  };
  // fill(self, value): self's shape and type, every element value (a
  // number, or a zero-dim tensor).
  C["aten::fill"] = [this](OpCall *n) {
    MValue self = tensorIn(n, 0);
    setTensor(n, materialize(in(n, 1), elemOf(self), shapeOf(self)));
  };
  C["aten::new_zeros"] = [this, fillLike](OpCall *n) {
    fillLike(n, intList(in(n, 1)), elemOf(tensorIn(n, 0)), 0);
  };
  C["aten::new_ones"] = [this, fillLike](OpCall *n) {
    fillLike(n, intList(in(n, 1)), elemOf(tensorIn(n, 0)), 1);
  };
  C["aten::new_full"] = [this, fillLike](OpCall *n) {
    fillLike(n, intList(in(n, 1)), elemOf(tensorIn(n, 0)), in(n, 2).asDouble());
  };
  C["aten::arange"] = [this](OpCall *n) {
    // arange(end, ...), arange(start, end, ...), arange(start, end, step, ...)
    std::vector<Imp> nums;
    for (size_t i = 0; i < n->numInputs() && in(n, i).isNumber(); ++i)
      nums.push_back(in(n, i));
    // Trailing dtype/layout/device/pin_memory are not numbers, except a
    // dtype given as an int: keep only the leading start/end/step.
    const c10::FunctionSchema *schema = n->schema();
    size_t count = 0;
    if (schema)
      for (const c10::Argument &a : schema->arguments())
        if (a.name() == "start" || a.name() == "end" || a.name() == "step")
          ++count;
    nums.resize(std::min(nums.size(), std::max<size_t>(count, 1)));
    double start = 0, end = 0, step = 1;
    if (nums.size() == 1)
      end = nums[0].asDouble();
    else {
      start = nums[0].asDouble();
      end = nums[1].asDouble();
      if (nums.size() > 2)
        step = nums[2].asDouble();
    }
    bool anyFloat = false;
    for (const Imp &v : nums)
      anyFloat |= v.kind == Imp::Float;
    Type elem = dtypeOr(n, anyFloat ? f32() : i64());
    int64_t len = int64_t(std::ceil((end - start) / step));
    if (len < 0)
      len = 0;
    MValue iota =
        IotaOp::create(b, loc, tensorType({len}, elem), b.getI64IntegerAttr(0));
    MValue r = iota;
    if (step != 1)
      r = binary<MulOp>(Imp::ofTensor(r), Imp::ofFloat(step), elem);
    if (start != 0)
      r = binary<AddOp>(Imp::ofTensor(r), Imp::ofFloat(start), elem);
    setTensor(n, r);
  };
}
