//===- RuntimeCall.h - One call of a runtime function -----------*- C++ -*-===//
//
// Internal to GlimmerToEmitC: the runtime functions a program may call (one
// enumerator per entry of glimmer_rt/KernelTable.def, which the runtime's
// build checks against its headers) and the builder of an
// `emitc.call_opaque` of one, with its arguments rendered as C++ literals.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONVERSION_GLIMMERTOEMITC_RUNTIMECALL_H
#define GLIMMER_CONVERSION_GLIMMERTOEMITC_RUNTIMECALL_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"

#include <string>

namespace glimmer {

/// A runtime function, `glimmer_rt::NAME`.
enum class Kernel {
#define GLIMMER_RT_KERNEL(name) name,
#include "glimmer_rt/KernelTable.def"
};

/// NAME, without its namespace.
llvm::StringRef kernelName(Kernel kernel);

/// A double with 17 significant digits (it round-trips exactly), always a
/// floating-point literal; NaN and infinities through std::numeric_limits.
std::string realLiteral(double v);
/// {1, 2, 3}
std::string intList(llvm::ArrayRef<int64_t> values);
/// glimmer_rt::Axes{"cp", "dp_shard"}
std::string axesLiteral(mlir::ArrayAttr axes);
/// glimmer_rt::Reduction::Sum
std::string reductionLiteral(ReductionKind kind);
/// glimmer_rt::DType::F32, or "" for a type the runtime lacks.
std::string dtypeLiteral(mlir::Type t);

/// Builds one runtime call: operands and literal arguments in call order.
class RuntimeCall {
public:
  RuntimeCall(mlir::OpBuilder &b, mlir::Location loc, Kernel kernel)
      : b(b), loc(loc), callee(("glimmer_rt::" + kernelName(kernel)).str()) {}

  RuntimeCall &operand(mlir::Value v) {
    args.push_back(b.getIndexAttr(operands.size()));
    operands.push_back(v);
    return *this;
  }
  /// An optional tensor operand: an undefined Tensor when absent.
  RuntimeCall &optional(mlir::Value v) {
    return v ? operand(v) : literal("glimmer_rt::Tensor()");
  }
  RuntimeCall &literal(llvm::StringRef text) {
    args.push_back(mlir::emitc::OpaqueAttr::get(b.getContext(), text));
    return *this;
  }
  RuntimeCall &integer(int64_t v) { return literal(std::to_string(v)); }
  RuntimeCall &real(double v) { return literal(realLiteral(v)); }
  RuntimeCall &real(mlir::FloatAttr v) { return real(v.getValueAsDouble()); }
  RuntimeCall &real(const llvm::APFloat &v) {
    return real(v.convertToDouble());
  }
  RuntimeCall &boolean(bool v) { return literal(v ? "true" : "false"); }
  RuntimeCall &ints(llvm::ArrayRef<int64_t> v) { return literal(intList(v)); }
  RuntimeCall &dtype(mlir::Type t) { return literal(dtypeLiteral(t)); }
  /// A norm's result type, when it is not its input's (the runtime's
  /// default argument).
  RuntimeCall &resultTypeIfNot(mlir::Value input, mlir::Value result) {
    mlir::Type in =
        mlir::cast<mlir::RankedTensorType>(input.getType()).getElementType();
    mlir::Type out =
        mlir::cast<mlir::RankedTensorType>(result.getType()).getElementType();
    return in == out ? *this : dtype(out);
  }
  /// Attention's sequence-major flags, when any is set (the runtime's
  /// default argument is all head-major).
  template <typename AttentionLike>
  RuntimeCall &attentionLayout(AttentionLike a) {
    if (!a.anySequenceMajor())
      return *this;
    std::string flags;
    for (auto which : {AttentionLike::kQuery, AttentionLike::kKey,
                       AttentionLike::kValue, AttentionLike::kOutput})
      flags += std::string(flags.empty() ? "" : ", ") +
               (a.isSequenceMajor(which) ? "true" : "false");
    return literal("glimmer_rt::AttentionLayout{" + flags + "}");
  }

  llvm::SmallVector<mlir::Value> build(mlir::TypeRange results) {
    auto call = mlir::emitc::CallOpaqueOp::create(
        b, loc, results, callee, operands, b.getArrayAttr(args));
    return llvm::SmallVector<mlir::Value>(call.getResults());
  }

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
  std::string callee;
  llvm::SmallVector<mlir::Attribute> args;
  llvm::SmallVector<mlir::Value> operands;
};

} // namespace glimmer

#endif // GLIMMER_CONVERSION_GLIMMERTOEMITC_RUNTIMECALL_H
