//===- OpConverter.cpp - The ATen op conversion table ---------------------===//
//
// The builders the converters share and the table's registration. A
// converter reads its operands from the OpCall, computes the result shape,
// emits glimmer ops (or evaluates host values) and binds its outputs.
// Unsupported argument combinations fail with a message naming what is
// unsupported. Each op family registers its converters from its own file in
// Converters/.
//
//===----------------------------------------------------------------------===//

#include "OpConverter.h"
#include "glimmer_rt/Safetensors.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <limits>

using namespace glimmer;
using namespace glimmer::detail;

void OpConverter::registerConverters() {
  registerHostValueConverters();
  registerArithmeticConverters();
  registerUnaryConverters();
  registerComparisonConverters();
  registerCastConverters();
  registerViewConverters();
  registerSlicingConverters();
  registerDataMovementConverters();
  registerCreationConverters();
  registerReductionConverters();
  registerModelOpConverters();
  registerNormalizationConverters();
  registerPaddingConverters();
  registerIndexingConverters();
  registerAttentionConverters();
  registerConvolutionConverters();
  registerInterpolationConverters();
  registerPoolingConverters();
  registerPoolingBackwardConverters();
  registerDistanceConverters();
  registerSortingConverters();
  registerEmbeddingBagConverters();
  registerGridSampleConverters();
  registerOutOfScopeConverters();
}

bool glimmer::detail::ivalueToImp(const c10::IValue &v, Imp &out) {
  if (v.isNone()) {
    out.kind = Imp::None;
    return true;
  }
  if (v.isBool()) {
    out = Imp::ofBool(v.toBool());
    return true;
  }
  if (v.isInt()) {
    out = Imp::ofInt(v.toInt());
    return true;
  }
  if (v.isDouble()) {
    out = Imp::ofFloat(v.toDouble());
    return true;
  }
  if (v.isString()) {
    out.kind = Imp::Str;
    out.s = v.toStringRef();
    return true;
  }
  if (v.isDevice()) {
    out.kind = Imp::Device;
    return true;
  }
  if (v.isIntList()) {
    std::vector<Imp> l;
    for (int64_t x : v.toIntVector())
      l.push_back(Imp::ofInt(x));
    out = Imp::ofList(std::move(l));
    return true;
  }
  if (v.isDoubleList()) {
    std::vector<Imp> l;
    for (double x : v.toDoubleVector())
      l.push_back(Imp::ofFloat(x));
    out = Imp::ofList(std::move(l));
    return true;
  }
  if (v.isBoolList()) {
    std::vector<Imp> l;
    for (bool x : v.toBoolList())
      l.push_back(Imp::ofBool(x));
    out = Imp::ofList(std::move(l));
    return true;
  }
  return false;
}

/// The element types LibTorch tensors and the runtime's safetensors files
/// share, both ways: weights are exported, example inputs read back.
static constexpr std::pair<c10::ScalarType, glimmer_rt::DType> kDtypes[] = {
    {c10::ScalarType::Float, glimmer_rt::DType::F32},
    {c10::ScalarType::Double, glimmer_rt::DType::F64},
    {c10::ScalarType::BFloat16, glimmer_rt::DType::BF16},
    {c10::ScalarType::Half, glimmer_rt::DType::F16},
    {c10::ScalarType::Long, glimmer_rt::DType::I64},
    {c10::ScalarType::Int, glimmer_rt::DType::I32},
    {c10::ScalarType::Bool, glimmer_rt::DType::Bool},
};

std::optional<glimmer_rt::DType>
glimmer::detail::runtimeDtype(c10::ScalarType t) {
  for (auto [torch, rt] : kDtypes)
    if (torch == t)
      return rt;
  return std::nullopt;
}

std::optional<c10::ScalarType>
glimmer::detail::torchDtype(glimmer_rt::DType t) {
  for (auto [torch, rt] : kDtypes)
    if (rt == t)
      return torch;
  return std::nullopt;
}

