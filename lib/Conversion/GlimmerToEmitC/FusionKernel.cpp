//===- FusionKernel.cpp - CUDA source of a glimmer.fusion -----------------===//
//
// Writes the element loop of a fusion as XLA's elemental emitters do: the
// value of an op at an index is its operands' values at the indices its
// index map gives (the same index for elementwise ops and reshapes, the
// permuted, sliced or broadcast coordinates for the index ops, one operand
// chosen by a coordinate for concat and pad). Each (value, index) pair is
// computed once per scope. Arithmetic mirrors the runtime's kernels: f32 and
// f64 results with the round-to-nearest intrinsics (no contraction across
// ops), bf16 results rounded as the elementwise kernels store theirs, the
// unary formulas from ElementwiseMath.cuh.
//
//===----------------------------------------------------------------------===//

#include "FusionKernel.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>

using namespace mlir;
using namespace glimmer;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The type values of element type `t` have in registers.
std::string computeType(Type t) {
  if (t.isF64())
    return "double";
  if (t.isF32() || t.isBF16())
    return "float";
  if (t.isInteger(64))
    return "long long";
  return "int"; // i32
}
/// The type of an element in memory.
std::string storageType(Type t) {
  if (t.isBF16())
    return "unsigned short";
  return computeType(t);
}

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

/// A literal that is exactly `v` of float type `t` (rounded to it first, as
/// the runtime converts a double to the element type).
std::string floatLiteral(double v, Type t) {
  APFloat f(v);
  if (t.isF64())
    return llvm::formatv("__longlong_as_double({0}LL)",
                         int64_t(f.bitcastToAPInt().getZExtValue()))
        .str();
  bool lost;
  f.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
  if (t.isBF16()) {
    f.convert(APFloat::BFloat(), APFloat::rmNearestTiesToEven, &lost);
    f.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
  }
  return llvm::formatv("__uint_as_float({0}u)",
                       uint32_t(f.bitcastToAPInt().getZExtValue()))
      .str();
}

class KernelWriter {
public:
  explicit KernelWriter(FusionOp fusion) : fusion(fusion) {
    // 32-bit index arithmetic (cheaper division by the constant sizes)
    // unless some value has 2^31 elements or more.
    int64_t largest = 0;
    auto see = [&](Value v) {
      largest = std::max(largest, typeOf(v).getNumElements());
    };
    for (Value v : fusion.getBody().getArguments())
      see(v);
    fusion.getBody().walk([&](Operation *op) {
      for (Value r : op->getResults())
        see(r);
    });
    wide = largest >= (int64_t(1) << 31);
    index = wide ? "long long" : "unsigned int";
  }

  FailureOr<std::string> write(StringRef name) {
    Block &body = fusion.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    int64_t n = typeOf(fusion.getResult(0)).getNumElements();
    std::string params, casts;
    llvm::raw_string_ostream p(params), h(casts);
    unsigned slot = 0;
    for (auto [k, arg] : llvm::enumerate(body.getArguments())) {
      std::string type =
          "const " + storageType(typeOf(arg).getElementType()) + " *";
      p << (k ? ", " : "") << type << "__restrict__ in" << k;
      h << (slot ? ", " : "") << "(" << type << ")p[" << slot << "]";
      ++slot;
    }
    for (auto [k, r] : llvm::enumerate(fusion.getResults())) {
      std::string type = storageType(typeOf(r).getElementType()) + " *";
      p << ", " << type << "__restrict__ out" << k;
      h << ", (" << type << ")p[" << slot++ << "]";
    }

    // The element loop: one element per iteration. It also finds the
    // operands read at the element's own index (directArgs).
    indent = 2;
    scopes.assign(1, Scope());
    for (auto [k, v] : llvm::enumerate(yield.getValues())) {
      FailureOr<std::string> e = value(v, "i");
      if (failed(e))
        return failure();
      line(llvm::formatv("out{0}[i] = {1};", k, stored(v, *e)).str());
    }
    std::string scalar = std::move(code);
    code.clear();

    std::string out;
    llvm::raw_string_ostream os(out);
    os << "extern \"C\" __global__ void __launch_bounds__(256) " << name << "("
       << params << ") {\n";
    if (FailureOr<bool> vec = writeVectorLoop(yield, n); failed(vec))
      return failure();
    else if (*vec)
      os << code;
    os << "  for (" << index << " i = (" << index
       << ")blockIdx.x * blockDim.x + threadIdx.x; i < " << lit(n) << "; i += ("
       << index << ")gridDim.x * blockDim.x) {\n"
       << scalar << "  }\n}\n"
       // The same kernel on the host, for glimmer-run --check-fused-kernels.
       << "#ifdef GLIMMER_FUSION_HOST\nextern \"C\" void " << name
       << "_host(void *const *p) { " << name << "(" << casts << "); }\n#endif\n";
    return out;
  }

private:
  /// Elements per iteration of the vector loop: 16 bytes of bf16.
  static constexpr int kLanes = 8;

