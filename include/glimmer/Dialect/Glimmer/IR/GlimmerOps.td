//===- GlimmerOps.td - Glimmer operations ------------------*- tablegen -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_GLIMMEROPS_TD
#define GLIMMER_DIALECT_GLIMMER_IR_GLIMMEROPS_TD

include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.td"
include "glimmer/Dialect/Glimmer/IR/GlimmerAttrs.td"
include "glimmer/Dialect/Glimmer/IR/GlimmerInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Mesh and sharding annotations
//===----------------------------------------------------------------------===//

def Glimmer_MeshOp : Glimmer_Op<"mesh", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "Declares a named device mesh";
  let description = [{
    A module-level symbol naming a `#glimmer.mesh`. Shardings and collectives
    refer to it by symbol. `glimmer-materialize-mesh` creates `@mesh` from the
    module's recorded SPMD layout.

    ```mlir
    glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Glimmer_MeshAttr:$mesh);
  let assemblyFormat = "$sym_name `=` $mesh attr-dict";
}

def Glimmer_ShardingConstraintOp : Glimmer_Op<"sharding_constraint",
    [InferTypeOpInterface, Glimmer_ShardingRuleOpInterface, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, SameOperandsAndResultType,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Pins the sharding of a value";
  let description = [{
    Returns its operand unchanged and states how it must be distributed. The
    sharding's rank must equal the tensor's, its axes must exist in the mesh,
    and each dimension must be divisible by the product of its axes' sizes.

    ```mlir
    %1 = glimmer.sharding_constraint %0 <@mesh, [{"cp"}, {} ]> : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, Glimmer_ShardingAttr:$sharding);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input $sharding attr-dict `:` type($output)";
}

//===----------------------------------------------------------------------===//
// Constants, elementwise and shape ops
//===----------------------------------------------------------------------===//