bool OpConverter::setFloatType(const std::string &name) {
  if (name == "f64") {
    floatOverride = b.getF64Type();
    floatOverrideScalar = c10::ScalarType::Double;
  } else if (name == "f32") {
    floatOverride = b.getF32Type();
    floatOverrideScalar = c10::ScalarType::Float;
  } else if (!name.empty()) {
    mlir::emitError(mlir::UnknownLoc::get(&ctx))
        << "unsupported floating-point type '" << name
        << "' (expected f32 or f64)";
    return false;
  }
  return true;
}

void OpConverter::finishFunction(mlir::func::FuncOp func,
                                 llvm::ArrayRef<MValue> results) {
  mlir::func::ReturnOp::create(b, loc, results);
  llvm::SmallVector<Type> resultTypes;
  for (MValue r : results)
    resultTypes.push_back(r.getType());
  func.setType(b.getFunctionType(func.getArgumentTypes(), resultTypes));
  llvm::SmallVector<mlir::Operation *> ops;
  for (mlir::Operation &op : func.getBody().front())
    ops.push_back(&op);
  for (mlir::Operation *op : llvm::reverse(ops))
    if (mlir::isOpTriviallyDead(op))
      op->erase();
}

bool OpConverter::convert(OpCall &call) {
  auto it = converters.find(call.kind());
  if (it == converters.end())
    return false;
  it->second(&call);
  return true;
}

//===----------------------------------------------------------------------===//
// Types and small builders
//===----------------------------------------------------------------------===//

Type OpConverter::elementTypeFor(c10::ScalarType t) {
  if (floatOverride && c10::isFloatingType(t))
    return floatOverride;
  switch (t) {
  case c10::ScalarType::Float:
    return b.getF32Type();
  case c10::ScalarType::Double:
    return b.getF64Type();
  case c10::ScalarType::BFloat16:
    return b.getBF16Type();
  case c10::ScalarType::Half:
    return b.getF16Type();
  case c10::ScalarType::Long:
    return b.getI64Type();
  case c10::ScalarType::Int:
    return b.getI32Type();
  case c10::ScalarType::Bool:
    return b.getI1Type();
  default:
    fail(std::string("unsupported tensor dtype ") + c10::toString(t));
  }
}

c10::ScalarType OpConverter::scalarTypeFor(Type t) {
  if (t.isF32())
    return c10::ScalarType::Float;
  if (t.isF64())
    return c10::ScalarType::Double;
  if (t.isBF16())
    return c10::ScalarType::BFloat16;
  if (t.isF16())
    return c10::ScalarType::Half;
  if (t.isInteger(64))
    return c10::ScalarType::Long;
  if (t.isInteger(32))
    return c10::ScalarType::Int;
  return c10::ScalarType::Bool;
}

MValue OpConverter::splat(llvm::ArrayRef<int64_t> shape, Type elem,
                       double value) {
  auto type = tensorType(shape, elem);
  mlir::Attribute scalar;
  if (mlir::isa<mlir::FloatType>(elem))
    scalar = b.getFloatAttr(elem, value);
  else if (elem.isInteger(1))
    scalar = b.getIntegerAttr(elem, value != 0 ? 1 : 0);
  else
    scalar = b.getIntegerAttr(elem, int64_t(value));
  auto attr = mlir::DenseElementsAttr::get(type, scalar);
  return ConstantOp::create(b, loc, attr);
}

MValue OpConverter::convert(MValue v, Type elem) {
  if (elemOf(v) == elem)
    return v;
  return ConvertOp::create(b, loc, tensorType(shapeOf(v), elem), v);
}

MValue OpConverter::reshape(MValue v, llvm::ArrayRef<int64_t> shape) {
  if (shapeOf(v) == shape)
    return v;
  return ReshapeOp::create(b, loc, tensorType(shape, elemOf(v)), v);
}

MValue OpConverter::transpose(MValue v, llvm::ArrayRef<int64_t> perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity &= perm[i] == int64_t(i);
  if (identity)
    return v;
  return createChecked<TransposeOp>(v, b.getDenseI64ArrayAttr(perm));
}