  static std::string stored(Value v, const std::string &e) {
    return typeOf(v).getElementType().isBF16()
               ? "glimmer_fusion::toBf16(" + e + ")"
               : e;
  }

  /// The loop that computes kLanes consecutive elements per iteration,
  /// reading the operands that every element reads at its own index
  /// (directArgs) and writing the results with 16-byte accesses, which a
  /// memory-bound kernel needs to approach the device's bandwidth (one
  /// 2-byte access per thread reaches about half of it). It runs when those
  /// pointers are 16-byte aligned and returns; the element loop after it
  /// serves the rest. Written into `code`; false when the kernel has none
  /// (an element count that is not a multiple of kLanes, or an element type
  /// without a vector access).
  FailureOr<bool> writeVectorLoop(YieldOp yield, int64_t n) {
    if (n % kLanes != 0)
      return false;
    auto vectorType = [](Type t) {
      return t.isBF16() || t.isF32() || t.isF64() || t.isInteger(64) ||
             t.isInteger(32);
    };
    Block &body = fusion.getBody().front();
    for (unsigned a : directArgs)
      if (!vectorType(typeOf(body.getArgument(a)).getElementType()))
        return false;
    for (Value r : fusion.getResults())
      if (!vectorType(typeOf(r).getElementType()))
        return false;
    std::string aligned;
    for (unsigned a : directArgs)
      aligned += "(unsigned long long)in" + std::to_string(a) + " | ";
    for (unsigned k = 0; k < fusion.getNumResults(); ++k)
      aligned += std::string(k ? " | " : "") + "(unsigned long long)out" +
                 std::to_string(k);
    indent = 1;
    line("if (((" + aligned + ") & 15ULL) == 0ULL) {");
    ++indent;
    line("for (" + index + " t = (" + index +
         ")blockIdx.x * blockDim.x + threadIdx.x; t < " + lit(n / kLanes) +
         "; t += (" + index + ")gridDim.x * blockDim.x) {");
    ++indent;
    line("const " + index + " i0 = t * " + lit(kLanes) + ";");
    std::string lanes = std::to_string(kLanes);
    for (unsigned a : directArgs)
      line("const glimmer_fusion::Vec<" +
           storageType(typeOf(body.getArgument(a)).getElementType()) + ", " +
           lanes + "> a" + std::to_string(a) + " = glimmer_fusion::loadVec<" +
           storageType(typeOf(body.getArgument(a)).getElementType()) + ", " +
           lanes + ">(in" + std::to_string(a) + " + i0);");
    for (auto [k, r] : llvm::enumerate(fusion.getResults()))
      line("glimmer_fusion::Vec<" + storageType(typeOf(r).getElementType()) +
           ", " + lanes + "> r" + std::to_string(k) + ";");
    for (int l = 0; l < kLanes; ++l) {
      line("{");
      ++indent;
      scopes.assign(1, Scope());
      lane = l;
      laneIndex = fresh("e");
      line("const " + index + " " + laneIndex + " = i0 + " + lit(l) + ";");
      for (auto [k, v] : llvm::enumerate(yield.getValues())) {
        FailureOr<std::string> e = value(v, laneIndex);
        if (failed(e))
          return failure();
        line(llvm::formatv("r{0}.v[{1}] = {2};", k, l, stored(v, *e)).str());
      }
      --indent;
      line("}");
    }
    lane = -1;
    for (unsigned k = 0; k < fusion.getNumResults(); ++k)
      line("glimmer_fusion::storeVec(out" + std::to_string(k) + " + i0, r" +
           std::to_string(k) + ");");
    --indent;
    line("}");
    line("return;");
    --indent;
    line("}");
    return true;
  }

  void line(const std::string &s) {
    code.append(size_t(indent) * 2, ' ');
    code += s;
    code += '\n';
  }
  /// An index constant.
  std::string lit(int64_t v) const {
    return std::to_string(v) + (wide ? "LL" : "u");
  }
  std::string fresh(StringRef prefix) {
    return (prefix + std::to_string(next++)).str();
  }

