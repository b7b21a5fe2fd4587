//===- GlimmerDialect.td - Glimmer dialect definition ------*- tablegen -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_GLIMMERDIALECT_TD
#define GLIMMER_DIALECT_GLIMMER_IR_GLIMMERDIALECT_TD

include "mlir/IR/OpBase.td"

def Glimmer_Dialect : Dialect {
  let name = "glimmer";
  let cppNamespace = "::glimmer";
  let summary = "Multimodal training programs, their parallel layout and collectives";
  let description = [{
    The `glimmer` dialect expresses a whole vision-language training step on
    builtin tensors with value semantics. Programs start in the *global view*:
    every shape is the unsharded shape, and the parallel layout lives in a
    `glimmer.spmd` attribute on the module and in `#glimmer.sharding`
    annotations. Partitioning rewrites them into per-rank programs with local
    shapes and collectives on named mesh axes.

    The op set is deliberately compact: model ops the partitioner or the
    kernels need fused (GEMMs, attention, norms, cross-entropy, embedding,
    vision gather), a small elementwise/shape core that the importer lowers the
    long tail of ATen into, the backward ops that VJP rules need, the
    multimodal and context-parallel ops, and collectives.

    ```mlir
    module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">} {
      func.func @merge(%tokens: tensor<2x8xi64>, %embeds: tensor<2x8x16xf32>,
                       %bank: tensor<6x16xf32>) -> tensor<2x8x16xf32> {
        %idx = glimmer.vision_bank_indices %tokens image_token_id = 7
            : tensor<2x8xi64>
        %0 = glimmer.vision_gather %embeds, %bank, %idx
            : tensor<2x8x16xf32>, tensor<6x16xf32>, tensor<2x8xi64>
        return %0 : tensor<2x8x16xf32>
      }
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the module attribute that records the SPMD layout.
    static constexpr ::llvm::StringLiteral getSpmdAttrName() {
      return ::llvm::StringLiteral(::glimmer::kSpmdAttr);
    }
    /// Name of the function argument/result attribute holding a sharding.
    static constexpr ::llvm::StringLiteral getShardingAttrName() {
      return ::llvm::StringLiteral(::glimmer::kShardingAttr);
    }
  private:
    void registerAttributes();
  public:
  }];
}

class Glimmer_Op<string mnemonic, list<Trait> traits = []>
    : Op<Glimmer_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Glimmer_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
def Glimmer_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Glimmer_BoolTensor : StaticShapeTensorOf<[I1]>;
def Glimmer_Tensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I1, I32, I64]>;
def Glimmer_NumericTensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I32, I64]>;

#endif // GLIMMER_DIALECT_GLIMMER_IR_GLIMMERDIALECT_TD