MValue OpConverter::slice(MValue v, int64_t dim, int64_t start, int64_t limit,
                       int64_t step) {
  auto shape = shapeOf(v);
  if (start == 0 && limit == shape[dim] && step == 1)
    return v;
  std::vector<int64_t> s(shape.size(), 0), l(shape.begin(), shape.end()),
      st(shape.size(), 1);
  s[dim] = start;
  l[dim] = limit;
  st[dim] = step;
  return createChecked<SliceOp>(v, b.getDenseI64ArrayAttr(s),
                                b.getDenseI64ArrayAttr(l),
                                b.getDenseI64ArrayAttr(st));
}

std::vector<int64_t> OpConverter::broadcastShapes(llvm::ArrayRef<int64_t> a,
                                               llvm::ArrayRef<int64_t> c) {
  size_t rank = std::max(a.size(), c.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t dc = i < rank - c.size() ? 1 : c[i - (rank - c.size())];
    if (da != dc && da != 1 && dc != 1)
      fail("shapes " + shapeString(a) + " and " + shapeString(c) +
           " cannot be broadcast together");
    out[i] = da == 1 ? dc : da;
  }
  return out;
}

MValue OpConverter::broadcastTo(MValue v, llvm::ArrayRef<int64_t> shape) {
  auto in = shapeOf(v);
  if (in == shape)
    return v;
  if (in.size() > shape.size())
    fail("cannot broadcast " + shapeString(in) + " to " + shapeString(shape));
  std::vector<int64_t> dims;
  size_t offset = shape.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != 1 && in[i] != shape[offset + i])
      fail("cannot broadcast " + shapeString(in) + " to " +
           shapeString(shape));
    dims.push_back(offset + i);
  }
  return BroadcastInDimOp::create(b, loc, tensorType(shape, elemOf(v)), v,
                                  b.getDenseI64ArrayAttr(dims));
}

MValue OpConverter::materialize(const Imp &v, Type elem,
                             llvm::ArrayRef<int64_t> shape) {
  if (v.kind == Imp::Tensor)
    return broadcastTo(convert(v.tensor, elem), shape);
  if (!v.isNumber())
    fail("expected a tensor or a number");
  return splat(shape, elem, v.asDouble());
}

/// PyTorch's type promotion for (tensor|number, tensor|number).
Type OpConverter::promote(const Imp &x, const Imp &y) {
  auto category = [](Type t) {
    return mlir::isa<mlir::FloatType>(t) ? 2 : t.isInteger(1) ? 0 : 1;
  };
  auto numberCategory = [](const Imp &v) {
    return v.kind == Imp::Float ? 2 : v.kind == Imp::Int ? 1 : 0;
  };
  auto wider = [&](Type a, Type c) {
    return a.getIntOrFloatBitWidth() >= c.getIntOrFloatBitWidth() ? a : c;
  };
  if (x.kind == Imp::Tensor && y.kind == Imp::Tensor) {
    Type a = elemOf(x.tensor), c = elemOf(y.tensor);
    bool ax = shapeOf(x.tensor).empty(), cy = shapeOf(y.tensor).empty();
    if (category(a) != category(c))
      return category(a) > category(c) ? a : c;
    // A zero-dim tensor does not widen a dimensioned one of its category.
    if (ax != cy)
      return ax ? c : a;
    return wider(a, c);
  }
  const Imp &t = x.kind == Imp::Tensor ? x : y;
  const Imp &n = x.kind == Imp::Tensor ? y : x;
  if (t.kind != Imp::Tensor) {
    // number op number: evaluated on the host by the caller.
    return numberCategory(x) == 2 || numberCategory(y) == 2 ? f32() : i64();
  }
  Type te = elemOf(t.tensor);
  if (numberCategory(n) > category(te))
    return numberCategory(n) == 2 ? f32() : i64();
  return te;
}


MValue OpConverter::compare(CompareDirection dir, const Imp &x, const Imp &y) {
  Type elem = promote(x, y);
  if (elem.isInteger(1))
    elem = i64();
  std::vector<int64_t> shape = broadcastShapes(
      x.kind == Imp::Tensor ? shapeOf(x.tensor) : llvm::ArrayRef<int64_t>{},
      y.kind == Imp::Tensor ? shapeOf(y.tensor) : llvm::ArrayRef<int64_t>{});
  MValue a = materialize(x, elem, shape), c = materialize(y, elem, shape);
  return CompareOp::create(b, loc, dir, a, c);
}