  /// Coordinates of linear index `idx` in `shape` (memoized per scope).
  SmallVector<std::string> coords(ArrayRef<int64_t> shape,
                                  const std::string &idx) {
    std::string key = idx + "@";
    for (int64_t d : shape)
      key += std::to_string(d) + ",";
    for (auto &scope : llvm::reverse(scopes))
      if (auto it = scope.coords.find(key); it != scope.coords.end())
        return it->second;
    SmallVector<int64_t> strides = stridesOf(shape);
    SmallVector<std::string> c;
    for (auto [d, size] : llvm::enumerate(shape)) {
      if (size == 1) {
        c.push_back(lit(0));
        continue;
      }
      std::string var = fresh("c");
      std::string e = "(" + idx + " / " + lit(strides[d]) + ")";
      if (d > 0)
        e = "(" + e + " % " + lit(size) + ")";
      line("const " + index + " " + var + " = " + e + ";");
      c.push_back(var);
    }
    scopes.back().coords[key] = c;
    return c;
  }

  /// The linear index of coordinates `c` in `shape`, as a new variable.
  std::string linear(ArrayRef<int64_t> shape, ArrayRef<std::string> c) {
    SmallVector<int64_t> strides = stridesOf(shape);
    std::string e;
    for (auto [d, size] : llvm::enumerate(shape)) {
      if (size == 1)
        continue;
      if (!e.empty())
        e += " + ";
      e += c[d] + " * " + lit(strides[d]);
    }
    if (e.empty())
      return lit(0);
    std::string var = fresh("j");
    line("const " + index + " " + var + " = " + e + ";");
    return var;
  }

  /// A variable holding `v`'s element at linear index `idx`.
  FailureOr<std::string> value(Value v, const std::string &idx) {
    auto key = std::make_pair(v.getAsOpaquePointer(), idx);
    for (auto &scope : llvm::reverse(scopes))
      if (auto it = scope.values.find(key); it != scope.values.end())
        return it->second;
    FailureOr<std::string> expr = compute(v, idx);
    if (failed(expr))
      return failure();
    std::string var = fresh("v");
    line("const " + computeType(typeOf(v).getElementType()) + " " + var +
         " = " + *expr + ";");
    scopes.back().values[key] = var;
    return var;
  }

  /// "a, b": a binary op's operands' values at `idx`.
  FailureOr<std::string> operandPair(Operation *op, const std::string &idx) {
    FailureOr<std::string> a = value(op->getOperand(0), idx);
    if (failed(a))
      return failure();
    FailureOr<std::string> b = value(op->getOperand(1), idx);
    if (failed(b))
      return failure();
    return *a + ", " + *b;
  }

  /// `f(a, b)` with `a` and `b` the operands' values at `idx`.
  FailureOr<std::string> binary(Operation *op, const std::string &idx,
                                StringRef f32, StringRef f64) {
    FailureOr<std::string> args = operandPair(op, idx);
    if (failed(args))
      return failure();
    Type t = typeOf(op->getResult(0)).getElementType();
    return rounded(t, ((t.isF64() ? f64 : f32) + "(" + *args + ")").str());
  }

  /// max/min: `f(a, b)` unrounded (it returns one of its operands).
  FailureOr<std::string> pick(Operation *op, const std::string &idx,
                              StringRef f) {
    FailureOr<std::string> args = operandPair(op, idx);
    if (failed(args))
      return failure();
    return ("glimmer_fusion::" + f + "(" + *args + ")").str();
  }

  FailureOr<std::string> unary(Operation *op, const std::string &idx,
                               StringRef functor) {
    FailureOr<std::string> a = value(op->getOperand(0), idx);
    if (failed(a))
      return failure();
    Type t = typeOf(op->getResult(0)).getElementType();
    return rounded(t, ("glimmer_fusion::" + functor + "()(" + *a + ")").str());
  }

  static std::string rounded(Type t, const std::string &e) {
    return t.isBF16() ? "glimmer_fusion::roundBf16(" + e + ")" : e;
  }

