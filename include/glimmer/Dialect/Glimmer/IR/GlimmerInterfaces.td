//===- GlimmerInterfaces.td - Glimmer op interfaces --------*- tablegen -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_GLIMMERINTERFACES_TD
#define GLIMMER_DIALECT_GLIMMER_IR_GLIMMERINTERFACES_TD

include "mlir/IR/OpBase.td"

def Glimmer_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::glimmer";
  let description = [{
    The reverse-mode derivative rule of an op, used by `glimmer-autodiff`.
    Given the cotangents of the op's results, the op emits the cotangents of
    its operands (vector-Jacobian products) with glimmer ops. Every
    differentiable op has exactly one rule; ops without one (backward ops,
    optimizer ops, collectives) stop differentiation with a diagnostic.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the operand cotangents at `builder`'s insertion point.
        `resultGrads[i]` is the cotangent of result `i`, with the result's
        type, or null when the result does not reach the loss (zero).
        `operandGrads` comes sized to the number of operands, all null; the
        rule sets the entries of floating-point operands it differentiates
        (null means zero). Fails with a diagnostic on a case the rule does not
        support.
      }], "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::MutableArrayRef<::mlir::Value>":$operandGrads)>
  ];
}

def Glimmer_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::glimmer";
  let description = [{
    How the op's computation can be sharded, as a `glimmer::ShardingRule`
    (`glimmer/Dialect/Glimmer/IR/ShardingRule.h`): factors mapped to operand
    and result dimensions, each pass-through, reduction (results become
    partial sums when it is sharded) or need-replication. Sharding
    propagation reads only this, so every op of the global-view program has
    one, and so do the collectives, so that a program already partitioned
    along some axes (batch and sequence) can be partitioned along others
    (tensor parallelism); the `*_grad` ops, which exist only after
    differentiation, have none.
  }];
  let methods = [
    InterfaceMethod<[{
        The op's rule, built from its operand and result types and
        attributes. The default is elementwise: every operand and result has
        the result's shape (scalar operands aside) and each dimension is one
        pass-through factor.
      }], "::glimmer::ShardingRule", "getShardingRule", (ins), [{}], [{
        return ::glimmer::ShardingRule::elementwise($_op);
      }]>
  ];
}

#endif // GLIMMER_DIALECT_GLIMMER_IR_GLIMMERINTERFACES_TD