MValue OpConverter::select(MValue cond, const Imp &x, const Imp &y) {
  Type elem = promote(x, y);
  std::vector<int64_t> shape = broadcastShapes(
      shapeOf(cond),
      broadcastShapes(
          x.kind == Imp::Tensor ? shapeOf(x.tensor) : llvm::ArrayRef<int64_t>{},
          y.kind == Imp::Tensor ? shapeOf(y.tensor)
                                : llvm::ArrayRef<int64_t>{}));
  MValue c = broadcastTo(cond, shape);
  MValue a = materialize(x, elem, shape), e = materialize(y, elem, shape);
  return SelectOp::create(b, loc, c, a, e);
}

MValue OpConverter::reduce(ReductionKind kind, MValue v, std::vector<int64_t> dims,
                        bool keep) {
  int64_t rank = shapeOf(v).size();
  if (dims.empty())
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  // A zero-dim tensor has dimension 0 (or -1) to reduce, as in PyTorch.
  for (int64_t &d : dims)
    d = normDim(d, std::max<int64_t>(rank, 1));
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  if (rank == 0)
    return v;
  return ReduceOp::create(b, loc, kind, v, dims, keep);
}

/// softmax(q k^T * scale + mask) v as PyTorch's math backend computes
/// scaled_dot_product_attention with a mask tensor: a boolean mask keeps its
/// true entries, a floating one is added to the scores; key and value heads
/// are repeated for grouped-query attention; a query with no visible key
/// gets zeros (PyTorch's safe softmax), and no NaN reaches the softmax or
/// its gradient.
MValue OpConverter::explicitAttention(MValue q, MValue k, MValue v, MValue mask,
                                   double scale) {
  auto qs = shapeOf(q), ks = shapeOf(k);
  int64_t heads = qs[1], kvHeads = ks[1];
  if (kvHeads == 0 || heads % kvHeads != 0)
    fail("scaled_dot_product_attention: query heads (" +
         std::to_string(heads) + ") must be a multiple of key/value heads (" +
         std::to_string(kvHeads) + ")");
  auto repeatHeads = [&](MValue x) {
    std::vector<int64_t> xs(shapeOf(x).begin(), shapeOf(x).end());
    int64_t g = heads / kvHeads;
    if (g == 1)
      return x;
    MValue r = reshape(x, {xs[0], xs[1], 1, xs[2], xs[3]});
    r = broadcastTo(r, {xs[0], xs[1], g, xs[2], xs[3]});
    return reshape(r, {xs[0], xs[1] * g, xs[2], xs[3]});
  };
  k = repeatHeads(k);
  v = repeatHeads(v);
  std::vector<int64_t> scoreShape{qs[0], heads, qs[2], ks[2]};
  MValue scores = matmul(q, transpose(k, {0, 1, 3, 2}));
  scores = binary<MulOp>(Imp::ofTensor(scores), Imp::ofFloat(scale));
  const double ninf = -std::numeric_limits<double>::infinity();
  Type maskElem = elemOf(mask);
  if (maskElem.isInteger(1))
    scores = select(mask, Imp::ofTensor(scores), Imp::ofFloat(ninf));
  else if (mlir::isa<mlir::FloatType>(maskElem))
    scores = binary<AddOp>(Imp::ofTensor(scores),
                           Imp::ofTensor(convert(mask, elemOf(scores))));
  else
    fail("scaled_dot_product_attention expects a boolean or floating-point "
         "attn_mask");
  if (shapeOf(scores) != llvm::ArrayRef<int64_t>(scoreShape))
    fail("scaled_dot_product_attention: attn_mask of shape " +
         shapeString(shapeOf(mask)) + " does not broadcast to the scores " +
         shapeString(scoreShape));
  MValue rowMax = reduce(ReductionKind::Max, scores, {3}, true);
  MValue live = compare(CompareDirection::GT, Imp::ofTensor(rowMax),
                        Imp::ofFloat(ninf));
  MValue safe = select(live, Imp::ofTensor(scores), Imp::ofFloat(0.0));
  MValue p = SoftmaxOp::create(b, loc, safe, b.getI64IntegerAttr(3));
  p = select(live, Imp::ofTensor(p), Imp::ofFloat(0.0));
  return matmul(p, v);
}