  FailureOr<std::string> compute(Value v, const std::string &idx) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      unsigned a = arg.getArgNumber();
      std::string load = "in" + std::to_string(a) + "[" + idx + "]";
      if (lane < 0 && idx == "i")
        directArgs.insert(a);
      else if (lane >= 0 && idx == laneIndex && directArgs.count(a))
        load = "a" + std::to_string(a) + ".v[" + std::to_string(lane) + "]";
      return typeOf(v).getElementType().isBF16()
                 ? "glimmer_fusion::fromBf16(" + load + ")"
                 : load;
    }
    Operation *op = v.getDefiningOp();
    Type t = typeOf(v).getElementType();
    return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
        .Case([&](AddOp o) { return binary(o, idx, "__fadd_rn", "__dadd_rn"); })
        .Case([&](SubOp o) { return binary(o, idx, "__fsub_rn", "__dsub_rn"); })
        .Case([&](MulOp o) { return binary(o, idx, "__fmul_rn", "__dmul_rn"); })
        .Case([&](DivOp o) { return binary(o, idx, "__fdiv_rn", "__ddiv_rn"); })
        .Case([&](PowOp o) {
          return binary(o, idx, "glimmer_fusion::mPow",
                        "glimmer_fusion::mPow");
        })
        // The chosen operand's value itself: no rounding.
        .Case([&](MaxOp o) { return pick(o, idx, "pickMax"); })
        .Case([&](MinOp o) { return pick(o, idx, "pickMin"); })
        .Case([&](NegOp o) -> FailureOr<std::string> {
          // 0 - x, as the neg kernel (neg(0) is +0).
          auto a = value(o.getInput(), idx);
          if (failed(a))
            return failure();
          return rounded(t, t.isF64() ? "__dsub_rn(0.0, " + *a + ")"
                                      : "__fsub_rn(0.0f, " + *a + ")");
        })
        .Case([&](ExpOp o) { return unary(o, idx, "Exp"); })
        .Case([&](LogOp o) { return unary(o, idx, "Log"); })
        .Case([&](SqrtOp o) { return unary(o, idx, "Sqrt"); })
        .Case([&](RsqrtOp o) { return unary(o, idx, "Rsqrt"); })
        .Case([&](TanhOp o) { return unary(o, idx, "Tanh"); })
        .Case([&](ErfOp o) { return unary(o, idx, "Erf"); })
        .Case([&](SigmoidOp o) { return unary(o, idx, "Sigmoid"); })
        .Case([&](SiluOp o) { return unary(o, idx, "Silu"); })
        .Case([&](SinOp o) { return unary(o, idx, "Sin"); })
        .Case([&](CosOp o) { return unary(o, idx, "Cos"); })
        .Case([&](GeluOp o) {
          return unary(o, idx,
                       o.getApproximate() == GeluApproximation::Tanh
                           ? "GeluTanh"
                           : "Gelu");
        })
        .Case([&](ConvertOp o) -> FailureOr<std::string> {
          auto a = value(o.getInput(), idx);
          if (failed(a))
            return failure();
          Type from = typeOf(o.getInput()).getElementType();
          // As Scalar.h's storeScalar: integers go through double.
          std::string x = isa<FloatType>(from) ? *a : "(double)" + *a;
          if (t.isF64())
            return "(double)" + x;
          if (t.isF32())
            return "(float)" + x;
          return "glimmer_fusion::convertBf16((float)" + x + ")";
        })
        .Case([&](ConstantOp o) -> FailureOr<std::string> {
          auto dense = cast<DenseElementsAttr>(o.getValue());
          return floatLiteral(
              dense.getSplatValue<APFloat>().convertToDouble(), t);
        })
        .Case([&](ReshapeOp o) { return value(o.getInput(), idx); })
        .Case([&](TransposeOp o) -> FailureOr<std::string> {
          ArrayRef<int64_t> perm = o.getPermutation();
          SmallVector<std::string> c = coords(typeOf(v).getShape(), idx);
          SmallVector<std::string> in(perm.size());
          for (auto [d, p] : llvm::enumerate(perm))
            in[p] = c[d];
          return value(o.getInput(), linear(typeOf(o.getInput()).getShape(), in));
        })
        .Case([&](BroadcastInDimOp o) -> FailureOr<std::string> {
          ArrayRef<int64_t> inShape = typeOf(o.getInput()).getShape();
          SmallVector<std::string> c = coords(typeOf(v).getShape(), idx);
          SmallVector<std::string> in;
          for (auto [k, d] : llvm::enumerate(o.getDims()))
            in.push_back(inShape[k] == 1 ? lit(0) : c[d]);
          return value(o.getInput(), linear(inShape, in));
        })
        .Case([&](SliceOp o) -> FailureOr<std::string> {
          SmallVector<std::string> c = coords(typeOf(v).getShape(), idx);
          SmallVector<std::string> in;
          for (auto [d, coord] : llvm::enumerate(c)) {
            int64_t start = o.getStart()[d], stride = o.getStride()[d];
            std::string e = coord;
            if (stride != 1)
              e = "(" + e + " * " + lit(stride) + ")";
            if (start != 0)
              e = "(" + e + " + " + lit(start) + ")";
            in.push_back(e);
          }
          return value(o.getInput(), linear(typeOf(o.getInput()).getShape(), in));
        })
        .Case([&](ConcatOp o) -> FailureOr<std::string> {
          int64_t dim = o.getDim();
          SmallVector<std::string> c = coords(typeOf(v).getShape(), idx);
          std::string var = fresh("s");
          line(computeType(t) + " " + var + ";");
          int64_t offset = 0;
          for (auto [k, in] : llvm::enumerate(o.getInputs())) {
            int64_t len = typeOf(in).getDimSize(dim);
            // A named copy: a lambda may not capture a structured binding.
            ArrayRef<int64_t> inShape = typeOf(in).getShape();
            bool last = k + 1 == o.getInputs().size();
            std::string cond = c[dim] + " < " + lit(offset + len);
            line(std::string(k ? "} else " : "") +
                 (last ? "{" : "if (" + cond + ") {"));
            if (failed(branch(var, in, [&] {
                  SmallVector<std::string> ic(c);
                  if (offset)
                    ic[dim] = "(" + c[dim] + " - " + lit(offset) + ")";
                  return linear(inShape, ic);
                })))
              return failure();
            offset += len;
          }
          line("}");
          return var;
        })
        .Case([&](PadOp o) -> FailureOr<std::string> {
          ArrayRef<int64_t> inShape = typeOf(o.getInput()).getShape();
          SmallVector<std::string> c = coords(typeOf(v).getShape(), idx);
          std::string cond;
          for (auto [d, size] : llvm::enumerate(inShape)) {
            int64_t low = o.getLow()[d], high = o.getHigh()[d];
            if (low == 0 && high == 0)
              continue;
            if (!cond.empty())
              cond += " && ";
            // Unsigned: below `low` wraps around to a large value.
            cond += "(unsigned long long)(" + c[d] + " - " + lit(low) +
                    ") < " + std::to_string(size) + "ULL";
          }
          if (cond.empty())
            return value(o.getInput(), idx);
          std::string var = fresh("s");
          line(computeType(t) + " " + var + " = " +
               floatLiteral(o.getValue().convertToDouble(), t) + ";");
          line("if (" + cond + ") {");
          if (failed(branch(var, o.getInput(), [&] {
                SmallVector<std::string> ic;
                for (auto [d, coord] : llvm::enumerate(c))
                  ic.push_back(o.getLow()[d] ? "(" + coord + " - " +
                                                   lit(o.getLow()[d]) + ")"
                                             : coord);
                return linear(inShape, ic);
              })))
            return failure();
          line("}");
          return var;
        })
        .Default([&](Operation *other) -> FailureOr<std::string> {
          return other->emitOpError()
                 << "has no fused-kernel lowering";
        });
  }

  /// `var = in[index()]` inside a new scope (one arm of a choice).
  LogicalResult branch(const std::string &var, Value in,
                       llvm::function_ref<std::string()> index) {
    ++indent;
    scopes.emplace_back();
    FailureOr<std::string> e = value(in, index());
    if (succeeded(e))
      line(var + " = " + *e + ";");
    scopes.pop_back();
    --indent;
    return failure(failed(e));
  }

  struct Scope {
    std::map<std::pair<void *, std::string>, std::string> values;
    std::map<std::string, SmallVector<std::string>> coords;
  };

  FusionOp fusion;
  /// Operands the element loop reads at the element's own index.
  std::set<unsigned> directArgs;
  /// In the vector loop: the lane being written and its index variable.
  int lane = -1;
  std::string laneIndex;
  bool wide = false;
  std::string index; // the C type of indices
  std::string code;
  int indent = 0;
  unsigned next = 0;
  SmallVector<Scope> scopes;
};

} // namespace

FailureOr<std::string> glimmer::emitFusionKernel(FusionOp fusion,
                                                 StringRef name) {
  return KernelWriter(fusion).write(name);
}