def Glimmer_ConstantOp : Glimmer_Op<"constant",
    [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, ConstantLike, Pure, AllTypesMatch<["value", "output"]>]> {
  let summary = "A constant tensor";
  let description = [{
    ```mlir
    %0 = glimmer.constant dense<0.5> : tensor<4xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

class Glimmer_UnaryOp<string mnemonic, string math>
    : Glimmer_Op<mnemonic, [InferTypeOpInterface, Glimmer_ShardingRuleOpInterface, Pure, Elementwise, SameOperandsAndResultType,
                            DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>]> {
  let summary = "Elementwise " # math;
  let description = "Computes `" # math # "` elementwise on a floating-point "
    # "tensor.\n\n```mlir\n%1 = glimmer." # mnemonic
    # " %0 : tensor<2x8xf32>\n```";
  let arguments = (ins Glimmer_FloatTensor:$input);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Glimmer_NegOp : Glimmer_UnaryOp<"neg", "-x">;
def Glimmer_ExpOp : Glimmer_UnaryOp<"exp", "exp(x)">;
def Glimmer_LogOp : Glimmer_UnaryOp<"log", "log(x)">;
def Glimmer_SqrtOp : Glimmer_UnaryOp<"sqrt", "sqrt(x)">;
def Glimmer_RsqrtOp : Glimmer_UnaryOp<"rsqrt", "1/sqrt(x)">;
def Glimmer_TanhOp : Glimmer_UnaryOp<"tanh", "tanh(x)">;
def Glimmer_ErfOp : Glimmer_UnaryOp<"erf", "erf(x)">;
def Glimmer_SigmoidOp : Glimmer_UnaryOp<"sigmoid", "1/(1+exp(-x))">;
def Glimmer_SiluOp : Glimmer_UnaryOp<"silu", "x*sigmoid(x)">;
def Glimmer_ReluOp : Glimmer_UnaryOp<"relu", "max(x, 0)">;
def Glimmer_SinOp : Glimmer_UnaryOp<"sin", "sin(x)">;
def Glimmer_CosOp : Glimmer_UnaryOp<"cos", "cos(x)">;
def Glimmer_TanOp : Glimmer_UnaryOp<"tan", "tan(x)">;
def Glimmer_AsinOp : Glimmer_UnaryOp<"asin", "asin(x)">;
def Glimmer_AcosOp : Glimmer_UnaryOp<"acos", "acos(x)">;
def Glimmer_AtanOp : Glimmer_UnaryOp<"atan", "atan(x)">;
def Glimmer_SinhOp : Glimmer_UnaryOp<"sinh", "sinh(x)">;
def Glimmer_CoshOp : Glimmer_UnaryOp<"cosh", "cosh(x)">;
def Glimmer_AsinhOp : Glimmer_UnaryOp<"asinh", "asinh(x)">;
def Glimmer_AcoshOp : Glimmer_UnaryOp<"acosh", "acosh(x)">;
def Glimmer_AtanhOp : Glimmer_UnaryOp<"atanh", "atanh(x)">;
def Glimmer_Expm1Op : Glimmer_UnaryOp<"expm1", "exp(x) - 1">;
def Glimmer_Log1pOp : Glimmer_UnaryOp<"log1p", "log(1 + x)">;
def Glimmer_AbsOp : Glimmer_UnaryOp<"abs", "|x|">;
def Glimmer_FloorOp : Glimmer_UnaryOp<"floor", "floor(x)">;
def Glimmer_CeilOp : Glimmer_UnaryOp<"ceil", "ceil(x)">;
def Glimmer_TruncOp : Glimmer_UnaryOp<"trunc", "trunc(x) (toward zero)">;
def Glimmer_RoundOp : Glimmer_UnaryOp<"round", "round(x) (halves to even)">;

def Glimmer_GeluOp : Glimmer_Op<"gelu",
    [InferTypeOpInterface, Glimmer_ShardingRuleOpInterface, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "Elementwise GELU";
  let description = [{
    `x * Phi(x)` with the exact normal CDF (`approximate = none`) or its tanh
    approximation (`approximate = tanh`), as `torch.nn.functional.gelu`.

    ```mlir
    %1 = glimmer.gelu %0 approximate = tanh : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$input,
      DefaultValuedAttr<Glimmer_GeluApproximation,
                        "::glimmer::GeluApproximation::None">:$approximate);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$input (`approximate` `=` $approximate^)? attr-dict `:` type($output)";
}

class Glimmer_BinaryOp<string mnemonic, string math>
    : Glimmer_Op<mnemonic, [InferTypeOpInterface, Glimmer_ShardingRuleOpInterface, Pure, Elementwise, SameOperandsAndResultType,
                            DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>]> {
  let summary = "Elementwise " # math;
  let description = "Computes `" # math # "` elementwise. Operands have the "
    # "same shape and element type (the importer materialises broadcasts with "
    # "`glimmer.broadcast_in_dim`), which keeps sharding rules trivial.\n\n"
    # "```mlir\n%2 = glimmer." # mnemonic # " %0, %1 : tensor<2x8xf32>\n```";
  let arguments = (ins Glimmer_NumericTensor:$lhs, Glimmer_NumericTensor:$rhs);
  let results = (outs Glimmer_NumericTensor:$output);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($output)";
}

def Glimmer_AddOp : Glimmer_BinaryOp<"add", "lhs + rhs">;
def Glimmer_SubOp : Glimmer_BinaryOp<"sub", "lhs - rhs">;
def Glimmer_MulOp : Glimmer_BinaryOp<"mul", "lhs * rhs">;
def Glimmer_DivOp : Glimmer_BinaryOp<"div", "lhs / rhs">;
def Glimmer_MaxOp : Glimmer_BinaryOp<"max", "max(lhs, rhs)">;
def Glimmer_MinOp : Glimmer_BinaryOp<"min", "min(lhs, rhs)">;
def Glimmer_PowOp : Glimmer_BinaryOp<"pow", "lhs ^ rhs">;

def Glimmer_CompareOp : Glimmer_Op<"compare",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, Glimmer_ShardingRuleOpInterface, Pure, Elementwise, AllTypesMatch<["lhs", "rhs"]>,
     TypesMatchWith<"result is i1 of the operands' shape", "lhs", "output",
                    "::glimmer::getI1SameShape($_self)">]> {
  let summary = "Elementwise comparison";
  let description = [{
    Compares two tensors of the same type and returns an `i1` tensor of the
    same shape.

    ```mlir
    %m = glimmer.compare eq, %tokens, %image_id : tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Glimmer_CompareDirection:$direction,
                       Glimmer_Tensor:$lhs, Glimmer_Tensor:$rhs);
  let results = (outs Glimmer_BoolTensor:$output);
  let assemblyFormat = "$direction `,` $lhs `,` $rhs attr-dict `:` type($lhs)";
  let hasVerifier = 1;
}

def Glimmer_SelectOp : Glimmer_Op<"select",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, Glimmer_ShardingRuleOpInterface, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, Elementwise, AllTypesMatch<["on_true", "on_false", "output"]>]> {
  let summary = "Elementwise choice";
  let description = [{
    `cond ? on_true : on_false` elementwise; `cond` is an `i1` tensor of the
    same shape.

    ```mlir
    %r = glimmer.select %m, %a, %b : tensor<2x8xi1>, tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Glimmer_BoolTensor:$cond, Glimmer_Tensor:$on_true,
                       Glimmer_Tensor:$on_false);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$cond `,` $on_true `,` $on_false attr-dict `:` type($cond) `,` type($output)";
  let hasVerifier = 1;
}

def Glimmer_ConvertOp : Glimmer_Op<"convert", [Glimmer_ShardingRuleOpInterface, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, Elementwise]> {
  let summary = "Elementwise element-type conversion";
  let description = [{
    Converts each element to the result's element type (float rounding to
    nearest, float to int truncates toward zero, as `Tensor.to`). Shapes match.

    ```mlir
    %1 = glimmer.convert %0 : tensor<2x8xbf16> to tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Glimmer_ReduceOp : Glimmer_Op<"reduce", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Reduction over dimensions";
  let description = [{
    Reduces `input` with `kind` (sum, max, min) over `dims` (sorted, unique).
    With `keep_dims` the reduced dimensions stay with size 1.

    ```mlir
    %1 = glimmer.reduce sum %0 dims = [1] : tensor<2x8xf32> -> tensor<2xf32>
    %2 = glimmer.reduce max %0 dims = [1] keep_dims : tensor<2x8xf32> -> tensor<2x1xf32>
    ```
  }];
  let arguments = (ins Glimmer_ReductionKind:$kind,
                       Glimmer_NumericTensor:$input,
                       DenseI64ArrayAttr:$dims, UnitAttr:$keep_dims);
  let results = (outs Glimmer_NumericTensor:$output);
  let assemblyFormat = "$kind $input `dims` `=` $dims (`keep_dims` $keep_dims^)? attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_SumSquaresOp : Glimmer_Op<"sum_squares", [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, Pure]> {
  let summary = "Sum of the squares of every element of several tensors";
  let description = [{
    `sum_k sum_i inputs[k][i]^2`: each input's squares summed over all its
    elements in the compute type (f32 for bf16, the inputs' type otherwise),
    in an order fixed by the shapes alone (deterministic from run to run),
    then the inputs' sums added in operand order. Gradient clipping's
    squared global norm is one `sum_squares` over the gradients (on a GPU,
    two kernel launches per 64 inputs and one more, instead of a multiply
    and a reduction per gradient). Each input has the scalar result's
    floating-point element type, or is bf16 under an f32 result: such an
    input is widened exactly and summed as the f32 tensor of the same
    values would be (the bf16 gradients of parameters that the forward
    converts to bf16, see `glimmer-narrow-gradients`).

    ```mlir
    // Before: %sq0 = glimmer.mul %g0, %g0 ... %s0 = glimmer.reduce sum %sq0 ...
    //         %s1 = ... %total = glimmer.add %s0, %s1 : tensor<f32>
    %total = glimmer.sum_squares %g0, %g1
        : tensor<16x8xf32>, tensor<8xf32> -> tensor<f32>
    %mixed = glimmer.sum_squares %g0, %h1
        : tensor<16x8xf32>, tensor<8xbf16> -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Glimmer_FloatTensor>:$inputs);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_CumsumOp : Glimmer_Op<"cumsum", [InferTypeOpInterface, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Inclusive prefix sum along a dimension";
  let description = [{
    ```mlir
    %1 = glimmer.cumsum %0 dim = 1 : tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Glimmer_NumericTensor:$input, I64Attr:$dim);
  let results = (outs Glimmer_NumericTensor:$output);
  let assemblyFormat = "$input `dim` `=` $dim attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Glimmer_ArgsortOp : Glimmer_Op<"argsort", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, Pure]> {
  let summary = "Positions that sort a tensor along a dimension (stable)";
  let description = [{
    Each line of `input` along `dim` is sorted ascending (or `descending`),
    and the result holds, at each sorted position, the index along `dim` of
    the element that goes there (i64, `input`'s shape). The sort is stable:
    equal elements keep their order, descending included (PyTorch's
    `sort(stable=True)`); NaN sorts above every number, as in PyTorch.
    The sorted values are a gather of `input` at these positions (the
    importer's `aten::sort`, `aten::topk`), whose VJP scatters the
    cotangent back through them; the positions themselves have no
    gradient.

    ```mlir
    %i = glimmer.argsort %x dim = 1 descending : tensor<4x8xf32> -> tensor<4x8xi64>
    ```
  }];
  let arguments = (ins Glimmer_NumericTensor:$input, I64Attr:$dim,
                       UnitAttr:$descending);
  let results = (outs Glimmer_IndexTensor:$indices);
  let assemblyFormat = "$input `dim` `=` $dim (`descending` $descending^)? attr-dict `:` type($input) `->` type($indices)";
  let hasVerifier = 1;
}

def Glimmer_StopGradientOp : Glimmer_Op<"stop_gradient", [InferTypeOpInterface, Glimmer_ShardingRuleOpInterface, SameOperandsAndResultType, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "The identity with no gradient";
  let description = [{
    Returns its operand unchanged, and its VJP gives the operand no
    cotangent (PyTorch's `detach` inside a differentiable op). The importer
    puts it where PyTorch's autograd formula ignores an output's cotangent:
    `native_layer_norm`'s mean and rstd, whose backward reads only the
    normalized output's. It has no folder, so it stays until
    glimmer-autodiff has read it; it lowers to nothing.

    ```mlir
    %m = glimmer.stop_gradient %mean : tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Glimmer_IotaOp : Glimmer_Op<"iota", [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, Pure]> {
  let summary = "0, 1, 2, ... along one dimension";
  let description = [{
    Element `i` holds its index along `dim` (`torch.arange`, broadcast).

    ```mlir
    %pos = glimmer.iota dim = 1 : tensor<2x8xi64>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Glimmer_NumericTensor:$output);
  let assemblyFormat = "`dim` `=` $dim attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Glimmer_ReshapeOp : Glimmer_Op<"reshape", [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Row-major reshape";
  let description = [{
    ```mlir
    %1 = glimmer.reshape %0 : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Glimmer_TransposeOp : Glimmer_Op<"transpose", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Permutes dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    ```mlir
    %1 = glimmer.transpose %0 permutation = [0, 2, 1, 3]
        : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `permutation` `=` $permutation attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_BroadcastInDimOp : Glimmer_Op<"broadcast_in_dim", [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Broadcasts into a larger shape";
  let description = [{
    Operand dimension `i` becomes result dimension `dims[i]` (strictly
    increasing); its size is 1 or equal to the result's.

    ```mlir
    %1 = glimmer.broadcast_in_dim %0 dims = [1] : tensor<8xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `dims` `=` $dims attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_SliceOp : Glimmer_Op<"slice", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Strided slice";
  let description = [{
    Keeps indices `start[d], start[d]+stride[d], ...` below `limit[d]` in each
    dimension `d`.

    ```mlir
    %1 = glimmer.slice %0 start = [0, 1] limit = [2, 8] stride = [1, 1]
        : tensor<2x8xi64> -> tensor<2x7xi64>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `start` `=` $start `limit` `=` $limit `stride` `=` $stride attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_MicrobatchSliceOp : Glimmer_Op<"microbatch_slice", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, Pure]> {
  let summary = "The current micro-batch's piece of a full-batch value";
  let description = [{
    Piece `index` of `pieces` equal contiguous pieces of `dim`, where `index`
    (a scalar `i64`, the function's `glimmer.microbatch` argument) is the
    micro-batch the call computes. Micro-batches are a serial split of the
    batch: integer inputs are prepared on the whole batch (vision-bank
    indices, shifted labels, positions, the token count) and cut where they
    enter the model, so the rest of the program is compiled at the
    micro-batch's shape. Like `local_shard`, it is only applied to values no
    gradient flows into, and has no VJP. An index outside `[0, pieces)` is an
    error at run time.

    ```mlir
    %t = glimmer.microbatch_slice %tokens[%mb] pieces = 4 dim = 0
        : tensor<8x16xi64>, tensor<i64> -> tensor<2x16xi64>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, StaticShapeTensorOf<[I64]>:$index,
                       I64Attr:$pieces, I64Attr:$dim);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `[` $index `]` `pieces` `=` $pieces `dim` `=` $dim attr-dict `:` type($input) `,` type($index) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_ConcatOp : Glimmer_Op<"concat", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Concatenates along a dimension";
  let description = [{
    ```mlir
    %2 = glimmer.concat %0, %1 dim = 1
        : tensor<2x1x16xf32>, tensor<2x4x16xf32> -> tensor<2x5x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Glimmer_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$inputs `dim` `=` $dim attr-dict `:` type($inputs) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_PadOp : Glimmer_Op<"pad", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Constant padding";
  let description = [{
    Adds `low[d]` elements before and `high[d]` after dimension `d`, filled
    with `value` (converted to the element type).

    ```mlir
    %1 = glimmer.pad %0 low = [0, 0] high = [0, 1] value = -100.0
        : tensor<2x7xi64> -> tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, F64Attr:$value);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `low` `=` $low `high` `=` $high `value` `=` $value attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

def Glimmer_EmbeddingOp : Glimmer_Op<"embedding", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Row lookup in an embedding table";
  let description = [{
    `output[..., :] = table[ids[...], :]` for a `[V, D]` table. The table
    may hold integers too: the importer gathers rows of integer tensors
    with it (a mask's `block_ids[batch, q]`), and such a lookup has no
    gradient.

    ```mlir
    %e = glimmer.embedding %table, %tokens
        : tensor<32x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Glimmer_NumericTensor:$table, Glimmer_IndexTensor:$ids);
  let results = (outs Glimmer_NumericTensor:$output);
  let assemblyFormat = "$table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_CheckIndicesOp : Glimmer_Op<"check_indices",
    [InferTypeOpInterface, Glimmer_ShardingRuleOpInterface, SameOperandsAndResultType]> {
  let summary = "Fails the program when an index is out of range";
  let description = [{
    Returns `ids` unchanged after checking that every element lies in
    `[0, bound)`, or equals `ignore_index` when one is given, and otherwise
    fails with the message of the op named by `for`, as that op's kernel
    would: `glimmer.embedding: id 1000 at position 6 is out of range for a
    table of 64 rows`, or, with `ignore_index`, `glimmer.cross_entropy:
    label 70 at position 3 is out of range for 64 classes (ignore_index is
    -100)`. glimmer-partition puts it before a vocab-parallel embedding or a
    loss-parallel cross-entropy: their rank-local lookups clamp the indices
    into the rank's rows, so they cannot see an index outside the whole
    vocabulary. Not `Pure` (it can fail), so it is never folded away.

    ```mlir
    %ids = glimmer.check_indices %tokens bound = 64 for "embedding" : tensor<2x8xi64>
    %labels = glimmer.check_indices %l bound = 64 for "cross_entropy" ignore_index = -100 : tensor<16xi64>
    ```
  }];
  let arguments = (ins Glimmer_IndexTensor:$ids, I64Attr:$bound,
                       StrAttr:$checked_op, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Glimmer_IndexTensor:$output);
  let assemblyFormat = "$ids `bound` `=` $bound `for` $checked_op (`ignore_index` `=` $ignore_index^)? attr-dict `:` type($ids)";
}

def Glimmer_EmbeddingGradOp : Glimmer_Op<"embedding_grad", [DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Scatter-add of row gradients into a table gradient";
  let description = [{
    The VJP of `glimmer.embedding` with respect to the table:
    `output[v, :] = sum over positions p with ids[p] == v of grad[p, :]`.

    ```mlir
    %dt = glimmer.embedding_grad %dy, %tokens
        : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<32x16xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$grad, Glimmer_IndexTensor:$ids);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$grad `,` $ids attr-dict `:` type($grad) `,` type($ids) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_LinearOp : Glimmer_Op<"linear", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "x @ weight^T + bias (PyTorch nn.Linear layout)";
  let description = [{
    `input: [..., K]`, `weight: [N, K]`, optional `bias: [N]`, result
    `[..., N]`. Kept fused because TP shards it column- or row-wise.

    ```mlir
    %y = glimmer.linear %x, %w, %b
        : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
    %z = glimmer.linear %x, %w : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$input, Glimmer_FloatTensor:$weight,
                       Optional<Glimmer_FloatTensor>:$bias);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight) (`,` type($bias)^)? `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_MatmulOp : Glimmer_Op<"matmul", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Batched matrix product";
  let description = [{
    Multiplies the last two dimensions, optionally transposing either operand;
    leading (batch) dimensions must be equal. The backward pass uses the
    transpose flags for `dX = dY W` and `dW = dY^T X`.

    ```mlir
    %c = glimmer.matmul %a, %b transpose_rhs
        : tensor<4x8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$lhs, Glimmer_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)? attr-dict `:` type($lhs) `,` type($rhs) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_RmsNormOp : Glimmer_Op<"rms_norm",
    [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "RMS normalisation over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2, -1) + eps) * weight`, with `weight: [D]` of the
    input's type. The result has the input's type, or is bf16 for an f32
    input (mixed precision: the norm computes in f32, as under autocast, and
    its result is rounded once for the bf16 GEMMs that read it; the type
    follows `->`).

    ```mlir
    %y = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>
    %z = glimmer.rms_norm %x, %w eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xbf16>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$input, Glimmer_FloatTensor:$weight,
                       F64Attr:$eps);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$input `,` $weight `eps` `=` $eps attr-dict `:` type($input) `,` custom<NormResultType>(ref(type($input)), type($weight), type($output))";
  let hasVerifier = 1;
}

def Glimmer_AddRmsNormOp : Glimmer_Op<"add_rms_norm", [Pure, AllTypesMatch<["rhs", "sum"]>]> {
  let summary = "A residual add and the RMS norm that reads it, fused";
  let description = [{
    `sum = lhs + rhs` (elementwise, `lhs` widened exactly to `rhs`'s type
    first when it is narrower: a bf16 branch added to an f32 residual
    stream) and `output = rms_norm(sum, weight)`, as the two ops compute
    them (the sum rounded to its type before the norm reads it). Both
    results are kept: the sum goes on down the residual stream. Formed
    after autodiff by `glimmer-fuse-residual-norms` (it has no VJP), so
    that a kernel reads the residual stream once for the add and the norm.

    ```mlir
    %s, %y = glimmer.add_rms_norm %h, %x, %w eps = 1.0e-05
        : tensor<2x8x16xbf16>, tensor<2x8x16xf32>, tensor<16xf32>
          -> tensor<2x8x16xbf16>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$lhs, Glimmer_FloatTensor:$rhs,
                       Glimmer_FloatTensor:$weight, F64Attr:$eps);
  let results = (outs Glimmer_FloatTensor:$sum, Glimmer_FloatTensor:$output);
  let assemblyFormat = "$lhs `,` $rhs `,` $weight `eps` `=` $eps attr-dict `:` type($lhs) `,` type($rhs) `,` type($weight) `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_RmsNormGradOp : Glimmer_Op<"rms_norm_grad",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, Pure, AllTypesMatch<["input", "input_grad"]>,
     AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "VJP of rms_norm";
  let description = [{
    Returns the input and weight gradients of `glimmer.rms_norm`. `grad` has
    the forward result's type: the input's, or bf16 for an f32 input (its
    type follows `grad`).

    ```mlir
    %dx, %dw = glimmer.rms_norm_grad %dy, %x, %w eps = 1.0e-05
        : tensor<2x8x16xf32>, tensor<16xf32>
    %ex, %ew = glimmer.rms_norm_grad %dz, %x, %w eps = 1.0e-05
        : tensor<2x8x16xf32>, tensor<16xf32> grad tensor<2x8x16xbf16>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$grad, Glimmer_FloatTensor:$input,
                       Glimmer_FloatTensor:$weight, F64Attr:$eps);
  let results = (outs Glimmer_FloatTensor:$input_grad,
                      Glimmer_FloatTensor:$weight_grad);
  let assemblyFormat = "$grad `,` $input `,` $weight `eps` `=` $eps attr-dict `:` type($input) `,` custom<NormGradType>(ref(type($input)), type($weight), type($grad))";
  let hasVerifier = 1;
}

def Glimmer_LayerNormOp : Glimmer_Op<"layer_norm",
    [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, AllTypesMatch<["weight", "bias"]>]> {
  let summary = "Layer normalisation over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + eps) * weight + bias` over the last dimension
    (biased variance, as `torch.nn.LayerNorm`). The result has the input's
    type, or is bf16 for an f32 input (as `glimmer.rms_norm`).

    ```mlir
    %y = glimmer.layer_norm %x, %w, %b eps = 1.0e-05
        : tensor<2x8x16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$input, Glimmer_FloatTensor:$weight,
                       Glimmer_FloatTensor:$bias, F64Attr:$eps);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$input `,` $weight `,` $bias `eps` `=` $eps attr-dict `:` type($input) `,` custom<NormResultType>(ref(type($input)), type($weight), type($output))";
  let hasVerifier = 1;
}

def Glimmer_LayerNormGradOp : Glimmer_Op<"layer_norm_grad",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, Pure, AllTypesMatch<["input", "input_grad"]>,
     AllTypesMatch<["weight", "weight_grad", "bias_grad"]>]> {
  let summary = "VJP of layer_norm";
  let description = [{
    Returns the input, weight and bias gradients of `glimmer.layer_norm`.
    `grad` has the forward result's type (as `glimmer.rms_norm_grad`).

    ```mlir
    %dx, %dw, %db = glimmer.layer_norm_grad %dy, %x, %w eps = 1.0e-05
        : tensor<2x8x16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$grad, Glimmer_FloatTensor:$input,
                       Glimmer_FloatTensor:$weight, F64Attr:$eps);
  let results = (outs Glimmer_FloatTensor:$input_grad,
                      Glimmer_FloatTensor:$weight_grad,
                      Glimmer_FloatTensor:$bias_grad);
  let assemblyFormat = "$grad `,` $input `,` $weight `eps` `=` $eps attr-dict `:` type($input) `,` custom<NormGradType>(ref(type($input)), type($weight), type($grad))";
  let hasVerifier = 1;
}

def Glimmer_RopeOp : Glimmer_Op<"rope", [DeclareOpInterfaceMethods<InferTypeOpInterface>, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, AllTypesMatch<["input", "output"]>]> {
  let summary = "Rotary position embedding from explicit positions";
  let description = [{
    Rotates feature pairs of `input: [B, T, H, D]` by `positions[b, t] *
    theta^(-2i/D)`. `style = interleaved` pairs features (2i, 2i+1)
    (torchtitan/Llama); `style = half` pairs (i, i + D/2) (Hugging Face
    `rotate_half`). Positions are explicit so that a context-parallel rank
    rotates its permuted tokens by their true positions. `inverse` rotates the
    other way; it is the VJP.

    ```mlir
    %q2 = glimmer.rope %q, %pos theta = 10000.0 style = interleaved
        : tensor<2x8x4x16xf32>, tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$input, Glimmer_IndexTensor:$positions,
                       F64Attr:$theta, Glimmer_RopeStyle:$style,
                       UnitAttr:$inverse);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$input `,` $positions `theta` `=` $theta `style` `=` $style (`inverse` $inverse^)? attr-dict `:` type($input) `,` type($positions)";
  let hasVerifier = 1;
}

// Attention's sequence_major flags, in the attribute's order.
defvar AttentionLayoutDeclarations = [{
    enum AttentionTensor : unsigned { kQuery = 0, kKey, kValue, kOutput };
    /// Whether `which` is stored [B, T, H, D] (attribute absent: none is).
    bool isSequenceMajor(AttentionTensor which) {
      auto flags = getSequenceMajorAttr();
      return flags && flags.size() > which && flags[which];
    }
    bool anySequenceMajor() {
      return isSequenceMajor(kQuery) || isSequenceMajor(kKey) ||
             isSequenceMajor(kValue) || isSequenceMajor(kOutput);
    }
}];

def Glimmer_AttentionOp : Glimmer_Op<"attention",
    [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, AttrSizedOperandSegments]> {
  let summary = "Scaled dot-product attention with position- and document-based masking";
  let description = [{
    `query: [B, Hq, Tq, D]`, `key`/`value: [B, Hkv, Tk, D]` with `Hq` a
    multiple of `Hkv` (grouped-query attention). With `causal`, query `i` sees
    key `j` iff `key_positions[b, j] <= query_positions[b, i]`: the mask is a
    function of explicit positions, not of tensor indices, so it stays correct
    after the context-parallel permutation. Causal attention without
    positions takes the indices as positions (query `i` sees key `j` iff
    `j <= i`), as `glimmer-simplify-attention-masks` leaves it when the
    positions are the sequence index. Optional document ids further restrict
    attention to equal ids. Two more terms express the masks of
    prefix-LM and interleaved image models without a `[Tq, Tk]` mask, both
    only with `causal`:

    * `blocks(%qb, %kb)`: query `i` also sees key `j` beyond causality when
      `qb[b, i] >= 0` and `qb[b, i] == kb[b, j]` (bidirectional attention
      inside a block: a prefix, an image);
    * `window = W`: key `j` is visible only if
      `query_positions[b, i] - key_positions[b, j] < W` (a sliding window;
      it applies to the block term too).

    In full: `visible = same document && within the window && (kpos <= qpos
    || same non-negative block)`. Every term is a function of per-token
    values, which context parallelism permutes with the tokens. Returns the
    output and the row log-sum-exp `[B, Hq, Tq]` (f32 or f64) that the
    backward pass reuses.

    `sequence_major = array<i1: q, k, v, o>` (set by
    `glimmer-fold-attention-transposes`) stores the flagged tensors among
    query, key, value and output as `[B, T, H, D]`, the layout of a
    projection's output split into heads, instead of `[B, H, T, D]`; the
    meaning is unchanged. When value's type differs from key's (one of them
    sequence-major), it follows key's in the type list.

    ```mlir
    %o, %lse = glimmer.attention %q, %k, %v
        positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.25
        : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>
          -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
    %o2, %lse2 = glimmer.attention %q, %k, %v
        positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>)
        blocks(%blk, %blk : tensor<2x8xi64>, tensor<2x8xi64>)
        causal window = 4 scale = 0.25
        : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>
          -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
    // Value and output sequence-major ([B, T, H, D]).
    %o3, %lse3 = glimmer.attention %q, %k, %vs causal scale = 0.25
        {sequence_major = array<i1: false, false, true, true>}
        : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x8x2x16xf32>
          -> tensor<2x8x4x16xf32>, tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$query, Glimmer_FloatTensor:$key,
                       Glimmer_FloatTensor:$value,
                       Optional<Glimmer_IndexTensor>:$query_positions,
                       Optional<Glimmer_IndexTensor>:$key_positions,
                       Optional<Glimmer_IndexTensor>:$query_documents,
                       Optional<Glimmer_IndexTensor>:$key_documents,
                       Optional<Glimmer_IndexTensor>:$query_blocks,
                       Optional<Glimmer_IndexTensor>:$key_blocks,
                       UnitAttr:$causal, OptionalAttr<I64Attr>:$window,
                       F64Attr:$scale,
                       OptionalAttr<DenseBoolArrayAttr>:$sequence_major);
  let results = (outs Glimmer_FloatTensor:$output, Glimmer_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`positions` `(` $query_positions^ `,` $key_positions `:` type($query_positions) `,` type($key_positions) `)`)?
    (`documents` `(` $query_documents^ `,` $key_documents `:` type($query_documents) `,` type($key_documents) `)`)?
    (`blocks` `(` $query_blocks^ `,` $key_blocks `:` type($query_blocks) `,` type($key_blocks) `)`)?
    (`causal` $causal^)? (`window` `=` $window^)? `scale` `=` $scale attr-dict `:` type($query) `,`
    custom<KeyValueTypes>(type($key), type($value))
    `->` type($output) `,` type($lse)
  }];
  let extraClassDeclaration = AttentionLayoutDeclarations;
  let hasVerifier = 1;
}

def Glimmer_AttentionGradOp : Glimmer_Op<"attention_grad",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, Pure, AttrSizedOperandSegments, AllTypesMatch<["grad", "output"]>,
     AllTypesMatch<["query", "query_grad"]>, AllTypesMatch<["key", "key_grad"]>,
     AllTypesMatch<["value", "value_grad"]>]> {
  let summary = "VJP of attention";
  let description = [{
    Given the output gradient, the forward operands, the forward output and
    log-sum-exp, returns `dQ, dK, dV` (same masking attributes as the forward).
    `sequence_major` is the forward's: the gradient is laid out as the
    output, each operand gradient as its operand. When value's type differs
    from key's or output's from query's, value's and output's types follow
    lse's in the type list.

    ```mlir
    %dq, %dk, %dv = glimmer.attention_grad %do, %q, %k, %v, %o, %lse
        positions(%pos, %pos : tensor<2x8xi64>, tensor<2x8xi64>) causal scale = 0.25
        : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$grad, Glimmer_FloatTensor:$query,
                       Glimmer_FloatTensor:$key, Glimmer_FloatTensor:$value,
                       Glimmer_FloatTensor:$output, Glimmer_FloatTensor:$lse,
                       Optional<Glimmer_IndexTensor>:$query_positions,
                       Optional<Glimmer_IndexTensor>:$key_positions,
                       Optional<Glimmer_IndexTensor>:$query_documents,
                       Optional<Glimmer_IndexTensor>:$key_documents,
                       Optional<Glimmer_IndexTensor>:$query_blocks,
                       Optional<Glimmer_IndexTensor>:$key_blocks,
                       UnitAttr:$causal, OptionalAttr<I64Attr>:$window,
                       F64Attr:$scale,
                       OptionalAttr<DenseBoolArrayAttr>:$sequence_major);
  let results = (outs Glimmer_FloatTensor:$query_grad,
                      Glimmer_FloatTensor:$key_grad,
                      Glimmer_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value `,` $output `,` $lse
    (`positions` `(` $query_positions^ `,` $key_positions `:` type($query_positions) `,` type($key_positions) `)`)?
    (`documents` `(` $query_documents^ `,` $key_documents `:` type($query_documents) `,` type($key_documents) `)`)?
    (`blocks` `(` $query_blocks^ `,` $key_blocks `:` type($query_blocks) `,` type($key_blocks) `)`)?
    (`causal` $causal^)? (`window` `=` $window^)? `scale` `=` $scale attr-dict `:` type($query) `,` type($key) `,`
    custom<LseValueOutputTypes>(type($lse), ref(type($query)), ref(type($key)), type($value), type($output))
  }];
  let extraClassDeclaration = AttentionLayoutDeclarations;
  let hasVerifier = 1;
}

def Glimmer_SoftmaxOp : Glimmer_Op<"softmax", [InferTypeOpInterface, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Softmax along a dimension";
  let description = [{
    ```mlir
    %p = glimmer.softmax %x dim = 1 : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$input, I64Attr:$dim);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$input `dim` `=` $dim attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Glimmer_SoftmaxGradOp : Glimmer_Op<"softmax_grad", [InferTypeOpInterface, Pure, SameOperandsAndResultType]> {
  let summary = "VJP of softmax";
  let description = [{
    `y * (dy - sum(dy * y, dim))` given the softmax output `y`.

    ```mlir
    %dx = glimmer.softmax_grad %dy, %y dim = 1 : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$grad, Glimmer_FloatTensor:$output_value,
                       I64Attr:$dim);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$grad `,` $output_value `dim` `=` $dim attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Glimmer_CrossEntropyOp : Glimmer_Op<"cross_entropy", [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "Summed cross-entropy and valid-token count";
  let description = [{
    `logits: [..., V]`, `labels: [...]`. Returns the *sum* of
    `-log_softmax(logits)[label]` over positions whose label is not
    `ignore_index`, and the number of such positions. Returning sum and count
    (not the mean) lets a sharded program reduce both and divide once by the
    global count.

    ```mlir
    %sum, %count = glimmer.cross_entropy %logits, %labels ignore_index = -100
        : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>, tensor<i64>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$logits, Glimmer_IndexTensor:$labels,
                       I64Attr:$ignore_index);
  let results = (outs StaticShapeTensorOf<[F16, BF16, F32, F64]>:$sum,
                      StaticShapeTensorOf<[I64]>:$count);
  let assemblyFormat = "$logits `,` $labels `ignore_index` `=` $ignore_index attr-dict `:` type($logits) `,` type($labels) `->` type($sum) `,` type($count)";
  let hasVerifier = 1;
}

def Glimmer_CrossEntropyGradOp : Glimmer_Op<"cross_entropy_grad",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, Pure, AllTypesMatch<["logits", "output"]>]> {
  let summary = "VJP of cross_entropy's sum";
  let description = [{
    `dlogits = dsum * (softmax(logits) - onehot(label))` on valid positions,
    zero on ignored ones.

    ```mlir
    %dl = glimmer.cross_entropy_grad %dsum, %logits, %labels ignore_index = -100
        : tensor<f32>, tensor<2x8x32xf32>, tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$grad, Glimmer_FloatTensor:$logits,
                       Glimmer_IndexTensor:$labels, I64Attr:$ignore_index);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$grad `,` $logits `,` $labels `ignore_index` `=` $ignore_index attr-dict `:` type($grad) `,` type($logits) `,` type($labels)";
  let hasVerifier = 1;
}

def Glimmer_Conv2dOp : Glimmer_Op<"conv2d", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure]> {
  let summary = "2-D convolution (NCHW input, OIHW weight)";
  let description = [{
    The patch embedding of a ViT is a convolution whose stride equals its
    kernel size. Optional bias `[O]`.

    ```mlir
    %y = glimmer.conv2d %img, %w, %b stride = [4, 4] padding = [0, 0]
        : tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>, tensor<32xf32> -> tensor<2x32x4x4xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$input, Glimmer_FloatTensor:$weight,
                       Optional<Glimmer_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? `stride` `=` $stride `padding` `=` $padding attr-dict `:` type($input) `,` type($weight) (`,` type($bias)^)? `->` type($output)";
  let hasVerifier = 1;
}

def Glimmer_Conv2dGradOp : Glimmer_Op<"conv2d_grad",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, Pure, AllTypesMatch<["input", "input_grad"]>,
     AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "VJP of conv2d with respect to input and weight";
  let description = [{
    The bias gradient is a `glimmer.reduce sum` of the output gradient.

    ```mlir
    %dx, %dw = glimmer.conv2d_grad %dy, %img, %w stride = [4, 4] padding = [0, 0]
        : tensor<2x32x4x4xf32>, tensor<2x3x16x16xf32>, tensor<32x3x4x4xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$grad, Glimmer_FloatTensor:$input,
                       Glimmer_FloatTensor:$weight,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding);
  let results = (outs Glimmer_FloatTensor:$input_grad,
                      Glimmer_FloatTensor:$weight_grad);
  let assemblyFormat = "$grad `,` $input `,` $weight `stride` `=` $stride `padding` `=` $padding attr-dict `:` type($grad) `,` type($input) `,` type($weight)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

def Glimmer_AdamWUpdateOp : Glimmer_Op<"adamw_update",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, Glimmer_ShardingRuleOpInterface, Pure, AllTypesMatch<["param", "exp_avg", "exp_avg_sq",
                          "new_param", "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "One AdamW step (torch.optim.AdamW semantics)";
  let description = [{
    `step` is the 1-based step count (an `i64` scalar tensor) used for bias
    correction. Decoupled weight decay multiplies the parameter by
    `1 - lr * weight_decay` before the Adam update. With `grad_scale` (a
    scalar of the parameter's type: gradient clipping's coefficient) the
    update uses `grad * grad_scale`, rounded to the parameter's type as a
    separate multiply would, without materializing the scaled gradient.
    `grad` has the parameter's type, or its shape in bf16 for an f32
    parameter: it is widened exactly, so the update is that of the f32
    gradient of the same values, without an f32 copy of it.

    ```mlir
    %p1, %m1, %v1 = glimmer.adamw_update %p, %g, %m, %v, %step lr = 1.0e-03
        beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
    %p3, %m3, %v3 = glimmer.adamw_update %p, %h, %m, %v, %step lr = 1.0e-03
        beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xbf16>, tensor<i64>
    %p2, %m2, %v2 = glimmer.adamw_update %p, %g, %m, %v, %step grad_scale(%coef : tensor<f32>)
        lr = 1.0e-03 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$param, Glimmer_FloatTensor:$grad,
                       Glimmer_FloatTensor:$exp_avg, Glimmer_FloatTensor:$exp_avg_sq,
                       StaticShapeTensorOf<[I64]>:$step,
                       Optional<Glimmer_FloatTensor>:$grad_scale,
                       F64Attr:$lr, F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay);
  let results = (outs Glimmer_FloatTensor:$new_param,
                      Glimmer_FloatTensor:$new_exp_avg,
                      Glimmer_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = "$param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step (`grad_scale` `(` $grad_scale^ `:` type($grad_scale) `)`)? `lr` `=` $lr `beta1` `=` $beta1 `beta2` `=` $beta2 `eps` `=` $eps `weight_decay` `=` $weight_decay attr-dict `:` type($param) `,` type($grad) `,` type($step)";
  let hasVerifier = 1;
}

def Glimmer_SgdUpdateOp : Glimmer_Op<"sgd_update",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, Glimmer_ShardingRuleOpInterface, Pure, AllTypesMatch<["param", "new_param"]>]> {
  let summary = "One SGD step (torch.optim.SGD semantics, no momentum)";
  let description = [{
    `param - lr * (grad + weight_decay * param)`; with `grad_scale`, `grad`
    is first multiplied by it (as in `glimmer.adamw_update`); `grad` may be
    bf16 for an f32 `param`, as there.

    ```mlir
    %p1 = glimmer.sgd_update %p, %g lr = 0.1 weight_decay = 0.0 : tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$param, Glimmer_FloatTensor:$grad,
                       Optional<Glimmer_FloatTensor>:$grad_scale,
                       F64Attr:$lr, F64Attr:$weight_decay);
  let results = (outs Glimmer_FloatTensor:$new_param);
  let assemblyFormat = "$param `,` $grad (`grad_scale` `(` $grad_scale^ `:` type($grad_scale) `)`)? `lr` `=` $lr `weight_decay` `=` $weight_decay attr-dict `:` type($param) `,` type($grad)";
  let hasVerifier = 1;
}

def Glimmer_AdamWUpdateListOp : Glimmer_Op<"adamw_update_list",
    [Pure, AttrSizedOperandSegments, SameVariadicResultSize,
     RangedTypesMatchWith<"exp_avgs have the params' types", "params", "exp_avgs", "$_self">,
     RangedTypesMatchWith<"exp_avg_sqs have the params' types", "params", "exp_avg_sqs", "$_self">,
     RangedTypesMatchWith<"new_params have the params' types", "params", "new_params", "$_self">,
     RangedTypesMatchWith<"new_exp_avgs have the params' types", "params", "new_exp_avgs", "$_self">,
     RangedTypesMatchWith<"new_exp_avg_sqs have the params' types", "params", "new_exp_avg_sqs", "$_self">]> {
  let summary = "Several AdamW steps with one step count and one set of hyperparameters";
  let description = [{
    `glimmer.adamw_update` of `params[k]`, `grads[k]`, `exp_avgs[k]` and
    `exp_avg_sqs[k]` for every `k`, all with the same `step`, `grad_scale`
    and hyperparameters; each result is the bits the single update gives.
    On a GPU the updates share a few kernel launches (one per 32 tensors of
    a type) instead of one each. Made by `glimmer-multi-tensor` after every
    other pass.

    ```mlir
    %p:2, %m:2, %v:2 = glimmer.adamw_update_list (%p0, %p1), (%g0, %g1),
        (%m0, %m1), (%v0, %v1), %step grad_scale(%coef : tensor<f32>)
        lr = 1.0e-03 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01
        : (tensor<16xf32>, tensor<8xf32>), (tensor<16xbf16>, tensor<8xf32>), tensor<i64>
    ```
  }];
  let arguments = (ins Variadic<Glimmer_FloatTensor>:$params,
                       Variadic<Glimmer_FloatTensor>:$grads,
                       Variadic<Glimmer_FloatTensor>:$exp_avgs,
                       Variadic<Glimmer_FloatTensor>:$exp_avg_sqs,
                       StaticShapeTensorOf<[I64]>:$step,
                       Optional<Glimmer_FloatTensor>:$grad_scale,
                       F64Attr:$lr, F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay);
  let results = (outs Variadic<Glimmer_FloatTensor>:$new_params,
                      Variadic<Glimmer_FloatTensor>:$new_exp_avgs,
                      Variadic<Glimmer_FloatTensor>:$new_exp_avg_sqs);
  let assemblyFormat = "`(` $params `)` `,` `(` $grads `)` `,` `(` $exp_avgs `)` `,` `(` $exp_avg_sqs `)` `,` $step (`grad_scale` `(` $grad_scale^ `:` type($grad_scale) `)`)? `lr` `=` $lr `beta1` `=` $beta1 `beta2` `=` $beta2 `eps` `=` $eps `weight_decay` `=` $weight_decay attr-dict `:` `(` type($params) `)` `,` `(` type($grads) `)` `,` type($step)";
  let hasVerifier = 1;
}

def Glimmer_ConvertListOp : Glimmer_Op<"convert_list", [Pure]> {
  let summary = "Several element-type conversions to one type";
  let description = [{
    `glimmer.convert` of each input to the results' element type (one for
    all of them); shapes match input by input. On a GPU the conversions
    share one launch per 64 inputs of a type instead of one each. Made by
    `glimmer-multi-tensor` from the casts of a function's arguments (the
    parameters' bf16 copies of a mixed-precision step).

    ```mlir
    %w:2 = glimmer.convert_list %a, %b : tensor<4x8xf32>, tensor<8xf32> to tensor<4x8xbf16>, tensor<8xbf16>
    ```
  }];
  let arguments = (ins Variadic<Glimmer_Tensor>:$inputs);
  let results = (outs Variadic<Glimmer_Tensor>:$outputs);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `to` type($outputs)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Multimodal ops
//===----------------------------------------------------------------------===//

def Glimmer_VisionBankIndicesOp : Glimmer_Op<"vision_bank_indices",
    [InferTypeOpInterface, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, Pure, SameOperandsAndResultType]> {
  let summary = "Maps each token position to its row in the vision bank";
  let description = [{
    `cumsum(tokens == image_token_id) - 1` over the row-major flattened batch,
    and `-1` where the token is not an image token. Row `i` of the vision
    encoder output (the *bank*, `[N, D]`, images concatenated in batch order)
    feeds the `i`-th image token of the batch. Built on the full sequence,
    *before* context-parallel sharding, because a rank's slice alone cannot
    know how many image tokens precede it.

    ```mlir
    %idx = glimmer.vision_bank_indices %tokens image_token_id = 7 : tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Glimmer_IndexTensor:$tokens, I64Attr:$image_token_id);
  let results = (outs Glimmer_IndexTensor:$indices);
  let assemblyFormat = "$tokens `image_token_id` `=` $image_token_id attr-dict `:` type($tokens)";
  let hasVerifier = 1;
}

def Glimmer_VisionGatherOp : Glimmer_Op<"vision_gather",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>, Pure, AllTypesMatch<["embeds", "output"]>]> {
  let summary = "Replaces image-token embeddings with vision-bank rows";
  let description = [{
    `output[b, t] = indices[b, t] >= 0 ? bank[indices[b, t]] : embeds[b, t]`
    for `embeds: [B, T, D]`, `bank: [N, D]`, `indices: [B, T]`. Purely local:
    under context parallelism each rank gathers its own rows from the bank,
    which stays replicated across `cp`.

    ```mlir
    %m = glimmer.vision_gather %embeds, %bank, %idx
        : tensor<2x8x16xf32>, tensor<6x16xf32>, tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$embeds, Glimmer_FloatTensor:$bank,
                       Glimmer_IndexTensor:$indices);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$embeds `,` $bank `,` $indices attr-dict `:` type($embeds) `,` type($bank) `,` type($indices)";
  let hasVerifier = 1;
}

def Glimmer_VisionGatherGradOp : Glimmer_Op<"vision_gather_grad",
    [Pure, AllTypesMatch<["grad", "embeds_grad"]>]> {
  let summary = "VJP of vision_gather";
  let description = [{
    Returns the embeddings gradient (`grad` with image rows zeroed) and the
    bank gradient (image rows of `grad` scatter-added into `[N, D]`). Under
    context parallelism the bank gradient is a partial sum over `cp`.

    ```mlir
    %de, %db = glimmer.vision_gather_grad %dy, %idx
        : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<6x16xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$grad, Glimmer_IndexTensor:$indices);
  let results = (outs Glimmer_FloatTensor:$embeds_grad,
                      Glimmer_FloatTensor:$bank_grad);
  let assemblyFormat = "$grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->` type($bank_grad)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Context-parallel ops
//===----------------------------------------------------------------------===//

class Glimmer_CpPermuteBase<string mnemonic> : Glimmer_Op<mnemonic,
    [InferTypeOpInterface, DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>]> {
  let arguments = (ins Glimmer_Tensor:$input, I64Attr:$dim, I64Attr:$cp,
                       Glimmer_Balancer:$balancer);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `dim` `=` $dim `cp` `=` $cp `balancer` `=` $balancer attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Glimmer_CpPermuteOp : Glimmer_CpPermuteBase<"cp_permute"> {
  let summary = "Load-balancing reorder of the sequence for context parallelism";
  let description = [{
    Reorders dimension `dim` so that contiguous sharding over `cp` ranks gives
    each rank a balanced share. `head_tail`: the sequence is cut into `2*cp`
    equal chunks and rank `r` receives chunks `r` and `2*cp-1-r` (the
    dimension must be divisible by `2*cp`). `contiguous`: identity (divisible
    by `cp`). In the global view the shape is unchanged.

    ```mlir
    %p = glimmer.cp_permute %tokens dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
    ```
  }];
}

def Glimmer_CpUnpermuteOp : Glimmer_CpPermuteBase<"cp_unpermute"> {
  let summary = "Inverse of cp_permute";
  let description = [{
    ```mlir
    %t = glimmer.cp_unpermute %p dim = 1 cp = 2 balancer = head_tail : tensor<2x8xi64>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Collectives on named mesh axes (local view)
//===----------------------------------------------------------------------===//

class Glimmer_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Glimmer_Op<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let hasVerifier = 1;
}

def Glimmer_AllGatherOp : Glimmer_CollectiveOp<"all_gather", [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>]> {
  let summary = "Concatenates the ranks' tensors along a dimension";
  let description = [{
    Ranks in the same group along `axes` (of `mesh`) contribute their tensor;
    every rank receives the concatenation along `dim`, in axis order.

    The VJP depends on how the gathered value is used. By default its users
    do per-rank work that differs across `axes` (CP's queries against the
    gathered keys, an FSDP parameter used on each rank's batch, the input of
    a column-parallel projection under sequence parallelism), so each rank's
    cotangent is a share and the VJP is a sum `reduce_scatter`. With
    `invariant` the users compute the same on every rank, the cotangent is
    complete everywhere, and the VJP is each rank's slice (`local_shard`).

    ```mlir
    %kv = glimmer.all_gather %k on @mesh ["cp"] dim = 2
        : tensor<2x2x4x16xf32> -> tensor<2x2x8x16xf32>
    %h = glimmer.all_gather %x on @mesh ["tp"] dim = 1 invariant
        : tensor<8x32xf32> -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim, UnitAttr:$invariant);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `on` $mesh $axes `dim` `=` $dim (`invariant` $invariant^)? attr-dict `:` type($input) `->` type($output)";
}

def Glimmer_ReduceScatterOp : Glimmer_CollectiveOp<"reduce_scatter", [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>]> {
  let summary = "Reduces across ranks and keeps one slice";
  let description = [{
    ```mlir
    %dk = glimmer.reduce_scatter sum %g on @mesh ["cp"] dim = 2
        : tensor<2x2x8x16xf32> -> tensor<2x2x4x16xf32>
    ```
  }];
  let arguments = (ins Glimmer_ReductionKind:$kind, Glimmer_NumericTensor:$input,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Glimmer_NumericTensor:$output);
  let assemblyFormat = "$kind $input `on` $mesh $axes `dim` `=` $dim attr-dict `:` type($input) `->` type($output)";
}

def Glimmer_AllReduceOp : Glimmer_CollectiveOp<"all_reduce", [InferTypeOpInterface, Glimmer_ShardingRuleOpInterface, SameOperandsAndResultType, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>]> {
  let summary = "Reduces across ranks; every rank receives the result";
  let description = [{
    ```mlir
    %n = glimmer.all_reduce sum %count on @mesh ["dp_shard", "cp"] : tensor<i64>
    ```
  }];
  let arguments = (ins Glimmer_ReductionKind:$kind, Glimmer_NumericTensor:$input,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs Glimmer_NumericTensor:$output);
  let assemblyFormat = "$kind $input `on` $mesh $axes attr-dict `:` type($output)";
}

def Glimmer_PvaryOp : Glimmer_CollectiveOp<"pvary", [InferTypeOpInterface, Glimmer_ShardingRuleOpInterface, SameOperandsAndResultType, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>]> {
  let summary = "A replicated value used by per-rank work that differs across axes";
  let description = [{
    Returns its operand unchanged. The partitioner puts it where a value that
    is the same on every rank of `axes` feeds an op whose work is split over
    them (the input of a column-parallel projection under tensor
    parallelism): each rank's cotangent of the use is then only its share,
    and the VJP sums the shares with a `glimmer.all_reduce` over `axes`. It
    is the dual of `all_reduce` (identity forward, sum backward, where
    all_reduce sums forward and is the identity backward), and it lowers to
    nothing.

    ```mlir
    %xv = glimmer.pvary %x on @mesh ["tp"] : tensor<2x16x32xf32>
    %h = glimmer.linear %xv, %w_local : tensor<2x16x32xf32>, tensor<32x32xf32> -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Glimmer_FloatTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes);
  let results = (outs Glimmer_FloatTensor:$output);
  let assemblyFormat = "$input `on` $mesh $axes attr-dict `:` type($output)";
}

def Glimmer_AllToAllOp : Glimmer_CollectiveOp<"all_to_all", [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>]> {
  let summary = "Splits along one dimension and concatenates along another";
  let description = [{
    Each rank splits `split_dim` into as many pieces as the group has ranks,
    sends piece `i` to rank `i`, and concatenates what it receives along
    `concat_dim`. A value split over the axes along `concat_dim` comes out
    split along `split_dim` instead (the reshard between two splits). It
    only moves elements, so its VJP is the all-to-all back (`split_dim` and
    `concat_dim` swapped).

    ```mlir
    %y = glimmer.all_to_all %x on @mesh ["cp"] split_dim = 1 concat_dim = 2
        : tensor<2x4x4x16xf32> -> tensor<2x2x8x16xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$split_dim, I64Attr:$concat_dim);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `on` $mesh $axes `split_dim` `=` $split_dim `concat_dim` `=` $concat_dim attr-dict `:` type($input) `->` type($output)";
}

def Glimmer_LocalShardOp : Glimmer_CollectiveOp<"local_shard", [DeclareOpInterfaceMethods<Glimmer_ShardingRuleOpInterface, ["getShardingRule"]>, DeclareOpInterfaceMethods<Glimmer_VJPOpInterface>]> {
  let summary = "This rank's slice of a replicated tensor (no communication)";
  let description = [{
    Every member of the group along `axes` holds the same tensor; each keeps
    its contiguous slice `i` of `dim` (i = its index in the group, axis
    order). The inverse of `all_gather`, and how a value computed on the
    full sequence (e.g. the CP-permuted tokens) becomes rank-local.

    ```mlir
    %t = glimmer.local_shard %tokens on @mesh ["cp"] dim = 1
        : tensor<2x16xi64> -> tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `on` $mesh $axes `dim` `=` $dim attr-dict `:` type($input) `->` type($output)";
}

def Glimmer_SendOp : Glimmer_CollectiveOp<"send"> {
  let summary = "Sends a tensor to a peer along one mesh axis";
  let description = [{
    Sends to the rank whose coordinate along `axis` is `peer` (other
    coordinates equal). Pipeline stages use it on `pp`.

    ```mlir
    glimmer.send %h to 1 on @mesh "pp" : tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, I64Attr:$peer,
                       FlatSymbolRefAttr:$mesh, StrAttr:$axis);
  let assemblyFormat = "$input `to` $peer `on` $mesh $axis attr-dict `:` type($input)";
}

def Glimmer_RecvOp : Glimmer_CollectiveOp<"recv"> {
  let summary = "Receives a tensor from a peer along one mesh axis";
  let description = [{
    ```mlir
    %h = glimmer.recv from 0 on @mesh "pp" : tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, FlatSymbolRefAttr:$mesh, StrAttr:$axis);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "`from` $peer `on` $mesh $axis attr-dict `:` type($output)";
}

def Glimmer_PpermuteOp : Glimmer_CollectiveOp<"ppermute", [InferTypeOpInterface, SameOperandsAndResultType]> {
  let summary = "Collective permutation along one mesh axis";
  let description = [{
    Each `[source, target]` pair sends the source's tensor to the target
    (coordinates along `axis`). Sources and targets are unique; a rank that is
    no target receives zeros.

    ```mlir
    %y = glimmer.ppermute %x on @mesh "pp" pairs = [0, 1, 1, 0] : tensor<4xf32>
    ```
  }];
  let arguments = (ins Glimmer_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrAttr:$axis, DenseI64ArrayAttr:$pairs);
  let results = (outs Glimmer_Tensor:$output);
  let assemblyFormat = "$input `on` $mesh $axis `pairs` `=` $pairs attr-dict `:` type($output)";
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def Glimmer_FusionOp : Glimmer_Op<"fusion",
    [IsolatedFromAbove, Pure]> {
  let summary = "Elementwise and index ops computed in one loop";
  let description = [{
    Made by `glimmer-fuse-elementwise`, after every other pass. The body
    computes every result element by element over one index space: all
    results have the same shape, and each body op is elementwise (on
    floating-point values: arithmetic, math functions, conversions) or maps
    indices (`reshape`, `transpose`, `broadcast_in_dim`, `slice`, `concat`,
    `pad`, splat constants). A backend may run the body as one kernel that
    reads the inputs and writes only the results; running its ops one by one
    gives the same values, bit for bit (every op rounds to its result type).
    The body sees only its block arguments (the inputs).

    ```mlir
    %r = glimmer.fusion (%x, %w) : (tensor<8x4xbf16>, tensor<4xbf16>) -> tensor<8x4xbf16> {
    ^bb0(%a: tensor<8x4xbf16>, %b: tensor<4xbf16>):
      %wb = glimmer.broadcast_in_dim %b dims = [1] : tensor<4xbf16> -> tensor<8x4xbf16>
      %m = glimmer.mul %a, %wb : tensor<8x4xbf16>
      %s = glimmer.silu %m : tensor<8x4xbf16>
      glimmer.yield %s : tensor<8x4xbf16>
    }
    ```
  }];
  let arguments = (ins Variadic<Glimmer_Tensor>:$inputs);
  let results = (outs Variadic<Glimmer_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "`(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body";
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether `op` may be part of a fusion body (the ops its kernels can
    /// compute element by element).
    static bool isFusible(::mlir::Operation *op);
  }];
}

def Glimmer_YieldOp : Glimmer_Op<"yield",
    [Pure, Terminator, ReturnLike, HasParent<"FusionOp">]> {
  let summary = "The results of a fusion body";
  let description = [{
    ```mlir
    glimmer.yield %s : tensor<8x4xbf16>
    ```
  }];
  let arguments = (ins Variadic<Glimmer_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // GLIMMER_DIALECT_GLIMMER_IR_GLIMMEROPS_TD