/// torch.matmul semantics for ranks >= 1.
MValue OpConverter::matmul(MValue x, MValue y) {
  auto xs = shapeOf(x), ys = shapeOf(y);
  if (xs.empty() || ys.empty())
    fail("matmul of a zero-dim tensor");
  bool xVec = xs.size() == 1, yVec = ys.size() == 1;
  if (xVec)
    x = reshape(x, {1, xs[0]});
  if (yVec)
    y = reshape(y, {ys[0], 1});
  xs = shapeOf(x);
  ys = shapeOf(y);
  if (xs.back() != ys[ys.size() - 2])
    fail("matmul contraction mismatch: " + shapeString(xs) + " @ " +
         shapeString(ys));
  std::vector<int64_t> batch = broadcastShapes(xs.drop_back(2), ys.drop_back(2));
  int64_t m = xs[xs.size() - 2], k = xs.back(), n = ys.back();
  std::vector<int64_t> xFull(batch), yFull(batch), out(batch);
  xFull.insert(xFull.end(), {m, k});
  yFull.insert(yFull.end(), {k, n});
  out.insert(out.end(), {m, n});
  MValue r;
  if (ys.size() == 2 && xs.size() > 2) {
    // [.., M, K] @ [K, N]: one GEMM over the flattened rows.
    int64_t rows = 1;
    for (int64_t d : xs.drop_back())
      rows *= d;
    MValue x2 = reshape(x, {rows, k});
    MValue r2 = createChecked<MatmulOp>(x2, y);
    r = reshape(r2, out);
  } else {
    x = broadcastTo(x, xFull);
    y = broadcastTo(y, yFull);
    r = createChecked<MatmulOp>(x, y);
  }
  std::vector<int64_t> finalShape(batch);
  if (!xVec)
    finalShape.push_back(m);
  if (!yVec)
    finalShape.push_back(n);
  return reshape(r, finalShape);
}

std::vector<int64_t> OpConverter::intList(const Imp &v) {
  if (v.kind == Imp::Int)
    return {v.i};
  if (v.kind != Imp::List)
    fail("expected a list of integers");
  std::vector<int64_t> out;
  for (const Imp &e : v.list) {
    if (e.kind != Imp::Int)
      fail("expected a list of integers known at compile time");
    out.push_back(e.i);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//


Imp *OpConverter::namedInput(OpCall *n, const char *name) {
  const c10::FunctionSchema *schema = n->schema();
  if (!schema)
    return nullptr;
  for (size_t i = 0; i < schema->arguments().size() && i < n->numInputs();
       ++i)
    if (schema->arguments()[i].name() == name)
      return &in(n, i);
  return nullptr;
}

MValue OpConverter::tensorIn(OpCall *n, size_t i) {
  Imp &v = in(n, i);
  if (v.kind != Imp::Tensor)
    fail("operand #" + std::to_string(i) + " must be a tensor");
  return v.tensor;
}


MValue OpConverter::constantFromTensor(const at::Tensor &tensor) {
  at::Tensor t = tensor.contiguous().cpu();
  Type elem = elementTypeFor(t.scalar_type());
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  auto type = tensorType(shape, elem);
  at::Tensor asDouble = t.to(c10::ScalarType::Double).contiguous();
  const double *data = asDouble.data_ptr<double>();
  llvm::SmallVector<mlir::Attribute> values;
  values.reserve(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (mlir::isa<mlir::FloatType>(elem))
      values.push_back(b.getFloatAttr(elem, data[i]));
    else if (elem.isInteger(1))
      values.push_back(b.getIntegerAttr(elem, data[i] != 0 ? 1 : 0));
    else
      values.push_back(b.getIntegerAttr(elem, int64_t(data[i])));
  }
  return ConstantOp::create(b, loc, mlir::DenseElementsAttr::get(type, values));
}
